"""Paper scale on paper: the hours of the NLC paper's studies, from measured step times and measured epochs.

The studies (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 4 and appendices C-E): 250
architectures each on waveform-noise, MNIST and CIFAR10 (3,000 / 50,000 / 40,000 training examples,
1,000 / 10,000 / 10,000 validation), 1,000,000 parameters, depth uniform over the odd numbers 3..49
(appendix C), 40 starting learning rates trained with the E.2 schedule. One architecture costs

    sum over its stack's epochs e of   t_step(depth, live(e)) x (train // 250)          (training)
                                     + t_eval(depth) x val x live(e)                    (the VCE of each live run)
    + t_step(depth, 1) x (train // 250)                                                 (lr_min: one epoch)
    + t_eval(depth) x (train + val + test) x 40                                         (each run's final errors)
    + t_compile(depth), or t_capture(depth) x the distinct values of live(e)            (the chosen step's set-up)

and each device's process adds, once, the compile of the fused epilogues it meets (``study.nn.epilogue``; where the
rule's step fuses them): ``epilogue_variants()`` x the measured first compile, an upper bound.

where live(e) is the number of runs still training in epoch e (finished runs leave the stack), t_step(d, R)
the measured time of one training step of an R-run stack of the 1M-parameter net of depth d (the bench's
CIFAR10-shaped cases at depths 3, 9, 25, 49, linearly interpolated in depth and in R between the measured
stack sizes), t_eval the measured evaluation time per example and run, and t_compile / t_capture the compile
of the forward per architecture, or the capture of the step as a CUDA graph per stack, where the measurement
chose that step (``measure_step_times``; 0 for the eager step). The initialization metrics are left out (a small
fraction of one run's training: docs/performance.md).

live(e) comes from real trainings: ``measure_epoch_profiles`` trains architectures of the paper's space
with the paper protocol and records every run's epochs (``PROFILES`` holds what was measured, and the
command that measured it). The epochs of a run are mostly fixed by the schedule itself: a run that never
improves again still trains 10 + 10 x 5 = 60 epochs before it ends (the first window of 10, then a window
of 5 after each of the 10 divisions), a run that diverges at every window about 11, and a run trains
longer only by the epochs in which it still improves. Those improving epochs are what depends on the
dataset and the net; the projection takes them from the small-scale measurements as they are (the same
live-run profile for every depth and dataset), which is the main uncertainty of the projection: the paper's
1M-parameter nets on MNIST and CIFAR10 take 160-200 steps per epoch instead of 12, and may keep
improving for more (or fewer) epochs. ``project`` therefore also reports the schedule's floor (every
run exactly 60 epochs, diverging ones included) as a lower bound.

On N devices the architectures are independent: the hours divide by N, and the longest single
architecture is the bound below which the study cannot finish. Several architectures per device
(``--gpus-per-arch 0.25``) divide the one-device hours by the aggregate gain ``study.perf.bench.throughput``
measures.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..training.epoch_profiles import PROFILES, SCHEDULE_FLOOR, live_runs


# -- the projection ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PaperStudy:
    name: str
    train: int
    val: int
    test: int
    architectures: int = 250


PAPER_STUDIES = (
    PaperStudy("waveform-noise", 3_000, 1_000, 1_000),
    PaperStudy("mnist", 50_000, 10_000, 10_000),
    PaperStudy("cifar10", 40_000, 10_000, 10_000),
)
PAPER_DEPTHS = tuple(range(3, 50, 2))  # appendix C: depth uniform over the odd numbers 3..49
SIZES = (40, 20, 10, 5, 2, 1)  # stack sizes at which the step time is measured
RUNS = 40
BATCH = 250


def epilogue_variants() -> int:
    """The fused epilogues a process training the paper's space compiles at most (``study.nn.epilogue``): one per
    activation of the paper's space and epilogue (batchnorm in training, batchnorm in evaluation, layer
    normalization)."""
    from archstudy.sampling.space import PAPER

    return 3 * len(PAPER.activations)


def measure_step_times(
    cases=None,
    sizes=SIZES,
    device="cpu",
    repeats: int = 2,
    steps: int = 2,
    compiled: bool = False,
    eval_examples: int = 1_000,
    graph: bool | None = None,
    say=None,
) -> list[dict]:
    """Per case (default ``study.perf.bench.PAPER_CASES``): seconds per training step at each stack size (best of
    ``repeats`` interleaved over the sizes) with the eager forward, and with ``compiled`` also the compiled one (the
    projection then uses, per case, the one ``study.training.compiled.decide`` picks at the largest size, and adds
    its compile seconds to every architecture of that depth); with ``graph`` (default: on a CUDA device) also the
    step as a CUDA graph (``study.training.graphed``), used instead where the trainer uses it
    (``study.training.compiled.cuda_graph``: the families that declare it), its capture seconds (``capture_s``: the
    warm-up and the capture, measured at the largest size) added once per stack an architecture has; and the
    evaluation seconds per example and run (``eval_times`` with the trainer's chunk, R = 40). With ``compiled`` where
    the trainer graphs, also the graph of the compiled forward (the trainer's "compiled-graph", which its rule does
    not pick): ``compiled_graph_step_s``, ``compiled_graph_compile_s``, ``compiled_graph_capture_s``, for
    ``compiled_graph_rows`` (or ``compiled_graph_error`` when it could not be captured). ``say(line)``: each case's
    row as JSON as it ends, so that a run cut short still leaves the cases it measured."""
    import torch

    from .bench import CASES, PAPER_CASES, GraphedRunner, error_line, stacked_runner
    from ..training.compiled import CompiledForward, cuda_graph, decide, fuses
    from ..training.loss import eval_elements
    from ..training.stack import fused_forward
    from ..training.timing import time_calls

    device = torch.device(device)
    graph = device.type == "cuda" if graph is None else graph
    out = []
    fused_compiles: list[float] = []  # the first is the compile; later cases find the epilogues compiled
    for case in cases or PAPER_CASES:
        case = CASES[case] if isinstance(case, str) else case
        name, spec = case.name, case.spec
        graphed = graph and cuda_graph(spec)  # the trainer's rule (study.training.compiled.choose)
        forwards: dict[str, CompiledForward | None] = {"eager": None}
        if compiled and not graphed:
            forwards["compiled"] = CompiledForward(spec)
        runners = {
            (kind, r): stacked_runner(
                spec, r, BATCH, device, **cast("dict[str, Any]", {} if f is None else {"forward": f})
            )
            for kind, f in forwards.items()
            for r in sizes
        }
        capture_s = cg_capture_s = cg_compile_s = fused_capture_s = 0.0
        cg_forward, cg_error = None, ""
        fused = graphed and fuses(spec)  # the rule's "fused-graph"
        if graphed:
            for r in sizes:
                runner = runners[("graph", r)] = GraphedRunner(spec, r, BATCH, device)
                if r == max(sizes):
                    capture_s = runner.graphed.capture_s
            if compiled:
                cg_forward = CompiledForward(spec)
                # compiled first, as the trainer does (``study.training.compiled.warm``: a step at the largest size
                # and one of a single run), so that the captures below time captures and not the compile
                t0 = time.perf_counter()
                for r in sorted({max(sizes), 1}, reverse=True):
                    stacked_runner(spec, r, BATCH, device, forward=cg_forward)
                cg_compile_s = time.perf_counter() - t0
                try:  # a measurement: a capture that fails is reported, not raised
                    for r in sizes:
                        runner = runners[("compiled-graph", r)] = GraphedRunner(
                            spec, r, BATCH, device, forward=cg_forward
                        )
                        if r == max(sizes):
                            cg_capture_s = runner.graphed.capture_s
                except RuntimeError as e:
                    cg_error = error_line(e)
                    for r in sizes:
                        runners.pop(("compiled-graph", r), None)
        if fused:
            # the epilogues compile once per process (``study.nn.epilogue``), at the first call: timed apart
            t0 = time.perf_counter()
            stacked_runner(spec, max(sizes), BATCH, device, forward=fused_forward)
            fused_compiles.append(time.perf_counter() - t0)
            for r in sizes:
                runner = runners[("fused-graph", r)] = GraphedRunner(spec, r, BATCH, device, forward=fused_forward)
                if r == max(sizes):
                    fused_capture_s = runner.graphed.capture_s
        best: dict = {}
        for _ in range(repeats):
            for key, step in runners.items():
                t = time_calls(step, steps, device)[0]
                best[key] = min(best.get(key, math.inf), t)
        kind, compile_s = ("fused-graph" if fused else "graph" if graphed else "eager"), 0.0
        if "compiled" in forwards:
            kind = decide(best[("eager", max(sizes))], best[("compiled", max(sizes))])
            compiled_forward = cast(CompiledForward, forwards["compiled"])
            compile_s = compiled_forward.stats.compile_s if kind == "compiled" else 0.0
        chunk = eval_elements(device.type)
        t_eval = eval_times(spec, RUNS, device, eval_examples, (chunk,), repeats, fused_forward if fused else None)[
            chunk
        ]
        row: dict[str, Any] = {}
        if cg_forward is not None and not cg_error:
            row = {
                "compiled_graph_step_s": {r: best[("compiled-graph", r)] for r in sizes},
                "compiled_graph_compile_s": cg_compile_s,
                "compiled_graph_capture_s": cg_capture_s,
            }
        elif cg_error:
            row = {"compiled_graph_error": cg_error}
        out.append(
            {
                **row,
                "case": name,
                "depth": spec.depth,
                "width": spec.width,
                "forward": kind,
                "compile_s": compile_s,
                "capture_s": {"graph": capture_s, "fused-graph": fused_capture_s}.get(kind, 0.0),
                # the first call of the fused epilogues in this process: their compile, paid once per process
                "process_compile_s": fused_compiles[0] if fused else 0.0,
                "step_s": {r: best[(kind, r)] for r in sizes},
                "eager_step_s": {r: best[("eager", r)] for r in sizes},
                "eval_s_per_example_run": t_eval,
            }
        )
        if say is not None:
            say(json.dumps(out[-1]))
    return out


def compiled_graph_rows(rows: list[dict]) -> list[dict] | None:
    """``measure_step_times``' rows as if the trainer graphed the compiled forward wherever it graphs (the step
    times, compile and capture seconds of "compiled-graph"), for ``project``; None unless every row measured it."""
    if not rows or not all("compiled_graph_step_s" in r for r in rows):
        return None
    return [
        {
            **r,
            "forward": "compiled-graph",
            "step_s": r["compiled_graph_step_s"],
            "compile_s": r["compiled_graph_compile_s"],
            "capture_s": r["compiled_graph_capture_s"],
        }
        for r in rows
    ]


EVAL_CHUNKS = (1 << 20, 1 << 22, 1 << 24, 1 << 26)  # activations per chunk compared (the trainer's: ``eval_elements``)


def eval_times(
    spec,
    runs: int = 40,
    device="cpu",
    examples: int = 10_000,
    chunks=EVAL_CHUNKS,
    repeats: int = 2,
    forward=None,
) -> dict[int, float]:
    """Seconds per example and run of the evaluation (``study.training.loss.errors``, the error of every run of a
    stack on a split, each epoch's validation) of ``examples`` random examples, by the activations per chunk it
    evaluates at once (``elements``; best of ``repeats``): what the chunk size costs or gives on a device.
    ``forward``: the evaluation's forward (``errors``'; default the network's own)."""
    import torch

    from ..nn.network import build_network
    from ..training.loss import errors
    from ..training.timing import time_calls

    device = torch.device(device)
    net = build_network(spec, 0, runs=runs, device=device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(examples, spec.d_in, generator=g, dtype=torch.float64).to(device)
    y = torch.randint(0, spec.d_out, (examples,), generator=g).to(device)
    width = max(spec.width, spec.d_in, spec.d_out)
    out = {}
    for elements in chunks:
        errors(net, x, y, width, runs, elements=elements, forward=forward)  # allocations, a compile: untimed
        seconds = min(
            time_calls(lambda i: errors(net, x, y, width, runs, elements=elements, forward=forward), 1, device)[0]  # noqa: B023
            for _ in range(repeats)
        )
        out[elements] = seconds / (examples * runs)
    return out


def _interp(x: float, xs, ys) -> float:
    return float(np.interp(x, np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)))


class StepModel:
    """t_step(depth, R) and t_eval(depth) from ``measure_step_times``' rows, linear in depth and in R."""

    def __init__(self, rows: list[dict]):
        self.rows = sorted(rows, key=lambda r: r["depth"])
        self.depths = [r["depth"] for r in self.rows]

    def step(self, depth: int, runs: float) -> float:
        per_case = []
        for r in self.rows:
            sizes = sorted(int(k) for k in r["step_s"])
            per_case.append(
                _interp(runs, sizes, [r["step_s"][k] if k in r["step_s"] else r["step_s"][str(k)] for k in sizes])
            )
        return _interp(depth, self.depths, per_case)

    def eval(self, depth: int) -> float:
        return _interp(depth, self.depths, [r["eval_s_per_example_run"] for r in self.rows])

    def compile(self, depth: int) -> float:
        """Seconds of compiling the forward once per architecture (0 where the eager one is used)."""
        return _interp(depth, self.depths, [r.get("compile_s", 0.0) for r in self.rows])

    def capture(self, depth: int) -> float:
        """Seconds of capturing one CUDA graph of the step (0 where the step is not a graph)."""
        return _interp(depth, self.depths, [r.get("capture_s", 0.0) for r in self.rows])


def architecture_seconds(model: StepModel, depth: int, epochs, study: PaperStudy) -> float:
    """The module docstring's cost of one architecture whose runs trained ``epochs`` epochs each."""
    steps = max(1, study.train // BATCH)
    live = live_runs(epochs)
    t_eval = model.eval(depth)
    training = sum(model.step(depth, r) * steps + t_eval * study.val * r for r in live)
    lr_min = model.step(depth, 1) * steps
    final = t_eval * (study.train + study.val + study.test) * len(epochs)
    captures = len(set(live.tolist()))  # one graph per stack: the stack changes only when runs leave it
    return training + lr_min + final + model.compile(depth) + model.capture(depth) * captures


def windowed(profiles, m: int) -> list[dict]:
    """The epoch profiles as a study with a rate window of ``m`` rates trains them (``study.experiment.
    rate_window``): each profile's runs of the window W = {s, ..., s + m - 1} around the median rule's centre, the
    median selected index of the profiles (``rate_window.window_start``; every profile the same window)."""
    from ..experiment.rate_window import centre_index, window_start

    n = len(profiles[0]["epochs"])
    centre = int(centre_index(np.median([p["selected"] for p in profiles]), n))
    s = int(window_start(centre, m, n))
    return [{**p, "epochs": list(p["epochs"])[s : s + m]} for p in profiles]


def project(
    rows: list[dict], profiles=None, devices=(1, 8, 32), gain: float = 1.0, window: int | None = None
) -> list[dict]:
    """Hours of each study of ``PAPER_STUDIES`` on one device and on each of ``devices`` devices, from step
    times (``measure_step_times``) and epoch profiles (default ``PROFILES``), averaged over the paper's
    depths and the profiles; ``gain``: the aggregate gain of several architectures per device
    (``study.perf.bench.throughput``; 1: one at a time). Also the schedule floor (every run 60 epochs).
    ``window``: a study that trains only that many rates per architecture (``windowed``; its floor that many
    runs of 60 epochs)."""
    profiles = PROFILES if profiles is None else profiles
    if not profiles:
        raise ValueError("no epoch profiles: run measure_epoch_profiles first")
    runs = RUNS
    if window is not None:
        if not 1 <= window <= RUNS:
            raise ValueError(f"a window of {window} rates: must be from 1 to {RUNS}")
        profiles, runs = windowed(profiles, window), window
    model = StepModel(rows)
    # paid once by each device's process (the epilogues compile once per process): every variant at the measured
    # first compile, an upper bound (the first compile also warms inductor up)
    setup_h = epilogue_variants() * max((r.get("process_compile_s", 0.0) for r in rows), default=0.0) / 3600
    out: list[dict[str, Any]] = []
    for study in PAPER_STUDIES:
        costs = [architecture_seconds(model, d, p["epochs"], study) for d in PAPER_DEPTHS for p in profiles]
        floor = [architecture_seconds(model, d, [SCHEDULE_FLOOR] * runs, study) for d in PAPER_DEPTHS]
        hours = study.architectures * float(np.mean(costs)) / 3600 / gain + setup_h
        longest = max(costs) / 3600 + setup_h
        out.append(
            {
                "study": study.name,
                "architectures": study.architectures,
                "train": study.train,
                "hours_one_device": hours,
                "floor_hours_one_device": study.architectures * float(np.mean(floor)) / 3600 / gain,
                "mean_architecture_h": float(np.mean(costs)) / 3600,
                "longest_architecture_h": longest,
                "hours_on": {n: max((hours - setup_h) / n + setup_h, longest) for n in devices},
                "setup_hours_per_device": setup_h,
            }
        )
    total = sum(r["hours_one_device"] for r in out) - (len(out) - 1) * setup_h  # one device compiles once
    out.append(
        {
            "study": "all three",
            "architectures": sum(s.architectures for s in PAPER_STUDIES),
            "hours_one_device": total,
            "floor_hours_one_device": sum(r["floor_hours_one_device"] for r in out),
            "longest_architecture_h": max(r["longest_architecture_h"] for r in out),
            "hours_on": {
                n: max((total - setup_h) / n + setup_h, max(r["longest_architecture_h"] for r in out)) for n in devices
            },
            "setup_hours_per_device": setup_h,
        }
    )
    return out


def format_projection(rows: list[dict], projection: list[dict], device: str, compiled_graph=None) -> str:
    """The step times and the projection as text; ``compiled_graph``: the projection of ``compiled_graph_rows``,
    one more line per study."""
    lines = [f"Measured step times on {device} (seconds per step of an R-run stack, batch {BATCH}):"]
    sizes = sorted({int(k) for r in rows for k in r["step_s"]}, reverse=True)
    lines.append("  case       depth  forward      " + "  ".join(f"R={s:<6}" for s in sizes) + "  eval s/(example*run)")
    for r in rows:
        lines.append(
            f"  {r['case']:<10} {r['depth']:>5}  {r['forward']:<11}  "
            + "  ".join(f"{r['step_s'][s]:<8.3g}" for s in sizes)
            + f"  {r['eval_s_per_example_run']:.3g}"
        )
    devices = list(projection[0]["hours_on"])
    lines.append(
        f"Projected hours ({len(PAPER_DEPTHS)} depths x {len(PROFILES) or 'the given'} epoch profiles; "
        f"floor: every run {SCHEDULE_FLOOR} epochs):"
    )
    lines.append(
        "  study            archs  one device  (floor)  "
        + "  ".join(f"{n} device{'s' if n > 1 else ' '}" for n in devices)
    )
    for p in projection:
        lines.append(
            f"  {p['study']:<15} {p['architectures']:>6}  {p['hours_one_device']:>10.1f}  "
            f"({p['floor_hours_one_device']:.1f})  " + "  ".join(f"{p['hours_on'][n]:>9.1f}" for n in devices)
        )
    if compiled_graph is not None:
        lines.append("If the trainer graphed the compiled forward where it graphs (measured, not the rule's pick):")
        for p in compiled_graph:
            lines.append(
                f"  {p['study']:<15} {p['architectures']:>6}  {p['hours_one_device']:>10.1f}  "
                f"({p['floor_hours_one_device']:.1f})"
            )
    return "\n".join(lines)
