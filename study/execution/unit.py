"""One unit of work: one architecture (an index of the study, and a variant: ``base`` or a sibling axis).

sample (from the study seed and the index) -> build -> measure at initialization -> train all learning rates
as one stacked model (measuring again after training) -> the rows of docs/results.md. With ``init_seeds: k`` the
stack holds every rate from k initializations (``sampling.replicate_seeds``: the unit's seed first); the row is the
first one's, with the others' spread (``test_error_mean``, ``test_error_sd``), and the runs of all k. With an NLC window
(pruning at launch, ``study.execution.pruning``) an architecture whose NLC at initialization lies outside it is not
trained: its row holds the measurements at initialization and ``trained`` false; so is every architecture of a
study that measures only (``measure_only``: ``archstudy rank``).

``work_units`` lists a study's units in order (the study plan, ``sampling.plan_study``, of its config): it is
pure (sampling is seeded by (study seed, index)), so the driver, ``archstudy status`` and every resume agree
on the same names. ``compute_unit`` does one unit in the calling process; ``execute_unit`` is the body Ray runs
on a worker (threads, device, the dataset from the object store, the checkpoint in the study's storage).
"""

from __future__ import annotations

import math
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa

from archstudy.sampling import BASE, ArchSpec, Planned, SpecError, plan_study, replicate_seeds

from .cluster import LOGICAL_GPUS_ENV
from ..experiment import provenance
from ..experiment.config import StudyConfig, package_version, utc_now
from ..experiment.schema import ARCHITECTURES, CURVES, MEASURED, RUNS
from .live import UnitProgress
from .store import Store, to_table, unit_name


class WorkUnit(Planned):
    """One architecture of a study as the study plan gives it (``sampling.Planned``: its index, variant, spec and init
    seed), with the names its files and the driver's jobs go by, and its form in a job's payload."""

    __slots__ = ()

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
    def from_dict(cls, d: Mapping) -> "WorkUnit":
        return cls(int(d["index"]), str(d["variant"]), ArchSpec.from_dict(dict(d["spec"])), int(d["seed"]))


@dataclass(frozen=True)
class UnitJob:
    """What the driver sends a worker for one unit (``execute_unit``), made and read in one place: the study's config
    (``StudyConfig.to_dict``), the dataset as a reference in Ray's object store (in a list, so that Ray hands the
    reference over, not the data), the study's storage, the worker's threads and GPUs, the NLC window of pruning at
    launch ((lo, hi), or None: none), the unit, and whether it first times a few steps for the driver's estimate
    (``probe``)."""

    config: dict
    data: list
    store: str
    threads: int
    gpus: float
    window: tuple[float, float] | None
    unit: WorkUnit
    probe: bool = False

    def to_payload(self) -> dict[str, Any]:
        """The job as plain data (what crosses to the worker)."""
        return {
            "config": self.config,
            "data": self.data,
            "store": self.store,
            "threads": self.threads,
            "gpus": self.gpus,
            "window": None if self.window is None else list(self.window),
            "unit": self.unit.to_dict(),
            "probe": self.probe,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> "UnitJob":
        window = payload.get("window")
        return cls(
            config=dict(payload["config"]),
            data=list(payload["data"]),
            store=str(payload["store"]),
            threads=int(payload["threads"]),
            gpus=float(payload["gpus"]),
            window=None if window is None else (float(window[0]), float(window[1])),
            unit=WorkUnit.from_dict(payload["unit"]),
            probe=bool(payload.get("probe")),
        )


def iter_units(config: StudyConfig) -> Iterator[WorkUnit]:
    """Every unit of the study, in order: index 0 (base, then its siblings along each axis), index 1, ..."""
    if config.d_in is None or config.d_out is None:
        # A study.yaml edited by hand, or written by another tool: the user's to mend, so one line, no traceback.
        missing = "d_in" if config.d_in is None else "d_out"
        raise SpecError(
            "study.yaml",
            missing,
            None,
            "missing: archstudy writes d_in and d_out from the dataset when it creates a study; restore study.yaml, "
            "or run the config as a new study",
        )
    return (
        WorkUnit(*planned)
        for planned in plan_study(
            config.seed,
            config.architectures,
            config.d_in,
            config.d_out,
            config.space_obj,
            config.param_budget,
            config.siblings,
            indices=config.indices,
        )
    )


def work_units(config: StudyConfig, on_index: Callable[[int], None] | None = None) -> list[WorkUnit]:
    """``iter_units`` as a list; ``on_index(i)`` after the units of each index i (progress: sampling and
    solving the widths takes milliseconds per architecture)."""
    units: list[WorkUnit] = []
    for unit in iter_units(config):
        if on_index is not None and unit.variant == BASE and unit.index:
            on_index(unit.index)  # the units of index - 1 are planned
        units.append(unit)
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


def compute_unit(
    unit: WorkUnit,
    data,
    config: StudyConfig,
    *,
    device=None,
    attempt: int = 1,
    checkpoint_path: str | None = None,
    checkpoint_secret: bytes | None = None,
    notes: list[str] | None = None,
    window=None,
    live=None,
) -> tuple[dict, list[dict], list[dict]]:
    """Do one architecture in this process; return its ``architectures`` row, its ``runs`` rows and its
    ``curves`` rows. With ``window`` (lo, hi) the architecture is trained only if lo <= NLC <= hi at
    initialization (``study.execution.pruning.inside``); else, or when the config measures only (``measure_only``), its
    row says ``trained`` false and it has no runs or curves.

    Every random draw comes from the unit's seed through explicit generators (the builder, the metrics,
    the trainer's data order), so the rows are the same whichever process runs the unit and whatever it ran
    before; the process's global random state is neither used nor changed (tests check it)..
    ``checkpoint_secret``: the study's checkpoint key (``Store.checkpoint_secret``; None: the trainer's default).
    ``notes`` collects one-line messages for the user (a discarded checkpoint file). ``live``: a
    ``study.execution.live.UnitProgress`` told how far the unit is (it never changes what is computed)."""
    from ..experiment.metric_options import MetricOptions
    from ..experiment.protocol import Protocol
    from ..experiment.rate_window import window_of
    from ..metrics.measurement import measure, measure_trained
    from ..nn.network import build_network
    from ..training.curves import Trajectory
    from ..training.trainer import train_architecture
    from .pruning import inside, untrained_row

    protocol = Protocol.from_dict(config.protocol)
    if live is not None:
        live.start(unit.spec, data, config.counted_protocol, device, config.init_seeds)
    t0 = time.perf_counter()
    spec = unit.spec
    net = build_network(spec, seed=unit.seed, device=device)
    build_s = time.perf_counter() - t0
    options = MetricOptions.from_dict(config.metrics)
    measured = measure(net, data, spec, options=options, seed=unit.seed)
    del net  # measure returns exactly its declared columns (study.metrics.measurement.MEASURE_COLUMNS)
    ident = {"arch_id": unit.arch_id, "index": unit.index, "variant": unit.variant}
    head = {
        **ident,
        "dataset": config.dataset,
        "study_seed": config.seed,
        "seed": unit.seed,
        **spec.to_dict(),
        "num_params": spec.num_params,
        "activation_units": spec.activation_units,
        "flops": measured["flops"],
    }
    tail = {
        "package_version": package_version(),
        "host": socket.gethostname(),
        "device": device_name(device),
        "attempt": attempt,
    }
    nonfinite = not all(_finite(measured[k]) for k in ("nlc", "bias", "output_q", "c_out"))
    if config.measure_only or (window is not None and not inside(window, measured["nlc"])):
        arch = {
            **head,
            **{k: measured[k] for k in MEASURED},
            **untrained_row(),
            "nonfinite_init": nonfinite,
            "build_s": build_s,
            "measure_s": measured["measure_s"],
            "total_s": time.perf_counter() - t0,
            **tail,
            "finished_at": utc_now(),
        }
        to_table(ARCHITECTURES, [arch])
        return arch, [], []
    trajectory = Trajectory(options.nlc_trajectory, options.nlc_batches, options.batch_size)
    if live is not None:
        live.measured(measured["measure_s"])
    several = config.init_seeds > 1  # the seed-noise replicates: the row stays the first initialization's
    # the rates a window trains, from the architecture's design and measures at initialization (rate_window.py)
    rates = None if config.lr_window is None else window_of(config.lr_window, {**head, **measured}, protocol.num_lrs)
    outcome = train_architecture(
        spec,
        data,
        seed=unit.seed,
        protocol=protocol,
        init_seeds=replicate_seeds(unit.seed, config.init_seeds) if several else None,
        selected_from=0 if several else None,
        device=device,
        checkpoint_path=checkpoint_path,
        checkpoint_every_s=config.checkpoint_every_s,
        checkpoint_secret=checkpoint_secret,
        trajectory=trajectory,
        report=None if notes is None else notes.append,
        progress=None if live is None else live.epoch,
        rate_window=rates,
    )
    if live is not None:
        live.update(urgent=True, stage="finishing")
    t_after = time.perf_counter()
    measured.update(measure_trained(outcome.network, data, spec, options=options, seed=unit.seed))  # E.3
    measured["measure_s"] += time.perf_counter() - t_after
    total_s = time.perf_counter() - t0

    arch = {
        **head,
        **{k: measured[k] for k in MEASURED},
        # The selected run (with the split that selected it), the runs summary, all_diverged, train_s, and
        # c_out: the trainer's output scale (the cross-entropy loss divides by it; study.measure computes the
        # same quantity on the same data).
        **outcome.selected_row(),
        "trained": True,
        "nonfinite_init": nonfinite,
        "build_s": build_s,
        "measure_s": measured["measure_s"],
        "total_s": total_s,
        **tail,
        "finished_at": utc_now(),
    }
    run_rows = [{**ident, **row} for row in outcome.run_rows()]
    curve_rows = [{**ident, **row} for row in outcome.curve_rows()]
    # Check the rows against the schema here, on the worker: a mismatch is this attempt's error, not the driver's.
    to_table(ARCHITECTURES, [arch])
    to_table(RUNS, run_rows)
    if curve_rows:
        to_table(CURVES, curve_rows)
    return arch, run_rows, curve_rows


# -- the checkpoint of a unit in the study's storage --------------------------------------------------------
class MirroredCheckpoint:
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
            return os.path.join(self.store.checkpoint_folder(), self.parts[-1])
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


def prepare_worker(threads: int) -> None:
    """What a worker process sets for itself, once, before it runs units (process-wide; library code never
    does): torch's intra-op thread count (the unit's CPUs) and glibc's malloc policy (freed training memory
    stays in the process, ``study.training.allocator``). Idempotent: a reused worker calls it per unit."""
    import torch

    from ..training.allocator import keep_freed_memory

    torch.set_num_threads(threads)
    keep_freed_memory()


def unit_device(gpus: float) -> str:
    """The torch device of a unit holding ``gpus`` GPUs on this worker: ``cpu`` for 0, or on a rehearsal's node
    (``study.execution.cluster.LOGICAL_GPUS_ENV`` = 1: its GPUs are logical); else ``cuda``, which torch must see
    (never a silent fallback to the CPU on a real cluster)."""
    import torch

    if gpus <= 0 or os.environ.get(LOGICAL_GPUS_ENV) == "1":
        return "cpu"
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"gpus_per_arch = {gpus} but torch sees no CUDA device on {socket.gethostname()} "
            f"(only a rehearsal's nodes, with {LOGICAL_GPUS_ENV}=1, train on CPU under a logical GPU)"
        )
    from ..training.determinism import deterministic_cuda

    deterministic_cuda()  # before this process's first CUDA product (study.training.determinism)
    return "cuda"


def table_bytes(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream: how a worker returns a table (Ray's own serializer of Arrow tables rebuilds
    them column by column in Python on the driver, milliseconds for the 80 columns of one architecture)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_table_bytes(data: bytes) -> pa.Table:
    """The table of ``table_bytes``."""
    return pa.ipc.open_stream(data).read_all()


def unit_tables(arch: Mapping[str, Any], runs: list[dict], curves: list[dict]) -> dict:
    """A unit's rows as the tables of the schema that the driver commits (``Store.write_tables``), each as
    ``table_bytes``: ``architecture`` (one row), ``runs`` and ``curves`` (None where the unit has none). Built on the
    worker, so that the driver, which commits every unit of the study in one process, only writes them
    (``store.to_table`` checks every value: for a trained unit's thousands of curve rows it was most of the
    driver's time per unit)."""
    return {
        "architecture": table_bytes(to_table(ARCHITECTURES, [arch])),
        "runs": table_bytes(to_table(RUNS, runs)) if runs else None,
        "curves": table_bytes(to_table(CURVES, curves)) if curves else None,
    }


def execute_unit(payload: Mapping[str, Any], attempt: int) -> dict:
    """Run one unit on a Ray worker (the entry point of a worker's work: ``prepare_worker`` sets the process
    up), pick the device, fetch the dataset, train with the checkpoint in the study's storage, keeping its
    progress record (``study.execution.live``; with the job's ``probe`` it first times a few steps for the driver's
    estimate); return its tables (``unit_tables``; the driver writes them) and notes. ``payload``: a ``UnitJob``'s."""
    job = UnitJob.from_payload(payload)
    prepare_worker(job.threads)
    device = unit_device(job.gpus)
    unit = job.unit
    config = StudyConfig.from_dict(job.config)
    data = _dataset(job.data, device)
    store = Store(job.store)
    secret, _ = store.checkpoint_secret()  # made by the driver before any unit ran
    notes: list[str] = []
    with (
        MirroredCheckpoint(store, unit.name) as ckpt,
        UnitProgress(store, unit.name, attempt, probe=job.probe) as live,
    ):
        arch, runs, curves = compute_unit(
            unit,
            data,
            config,
            device=device,
            attempt=attempt,
            checkpoint_path=ckpt,
            checkpoint_secret=secret,
            notes=notes,
            window=job.window,
            live=live,
        )
    return {**unit_tables(arch, runs, curves), "notes": notes, "provenance": worker_provenance(device)}


def worker_provenance(device: Any) -> str:
    """This worker's provenance record (``study.experiment.provenance``) as the metadata value of one unit: its
    installation, and the device that computed the unit (CUDA's version and the GPU's name on a GPU)."""
    import torch

    on_gpu = torch.device(device if device is not None else "cpu").type == "cuda"
    name = device_name(device)
    record = provenance.current(
        cuda=torch.version.cuda if on_gpu else None, device=name.removeprefix("cuda:") if on_gpu else name
    )
    return provenance.record_json([(record, 1)])
