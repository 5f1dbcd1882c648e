"""The driver's dispatch of units to workers: one job per unit through the engine, each result committed once.

``Dispatch`` runs a list of units (the study's unfinished ones, or, with ``nlc_window: auto``, the pilot's and then the
others: ``study.execution.driver``) through the engine (``study.execution.engine``): it sends each unit as a
``study.execution.unit.UnitJob``, commits each result as it comes back (``commit``: the worker's tables, checked
against the schema, the ``architectures`` file last), records a unit that kept failing in ``failed/``, follows the
units in flight for the ETA (``study.execution.costs.Forecast``) and the progress line, and keeps ``driver.json``
(``Heartbeat``), which ``archstudy status`` and the live view read.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable, Mapping, cast

import pyarrow as pa

from archstudy.sampling import BASE

from ..experiment import provenance
from ..experiment.config import StudyConfig, package_version, utc_now
from . import interrupts
from .costs import PROBE_UNITS, Forecast, relative_cost
from .engine import Engine, Failure, Job, Rejected, Tally
from .live import WRITE_EVERY_S, clear_live, read_live
from .progress import Progress
from .state import HEARTBEAT_S, StudyState
from .store import ARCHITECTURES, CURVES, FAILED, RUNS, SCHEMAS, SchemaError, Store, StoreWriteError
from .unit import UnitJob, WorkUnit, read_table_bytes

# The least time between two writes of driver.json for a change of what is in flight (the engine ticks every second).
BEAT_MIN_S = 1.0


def commit(store: Store, key: str, rows: Mapping[str, Any], science: str) -> None:
    """Commit one unit's result as its worker returned it: its tables (``study.execution.unit.unit_tables``), each
    of the schema and a trained unit with runs, a pruned one without (``SchemaError`` else), or its rows
    (``Store.write_result`` builds and checks the tables); with the worker's provenance record, or where a worker
    returned none, the driver's own (``study.experiment.provenance``)."""
    record = rows.get("provenance")
    if not isinstance(record, str):
        record = provenance.record_json([(provenance.current(), 1)])
    if not isinstance(rows["architecture"], bytes):
        store.write_result(
            key, rows["architecture"], rows["runs"], rows.get("curves") or (), science=science, provenance=record
        )
        return
    try:
        arch = read_table_bytes(rows["architecture"])
        others = {kind: read_table_bytes(rows[kind]) for kind in (RUNS, CURVES) if rows.get(kind) is not None}
    except (pa.ArrowException, TypeError) as e:
        raise SchemaError(f"{key}: a table that is not an Arrow stream ({e})") from None
    for kind, table in ((ARCHITECTURES, arch), *others.items()):
        rows_ok = table.num_rows == 1 if kind == ARCHITECTURES else table.num_rows > 0
        if not rows_ok or not table.schema.equals(SCHEMAS[kind]):
            raise SchemaError(f"{key}: its {kind} table is not one of the schema's ({table.num_rows} rows)")
    # the schema's metadata (its version, the table's name) is the driver's to write, not the worker's: a worker of
    # another install must not commit files the store would then call foreign
    arch = arch.replace_schema_metadata(SCHEMAS[ARCHITECTURES].metadata)
    others = {kind: t.replace_schema_metadata(SCHEMAS[kind].metadata) for kind, t in others.items()}
    trained = bool(arch.column("trained")[0].as_py())
    if trained != (RUNS in others) or (CURVES in others and not trained):
        raise SchemaError(
            f"{key}: an architecture with trained = {trained} and tables {sorted(others)}: a trained one has runs "
            "(and curves when recorded), a pruned one neither"
        )
    store.write_tables(key, arch, others, science=science, provenance=record)


class Heartbeat:
    """``driver.json``: who drives the study, since when, what is in flight where, and the counts; rewritten when what
    is in flight (or where) changes, at most every ``BEAT_MIN_S`` for that (a study of short units changes it with
    every unit: one write per unit, a request on object storage), and at least every ``HEARTBEAT_S``."""

    def __init__(
        self, store: Store, address: str | None, result: Any, eta: Callable[[Tally], float | None] | None = None
    ) -> None:
        self.store, self.address, self.result, self.eta = store, address, result, eta
        self.host, self.started = socket.gethostname(), utc_now()
        self.last_tick = -float("inf")  # when driver.json was last written (monotonic: a clock's step cannot stall it)
        self.last_seen: tuple[list, dict] | None = None  # what flew where at that write

    def __call__(self, tally: Tally | None, running: bool = True, stopped: str | None = None) -> None:
        now, tick = time.time(), time.monotonic()
        if running and tally is not None and tick - self.last_tick < BEAT_MIN_S:
            return  # the engine ticks again within its tick: a change is written then
        flying = list(tally.in_flight) if tally and running else []
        where = dict(tally.nodes) if tally and running else {}
        if running and tally is not None and (flying, where) == self.last_seen and tick - self.last_tick < HEARTBEAT_S:
            return
        self.last_tick, self.last_seen = tick, (flying, where)
        result = self.result
        self.store.write_driver_state(
            {
                "pid": os.getpid(),
                "host": self.host,
                "started": self.started,
                "heartbeat": utc_now(),
                "heartbeat_unix": now,
                "running": running,
                "stopped": stopped,
                "address": self.address or "embedded",
                "in_flight": flying,
                "nodes": where,
                "done": result.finished_before + result.finished,
                "failed": len(result.failed),
                "total": result.total,
                # the forecast of the command line's ETA at ``heartbeat_unix`` (``archstudy serve`` counts it down)
                "eta_s": self.eta(tally) if self.eta is not None and tally is not None and running else None,
            }
        )


class Dispatch:
    """The units ``todo`` of a study run through ``engine`` (module docstring): ``run(data_ref, window)``. ``result``
    (the driver's ``DriverSummary``) counts what finished and failed; ``on_commit(n)`` is told after each commit."""

    def __init__(
        self,
        store: Store,
        config: StudyConfig,
        engine: Engine,
        todo: list[WorkUnit],
        state: StudyState,
        result: Any,
        *,
        address: str | None,
        progress: Progress,
        on_commit: Callable[[int], None] | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.store, self.config, self.engine, self.todo = store, config, engine, todo
        self.result, self.progress, self.on_commit = result, progress, on_commit
        self.by_name = {u.name: u for u in todo}
        self.earlier_attempts = {n: int(r.get("attempts", 0) or 0) for n, r in state.failed.items()}
        # failure records of earlier sessions (unreadable ones too): removed when the unit commits
        self.had_failed = set(store.names(FAILED, ".json")) & set(self.by_name)
        self.science = config.science_json  # every file's metadata (a property computed at each call: once here)
        self.heartbeat = Heartbeat(store, address, result, eta=self.forecast_eta)
        # each unit's relative cost, in the order of submission: the plan's seconds where it gave them, else depth
        plan = weights or {}
        self.forecast = Forecast(
            len(todo),
            weights={
                u.name: plan[u.name] if u.name in plan else relative_cost(u.spec)
                for u in todo
                if u.name in plan or not plan
            },
        )
        self.last_read = -float("inf")  # when the progress records were last read (monotonic)

    # -- the engine's callbacks -----------------------------------------------------------------------------------
    def on_done(self, job: Job, rows: dict, attempt: int) -> None:
        key = cast(str, job.key)  # the driver's jobs: one per unit, keyed by its name
        for note in rows.get("notes", ()):  # e.g. a checkpoint file that was not valid and was discarded
            self.progress.say(f"{key}: {note}")
        try:
            commit(self.store, key, rows, self.science)
        except SchemaError as e:
            raise Rejected(f"SchemaError: {e}") from None
        self.store.delete(*self.store.checkpoint_parts(key))
        if key in self.had_failed:  # a failure record of an earlier session (this session's are final: never retried)
            self.store.delete(FAILED, f"{key}.json")
        clear_live(self.store, key)
        self.forecast.finished(key)
        self.result.finished += 1
        if self.on_commit is not None:
            self.on_commit(self.result.finished)

    def on_retry(self, job: Job, failure: Failure, attempt: int) -> None:
        self.progress.say(f"{job.key}: attempt {attempt} failed: {failure.reason}; trying again")

    def on_failed(self, job: Job, failure: Failure, attempt: int) -> None:
        key = cast(str, job.key)  # a unit's name
        unit = self.by_name[key]
        self.store.write_failure(
            key,
            {
                "index": unit.index,
                "arch_id": unit.arch_id,
                "variant": unit.variant,
                "reason": failure.reason,
                "attempts": attempt,
                "detail": failure.detail[-20000:],
                "host": self.heartbeat.host,
                "failed_at": utc_now(),
                "package_version": package_version(),
            },
        )
        self.result.failed[key] = failure.reason
        clear_live(self.store, key)
        self.progress.say(f"{key} failed after {attempt} attempt(s): {failure.reason}")

    def forecast_eta(self, tally: Tally) -> float | None:
        """The progress line's ETA in seconds (``Forecast.eta``; None before anything is known)."""
        return self.forecast.eta(tally.done, tally.failed, tally.running)[0]

    def on_tick(self, tally: Tally) -> None:
        interrupts.raise_if_interrupted()
        self.follow(tally)
        self.progress.update(tally)
        self.heartbeat(tally)

    def follow(self, tally: Tally) -> None:
        """The units in flight and their progress records (read at most as often as workers write them)."""
        forecast = self.forecast
        forecast.seen(tally.in_flight)
        forecast.slots = max(forecast.slots, tally.running)
        now = time.monotonic()
        if tally.in_flight and now - self.last_read >= WRITE_EVERY_S[self.store.local]:
            self.last_read = now
            forecast.observe(read_live(self.store, tally.in_flight))
            line = forecast.estimate_line()
            if line:
                self.progress.say(line)

    # -- the run --------------------------------------------------------------------------------------------------
    def jobs(self, data_ref: Any, window: tuple[float, float] | None) -> list[Job]:
        """One engine job per unit; the first units time a few steps of their network before they start
        (``study.execution.costs``: the estimate)."""
        res = self.config.resources
        config = self.config.to_dict()
        probing = max(1, min(PROBE_UNITS, self.engine.limit()))
        return [
            Job(
                u.name,
                UnitJob(
                    config=config,
                    data=[data_ref],
                    store=self.store.uri,
                    threads=res.threads,
                    gpus=res.gpus_per_arch,
                    window=window,
                    unit=u,
                    probe=i < probing,
                ).to_payload(),
            )
            for i, u in enumerate(self.todo)
        ]

    def run(self, data: Any, window: tuple[float, float] | None = None) -> None:
        """Put the dataset in Ray's object store and run every unit; driver.json says how the session stopped."""
        import ray

        progress, result = self.progress, self.result
        progress.total, progress.done_before = result.total, result.finished_before + result.finished
        jobs = self.jobs(ray.put(data), window)
        progress.forecast = self.forecast
        progress.indices = {u.name: str(u.index) if u.variant == BASE else f"{u.index} {u.variant}" for u in self.todo}
        stop = "error"
        self.heartbeat(None)
        try:
            self.engine.execute(
                jobs,
                on_done=self.on_done,
                on_failed=self.on_failed,
                on_tick=self.on_tick,
                on_retry=self.on_retry,
                first_attempt=lambda job: self.earlier_attempts.get(cast(str, job.key), 0) + 1,
            )
            stop = "finished"
        except KeyboardInterrupt:
            stop = "interrupted"
            progress.say(f"interrupted: `archstudy resume {self.store.location}` continues the study")
            raise
        except StoreWriteError:
            stop = "storage"
            raise
        finally:
            progress.close()  # the terminal's line ends here; what follows prints below it
            try:
                self.heartbeat(None, running=False, stopped=stop)
            except StoreWriteError:
                if stop == "finished":
                    raise  # every result is committed, but the location stopped accepting writes: say so
                # else the error on its way out says what happened
