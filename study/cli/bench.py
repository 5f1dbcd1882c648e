"""``archstudy bench``: the stacked trainer against sequential runs and bare GEMMs (``study.bench``)."""

from __future__ import annotations

import json
import sys

from sampling import SpecError
from sampling.constraints import Integer, check


def register(sub) -> None:
    from study.bench import CASES

    p = sub.add_parser(
        "bench", help="time the stacked trainer against sequential runs and bare GEMMs",
        description="Time, side by side in one process, one training step of R runs stacked (as the trainer "
        "runs them), the same R runs trained one after another, and the bare float64 matrix products of the "
        "stacked step; report seconds per epoch, the speedup, GFLOP/s and the fraction of the GEMM throughput. "
        f"Cases: {', '.join(f'{k} ({c.params:,} parameters, depth {c.spec.depth})' for k, c in CASES.items())}.")
    p.add_argument("--quick", action="store_true", help="the small case only (about a minute)")
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    p.add_argument("--cases", default=None, help=f"comma-separated cases (default: all; {', '.join(CASES)})")
    p.add_argument("--runs", type=int, default=40, help="runs in the stack (default 40)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved repeats; the best of each is kept (default 3)")
    p.add_argument("--steps", type=int, default=None, help="timed steps per measurement (default: per case)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu; e.g. cuda)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.set_defaults(func=run)


def run(args) -> int:
    """The bench command, an entry point: like a study worker (``study.unit.execute_unit``) it keeps freed
    memory in the process (glibc malloc settings, ``study.training.allocator``) and sets torch's threads."""
    import torch

    from study.bench import CASES, DEFAULT_CASES, format_table, run_bench
    from study.training.allocator import keep_freed_memory

    if args.cases is not None:
        cases = tuple(c for c in args.cases.split(",") if c)
        if not cases:
            raise SpecError("bench", "cases", args.cases, "must name at least one of "
                            + ", ".join(repr(k) for k in CASES))
        for c in cases:
            if c not in CASES:
                raise SpecError("bench", "cases", c, "must be one of " + ", ".join(repr(k) for k in CASES))
    else:
        cases = ("small",) if args.quick else DEFAULT_CASES
    runs = check("bench", "runs", Integer(1), args.runs)
    repeats = check("bench", "repeats", Integer(1), args.repeats)
    steps = None if args.steps is None else check("bench", "steps", Integer(1), args.steps)
    if args.threads is not None:
        torch.set_num_threads(check("bench", "threads", Integer(1), args.threads))
    try:
        device = torch.device(args.device)
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError):
        raise SpecError("bench", "device", args.device, "must be an available torch device (cpu, cuda, ...)") from None
    keep_freed_memory()  # process-wide: the conditions of the trainer on a study worker
    rows = run_bench(cases, runs=runs, repeats=repeats, device=device, steps=steps)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(format_table(rows))
        threads = torch.get_num_threads()
        print(f"({threads} thread{'s' if threads > 1 else ''}, device {device}; best of {repeats} interleaved "
              "repeats; per epoch = per step x samples // 250)")
    return 0
