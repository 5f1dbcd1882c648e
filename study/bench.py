"""``archstudy bench``: the stacked trainer against the same runs trained one after another, and against
bare float64 GEMMs at the same shapes, timed side by side in one process.

For each case (a dense batchnorm-relu net of a given parameter count, 40 runs, minibatch 250) four
things are timed, interleaved, ``repeats`` times, and the best time of each is kept (the machine may be
shared; interleaving makes the ratios fair, the minimum is the least disturbed measurement):

* stacked:    ``steps`` training steps of the R-run stack, exactly as ``train_architecture`` does them
              (``study.training.stack.train_step``: automatic chunking, folded forward, in-place SGD);
* sequential: the same R runs one after another, a plain per-run loop: each run its own ``nn.Sequential``
              of ``nn.Linear`` / ``nn.BatchNorm1d`` / activation and its own ``torch.optim.SGD``
              (``time_plain``; the baseline the stacked trainer was prototyped against);
* same step:  the R runs one after another through the trainer's own optimized step on R = 1 networks
              (``time_sequential``): every optimization of the step helps both sides alike, so the ratio is
              what stacking alone buys;
* gemm:       the matrix products of one stacked step (``gemm_ops``: forward, weight gradient and input
              gradient of every linear layer, batched over all R runs) on preallocated operands, nothing
              else: the roofline of the step.

Per epoch = per step x (samples // batch). ``gflops`` = matrix-product flops of the step (``step_flops``)
/ stacked step time; ``gemm_fraction`` = stacked GFLOP/s / bare-GEMM GFLOP/s = bare GEMM time / stacked
step time: the share of the GEMM roofline the whole training step reaches (chunked steps can exceed 1:
their products are smaller batches, which run faster in cache than the batch of R). Times are wall
clock; the ``*_cpu`` fields repeat them in CPU time of the process (steadier on a shared machine, equal
to wall time with one thread). Per-epoch evaluation (a forward pass over the validation set) is not
timed: it is the same for both ways of training.

``archstudy bench`` configures glibc's malloc first, as every study worker does
(``study.training.allocator.keep_freed_memory``); from Python, call it first for the same conditions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sampling import ArchSpec, solve_width

from .activations import Activation
from .layers import ActivationLayer
from .network import build_network
from .protocol import Protocol
from .training.stack import new_stack, train_step
from .training.trainer import auto_chunk

FIELDS = ("case", "params", "runs", "stacked_s_per_epoch", "sequential_s_per_epoch", "speedup", "gflops",
          "gemm_gflops", "gemm_fraction")


@dataclass(frozen=True)
class BenchCase:
    name: str
    spec: ArchSpec
    samples: int  # training examples per epoch
    steps: int  # timed steps per measurement

    @property
    def params(self) -> int:
        return self.spec.num_params


def _dense(depth: int, d_in: int, d_out: int, budget: int) -> ArchSpec:
    return solve_width(ArchSpec(depth=depth, width=8, d_in=d_in, d_out=d_out, activation="relu", norm="batch"),
                       budget)


CASES = {
    # waveform-noise sized (40 inputs, 3 classes, 3,000 training examples), 20k parameters at three of the
    # depths the sampler draws (3 .. 49): the speedup depends on the shape far more than on the size
    "small": BenchCase("small", _dense(9, 40, 3, 20_000), 3_000, 12),
    "small-d3": BenchCase("small-d3", _dense(3, 40, 3, 20_000), 3_000, 12),
    "small-d25": BenchCase("small-d25", _dense(25, 40, 3, 20_000), 3_000, 12),
    # CIFAR10 sized (PCA input of 334 dimensions, 10 classes, 40,000 training examples): the paper's budget
    "1M": BenchCase("1M", _dense(9, 334, 10, 1_000_000), 40_000, 2),
}
DEFAULT_CASES = ("small-d3", "small", "small-d25", "1M")


def step_flops(spec: ArchSpec, runs: int, batch: int) -> float:
    """Matrix-product flops of one training step of ``runs`` runs on minibatches of ``batch``: per dense
    layer (fan_in -> fan_out) and run, 2 B fan_in fan_out each for the forward product, the weight
    gradient and the input gradient (none for the first layer: the data needs no gradient). Householder
    layers (two rank-one products per example and direction) are counted the same way."""
    total = 0
    for layer in spec.layers():
        products = 2 if layer.index == 1 else 3
        if layer.kind == "householder":
            total += products * 2 * 2 * batch * layer.fan_in
        else:
            total += products * 2 * batch * layer.fan_in * layer.fan_out
    return float(total * runs)


def _clock() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, all threads)."""
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    now = _clock()
    return now[0] - start[0], now[1] - start[1]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _batches(spec: ArchSpec, batch: int, device: torch.device, count: int = 4):
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(batch, spec.d_in, generator=g, dtype=torch.float64).to(device) for _ in range(count)]
    ys = [torch.randint(0, spec.d_out, (batch,), generator=g).to(device) for _ in range(count)]
    return list(zip(xs, ys))


PROTOCOL = Protocol()
LR = 1e-4  # small: timing must not depend on where training goes


def time_stacked(spec: ArchSpec, runs: int, steps: int, batch: int, device: torch.device,
                 chunk: int | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of the R-run stack (``chunk``: as the trainer chooses it)."""
    stack = new_stack(build_network(spec, 0, runs=runs, device=device), [LR] * runs, PROTOCOL)
    data = _batches(spec, batch, device)
    chunk = chunk or auto_chunk(spec, runs, batch, device)
    train_step(stack, *data[0], 1.0, PROTOCOL, chunk)  # warm-up: allocator, kernels
    _sync(device)
    t = _clock()
    for i in range(steps):
        train_step(stack, *data[i % len(data)], 1.0, PROTOCOL, chunk)
    _sync(device)
    return tuple(x / steps for x in _since(t))


def time_sequential(spec: ArchSpec, runs: int, steps: int, batch: int,
                    device: torch.device) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of all R runs, one after another with R = 1 networks."""
    data = _batches(spec, batch, device)
    warm = new_stack(build_network(spec, 0, runs=1, device=device), [LR], PROTOCOL)
    train_step(warm, *data[0], 1.0, PROTOCOL)
    wall = cpu = 0.0
    for _ in range(runs):
        stack = new_stack(build_network(spec, 0, runs=1, device=device), [LR], PROTOCOL)
        _sync(device)
        t = _clock()
        for i in range(steps):
            train_step(stack, *data[i % len(data)], 1.0, PROTOCOL)
        _sync(device)
        w, c = _since(t)
        wall, cpu = wall + w, cpu + c
    return wall / steps, cpu / steps


def plain_model(spec: ArchSpec, device: torch.device) -> nn.Sequential:
    """The architecture as anyone would write it for one run: ``nn.Linear`` layers, ``nn.BatchNorm1d`` /
    ``nn.LayerNorm`` without affine parameters, the activation module; float64 (dense, skip-free specs: the
    bench's cases)."""
    if spec.weights != "dense" or spec.param != "sp" or spec.skip != "none":
        raise ValueError("the plain baseline builds dense, skip-free SP networks only")
    layers: list[nn.Module] = []
    for layer in spec.layers():
        layers.append(nn.Linear(layer.fan_in, layer.fan_out, dtype=torch.float64, device=device))
        if layer.norm == "batch":
            layers.append(nn.BatchNorm1d(layer.fan_out, affine=False, dtype=torch.float64, device=device))
        elif layer.norm == "layer":
            layers.append(nn.LayerNorm(layer.fan_out, elementwise_affine=False, dtype=torch.float64, device=device))
        if layer.activation:
            layers.append(ActivationLayer(Activation.of(spec)))
    return nn.Sequential(*layers)


def time_plain(spec: ArchSpec, runs: int, steps: int, batch: int, device: torch.device) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of all R runs trained one after another by a plain per-run
    loop: each run its own ``plain_model`` and ``torch.optim.SGD``, ``loss.backward()``, ``opt.step()``
    (the baseline the stacked trainer was prototyped against)."""
    data = _batches(spec, batch, device)
    wall = cpu = 0.0
    for r in range(runs + 1):  # run 0 warms up (allocator, kernels) and is not timed
        model = plain_model(spec, device).train()
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        _sync(device)
        t = _clock()
        for i in range(steps):
            x, y = data[i % len(data)]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
        _sync(device)
        if r:
            w, c = _since(t)
            wall, cpu = wall + w, cpu + c
    return wall / steps, cpu / steps


def gemm_ops(spec: ArchSpec, runs: int, batch: int, device: torch.device) -> list[tuple]:
    """The matrix products of one stacked training step, as (function, a, b, out) with preallocated
    operands: per dense layer the forward product (one GEMM for all runs on the shared input of layer 1,
    a batched one after), the weight gradient, and the input gradient (not for layer 1)."""
    dt = torch.float64
    ops = []
    for layer in spec.layers():
        i, o = layer.fan_in, layer.fan_out
        w = torch.randn(runs, o, i, dtype=dt, device=device)
        if layer.index == 1:
            x = torch.randn(i, batch, dtype=dt, device=device)
            ops.append((torch.mm, w.view(runs * o, i), x, torch.empty(runs * o, batch, dtype=dt, device=device)))
            g = torch.randn(runs * o, batch, dtype=dt, device=device)
            ops.append((torch.mm, g, x.T, torch.empty(runs * o, i, dtype=dt, device=device)))
            continue
        x = torch.randn(runs, i, batch, dtype=dt, device=device)
        g = torch.randn(runs, o, batch, dtype=dt, device=device)
        ops.append((torch.bmm, w, x, torch.empty(runs, o, batch, dtype=dt, device=device)))
        ops.append((torch.bmm, g, x.transpose(1, 2), torch.empty(runs, o, i, dtype=dt, device=device)))
        ops.append((torch.bmm, w.transpose(1, 2), g, torch.empty(runs, i, batch, dtype=dt, device=device)))
    return ops


def time_gemm(spec: ArchSpec, runs: int, steps: int, batch: int, device: torch.device) -> tuple[float, float]:
    """(wall, CPU) seconds for the bare matrix products of one stacked training step (``gemm_ops``)."""
    ops = gemm_ops(spec, runs, batch, device)

    def once():
        for f, a, b, out in ops:
            f(a, b, out=out)

    once()
    _sync(device)
    t = _clock()
    for _ in range(steps):
        once()
    _sync(device)
    return tuple(x / steps for x in _since(t))


def bench_case(case: BenchCase, runs: int = 40, batch: int = 250, repeats: int = 3,
               device: str | torch.device = "cpu", steps: int | None = None) -> dict:
    """One row of the bench table (see the module docstring)."""
    device = torch.device(device)
    steps = steps or case.steps
    spec = case.spec
    stacked, plain, same_step, gemm = [], [], [], []
    for _ in range(repeats):  # interleaved, so a burst of load hits all four alike
        stacked.append(time_stacked(spec, runs, steps, batch, device))
        plain.append(time_plain(spec, runs, steps, batch, device))
        same_step.append(time_sequential(spec, runs, steps, batch, device))
        gemm.append(time_gemm(spec, runs, steps, batch, device))
    per_epoch = max(1, case.samples // batch)
    flops = step_flops(spec, runs, batch)
    best = lambda times, i: min(t[i] for t in times)  # noqa: E731
    t_stack, t_seq, t_same, t_gemm = best(stacked, 0), best(plain, 0), best(same_step, 0), best(gemm, 0)
    c_stack, c_seq, c_same, c_gemm = best(stacked, 1), best(plain, 1), best(same_step, 1), best(gemm, 1)
    return {
        "case": case.name, "params": case.params, "runs": runs,
        "stacked_s_per_epoch": t_stack * per_epoch, "sequential_s_per_epoch": t_seq * per_epoch,
        "speedup": t_seq / t_stack, "gflops": flops / t_stack / 1e9, "gemm_gflops": flops / t_gemm / 1e9,
        "gemm_fraction": t_gemm / t_stack,
        # the runs one after another through the trainer's own optimized step: what stacking alone buys
        "same_step_s_per_epoch": t_same * per_epoch, "speedup_same_step": t_same / t_stack,
        # the same from CPU time (all threads of the process): steadier when the machine is shared
        "stacked_cpu_s_per_epoch": c_stack * per_epoch, "sequential_cpu_s_per_epoch": c_seq * per_epoch,
        "speedup_cpu": c_seq / c_stack, "gemm_fraction_cpu": c_gemm / c_stack,
        "depth": spec.depth, "width": spec.width, "samples": case.samples, "batch": batch,
        "chunk": auto_chunk(spec, runs, batch, device) or runs, "threads": torch.get_num_threads(),
        "device": str(device), "repeats": repeats, "steps": steps,
    }


def run_bench(cases=DEFAULT_CASES, runs: int = 40, repeats: int = 3, device="cpu",
              steps: int | None = None) -> list[dict]:
    return [bench_case(CASES[name], runs=runs, repeats=repeats, device=device, steps=steps) for name in cases]


def format_table(rows: list[dict]) -> str:
    head = ("case", "params", "runs", "chunk", "stacked s/epoch", "sequential s/epoch", "speedup",
            "same-step s/epoch", "speedup", "GFLOP/s", "GEMM GFLOP/s", "of GEMM")
    lines = [head]
    for r in rows:
        lines.append((r["case"], f"{r['params']:,}", str(r["runs"]), str(r["chunk"]),
                      f"{r['stacked_s_per_epoch']:.3g}", f"{r['sequential_s_per_epoch']:.3g}",
                      f"{r['speedup']:.2f}x", f"{r['same_step_s_per_epoch']:.3g}", f"{r['speedup_same_step']:.2f}x",
                      f"{r['gflops']:.1f}", f"{r['gemm_gflops']:.1f}", f"{r['gemm_fraction']:.2f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines)
