"""Progress inside running architectures: a small record each running unit keeps beside its checkpoint.

A unit runs in a Ray worker, possibly on another node; the driver and ``archstudy status`` (from any machine
that can read the study) learn how far it is from ``progress/<index>-<arch_id>.json`` in the study's storage,
which the worker rewrites as the unit goes (``UnitProgress``):

    {"unit", "attempt", "host", "stage": "probing" | "measuring" | "training" | "finishing", "epoch",
     "live_runs", "total_runs", "max_epochs", "expected_epochs", "train_elapsed_s", "measure_s", "probe",
     "elapsed_s", "updated_unix"}

``epoch`` and ``live_runs`` come from the trainer's per-epoch callback (``study.training.trainer.TrainingProgress``);
``probe`` from the few timed steps of the first units (``study.execution.costs.probe``).

The record never slows training and never touches the commit: the callback only hands the latest state to a
background thread, which writes it at most every ``WRITE_EVERY_S`` (a local file: 2 s; object storage, where
each write is a request: 30 s), whole or not at all (``Store.write_bytes``), and swallows any error (progress
is advice, the result is what counts). The record is no result file: the driver deletes it when it commits or
gives up the unit, and removes any left by a killed session before it starts; readers take a record only for
a unit in flight. On a cluster whose study is a local path of the head, a worker on another node writes its
record on its own disk (as its checkpoint): give the study an ``s3://`` location (docs/cluster.md).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable

from .store import PROGRESS, Store

WRITE_EVERY_S = {True: 2.0, False: 30.0}  # local store, object storage


class UnitProgress:
    """The worker's side: ``probe`` (timed steps, for the first units only), ``measured``, the trainer's
    ``epoch`` callback; a context that starts and stops the writer thread."""

    def __init__(self, store: Store, name: str, attempt: int = 1, *, probe: bool = False, every_s: float | None = None):
        self.store, self.name, self.want_probe = store, name, probe
        self.every_s = WRITE_EVERY_S[store.local] if every_s is None else every_s
        self.t0 = time.monotonic()
        self.record: dict[str, Any] = {
            "unit": name,
            "attempt": attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "stage": "starting",
        }
        self._lock = threading.Lock()
        self._urgent = False  # a change to write at once (a stage, the probe), not after ``every_s``
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0  # writes that failed (never raised)

    # -- what the unit reports ---------------------------------------------------------------------
    def update(self, urgent: bool = False, **fields) -> None:
        with self._lock:
            self.record.update(fields, elapsed_s=time.monotonic() - self.t0, updated_unix=time.time())
            self._urgent = self._urgent or urgent
        self._changed.set()

    def start(self, spec, data, protocol, device, inits: int = 1) -> None:
        """The unit begins: with ``probe``, time a few steps first (``study.execution.costs.probe``)."""
        from ..training.splits import steps_per_epoch
        from .costs import expected_epochs, probe

        expected = expected_epochs(protocol, steps_per_epoch(len(data.train.y), protocol.batch_size))
        self.update(
            stage="probing" if self.want_probe else "measuring",
            total_runs=protocol.num_lrs * inits,
            max_epochs=protocol.max_epochs,
            expected_epochs=expected,
        )
        if self.want_probe:
            try:
                self.update(urgent=True, probe=probe(spec, data, protocol, device, inits), stage="measuring")
            except Exception as e:  # noqa: BLE001 - an estimate is advice: the unit itself must not fail for it
                self.update(stage="measuring", probe_error=f"{type(e).__name__}: {e}"[:300])

    def measured(self, measure_s: float) -> None:
        self.update(urgent=True, stage="training", measure_s=measure_s)

    def epoch(self, p) -> None:
        """The trainer's per-epoch callback (``TrainingProgress``)."""
        self.update(
            stage="training", epoch=p.epoch, live_runs=p.live_runs, total_runs=p.total_runs, train_elapsed_s=p.elapsed_s
        )

    # -- the writer ---------------------------------------------------------------------------------
    def __enter__(self) -> "UnitProgress":
        self._thread = threading.Thread(target=self._write_loop, name=f"progress-{self.name}", daemon=True)
        self._thread.start()
        self.update(urgent=True)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._stop.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def _write_loop(self) -> None:
        last = -float("inf")
        while not self._stop.is_set():
            self._changed.wait()
            if self._stop.is_set():
                return
            with self._lock:
                urgent = self._urgent
            wait = self.every_s - (time.monotonic() - last)
            if wait > 0 and not urgent and self._stop.wait(wait):
                return
            with self._lock:
                self._changed.clear()
                self._urgent = False
                data = (json.dumps(self.record) + "\n").encode()
            try:
                self.store.write_bytes([PROGRESS, f"{self.name}.json"], data)
            except Exception:  # noqa: BLE001 - a full disk or a lost bucket must not fail the unit
                self.failures += 1
            last = time.monotonic()


# -- the readers: the driver and `archstudy status` ---------------------------------------------------------
def read_live(store: Store, names: Iterable[str], threads: int = 8) -> dict[str, dict]:
    """The live records of the units ``names`` (those in flight), where there is a readable one."""
    names = list(names)

    def one(name: str):
        try:
            rec = json.loads(store.read_bytes(PROGRESS, f"{name}.json"))
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) else None

    if not names:
        return {}
    with ThreadPoolExecutor(max_workers=min(threads, len(names))) as pool:
        return {n: r for n, r in zip(names, pool.map(one, names)) if r is not None}


def clear_live(store: Store, name: str) -> None:
    store.delete(PROGRESS, f"{name}.json")


def clear_all(store: Store) -> list[str]:
    """Remove every record (a driver about to start, with the lock held: no unit of this study is running)."""
    names = store.names(PROGRESS, ".json")
    for name in names:
        clear_live(store, name)
    return names


def describe(rec: dict, now: float | None = None) -> str:
    """One record in words, for ``archstudy status``: ``epoch 4/15, 8 of 8 runs live, 1m20s in``."""
    from .costs import duration

    now = time.time() if now is None else now
    stage = rec.get("stage", "?")
    parts = []
    if stage == "training" and rec.get("epoch"):
        cap = rec.get("max_epochs")
        parts.append(f"epoch {rec['epoch']}" + (f"/{cap}" if cap else ""))
        if rec.get("live_runs") is not None and rec.get("total_runs"):
            parts.append(f"{rec['live_runs']} of {rec['total_runs']} runs live")
    else:
        parts.append(stage)
    if isinstance(rec.get("elapsed_s"), (int, float)):
        parts.append(f"{duration(rec['elapsed_s'])} in")
    if isinstance(rec.get("updated_unix"), (int, float)):
        parts.append(f"updated {duration(max(0.0, now - rec['updated_unix']))} ago")
    return ", ".join(parts)
