"""Where a training step's time goes, operator by operator (``archstudy bench --kernels``).

``archstudy bench`` times whole steps against the bare GEMMs of the same shapes (``study.perf.bench``); this
profile says which of the step's operators take the rest. ``profile_step`` runs ``torch.profiler`` over ``steps``
training steps of an R-run stack (after untimed ones; the whole stack in one chunk, as a GPU runs it) and gives
each ATen operator's own time to the outermost operator around it that ``study.perf.operators`` counts: the
operators a step dispatches from Python (a CPU ``relu`` runs ``clamp_min`` inside it, a ``torch._foreach_*``
update its per-tensor operators). The time is, on a GPU, the device time of the kernels each operator launched,
on a CPU its CPU time. Per operator and step:

* ``calls``: the profiler's count, which equals the counter's for every counted operator (a test checks it);
* ``seconds``, and ``share`` of ``busy_s``, their sum: the time the device is busy in a step;
* ``gigabytes``: the bytes it moves (``study.perf.operators``: every operand read once and every result written
  once, the floor of its traffic), so ``gb_per_s``, the bandwidth it reaches, and ``of_copy``, that over the
  bandwidth a large copy reaches on the device (``study.perf.bench.copy_bandwidth``, ``copy_tb_s``). An operator
  other than a matrix product far below 1 spends its time on something other than moving its operands: passes the
  floor does not count, or a kernel that does not fill the device.

Beside them: ``step_s``, the step's time measured apart (``study.training.timing.time_calls``, no profiler);
``busy_s`` / ``step_s`` near 1 says the device, not the host, sets the step's time. On a GPU also the step as a
CUDA graph (``study.training.graphed``): ``graph_step_s``, and ``graph_busy_s``, the time of the kernels a
graphed step runs (the replay's and the minibatch gather's), from the profiler's kernel records (NaN when the
profiler records none of a graph's kernels), and ``kernels``, the eager step's kernels by name (the longest
first).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from archstudy.sampling import ArchSpec

from ..training.stack import folded_forward
from ..training.timing import synchronize, time_calls
from .bench import GraphedRunner, copy_bandwidth, device_name, number_text, stacked_runner
from .operators import MATRIX_PRODUCTS, step_operators
from .projection import eval_times

OUTSIDE = "(outside ATen operators)"  # the host's own time: autograd's engine, Python (no device time)
KERNELS_LISTED = 25  # the longest kernels kept in a GPU profile


def _aten(name: str) -> str | None:
    return name[len("aten::") :] if name.startswith("aten::") else None


def attribute(events, counted: set[str], device_time: bool) -> tuple[dict[str, float], Counter]:
    """(seconds by operator, calls by operator) of the profiler's ``events``: each event's own time (device time
    when ``device_time``, else CPU time) goes to the outermost operator around it whose name is in ``counted``, or
    to its own ATen name, or to ``OUTSIDE``; a call is counted where the operator is outermost."""
    seconds: dict[str, float] = defaultdict(float)
    calls: Counter = Counter()
    for e in events:
        if e.device_type != DeviceType.CPU:
            continue  # a kernel's record: its time is in the operator that launched it
        top, up = None, e
        while up is not None:
            if _aten(up.name) in counted:
                top = up
            up = up.cpu_parent
        key = (_aten(top.name) if top is not None else _aten(e.name)) or OUTSIDE
        seconds[key] += (e.self_device_time_total if device_time else e.self_cpu_time_total) / 1e6
        if top is e:
            calls[key] += 1
    return seconds, calls


def _activities(device: torch.device) -> list:
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])


def _profiled(fn, steps: int, device: torch.device):
    synchronize(device)
    with profile(activities=_activities(device)) as prof:
        for i in range(steps):
            fn(i)
        synchronize(device)
    return prof


def _kernel_seconds(prof) -> dict[str, float]:
    """Seconds by kernel name of the device's records in a profile (none on a CPU)."""
    out: dict[str, float] = defaultdict(float)
    for e in prof.events():
        # a user annotation's span on the device (torch.compile's regions) covers kernels listed on their own
        if e.device_type == DeviceType.CUDA and not e.is_user_annotation:
            out[e.name] += e.time_range.elapsed_us() / 1e6
    return out


def profile_step(
    spec: ArchSpec,
    runs: int = 40,
    batch: int = 250,
    device: str | torch.device = "cpu",
    steps: int = 3,
    graph: bool | None = None,
    forward=folded_forward,
    eval_examples: int | None = None,
) -> dict:
    """The profile of one training step of ``runs`` runs of ``spec`` (module docstring), as a JSON-able dict;
    ``graph``: also the step as a CUDA graph (default: on a CUDA device); ``eval_s_per_example_run``: the
    evaluation's seconds per example and run by its chunk size (``eval_times`` on ``eval_examples``, default 10,000
    on a GPU, a validation split of MNIST or CIFAR10, and 1,000 on a CPU)."""
    device = torch.device(device)
    graph = device.type == "cuda" if graph is None else graph
    eval_examples = eval_examples or (10_000 if device.type == "cuda" else 1_000)
    counted = step_operators(spec, runs, batch, device)
    step = stacked_runner(spec, runs, batch, device, chunk=runs, forward=forward)
    step(1)
    step_s = time_calls(step, steps, device)[0]
    prof = _profiled(step, steps, device)
    seconds, calls = attribute(prof.events(), set(counted.compute), device.type == "cuda")
    tb_s = copy_bandwidth(device)
    rows: list[dict] = []
    for name, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        s /= steps
        if s <= 0:
            continue
        gigabytes = counted.bytes.get(name, 0) / 1e9
        rows.append(
            {
                "operator": name,
                "product": name in MATRIX_PRODUCTS,
                "calls": calls[name] / steps,
                "seconds": s,
                "gigabytes": gigabytes,
                "gb_per_s": gigabytes / s if gigabytes else math.nan,
                "of_copy": gigabytes / s / (tb_s * 1e3) if gigabytes else math.nan,
            }
        )
    busy = sum(r["seconds"] for r in rows)
    for r in rows:
        r["share"] = r["seconds"] / busy
    kernels = sorted(_kernel_seconds(prof).items(), key=lambda kv: -kv[1])[:KERNELS_LISTED]
    out = {
        "params": spec.num_params,
        "depth": spec.depth,
        "width": spec.width,
        "runs": runs,
        "batch": batch,
        "device": str(device),
        "device_name": device_name(device),
        "copy_tb_s": tb_s,
        "step_s": step_s,
        "busy_s": busy,
        "operators": rows,
        "kernels": [{"kernel": k, "seconds": s / steps} for k, s in kernels],
        "graph_step_s": math.nan,
        "graph_busy_s": math.nan,
        "eval_s_per_example_run": eval_times(spec, runs, device, examples=eval_examples),
    }
    if graph:
        runner = GraphedRunner(spec, runs, batch, device, runs, forward)
        out["graph_step_s"] = time_calls(runner, steps, device)[0]
        replayed = sum(_kernel_seconds(_profiled(runner, steps, device)).values()) / steps
        out["graph_busy_s"] = replayed if replayed > 0 else math.nan
    return out


def format_profile(case: str, p: dict, rows: int = 16) -> str:
    """A profile as the lines ``archstudy bench --kernels`` prints: the ``rows`` longest operators, the rest in one
    line, and on a GPU the 10 longest kernels."""
    ms = 1e3
    graph = (
        f"; as a CUDA graph: step {number_text(p['graph_step_s'] * ms, '.3g')} ms, its kernels "
        f"{number_text(p['graph_busy_s'] * ms, '.3g')} ms"
        if not math.isnan(p["graph_step_s"])
        else ""
    )
    lines = [
        f"{case}: {p['params']:,} parameters, depth {p['depth']}, width {p['width']}, {p['runs']} runs, minibatch "
        f"{p['batch']}, on {p['device_name']} (a copy reaches {p['copy_tb_s']:.3g} TB/s): step "
        f"{p['step_s'] * ms:.3g} ms, busy {p['busy_s'] * ms:.3g} ms ({'device' if p['device'] != 'cpu' else 'CPU'} "
        f"time){graph}",
        f"  {'operator':<32}{'calls':>7}{'ms':>9}{'share':>7}{'GB':>9}{'GB/s':>9}{'of copy':>8}",
    ]
    for r in p["operators"][:rows]:
        lines.append(
            f"  {r['operator'][:32]:<32}{r['calls']:>7.0f}{r['seconds'] * ms:>9.3f}{r['share']:>7.2f}"
            f"{number_text(r['gigabytes'], '.3f'):>9}{number_text(r['gb_per_s'], '.0f'):>9}"
            f"{number_text(r['of_copy'], '.2f'):>8}"
        )
    rest = p["operators"][rows:]
    if rest:
        s = sum(r["seconds"] for r in rest)
        lines.append(f"  ({len(rest)} more operators){'':<12}{s * ms:>9.3f}{s / p['busy_s']:>7.2f}")
    lines.append(
        "  evaluation, s per example and run, by activations per chunk: "
        + ", ".join(f"2^{int(k).bit_length() - 1} {v:.3g}" for k, v in p["eval_s_per_example_run"].items())
    )
    for k in p["kernels"][:10]:
        lines.append(f"  kernel {k['seconds'] * ms:8.3f} ms  {k['kernel'][:110]}")
    return "\n".join(lines)
