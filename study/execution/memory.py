"""The memory one unit of a study needs, estimated before anything runs, and what a worker has for it.

A unit trains the R runs of one architecture of P trainable parameters as one float64 stack
(``study.training.stack``); its peak, in bytes, is estimated as

    bytes = 8 (4 S + G + A + E + U) + D

    S = (1 + k) R P    the stack's state: the R runs' parameters and the optimizer's k slots per parameter
                       (``Optimizer.slots``: 0 for SGD, 1 for SGD with momentum, 2 for Adam). It is held twice,
                       as the current and the best state (``save_best``, ``rewind``), and twice again while runs
                       leave the stack (``keep`` copies the remaining runs' state before the old one is freed);
    G = c P            a step's gradients of one chunk of c runs, and as much again for the chunk's own network
                       (made before its parameters become views of the stack; none when c = R);
    A = 3 c B W        the activations autograd keeps for one chunk's backward pass: per layer its linear output,
                       its activation's output and the gradient flowing back, for B = min(batch size, training
                       points) examples; W = the sum of the layers' output widths;
    E = 2 min(e, R N w)  the evaluation of the stack (``study.training.loss.errors``: chunks of about e activations,
                       ``eval_elements`` of the device, a layer's input and output alive; N the largest split, w
                       the widest layer);
    U = 2 S            on object storage only: the checkpoint file read whole to be put to the store
                       (``study.execution.unit.MirroredCheckpoint``);
    D                  the dataset the worker holds: its splits' inputs (float64) and labels (int64).

Before training, the variability V at initialization (``study.metrics.variability``) evaluates the network on every
point of a g x g lattice of a plane at once (g = ``metrics.variability_grid``), a layer's input and output alive:

    L = g^2 (d_in + 2 w)   the lattice, w the widest layer; it comes before training, so the peak is
                           8 max(4 S + G + A + E + U, L) + D.

A grid of 10^6 per side is 10^12 points: refused here, before the study starts (it was an allocation of hundreds
of terabytes in every unit).

c is the trainer's runs per chunk: on a CPU its ``auto_chunk`` rule with the worker's threads, on a GPU all R.
The terms add up rather than peak one at a time: a worker's malloc keeps freed memory for the next step
(``study.training.allocator``), so a step's and an evaluation's buffers are still in the process when runs
leave the stack. docs/running.md compares the estimate with measured peaks.

What a worker has (``worker_memory``): Ray's ``memory`` resource of a node (the machine's physical memory where
Ray reports none), shared by the units that node runs at once (its CPUs over ``cpus_per_arch``, its GPUs over
``gpus_per_arch``, at most ``max_in_flight``). A unit runs where it fits best. On a GPU the stack lives in the
GPU's memory, which Ray does not report: the estimate is then printed, not checked.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Iterable

from archstudy.sampling import ArchSpec

from ..experiment.protocol import Protocol

FLOAT64 = 8  # bytes of every parameter, state and activation (the study is float64 throughout)
INT64 = 8


@dataclass(frozen=True)
class Estimate:
    """The estimated peak of one unit (module docstring), its terms in elements (``bytes`` in bytes)."""

    params: int  # P
    runs: int  # R
    slots: int  # k
    chunk: int  # c
    state: int  # S
    step: int  # G
    activations: int  # A
    evaluation: int  # E
    upload: int  # U
    data: int  # D, bytes
    lattice: int = 0  # L: the variability lattice at initialization (0: not measured)

    @property
    def training(self) -> int:
        """4 S + G + A + E + U, in elements."""
        return 4 * self.state + self.step + self.activations + self.evaluation + self.upload

    @property
    def bytes(self) -> int:
        return FLOAT64 * max(self.training, self.lattice) + self.data

    @property
    def copies(self) -> int:
        """Copies of the parameters the state terms hold: 4 (1 + k)."""
        return 4 * (1 + self.slots)

    def terms(self) -> str:
        """The estimate in words, for the plan's line and a refusal."""
        parts = [
            f"{self.params:,} parameters x {self.runs} runs x {self.copies} copies x 8 bytes = "
            f"{size(FLOAT64 * 4 * self.state)}"
        ]
        for name, elements in (
            ("steps", self.step + self.activations),
            ("evaluation", self.evaluation),
            ("checkpoint upload", self.upload),
        ):
            if elements:
                parts.append(f"{name} {size(FLOAT64 * elements)}")
        parts.append(f"data {size(self.data)}")
        if self.lattice > self.training:
            parts.append(f"and before training the variability lattice {size(FLOAT64 * self.lattice)}, the peak")
        return ", ".join(parts)


def size(n: float) -> str:
    """Bytes as people read them: 1.3 GB, 512 MB, 96 kB (powers of 1000)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.0f} {unit}" if n >= 1000 * scale else f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


def data_bytes(data) -> int:
    """D: the bytes of a dataset's three splits (``x`` float64, ``y`` int64)."""
    return sum(split.x.numel() * FLOAT64 + split.y.numel() * INT64 for split in (data.train, data.val, data.test))


def runs_per_chunk(spec: ArchSpec, runs: int, batch: int, threads: int, gpu: bool) -> int:
    """c: the runs of the largest step chunk for a worker with ``threads`` torch threads: the trainer's chunk size
    (``study.training.trainer.chunk_size``), balanced over the chunks (``study.training.stack.chunks``); all
    runs on a GPU."""
    from ..training.trainer import chunk_size

    if gpu:
        return runs
    chunk = chunk_size(spec, runs, batch, threads)
    return -(-runs // -(-runs // chunk))  # ceil(R / n) for n = ceil(R / chunk) balanced chunks


def estimate(
    spec: ArchSpec,
    protocol: Protocol,
    *,
    n_train: int,
    n_largest: int,
    data: int,
    threads: int = 1,
    gpu: bool = False,
    object_storage: bool = False,
    grid: int = 0,
    inits: int = 1,
) -> Estimate:
    """The estimated peak of training ``spec`` under ``protocol`` (module docstring): ``n_train`` training points,
    ``n_largest`` points in the largest split, ``data`` bytes of dataset, ``threads`` torch threads, ``grid``
    points per side of the variability lattice (0: none), ``inits`` initializations in the stack (``init_seeds``)."""
    from ..training.loss import eval_elements
    from ..training.optim import optimizer_of

    P = spec.num_params
    R = len(protocol.rates(1.0)) * inits  # one group of runs per initialization of the unit
    k = len(optimizer_of(protocol).slots)
    B = max(1, min(protocol.batch_size, n_train))
    c = runs_per_chunk(spec, R, B, threads, gpu)
    W = sum(layer.fan_out for layer in spec.layers())
    widest = max(spec.width, spec.d_in, spec.d_out)
    S = (1 + k) * R * P
    return Estimate(
        params=P,
        runs=R,
        slots=k,
        chunk=c,
        state=S,
        step=c * P * (1 if c == R else 2),
        activations=3 * c * B * W,
        evaluation=2 * min(eval_elements("cuda" if gpu else "cpu"), R * n_largest * widest),
        upload=2 * S if object_storage else 0,
        data=data,
        lattice=grid * grid * (spec.d_in + 2 * widest) if grid and spec.d_in >= 2 else 0,
    )


def largest(
    specs: Iterable[ArchSpec],
    protocol: Protocol,
    data,
    *,
    threads: int = 1,
    gpu: bool = False,
    object_storage: bool = False,
    grid: int = 0,
    inits: int = 1,
) -> tuple[ArchSpec, Estimate] | None:
    """The spec of ``specs`` that needs the most memory on ``data`` (a ``Dataset``), and its estimate."""
    n_train = len(data.train)
    n_largest = max(len(data.train), len(data.val), len(data.test))
    d = data_bytes(data)
    seen: dict[str, tuple[ArchSpec, Estimate]] = {}
    best = None
    for spec in specs:
        if spec.content_id in seen:
            continue
        e = estimate(
            spec,
            protocol,
            n_train=n_train,
            n_largest=n_largest,
            data=d,
            threads=threads,
            gpu=gpu,
            object_storage=object_storage,
            grid=grid,
            inits=inits,
        )
        seen[spec.content_id] = (spec, e)
        if best is None or e.bytes > best[1].bytes:
            best = (spec, e)
    return best


# -- what a worker has ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerMemory:
    """The memory one unit has on the node where it fits best, and how that was found."""

    bytes: float
    node_bytes: float
    at_once: int
    source: str  # "Ray's memory resource" or "the machine's physical memory"

    def describe(self) -> str:
        shared = f", shared by the {self.at_once} architectures it runs at once" if self.at_once > 1 else ""
        return f"a worker has {size(self.bytes)} ({self.source}: {size(self.node_bytes)} on its node{shared})"


def physical_memory() -> float:
    """This machine's physical memory in bytes (0 where the platform does not say)."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def worker_memory(nodes: list[dict], cpus: float, gpus: float, max_in_flight: int | None) -> WorkerMemory | None:
    """The most memory one unit can have on the live ``nodes`` (``ray.nodes()``) that can run one (module
    docstring); None when no live node can run one now."""
    best = None
    for node in nodes:
        if not node.get("Alive"):
            continue
        res = node.get("Resources", {})
        slots = math.floor(res.get("CPU", 0.0) / cpus + 1e-9) if cpus > 0 else 10**6
        if gpus > 0:
            slots = min(slots, math.floor(res.get("GPU", 0.0) / gpus + 1e-9))
        if slots < 1:
            continue
        at_once = min(slots, max_in_flight) if max_in_flight else slots
        memory, source = res.get("memory", 0.0), "Ray's memory resource"
        if not memory:
            memory, source = physical_memory(), "the machine's physical memory"
        candidate = WorkerMemory(memory / at_once, memory, at_once, source)
        if best is None or candidate.bytes > best.bytes:
            best = candidate
    return best
