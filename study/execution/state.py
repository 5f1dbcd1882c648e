"""Where a study stands: which of its planned architectures are finished, failed, corrupt, in progress, left.

The study's files are the only truth (docs/results.md): an architecture is finished when its
``architectures`` file (the commit point) is there and valid, with the files it requires (``study.execution.store``:
a trained architecture's ``runs`` file; none for one pruned at launch) and its ``curves`` file valid where
there is one (a unit finished before curves were recorded has none and stays finished). Finished units that
were pruned at launch (``trained`` false) are listed apart (``pruned``). ``survey`` reads them all (concurrently)
and compares them with the plan (``study.execution.unit.plan_units``), so ``archstudy status`` and a resume see
the same thing. A unit held by a good pack (``study.experiment.packs``, written by ``study.execution.compaction``) is
finished as its pack is: whole (every table file it records there, with its row count) and of this study's science
config; a unit recorded only by a pack that is not whole is corrupt. Nothing here writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..experiment.config import StudyConfig
from ..experiment.packs import sources
from .store import ARCHITECTURES, CHECKPOINTS, CURVES, RUNS, FileCheck, Store, recorded_science
from .unit import WorkUnit, plan_units

PLAN_PROGRESS_S = 2.0  # planning says how far it is after this long, and again every this long


def plan_with_progress(config: StudyConfig, say) -> list:
    """``plan_units``, saying how far it is (``say(line)``) when planning takes more than ``PLAN_PROGRESS_S``:
    a large study samples for minutes before its first unit can start."""
    t0 = last = time.monotonic()
    n = config.architectures

    def on_index(done: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PLAN_PROGRESS_S:
            last = now
            eta = (now - t0) * (n - done) / done
            say(
                f"planning: {done:,}/{n:,} architectures sampled, about {eta / 60:.0f} min left"
                if eta >= 60
                else f"planning: {done:,}/{n:,} architectures sampled, about {eta:.0f} s left"
            )

    return plan_units(config, on_index)


HEARTBEAT_S = 10.0  # the driver rewrites driver.json at least this often
STALE_S = 6 * HEARTBEAT_S  # a heartbeat older than this means the driver is gone (object storage, no lock)


@dataclass
class StudyState:
    config: StudyConfig
    units: list[WorkUnit]
    finished: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # finished, not trained: NLC outside the study's window
    corrupt: dict[str, str] = field(default_factory=dict)  # name -> problem; redone by resume
    foreign: dict[str, str] = field(default_factory=dict)  # name -> another schema version (never touched)
    failed: dict[str, dict] = field(default_factory=dict)  # name -> failure record (not finished)
    remaining: list[str] = field(default_factory=list)  # not finished (corrupt included), failed or in progress
    in_progress: list[str] = field(default_factory=list)  # in flight in a running driver
    nodes: dict[str, dict] = field(default_factory=dict)  # in progress -> its node (node_id, ip, type), where known
    extra: list[str] = field(default_factory=list)  # architecture files that are no unit of the plan
    # planned units whose valid files were computed under another science config (never counted, never deleted)
    other_config: dict[str, str] = field(default_factory=dict)
    # the science config recorded by the files of another config or of no plan (name -> dict, None: no record)
    recorded: dict[str, dict | None] = field(default_factory=dict)
    checkpoints: list[str] = field(default_factory=list)  # units with trainer state saved
    packed: dict[str, str] = field(default_factory=dict)  # finished units read from a pack -> the pack's stem
    packs: list[str] = field(default_factory=list)  # the good packs (study.experiment.packs)
    bad_packs: dict[str, str] = field(default_factory=dict)  # committed packs that are not whole -> why
    driver: dict | None = None  # driver.json
    driver_running: bool = False

    @property
    def total(self) -> int:
        return len(self.units)

    @property
    def done(self) -> bool:
        return len(self.finished) == self.total

    def to_dict(self) -> dict:
        return {
            "total": self.total,
            "finished": len(self.finished),
            "pruned": len(self.pruned),
            "in_progress": len(self.in_progress),
            "failed": len(self.failed),
            "remaining": len(self.remaining),
            "corrupt": dict(self.corrupt),
            "foreign": dict(self.foreign),
            "extra": list(self.extra),
            "other_config": dict(self.other_config),
            "checkpoints": len(self.checkpoints),
            "driver_running": self.driver_running,
            "in_progress_names": list(self.in_progress),
            "in_progress_nodes": dict(self.nodes),
            "failures": {n: r.get("reason", "") for n, r in self.failed.items()},
            "packed": len(self.packed),
            "packs": len(self.packs),
            "bad_packs": dict(self.bad_packs),
        }


def survey(
    store: Store, config: StudyConfig | None = None, units: list[WorkUnit] | None = None, *, driver: bool = True
) -> StudyState:
    """Compare the study's files with its plan (read-only). ``driver=False`` skips asking whether a driver is
    running (the driver itself surveys while holding the lock)."""
    config = config or store.read_config()
    units = units if units is not None else plan_units(config)
    state = StudyState(config=config, units=units)
    planned = [u.name for u in units]
    planned_set = set(planned)
    loose = set(store.names(ARCHITECTURES, ".parquet"))  # listed before the packs (study.experiment.packs)
    packs = store.packs()
    winners = sources(packs)  # unit -> the good pack it is read from; its own files there are leftovers
    arch_names = loose | set(winners)
    present = [n for n in planned if n in loose and n not in winners]
    fingerprint = config.science_fingerprint
    by_stem = {p.stem: p for p in packs}
    pack_checks = {p.stem: store.check_pack(p, fingerprint) for p in packs if p.ok}
    state.packs = [p.stem for p in packs if p.ok]
    state.bad_packs = {p.stem: p.problem for p in packs if not p.ok}
    in_bad = {n: p for p in packs if not p.ok for n in p.names}  # the units a bad pack records
    trained = {
        n: t is not False
        for p in packs
        if p.ok and p.architectures is not None
        for n, t in zip(p.names, p.architectures.column("trained").to_pylist())
    }
    arch_checks = store.check_files(ARCHITECTURES, present, fingerprint=fingerprint)
    committed = [n for n in present if arch_checks[n].ok]
    # The other files of the committed units: absent where a unit does not require them, else checked.
    others = {}
    kind: str | None  # here a table kind; below the kind of a unit's bad file, if any
    for kind in (RUNS, CURVES):
        listed = set(store.names(kind, ".parquet"))
        others[kind] = store.check_files(kind, [n for n in committed if n in listed], fingerprint=fingerprint)
    failures = store.failures()
    for name in planned:
        stem = winners.get(name)
        if stem is not None:
            pc = pack_checks[stem]
            if pc.ok:
                state.finished.append(name)
                state.packed[name] = stem
                if not trained[name]:
                    state.pruned.append(name)
                continue
            state.other_config[name] = f"pack {stem}: {pc.problem}"
            state.recorded[name] = pc.science
            state.remaining.append(name)
            continue
        if name not in loose and name in in_bad:  # recorded only by a pack that is not whole
            bad_pack = in_bad[name]
            if bad_pack.foreign:
                state.foreign[name] = f"pack {bad_pack.stem}: {bad_pack.problem}"
                continue
            state.corrupt[name] = f"pack {bad_pack.stem}: {bad_pack.problem}"
        if name in loose:
            a = arch_checks[name]
            bad: FileCheck | None  # the first bad file of the unit, and its kind
            bad, kind = (a, ARCHITECTURES) if not a.ok else (None, None)
            for k in (RUNS, CURVES) if a.ok else ():
                c = others[k].get(name)
                if (c is None and k in a.requires) or (c is not None and not c.ok):
                    bad, kind = c, k
                    break
            if bad is None and kind is None:
                state.finished.append(name)
                if not a.trained:
                    state.pruned.append(name)
                continue
            problem = bad.problem if bad is not None else "missing"
            if bad is not None and bad.foreign:
                state.foreign[name] = f"{kind} file: {problem}"
                continue
            if bad is not None and bad.other_config:
                state.other_config[name] = f"{kind} file: {problem}"
                state.recorded[name] = bad.science
                state.remaining.append(name)  # to do, once the study holds only its own config's files
                continue
            state.corrupt[name] = f"{kind} file: {problem}"
        if name in failures:
            state.failed[name] = failures[name]
        else:
            state.remaining.append(name)
    state.extra = sorted(arch_names - planned_set)
    for name in state.extra[:1]:  # what the first of them was computed under (for the one-line messages)
        in_pack = by_stem[winners[name]] if name in winners else None
        state.recorded[name] = (
            recorded_science(in_pack.metadata)[1] if in_pack is not None else store.science_of(ARCHITECTURES, name)[1]
        )
    state.checkpoints = [n for n in store.names(CHECKPOINTS, ".pt") if n in planned_set]
    state.driver = store.read_driver_state()
    if not driver:
        return state
    running = store.driver_running()
    if running is None:  # object storage: judge by the heartbeat
        d = state.driver or {}
        running = bool(d.get("running")) and time.time() - float(d.get("heartbeat_unix", 0)) < STALE_S
    state.driver_running = bool(running)
    if state.driver_running and state.driver:
        unfinished = set(state.remaining) | set(state.failed) | set(state.corrupt)
        state.in_progress = [n for n in state.driver.get("in_flight", []) if n in unfinished]
        state.nodes = {n: d for n, d in (state.driver.get("nodes") or {}).items() if n in state.in_progress}
        busy = set(state.in_progress)  # counted once: in progress, not also remaining or failed
        state.remaining = [n for n in state.remaining if n not in busy]
        state.failed = {n: r for n, r in state.failed.items() if n not in busy}
    return state
