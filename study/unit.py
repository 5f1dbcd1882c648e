"""One unit of work: one architecture (an index of the study, and a variant: ``base`` or a sibling axis).

sample (from the study seed and the index) -> build -> measure at initialization -> train all learning rates
as one stacked model (measuring again after training) -> the rows of docs/results.md.

``plan_units`` lists a study's units in order; it is pure (sampling is seeded by (study seed, index)), so
the driver, ``archstudy status`` and every resume agree on the same names. ``run_unit`` does one unit in
the calling process; ``execute_unit`` is the body Ray runs on a worker (threads, device, the dataset from
the object store, the checkpoint in the study's storage).
"""

from __future__ import annotations

import math
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from sampling import ArchSpec, sample_spec, siblings

from .config import StudyConfig, package_version, utc_now
from .store import ARCHITECTURES, MEASURED, RUNS, Store, to_table, unit_name

BASE = "base"


def init_seed(study_seed: int, index: int) -> int:
    """The initialization (and data-order) seed of architecture ``index`` of a study, shared by its siblings.

    Drawn from ``SeedSequence([study_seed, index])`` on a child branch (``spawn_key=(1,)``), so it is
    independent of the draws that chose the architecture, the same on every machine, in any order."""
    ss = np.random.SeedSequence([study_seed, index], spawn_key=(1,))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


@dataclass(frozen=True)
class Unit:
    """One architecture of a study: its index, variant, spec and init seed."""

    index: int
    variant: str
    spec: ArchSpec
    seed: int

    @property
    def arch_id(self) -> str:
        return self.spec.content_id

    @property
    def name(self) -> str:
        """``<index:06d>-<arch_id>``: the stem of its files (docs/results.md)."""
        return unit_name(self.index, self.arch_id)

    def to_dict(self) -> dict:
        return {"index": self.index, "variant": self.variant, "spec": self.spec.to_dict(), "seed": self.seed}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Unit":
        return cls(int(d["index"]), str(d["variant"]), ArchSpec.from_dict(dict(d["spec"])), int(d["seed"]))


def plan_units(config: StudyConfig) -> list[Unit]:
    """Every unit of the study, in order: index 0 (base, then its siblings along each axis), index 1, ..."""
    if config.d_in is None or config.d_out is None:
        raise ValueError("the config's d_in/d_out are filled in from the dataset when the study is created")
    space = config.space_obj
    units: list[Unit] = []
    for i in range(config.architectures):
        base = sample_spec(config.seed, i, config.d_in, config.d_out, space, config.param_budget)
        seed = init_seed(config.seed, i)
        units.append(Unit(i, BASE, base, seed))
        seen = {base.content_id}
        for axis in config.siblings:
            for sib in siblings(base, axis, config.param_budget):
                if sib.content_id not in seen:
                    seen.add(sib.content_id)
                    units.append(Unit(i, axis, sib, seed))
    return units


# -- one unit, in this process --------------------------------------------------------------------------
def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def device_name(device: Any) -> str:
    import torch

    d = torch.device(device if device is not None else "cpu")
    if d.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(d)}"
    return d.type


def run_unit(unit: Unit, data, config: StudyConfig, *, device=None, attempt: int = 1,
             checkpoint_path: str | None = None) -> tuple[dict, list[dict]]:
    """Do one architecture in this process; return its ``architectures`` row and its ``runs`` rows.

    The global torch and numpy generators are seeded from the unit's seed first, so whatever draws from
    them draws the same numbers whichever worker runs the unit, and after whatever ran there before."""
    import torch

    from . import MetricOptions, Protocol, build_network, measure, measure_trained, train_architecture

    t0 = time.perf_counter()
    torch.manual_seed(unit.seed)
    np.random.seed(unit.seed)
    spec = unit.spec
    net = build_network(spec, seed=unit.seed, device=device)
    build_s = time.perf_counter() - t0
    options = MetricOptions.from_dict(config.metrics)
    measured = measure(net, data, spec, options=options, seed=unit.seed)
    del net
    expected = set(MEASURED) | {"flops", "measure_s"}
    if set(measured) != expected:
        raise KeyError(f"study.measure returned columns {sorted(set(measured) - expected)} that docs/results.md does "
                       f"not define and lacks {sorted(expected - set(measured))}")
    outcome = train_architecture(spec, data, seed=unit.seed, protocol=Protocol.from_dict(config.protocol),
                                 device=device, checkpoint_path=checkpoint_path,
                                 checkpoint_every_s=config.checkpoint_every_s)
    t_after = time.perf_counter()
    measured.update(measure_trained(outcome.network, data, spec, options=options, seed=unit.seed))  # E.3
    measured["measure_s"] += time.perf_counter() - t_after
    total_s = time.perf_counter() - t0

    ident = {"arch_id": unit.arch_id, "index": unit.index, "variant": unit.variant}
    arch = {
        **ident, "dataset": config.dataset, "study_seed": config.seed, "seed": unit.seed,
        **spec.to_dict(),
        "num_params": spec.num_params, "activation_units": spec.activation_units, "flops": measured["flops"],
        **{k: measured[k] for k in MEASURED},
        # The selected run, the runs summary, all_diverged, train_s, and c_out: the output scale the loss
        # actually divided by (the trainer's; study.measure computes the same quantity on the same data).
        **outcome.selected_row(),
        "nonfinite_init": not all(_finite(measured[k]) for k in ("nlc", "bias", "output_q", "c_out")),
        "build_s": build_s, "measure_s": measured["measure_s"], "total_s": total_s,
        "package_version": package_version(), "host": socket.gethostname(), "device": device_name(device),
        "finished_at": utc_now(), "attempt": attempt,
    }
    run_rows = [{**ident, **row} for row in outcome.run_rows()]
    # Check the rows against the schema here, on the worker: a mismatch is this attempt's error, not the driver's.
    to_table(ARCHITECTURES, [arch])
    to_table(RUNS, run_rows)
    return arch, run_rows


# -- the checkpoint of a unit in the study's storage --------------------------------------------------------
class CheckpointSpot:
    """Where the trainer checkpoints one unit, as a local path, and how it reaches the study's storage.

    On a local store the trainer writes the study's own ``checkpoints/<name>.pt`` directly. On object
    storage it writes a local scratch file (first filled from the store, so a retry on another node
    resumes), and a background thread puts each new version of it to the store (polling its modification
    time), plus once more when the unit fails: the retry picks it up wherever it runs."""

    def __init__(self, store: Store, name: str, poll_s: float = 5.0):
        self.store, self.name, self.poll_s = store, name, poll_s
        self.parts = store.checkpoint_parts(name)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._sent: float | None = None

    def __enter__(self) -> str:
        if self.store.local:
            path = self.store.path(*self.parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return path
        self._scratch = tempfile.TemporaryDirectory(prefix="archstudy-ckpt-")
        self.local_path = os.path.join(self._scratch.name, self.parts[-1])
        try:
            data = self.store.read_bytes(*self.parts)
        except FileNotFoundError:
            data = None
        if data is not None:
            with open(self.local_path, "wb") as f:
                f.write(data)
            self._sent = os.stat(self.local_path).st_mtime
        self._thread = threading.Thread(target=self._mirror, name=f"checkpoint-{self.name}", daemon=True)
        self._thread.start()
        return self.local_path

    def _put_if_new(self) -> None:
        try:
            mtime = os.stat(self.local_path).st_mtime
        except FileNotFoundError:
            return
        if mtime != self._sent:
            with open(self.local_path, "rb") as f:
                self.store.write_bytes(self.parts, f.read())
            self._sent = mtime

    def _mirror(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._put_if_new()

    def __exit__(self, exc_type, exc, tb):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if exc_type is not None:
                self._put_if_new()
        if self._scratch is not None:
            self._scratch.cleanup()
        return False


# -- the Ray task body -------------------------------------------------------------------------------
_DATA_CACHE: dict[tuple[str, str], Any] = {}


def _dataset(ref_box: list, device: str):
    """The study's dataset on ``device``: fetched from Ray's object store once per worker process."""
    import ray

    ref = ref_box[0]
    key = (ref.hex(), device)
    if key not in _DATA_CACHE:
        _DATA_CACHE.clear()  # one study per worker at a time
        data = ray.get(ref)
        _DATA_CACHE[key] = data.to(device) if device != "cpu" else data
    return _DATA_CACHE[key]


def execute_unit(payload: Mapping[str, Any], attempt: int) -> dict:
    """Run one unit on a Ray worker: fix torch's thread count to the unit's CPUs, pick the device, fetch the
    dataset, train with the checkpoint in the study's storage; return the rows (the driver writes them)."""
    import torch

    torch.set_num_threads(int(payload["threads"]))
    device = "cuda" if payload["gpus"] > 0 else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"gpus_per_arch = {payload['gpus']} but torch sees no CUDA device on {socket.gethostname()}")
    if device == "cuda":
        from .training.determinism import deterministic_cuda

        deterministic_cuda()  # before this process's first CUDA product (study.training.determinism)
    unit = Unit.from_dict(payload["unit"])
    config = StudyConfig.from_dict(payload["config"])
    data = _dataset(payload["data"], device)
    store = Store(payload["store"])
    with CheckpointSpot(store, unit.name) as ckpt:
        arch, runs = run_unit(unit, data, config, device=device, attempt=attempt, checkpoint_path=ckpt)
    return {"architecture": arch, "runs": runs}

