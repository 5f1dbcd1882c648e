"""``archstudy bench``: speed. The stacked trainer against sequential runs, bare GEMMs and its compiled step, and
the operators of its step (``study.perf.bench``); several architectures per device (``--concurrent``,
``--gpus-per-arch``); a step's time operator by operator (``--kernels``, ``study.perf.kernels``); the projected
hours of the paper's studies (``--project``, ``study.perf.projection``); a synthetic study of N architectures
written through the store, and its readers timed on it (``--store N --out DIR``, ``study.perf.synthetic_store``);
the study driver's own time and memory per unit, on a study of N units that train nothing (``--driver N --out
DIR``, ``study.perf.driver_overhead``). How often the analysis' verdicts fire is ``archstudy calibrate``'s."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Choice, Integer, Real, check

from .commands import subcommand

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # torch.compile's


@subcommand("bench", order=110, activity="benchmarking")
def register(sub) -> None:
    from ..perf.cases import CASES, CPU_CASES, GPU_CASES  # torch-free: listing the commands loads no torch

    p = sub.add_parser(
        "bench",
        help="time the stacked trainer against sequential runs, bare GEMMs and its compiled step",
        description="Time, side by side in one process, one training step of R runs stacked (as the trainer "
        "runs them), the same step with the forward compiled by torch.compile, the same R runs trained one "
        "after another, and the bare float64 matrix products of the stacked step; report seconds per epoch, "
        "the speedup, GFLOP/s, the fraction of the GEMM throughput and of the device's float64 peak, the "
        "compile time and which step the trainer's rule picks, and count the operators one step of the stack "
        "dispatches (views excluded), in total and per layer. "
        "Cases: "
        + ", ".join(f"{k} ({c.params:,} parameters, depth {c.spec.depth}, {c.spec.weights})" for k, c in CASES.items())
        + ". "
        f"Default: {', '.join(CPU_CASES)} on a CPU; also {', '.join(c for c in GPU_CASES if c not in CPU_CASES)} "
        "on a GPU.",
    )
    p.add_argument(
        "--quick", action="store_true", help="the small case only, without the compiled step (about a minute)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    p.add_argument("--cases", default=None, help=f"comma-separated cases ({', '.join(CASES)})")
    p.add_argument("--runs", type=int, default=40, help="runs in the stack (default %(default)s)")
    p.add_argument(
        "--repeats", type=int, default=3, help="interleaved repeats; the best of each is kept (default %(default)s)"
    )
    p.add_argument("--steps", type=int, default=None, help="timed steps per measurement (default: per case)")
    p.add_argument("--device", default="cpu", help="torch device (default %(default)s; e.g. cuda)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument(
        "--no-compile", action="store_true", help="do not time the compiled step (it compiles once per case)"
    )
    p.add_argument(
        "--compile-mode",
        default=None,
        help="torch.compile mode of the compiled step (default: its default; on a GPU e.g. reduce-overhead)",
    )
    p.add_argument("--no-plain", action="store_true", help="do not time the one-run-after-another loops")
    p.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="runs per chunk of the stacked step (default: the trainer's choice, auto_chunk)",
    )
    _modes(p)
    _study_options(p)
    p.set_defaults(func=command)


def _modes(p) -> None:
    """The options of the speed measurements other than the step's own: processes per device, operator profiles,
    the projection of the paper's studies."""
    p.add_argument(
        "--concurrent",
        type=int,
        default=None,
        help="instead: N processes, each training its own stack of the case at once on the device, "
        "against one process alone (architectures per hour)",
    )
    p.add_argument(
        "--gpus-per-arch",
        type=float,
        default=None,
        help="instead: as --concurrent with N = 1 / this (0.25: four architectures per GPU)",
    )
    p.add_argument(
        "--project",
        action="store_true",
        help="instead: measure the paper's 1M-parameter cases at several stack sizes and project the "
        "hours of the NLC paper's three studies (study.perf.projection)",
    )
    p.add_argument(
        "--lr-window",
        type=int,
        metavar="M",
        help="with --project: also project the studies training only M of the 40 rates per architecture (a study's "
        "lr_window, around the median best rate of the epoch profiles)",
    )
    p.add_argument(
        "--kernels",
        action="store_true",
        help="instead: profile one training step of each case operator by operator (torch.profiler): the time "
        "of each operator's kernels (CPU time on a CPU), the bytes it moves and the bandwidth it reaches, the "
        "device's busy time against the step's, and on a GPU the step as a CUDA graph (study.perf.kernels)",
    )
    p.add_argument(
        "--devices", default="1,8,32", help="with --project: device counts to project for (default %(default)s)"
    )
    p.add_argument(
        "--gain",
        type=float,
        default=1.0,
        help="with --project: aggregate gain of several architectures per device (from --concurrent)",
    )


def _study_options(p) -> None:
    """The options of the modes that write a study: ``--store N`` and ``--driver N``."""
    p.add_argument(
        "--store",
        type=int,
        default=None,
        metavar="N",
        help="instead: write a finished synthetic study of N architectures (runs and curves included) to --out "
        "through the store's own write path, in seconds per thousand (study.perf.synthetic_store); no torch",
    )
    p.add_argument(
        "--driver",
        type=int,
        default=None,
        metavar="N",
        help="instead: run a study of N units that train nothing through the real driver on a local Ray, into "
        "--out, and report the driver's CPU ms and wall ms per unit and its memory (RSS) at 10/50/100%% of the "
        "units (study.perf.driver_overhead)",
    )
    p.add_argument(
        "--max-in-flight", type=int, default=None, help="with --driver: units in flight (default: Ray's CPUs)"
    )
    p.add_argument("--out", default=None, help="with --store or --driver: the new study's directory or s3:// URI")
    p.add_argument(
        "--packed", action="store_true", help="with --store: write the results as packs (as `archstudy compact` does)"
    )
    p.add_argument(
        "--time",
        action="store_true",
        help="with --store: then time status, top and load_results on it (with and without runs, curves for "
        "100 architectures), before and after `archstudy compact`",
    )


def _timed(fn) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process) ``fn()`` takes, its standard output swallowed (a command's
    table is not the bench's). On a loaded machine the wall clock is mostly waiting for a core: the CPU time is
    what the work costs."""
    import contextlib
    import io
    import time

    with contextlib.redirect_stdout(io.StringIO()):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - t0, time.process_time() - c0


def time_store(location: str, say=print) -> dict:
    """The store's readers timed on a study, then ``archstudy compact``, then the readers again: planning (sampling
    the specs, part of `status`), the survey of the files (the rest of `status`), `status` and `top` as commands,
    ``load_results`` without and with runs, and the curves of 100 architectures. Seconds, one run each."""
    from archstudy.analysis import load_results

    from ..execution.compaction import compact_study
    from ..execution.state import survey
    from ..execution.store import Store
    from ..execution.unit import work_units
    from . import status, top

    parser = argparse.ArgumentParser(prog="archstudy")
    commands = parser.add_subparsers()
    status.register(commands)
    top.register(commands)

    def main(argv: list[str]) -> None:  # the command as the command line runs it; an error is raised, not said
        args = parser.parse_args(argv)
        if args.func(args) != 0:
            raise RuntimeError(f"archstudy {' '.join(argv)} failed")

    out: dict = {}
    config = Store(location).read_config()
    units: list = []
    plan_s = _timed(lambda: units.extend(work_units(config)))  # the `status` command plans again
    some = [u.arch_id for u in units[:: max(1, len(units) // 100)]][:100]

    def readers(when: str) -> dict:
        row = {
            "plan_s": plan_s,
            "survey_s": _timed(lambda: survey(Store(location), config, units, driver=False)),
            "status_s": _timed(lambda: main(["status", location, "--json"])),
            "top_s": _timed(lambda: main(["top", location, "--json"])),
            "load_results_s": _timed(lambda: load_results(location, runs=False)),
            "load_results_runs_s": _timed(lambda: load_results(location)),
            "curves_100_s": _timed(lambda: load_results(location, runs=False, curves=some)),
        }
        say(f"{when}: " + ", ".join(f"{k[:-2]} {v[0]:.2f} s ({v[1]:.2f} s CPU)" for k, v in row.items()))
        return row

    packed = bool(survey(Store(location), config, units, driver=False).packed)
    if not packed:
        out["before"] = readers("own files")
        done: list = []
        out["compact_s"] = _timed(lambda: done.append(compact_study(location)))
        say(f"compact: {out['compact_s'][0]:.2f} s ({out['compact_s'][1]:.2f} s CPU; {done[0].line(location)})")
    out["after"] = readers("packed")
    return out


def _new_study_dir(args, flag: str) -> Callable[[str], None]:
    """Check that ``--out`` names a new or empty directory (or s3:// URI) for ``bench --FLAG``; return how a
    progress line is said: to stderr when ``--json`` keeps stdout for the JSON, else printed."""
    from ..execution.store import Store

    if not args.out:
        raise SpecError("bench", "out", args.out, f"must name the new study's directory (or s3:// URI) with --{flag}")
    store = Store(args.out)
    if store.root_kind() == "file" or (store.root_kind() == "dir" and store.listing()):
        raise SpecError("bench", "out", args.out, "must be a new or empty directory (it holds files)")
    if args.json:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return print


def store_bench(args) -> int:
    """``bench --store N --out DIR``: ``study.perf.synthetic_store.write_synthetic_study``, then (``--time``)
    ``time_store``; a line per step, or JSON."""
    from ..perf.synthetic_store import write_synthetic_study

    n = check("bench", "store", Integer(1), args.store)
    say = _new_study_dir(args, "store")
    wrote = write_synthetic_study(args.out, n, packed=args.packed, say=say)
    row = {
        "architectures": wrote.units,
        "runs": wrote.runs,
        "curves": wrote.curves,
        "plan_s": wrote.plan_s,
        "write_s": wrote.write_s,
        "write_cpu_s": wrote.write_cpu_s,
        "packed": args.packed,
    }
    say(
        f"wrote {wrote.units:,} architectures ({wrote.runs:,} runs, {wrote.curves:,} curve rows) to {args.out} in "
        f"{wrote.plan_s + wrote.write_s:.1f} s: planning {wrote.plan_s:.1f} s, writing {wrote.write_s:.1f} s "
        f"({wrote.write_s / wrote.units * 1000:.2f} s per thousand; {wrote.write_cpu_s:.1f} s CPU)"
    )
    if args.time:
        row["timings"] = time_store(args.out, say=say)
    if args.json:
        json.dump(row, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


def driver_bench(args) -> int:
    """``bench --driver N --out DIR``: ``study.perf.driver_overhead.driver_overhead``; its lines, or JSON."""
    from ..perf.driver_overhead import describe, driver_overhead

    n = check("bench", "driver", Integer(2), args.driver)
    if args.max_in_flight is not None:
        check("bench", "max_in_flight", Integer(1), args.max_in_flight)
    say = _new_study_dir(args, "driver")
    row = driver_overhead(n, args.out, max_in_flight=args.max_in_flight, say=say)
    if args.json:
        json.dump(row, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(describe(row))
    return 0


def _cases(args, CASES) -> tuple[str, ...] | None:
    if args.cases is None:
        return ("small",) if args.quick else None
    cases = tuple(c for c in args.cases.split(",") if c)
    if not cases:
        raise SpecError("bench", "cases", args.cases, "must name at least one of " + ", ".join(repr(k) for k in CASES))
    for c in cases:
        if c not in CASES:
            raise SpecError("bench", "cases", c, "must be one of " + ", ".join(repr(k) for k in CASES))
    return cases


def _devices(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(n) for n in text.split(",") if n.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise SpecError("bench", "devices", text, "must be a comma-separated list of integers >= 1")
    return counts


@dataclass(frozen=True)
class Speed:
    """The checked options of a speed measurement (every mode but ``--store`` and ``--driver``)."""

    cases: tuple[str, ...] | None
    runs: int
    repeats: int
    steps: int | None
    chunk: int | None
    device: Any
    compile_mode: str | None
    devices: tuple[int, ...]
    gain: float


def command(args) -> int:
    """The bench command, an entry point: like a study worker (``study.execution.unit.execute_unit``) it keeps freed
    memory in the process (glibc malloc settings, ``study.training.allocator``) and sets torch's threads."""
    if args.store is not None:
        return store_bench(args)
    if args.driver is not None:
        return driver_bench(args)
    import torch

    from ..perf.bench import CASES
    from ..training.allocator import keep_freed_memory
    from ..training.device import available_device

    cases = _cases(args, CASES)
    runs = check("bench", "runs", Integer(1), args.runs)
    repeats = check("bench", "repeats", Integer(1), args.repeats)
    steps = None if args.steps is None else check("bench", "steps", Integer(1), args.steps)
    chunk = None if args.chunk is None else check("bench", "chunk", Integer(1), args.chunk)
    if args.threads is not None:
        torch.set_num_threads(check("bench", "threads", Integer(1), args.threads))
    device = available_device(args.device, "bench")
    keep_freed_memory()  # process-wide: the conditions of the trainer on a study worker
    concurrent = None
    if args.gpus_per_arch is not None:
        share = check("bench", "gpus_per_arch", Real(0.0, 1.0, lo_open=True), args.gpus_per_arch)
        concurrent = max(1, round(1 / share))
    if args.concurrent is not None:
        concurrent = check("bench", "concurrent", Integer(1), args.concurrent)
    compile_mode = None
    if args.compile_mode is not None:
        compile_mode = check("bench", "compile_mode", Choice(COMPILE_MODES), args.compile_mode)
    devices = _devices(args.devices)
    gain = check("bench", "gain", Real(0.0, lo_open=True), args.gain)
    speed = Speed(cases, runs, repeats, steps, chunk, device, compile_mode, devices, gain)
    if args.lr_window is not None:
        from ..perf.projection import RUNS

        if not args.project or concurrent is not None or args.kernels:
            raise UserError("bench: --lr-window projects a windowed study's hours: it needs --project")
        check("bench", "lr_window", Integer(1, RUNS), args.lr_window)
    if concurrent is not None:
        return concurrent_bench(args, speed, concurrent)
    if args.kernels:
        return kernels_bench(args, speed)
    if args.project:
        return project_bench(args, speed)
    return step_bench(args, speed)


def concurrent_bench(args, o: Speed, processes: int) -> int:
    """``bench --concurrent N`` (``--gpus-per-arch``): ``study.perf.bench.throughput`` of each case; lines or JSON."""
    from ..perf.bench import throughput

    rows = [
        throughput(name, processes, runs=o.runs, device=str(o.device), threads=args.threads, steps=o.steps)
        for name in (o.cases or ("small",))
    ]
    _print(
        rows,
        args.json,
        lambda r: (
            f"{r['case']}: {r['processes']} processes x {r['threads_each']} thread(s) on {r['device']}: "
            f"{r['steps_per_s_shared']:.3g} steps/s together vs {r['steps_per_s_alone']:.3g} alone "
            f"(gain {r['gain']:.2f}); {r['architectures_per_hour_shared']:.3g} vs "
            f"{r['architectures_per_hour_alone']:.3g} architectures per hour "
            f"({r['stack_epochs']:.0f} stack epochs each)"
        ),
    )
    return 0


def kernels_bench(args, o: Speed) -> int:
    """``bench --kernels``: ``study.perf.kernels.profile_step`` of each case; its tables or JSON."""
    from ..perf.bench import CASES, default_cases
    from ..perf.kernels import format_profile, profile_step

    profiles = {
        name: profile_step(CASES[name].spec, runs=o.runs, device=o.device, steps=o.steps or 3)
        for name in (o.cases or default_cases(o.device))
    }
    if args.json:
        json.dump(profiles, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print("\n\n".join(format_profile(name, p) for name, p in profiles.items()))
    return 0


def project_bench(args, o: Speed) -> int:
    """``bench --project``: the step times of ``study.perf.projection`` and the hours projected from them (and from
    the compiled step's graph where it was measured); a table or JSON."""
    import torch

    from ..perf.projection import compiled_graph_rows, format_projection, measure_step_times, project

    rows = measure_step_times(
        o.cases,
        device=o.device,
        repeats=o.repeats,
        steps=o.steps or 2,
        compiled=not args.no_compile and not args.quick,
        say=_stderr,
    )
    result = project(rows, devices=o.devices, gain=o.gain)
    alternative = compiled_graph_rows(rows)  # measured where the trainer graphs and the compile was asked for
    what_if = None if alternative is None else project(alternative, devices=o.devices, gain=o.gain)
    window = None if args.lr_window is None else project(rows, devices=o.devices, gain=o.gain, window=args.lr_window)
    if args.json:
        out = {"step_times": rows, "projection": result}
        if what_if is not None:
            out["projection_compiled_graph"] = what_if
        if window is not None:
            out["projection_window"] = window
        json.dump(out, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        print(format_projection(rows, result, f"{o.device} ({torch.get_num_threads()} threads)", what_if))
        if window is not None:
            whole, part = result[-1]["hours_one_device"], window[-1]["hours_one_device"]
            print(
                f"With a window of {args.lr_window} rates (--lr-window; the median rule's window of every epoch "
                f"profile): all three studies {part:.2f} h on one device, against {whole:.2f} h for the full sweep."
            )
    return 0


def step_bench(args, o: Speed) -> int:
    """``bench``: ``study.perf.bench.run_bench`` of each case; the table with its conditions and each case's rule,
    or JSON."""
    import torch

    from ..perf.bench import format_table, run_bench

    rows = run_bench(
        o.cases,
        runs=o.runs,
        repeats=o.repeats,
        device=o.device,
        steps=o.steps,
        compiled=not args.no_compile and not args.quick,
        compile_mode=o.compile_mode,
        plain=not args.no_plain,
        chunk=o.chunk,
        say=_stderr,
    )
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(format_table(rows))
    threads = torch.get_num_threads()
    name = rows[0]["device_name"] if rows else str(o.device)
    print(
        f"({threads} thread{'s' if threads > 1 else ''}, device {name}; best of {o.repeats} interleaved "
        f"repeats; per epoch = per step x samples // 250; of peak: {rows[0]['peak_source'] if rows else ''})"
    )
    for r in rows:
        print(f"rule for {r['case']}: {r['rule']} ({r['rule_reason']})")
    return 0


def _stderr(line: str) -> None:
    """A measurement's line as it is made, on standard error (standard output keeps the table or the JSON): what a
    run that is cut short (a time limit) leaves."""
    print(line, file=sys.stderr, flush=True)


def _print(rows, as_json: bool, line) -> None:
    if as_json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rows:
            print(line(r))
