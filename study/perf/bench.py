"""``archstudy bench``: the stacked trainer against the same runs trained one after another, against bare
float64 GEMMs at the same shapes, and its compiled step against its eager one, timed side by side in one
process.

For each case (a batchnorm-relu net of a given parameter count, 40 runs, minibatch 250) these are timed,
interleaved, ``repeats`` times, and the best time of each is kept (the machine may be shared;
interleaving makes the ratios fair, the minimum is the least disturbed measurement):

* stacked:    ``steps`` training steps of the R-run stack, exactly as ``train_architecture`` does them
              (``study.training.stack.train_step``: automatic chunking, folded forward, in-place SGD),
              with the eager forward;
* compiled:   the same steps with the forward through ``torch.compile`` (``study.training.compiled``);
              its compile (the first call, untimed in the step time) is reported as ``compile_s``;
              ``faster`` says which of the two this measurement shows faster (``decide``: compiled when
              it takes at most 0.9 of the eager time), ``rule`` which one the trainer's rule
              (``choose``) picks for this case, and ``layer_steps`` the quantity the GPU rule is set on;
* graph:      on a GPU, the same steps as one CUDA graph replayed per step (``study.training.graphed``: the
              eager step captured once; each step gathers its minibatch into the graph's static buffers and
              replays), ``graph_gemm_fraction`` its fraction of the bare GEMMs; NaN on a CPU, which has none;
* fused graph: on a GPU, the graph of the step whose normalizations and activations are fused epilogues
              (``study.training.stack.fused_forward``, ``study.nn.epilogue``: the trainer's rule on a GPU for
              nets with normalizations), ``graph_fused_gemm_fraction`` its fraction of the bare GEMMs and
              ``graph_fused_setup_s`` the seconds of its first compile (once per process) and capture;
* sequential: the same R runs one after another, a plain per-run loop: each run its own ``nn.Sequential``
              of ``nn.Linear`` / ``nn.BatchNorm1d`` / activation and its own ``torch.optim.SGD``
              (``time_plain``; the prototypes' baseline); dense nets only (NaN for Householder ones);
* same step:  the R runs one after another through the trainer's own optimized step on R = 1 networks
              (``time_sequential``): every optimization of the step helps both sides alike, so the ratio is
              what stacking alone buys;
* gemm:       the matrix products of one stacked step (``gemm_ops``: forward, weight gradient and input
              gradient of every linear layer, batched over all R runs) on preallocated operands, nothing
              else: the roofline of the step.

Counted, not timed: the operators one training step of the whole stack dispatches (views excluded;
``study.perf.operators.step_operators``), in total (``operators``), per layer (``operators_per_layer``), per added
hidden layer (``operators_per_added_layer``: ``study.perf.operators.added_layer_operators``), by
name (``operators_by_name``), and its views (``operator_views``). On a GPU, where the step waits for the host,
they are what the step's time follows; on a CPU each of the trainer's ``chunks`` dispatches them.

Per epoch = per step x (samples // batch). ``gflops`` = matrix-product flops of the step (``step_flops``)
/ stacked step time; ``gemm_fraction`` = stacked GFLOP/s / bare-GEMM GFLOP/s = bare GEMM time / stacked
step time (chunked steps can exceed 1: their products are smaller batches, which run faster in cache
than the batch of R); ``peak_fraction`` = stacked GFLOP/s / the device's float64 peak (``FP64_PEAKS``;
NaN for a device not in the table). On a CPU times are wall clock, and the ``*_cpu`` fields repeat them
in CPU time of the process (steadier on a shared machine); on a GPU they are CUDA-event times with one
synchronization after the timed steps (``study.training.timing``). Per-epoch evaluation is not timed
here: it is the same for every way of training (``study.perf.projection`` measures it).

``archstudy bench`` configures glibc's malloc first, as every study worker does
(``study.training.allocator.keep_freed_memory``); from Python, call it first for the same conditions.

``throughput`` measures several architectures sharing one device (``--gpus-per-arch 0.25``: four
processes on one GPU; on a CPU one process per core), as architectures per hour.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time

import torch
import torch.nn.functional as F
from torch import nn

from archstudy.sampling import ArchSpec

from ..nn.activations import Activation
from ..nn.families import family
from ..nn.layers import ActivationLayer
from ..nn.network import build_network
from ..experiment.protocol import Protocol
from ..training.compiled import CompiledForward, choose, decide, layer_steps
from ..training.graphed import GraphedStep
from ..training.stack import chunks, folded_forward, fused_forward, new_stack, train_step
from ..training.timing import TIMING_LR, synchronize, time_calls, timing_batches
from ..training.trainer import auto_chunk
from .cases import CASES, CPU_CASES, GPU_CASES, PAPER_CASES, BenchCase  # noqa: F401 (the public names)
from .operators import added_layer_operators, step_operators
from ..training.epoch_profiles import EXPECTED_STACK_EPOCHS

FIELDS = (
    "case",
    "params",
    "runs",
    "stacked_s_per_epoch",
    "sequential_s_per_epoch",
    "speedup",
    "gflops",
    "gemm_gflops",
    "gemm_fraction",
    "compiled_s_per_epoch",
    "compile_s",
    "graph_s_per_epoch",
    "graph_gemm_fraction",
    "graph_compiled_s_per_epoch",
    "graph_compiled_gemm_fraction",
    "graph_fused_s_per_epoch",
    "graph_fused_gemm_fraction",
    "traffic_gb",
    "memory_floor_fraction",
    "rule",
    "peak_fraction",
    "operators",
    "operators_per_layer",
    "operators_per_added_layer",
)


def default_cases(device: torch.device) -> tuple[str, ...]:
    return CPU_CASES if device.type == "cpu" else GPU_CASES


# Float64 peak of a device, TFLOP/s: (substring of torch.cuda.get_device_name, peak, source). First match
# wins, so the specific names come before the general ones. The peaks are NVIDIA's data sheets' FP64
# Tensor Core numbers where the GPU has FP64 tensor cores (cuBLAS uses them for DGEMM), else plain FP64.
FP64_PEAKS = (
    ("H100 PCIe", 51.0, "NVIDIA H100 Tensor Core GPU data sheet: H100 PCIe, FP64 Tensor Core"),
    ("H100 NVL", 60.0, "NVIDIA H100 Tensor Core GPU data sheet: H100 NVL, FP64 Tensor Core"),
    ("H100", 67.0, "NVIDIA H100 Tensor Core GPU data sheet: H100 SXM, FP64 Tensor Core"),
    ("H200 NVL", 60.0, "NVIDIA H200 Tensor Core GPU data sheet: H200 NVL, FP64 Tensor Core"),
    ("H200", 67.0, "NVIDIA H200 Tensor Core GPU data sheet: H200 SXM, FP64 Tensor Core"),
    ("A100", 19.5, "NVIDIA A100 Tensor Core GPU data sheet: FP64 Tensor Core (SXM and PCIe)"),
    ("V100S", 8.2, "NVIDIA V100S data sheet: FP64 (no FP64 tensor cores)"),
    ("V100-PCIE", 7.0, "NVIDIA V100 data sheet: V100 PCIe, FP64 (no FP64 tensor cores)"),
    ("V100", 7.8, "NVIDIA V100 data sheet: V100 SXM2, FP64 (no FP64 tensor cores)"),
)


# torch.compile's modes that capture CUDA graphs of their own: their forward cannot be captured in another graph.
OWN_CUDA_GRAPHS = ("reduce-overhead", "max-autotune")


def error_line(e: BaseException) -> str:
    """An error in one line for a bench's row: its type and its first line, and its last where the first only
    introduces the rest (torch.compile's "backend='inductor' raised:")."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    text = " ".join(lines[:1] + (lines[-1:] if len(lines) > 1 and lines[0].endswith(":") else []))
    return f"{type(e).__name__}: {text}"


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


def fp64_peak(name: str) -> tuple[float, str]:
    """(TFLOP/s, source) of a device by name (``device_name``); (NaN, why) when it is not in ``FP64_PEAKS``."""
    for pattern, peak, source in FP64_PEAKS:
        if pattern.lower() in name.lower():
            return peak, source
    return math.nan, f"{name!r} is not in the table of known float64 peaks (study.perf.bench.FP64_PEAKS)"


def copy_bandwidth(device: torch.device, megabytes: int | None = None, repeats: int = 3) -> float:
    """The memory bandwidth a large copy reaches on ``device``, TB/s: the bytes read plus the bytes written by
    ``dst.copy_(src)`` of ``megabytes`` (default 1024 on a GPU, 256 on a CPU: far past the caches) per second, the
    best of ``repeats`` times 3 copies. Measured, not a data sheet's number: the ceiling of the step's operators
    other than the matrix products, which only move memory."""
    megabytes = megabytes or (1024 if device.type == "cuda" else 256)
    src = torch.ones(megabytes * 2**20 // 8, dtype=torch.float64, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # the pages touched, the kernel loaded
    seconds = min(time_calls(lambda i: dst.copy_(src), 3, device)[0] for _ in range(repeats))
    return 2 * src.numel() * 8 / seconds / 1e12


def memory_floor_fraction(t_gemm: float, traffic_bytes: float, tb_s: float) -> float:
    """The largest fraction of the bare GEMMs' time a step can reach with its operators as they are:
    t_gemm / (t_gemm + traffic / bandwidth), every operator other than the matrix products moving its bytes
    (``study.perf.operators``: the floor of its traffic) at the bandwidth ``tb_s`` (``copy_bandwidth``), nothing
    overlapping (a step runs its kernels one after another on one stream)."""
    return t_gemm / (t_gemm + traffic_bytes / (tb_s * 1e12))


def step_flops(spec: ArchSpec, runs: int, batch: int) -> float:
    """Matrix-product flops of one training step of ``runs`` runs on minibatches of ``batch``: per layer and
    run, 2 B x its family's multiply-adds per example (``Family.multiply_adds``: fan_in fan_out for a dense or
    GmP layer, 2n for a Householder layer's two rank-one products) each for the forward products, the weight
    gradient and the input gradient (none for the first layer: the data needs no gradient)."""
    total = 0
    for layer in spec.layers():
        products = 2 if layer.index == 1 else 3
        total += products * 2 * batch * family(layer.kind).multiply_adds(layer)
    return float(total * runs)


PROTOCOL = Protocol()


def stacked_runner(
    spec: ArchSpec, runs: int, batch: int, device: torch.device, chunk: int | None = None, forward=folded_forward
):
    """A function ``step(i)`` doing training step i of a fresh R-run stack, after one untimed step (the
    allocator's first blocks, a compile)."""
    stack = new_stack(build_network(spec, 0, runs=runs, device=device), [TIMING_LR] * runs, PROTOCOL)
    data = timing_batches(spec, batch, device)
    chunk = chunk or auto_chunk(spec, runs, batch, device)

    def step(i: int) -> None:
        train_step(stack, *data[i % len(data)], 1.0, PROTOCOL, chunk, forward)

    step(0)
    return step


class GraphedRunner:
    """``stacked_runner``'s steps as one CUDA graph (``study.training.graphed.GraphedStep``): the bench's minibatches
    stacked into one source, call i gathers minibatch i from it and replays; captured (and one step done) when
    made. ``graphed.capture_s``: the seconds of the capture (warm-up included). ``forward``: the training forward
    the graph records (``study.training.compiled.CompiledForward``: the compiled one)."""

    def __init__(
        self,
        spec: ArchSpec,
        runs: int,
        batch: int,
        device: torch.device,
        chunk: int | None = None,
        forward=folded_forward,
    ):
        stack = new_stack(build_network(spec, 0, runs=runs, device=device), [TIMING_LR] * runs, PROTOCOL)
        data = timing_batches(spec, batch, device)
        xs, ys = torch.cat([x for x, _ in data]), torch.cat([y for _, y in data])
        self.idx = [torch.arange(i * batch, (i + 1) * batch, device=device) for i in range(len(data))]
        self.graphed = GraphedStep(forward)  # it holds the stack and the sources while the graph replays into them
        self.graphed.prepare(stack, xs, ys, self.idx[0], 1.0, PROTOCOL, chunk)
        self(0)

    def __call__(self, i: int) -> None:
        self.graphed.step(self.idx[i % len(self.idx)])


def time_stacked(
    spec: ArchSpec,
    runs: int,
    steps: int,
    batch: int,
    device: torch.device,
    chunk: int | None = None,
    forward=folded_forward,
) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of the R-run stack (``chunk``: as the trainer chooses it)."""
    return time_calls(stacked_runner(spec, runs, batch, device, chunk, forward), steps, device)


def time_sequential(spec: ArchSpec, runs: int, steps: int, batch: int, device: torch.device) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of all R runs, one after another with R = 1 networks."""
    wall = cpu = 0.0
    stacked_runner(spec, 1, batch, device)  # warm-up
    for _ in range(runs):
        w, c = time_stacked(spec, 1, steps, batch, device)
        wall, cpu = wall + w, cpu + c
    return wall, cpu


def plain_model(spec: ArchSpec, device: torch.device) -> nn.Sequential:
    """The architecture as anyone would write it for one run: ``nn.Linear`` layers, ``nn.BatchNorm1d`` /
    ``nn.LayerNorm`` without affine parameters, the activation module; float64 (dense, skip-free specs: the
    bench's cases)."""
    if not plain_possible(spec):
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


def plain_possible(spec: ArchSpec) -> bool:
    return spec.weights == "dense" and spec.param == "sp" and spec.skip == "none"


def time_plain(spec: ArchSpec, runs: int, steps: int, batch: int, device: torch.device) -> tuple[float, float]:
    """(wall, CPU) seconds per training step of all R runs trained one after another by a plain per-run
    loop: each run its own ``plain_model`` and ``torch.optim.SGD``, ``loss.backward()``, ``opt.step()``
    (the baseline the stacked trainer was prototyped against)."""
    data = timing_batches(spec, batch, device)
    wall = cpu = 0.0
    for r in range(runs + 1):  # run 0 warms up (allocator, kernels) and is not timed
        model = plain_model(spec, device).train()
        opt = torch.optim.SGD(model.parameters(), lr=TIMING_LR)

        # called only within this iteration (time_calls below): the loop's model and opt are this run's
        def step(i: int) -> None:
            x, y = data[i % len(data)]
            opt.zero_grad(set_to_none=True)  # noqa: B023
            F.cross_entropy(model(x), y).backward()  # noqa: B023
            opt.step()  # noqa: B023

        w, c = time_calls(step, steps, device)
        if r:
            wall, cpu = wall + w, cpu + c
    return wall, cpu


def gemm_ops(spec: ArchSpec, runs: int, batch: int, device: torch.device) -> list[tuple]:
    """The matrix products of one stacked training step, as (function, a, b, out) with preallocated
    operands: per matrix o x i its layer's family multiplies each example by (``Family.products``: a dense or
    GmP layer's weight matrix, a Householder layer's u^T and u, rank one), the forward product (one GEMM for all
    runs on the shared input of layer 1, a batched one after), the weight gradient, and the input gradient (not
    for layer 1), at the flops ``step_flops`` counts."""
    dt = torch.float64
    ops = []
    for layer in spec.layers():
        for o, i in family(layer.kind).products(layer):
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

    def once(i: int) -> None:
        for f, a, b, out in ops:
            f(a, b, out=out)

    once(0)
    return time_calls(once, steps, device)


def bench_case(
    case: BenchCase,
    runs: int = 40,
    batch: int = 250,
    repeats: int = 3,
    device: str | torch.device = "cpu",
    steps: int | None = None,
    compiled: bool = True,
    compile_mode: str | None = None,
    plain: bool = True,
    compile_backend: str = "inductor",
    chunk: int | None = None,
    graph: bool | None = None,
) -> dict:
    """One row of the bench table (see the module docstring). ``compiled``: also time the compiled step
    (``compile_mode``, ``compile_backend``: ``torch.compile``'s); ``plain``: also time the two
    one-run-after-another loops; ``chunk``: runs per chunk of the stacked steps (default: the trainer's
    ``auto_chunk``); ``graph``: also time the step as a CUDA graph (default: on a CUDA device)."""
    device = torch.device(device)
    graph = device.type == "cuda" if graph is None else graph
    steps = steps or case.steps
    spec = case.spec
    chunk = chunk or auto_chunk(spec, runs, batch, device)
    nan = (math.nan, math.nan)
    times: dict[str, list[tuple[float, float]]] = {
        k: [] for k in ("stacked", "compiled", "graph", "graph_compiled", "graph_fused", "plain", "same", "gemm")
    }
    cf = None
    if compiled:
        cf = CompiledForward(spec, mode=compile_mode, backend=compile_backend)
        compiled_step = stacked_runner(spec, runs, batch, device, chunk, cf)  # compiles here
    eager_step = stacked_runner(spec, runs, batch, device, chunk)
    graph_step = GraphedRunner(spec, runs, batch, device, chunk) if graph else None
    graph_compiled_step, graph_compiled_error = None, ""
    if graph and cf is not None and compile_mode in OWN_CUDA_GRAPHS:
        graph_compiled_error = f"not timed: compile mode {compile_mode!r} captures CUDA graphs of its own"
    elif graph and cf is not None:
        try:  # the compiled forward (compiled above) under capture: a measurement, so a failure is reported
            graph_compiled_step = GraphedRunner(spec, runs, batch, device, chunk, cf)
        except RuntimeError as e:  # torch's and torch.compile's errors
            graph_compiled_error = error_line(e)
    graph_fused_step, graph_fused_error, graph_fused_setup_s = None, "", math.nan
    if graph:
        try:  # a measurement, like the compiled graph's: a failure is reported
            t0 = time.perf_counter()
            graph_fused_step = GraphedRunner(spec, runs, batch, device, chunk, fused_forward)
            graph_fused_setup_s = time.perf_counter() - t0
        except RuntimeError as e:
            graph_fused_error = error_line(e)
    with_plain = plain and plain_possible(spec)
    for _ in range(repeats):  # interleaved, so a burst of load hits every measurement alike
        times["stacked"].append(time_calls(eager_step, steps, device))
        times["compiled"].append(time_calls(compiled_step, steps, device) if cf is not None else nan)
        times["graph"].append(time_calls(graph_step, steps, device) if graph_step is not None else nan)
        times["graph_compiled"].append(
            time_calls(graph_compiled_step, steps, device) if graph_compiled_step is not None else nan
        )
        times["graph_fused"].append(
            time_calls(graph_fused_step, steps, device) if graph_fused_step is not None else nan
        )
        times["plain"].append(time_plain(spec, runs, steps, batch, device) if with_plain else nan)
        times["same"].append(time_sequential(spec, runs, steps, batch, device) if plain else nan)
        times["gemm"].append(time_gemm(spec, runs, steps, batch, device))
    best = {k: (min(t[0] for t in v), min(t[1] for t in v)) for k, v in times.items()}
    per_epoch = max(1, case.samples // batch)
    flops = step_flops(spec, runs, batch)
    (
        (t_stack, c_stack),
        (t_comp, _),
        (t_graph, _),
        (t_gc, _),
        (t_gf, _),
        (t_seq, c_seq),
        (t_same, _),
        (t_gemm, c_gemm),
    ) = (best[k] for k in ("stacked", "compiled", "graph", "graph_compiled", "graph_fused", "plain", "same", "gemm"))
    name = device_name(device)
    peak, peak_source = fp64_peak(name)
    bandwidth = copy_bandwidth(device)
    gflops = flops / t_stack / 1e9
    rule = choose(spec, device, case.samples, batch)
    ops = step_operators(spec, runs, batch, device)
    return {
        "case": case.name,
        "params": case.params,
        "runs": runs,
        "stacked_s_per_epoch": t_stack * per_epoch,
        "sequential_s_per_epoch": t_seq * per_epoch,
        "speedup": t_seq / t_stack,
        "gflops": gflops,
        "gemm_gflops": flops / t_gemm / 1e9,
        "gemm_fraction": t_gemm / t_stack,
        # the runs one after another through the trainer's own optimized step: what stacking alone buys
        "same_step_s_per_epoch": t_same * per_epoch,
        "speedup_same_step": t_same / t_stack,
        # the compiled step (study.training.compiled) and what the trainer's rule picks
        "compiled_s_per_epoch": t_comp * per_epoch,
        "compiled_speedup": t_stack / t_comp,
        "compile_s": cf.stats.compile_s if cf is not None else math.nan,
        "compiled_graphs": cf.stats.graphs if cf is not None else 0,
        "faster": "-" if cf is None else decide(t_stack, t_comp),
        # the step as a CUDA graph (study.training.graphed): its time, its gain over the eager step, its
        # fraction of the bare GEMMs
        "graph_s_per_epoch": t_graph * per_epoch,
        "graph_speedup": t_stack / t_graph,
        "graph_gemm_fraction": t_gemm / t_graph,
        # the graph of the compiled forward (with ``compiled`` on a GPU): its time, gain and fraction, and the
        # first line of the error when its capture failed
        "graph_compiled_s_per_epoch": t_gc * per_epoch,
        "graph_compiled_speedup": t_stack / t_gc,
        "graph_compiled_gemm_fraction": t_gemm / t_gc,
        "graph_compiled_error": graph_compiled_error,
        # the graph of the step with fused epilogues (on a GPU): its time, gain, fraction, first compile and capture
        "graph_fused_s_per_epoch": t_gf * per_epoch,
        "graph_fused_speedup": t_stack / t_gf,
        "graph_fused_gemm_fraction": t_gemm / t_gf,
        "graph_fused_setup_s": graph_fused_setup_s,
        "graph_fused_error": graph_fused_error,
        # the memory traffic of the step's operators other than the matrix products (study.perf.operators), the
        # bandwidth a large copy reaches, and the fraction of the bare GEMMs they allow (memory_floor_fraction)
        "traffic_gb": ops.traffic() / 1e9,
        "memory_tb_s": bandwidth,
        "memory_floor_fraction": memory_floor_fraction(t_gemm, ops.traffic(), bandwidth),
        "rule": rule.kind,
        "rule_reason": rule.reason,
        "layer_steps": layer_steps(spec, case.samples, batch),
        # the device's float64 peak (FP64_PEAKS)
        "peak_tflops": peak,
        "peak_fraction": gflops / 1e3 / peak,
        "peak_source": peak_source,
        # the operators of one step of the whole stack (study.perf.operators), each chunk's on a CPU
        "operators": ops.total,
        "operators_per_layer": ops.per_layer(spec.depth),
        "operators_per_added_layer": added_layer_operators(spec, runs, batch, device, base=ops),
        "operator_views": ops.views,
        "operators_by_name": dict(ops.compute.most_common()),
        "chunks": len(chunks(runs, chunk)),
        # the same from CPU time (all threads of the process): steadier when the machine is shared
        "stacked_cpu_s_per_epoch": c_stack * per_epoch,
        "sequential_cpu_s_per_epoch": c_seq * per_epoch,
        "speedup_cpu": c_seq / c_stack,
        "gemm_fraction_cpu": c_gemm / c_stack,
        "depth": spec.depth,
        "width": spec.width,
        "weights": spec.weights,
        "samples": case.samples,
        "batch": batch,
        "chunk": chunk or runs,
        "threads": torch.get_num_threads(),
        "device": str(device),
        "device_name": name,
        "repeats": repeats,
        "steps": steps,
    }


def run_bench(
    cases=None,
    runs: int = 40,
    repeats: int = 3,
    device="cpu",
    steps: int | None = None,
    compiled: bool = True,
    compile_mode: str | None = None,
    plain: bool = True,
    chunk: int | None = None,
    say=None,
) -> list[dict]:
    """``bench_case`` of each case; ``say(line)``: a line per case as it ends (its row as JSON), so that a run cut
    short still leaves the cases it measured."""
    device = torch.device(device)
    cases = default_cases(device) if cases is None else cases
    rows = []
    for name in cases:
        rows.append(
            bench_case(
                CASES[name],
                runs=runs,
                repeats=repeats,
                device=device,
                steps=steps,
                compiled=compiled,
                compile_mode=compile_mode,
                plain=plain,
                chunk=chunk,
            )
        )
        if say is not None:
            say(json.dumps(rows[-1]))
    return rows


def number_text(value: float, fmt: str) -> str:
    """``value`` in ``fmt``, or "-" for a number not measured (None, NaN)."""
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def format_table(rows: list[dict]) -> str:
    """The table the README's Speed section shows, plus the compiled step and the rule's pick."""
    head = (
        "case",
        "params",
        "threads",
        "chunk",
        "stacked s/epoch",
        "plain loop s/epoch",
        "speedup",
        "same-step speedup",
        "GFLOP/s",
        "of bare GEMM",
        "of peak",
        "compiled s/epoch",
        "compile s",
        "graph s/epoch",
        "graph of GEMM",
        "graph+compiled s/epoch",
        "fused graph s/epoch",
        "fused graph of GEMM",
        "traffic GB",
        "floor of GEMM",
        "faster",
        "rule",
        "ops/step",
        "ops/layer",
        "ops/+layer",
    )
    lines = [head]
    for r in rows:
        lines.append(
            (
                r["case"],
                f"{r['params']:,}",
                str(r["threads"]),
                str(r["chunk"]),
                number_text(r["stacked_s_per_epoch"], ".3g"),
                number_text(r["sequential_s_per_epoch"], ".3g"),
                number_text(r["speedup"], ".2f") + "x",
                number_text(r["speedup_same_step"], ".2f") + "x",
                number_text(r["gflops"], ".1f"),
                number_text(r["gemm_fraction"], ".2f"),
                number_text(r["peak_fraction"], ".2f"),
                number_text(r["compiled_s_per_epoch"], ".3g"),
                number_text(r["compile_s"], ".0f"),
                number_text(r["graph_s_per_epoch"], ".3g"),
                number_text(r["graph_gemm_fraction"], ".2f"),
                number_text(r["graph_compiled_s_per_epoch"], ".3g"),
                number_text(r["graph_fused_s_per_epoch"], ".3g"),
                number_text(r["graph_fused_gemm_fraction"], ".2f"),
                number_text(r["traffic_gb"], ".3g"),
                number_text(r["memory_floor_fraction"], ".2f"),
                r["faster"],
                r["rule"],
                str(r["operators"]),
                number_text(r["operators_per_layer"], ".1f"),
                number_text(r["operators_per_added_layer"], ".1f"),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines)


# -- several architectures per device ---------------------------------------------------------------------
def _case(case: "str | BenchCase") -> BenchCase:
    return CASES[case] if isinstance(case, str) else case


def _throughput_worker(
    case: BenchCase, runs: int, batch: int, device: str, threads: int, steps: int, barrier, results
) -> None:
    from ..training.allocator import keep_freed_memory

    # the entry point of a spawned process: it sets itself up as a study worker does
    torch.set_num_threads(threads)
    keep_freed_memory()
    dev = torch.device(device)
    step = stacked_runner(case.spec, runs, batch, dev)
    synchronize(dev)
    barrier.wait()
    wall, _ = time_calls(step, steps, dev)
    results.put(wall * steps)


def throughput(
    case: "str | BenchCase",
    processes: int,
    runs: int = 40,
    batch: int = 250,
    device: str = "cpu",
    threads: int | None = None,
    steps: int | None = None,
    timeout_s: float = 3600.0,
) -> dict:
    """Several architectures training at once on one device, each in its own process with its own R-run
    stack of ``case`` (what ``--gpus-per-arch 1/processes`` gives on a GPU, or one architecture per core
    on a CPU): every process does ``steps`` steps after a common start; the aggregate rate is
    processes x steps / the slowest process's time. Compared with one process alone on the device (on a
    CPU with all ``processes x threads`` threads), it gives how much sharing buys, and architectures per
    hour = aggregate epochs per hour / the stack epochs of an architecture
    (``study.training.epoch_profiles.EXPECTED_STACK_EPOCHS``; full-stack equivalents, as if every run stayed to the
    end)."""
    c = _case(case)
    steps = steps or max(2, c.steps)
    threads = threads or 1
    ctx = multiprocessing.get_context("spawn")  # a forked CUDA context is unusable; spawn works everywhere

    def run(n: int, threads_each: int) -> float:
        barrier, results = ctx.Barrier(n), ctx.Queue()
        procs = [
            ctx.Process(target=_throughput_worker, args=(c, runs, batch, device, threads_each, steps, barrier, results))
            for _ in range(n)
        ]
        for p in procs:
            p.start()
        try:
            times = [results.get(timeout=timeout_s) for _ in procs]
        finally:
            for p in procs:
                p.join(timeout=60)
                if p.is_alive():
                    p.terminate()
        return n * steps / max(times)  # steps per second, all processes together

    alone = run(1, threads * processes if torch.device(device).type == "cpu" else threads)
    shared = run(processes, threads)
    per_epoch = max(1, c.samples // batch)
    arch_per_hour = lambda rate: rate * 3600 / per_epoch / EXPECTED_STACK_EPOCHS  # noqa: E731
    return {
        "case": c.name,
        "processes": processes,
        "threads_each": threads,
        "device": device,
        "steps_per_s_alone": alone,
        "steps_per_s_shared": shared,
        "gain": shared / alone,
        "architectures_per_hour_alone": arch_per_hour(alone),
        "architectures_per_hour_shared": arch_per_hour(shared),
        "stack_epochs": EXPECTED_STACK_EPOCHS,
        "cpu_count": os.cpu_count(),
    }
