"""``archstudy sample``: print sampled architecture specs as JSON lines."""

from __future__ import annotations

import json
import sys

from archstudy.sampling import PRESETS, SIBLING_AXES, SpecError, plan_study
from archstudy.sampling.constraints import SEED, Integer, check
from archstudy.sampling.unit_names import MAX_ARCHITECTURES
from archstudy.sampling.width import check_budget

from ..experiment.config import StudyConfig
from .flags import shown
from .commands import subcommand


D_IN, D_OUT = 40, 3  # waveform-noise's


@subcommand("sample", order=90, activity="sampling architectures")
def register(sub) -> None:
    p = sub.add_parser(
        "sample",
        help="print sampled architectures as JSON lines",
        description="Print architectures index .. index+n-1 of a study as JSON lines (one spec per "
        "line, with its index and content id). Architecture i is the same on every machine.",
    )
    p.add_argument("--n", type=int, default=5, help="how many architectures (default %(default)s)")
    p.add_argument("--start", type=int, default=0, help="index of the first one (default %(default)s)")
    seed, preset, budget = (StudyConfig.default(k) for k in ("seed", "preset", "param_budget"))  # a study's defaults
    p.add_argument("--seed", type=int, default=seed, help="study seed (default %(default)s)")
    p.add_argument("--preset", default=preset, choices=sorted(PRESETS), help="architecture space (default %(default)s)")
    p.add_argument("--d-in", type=int, default=D_IN, help="input dimension (default %(default)s, waveform-noise)")
    p.add_argument("--d-out", type=int, default=D_OUT, help="output dimension / classes (default %(default)s)")
    p.add_argument("--param-budget", type=int, default=budget, help=f"trainable parameters (default {shown(budget)})")
    p.add_argument(
        "--siblings", action="store_true", help=f"also print each one's siblings along {', '.join(SIBLING_AXES)}"
    )
    p.set_defaults(func=command)


CHUNK = 1000  # architectures sampled (and their budget checked) before they are printed


def command(args) -> int:
    out = sys.stdout
    # The flags by their own names (sample_spec would name its parameters, study_seed and index), under the
    # constraints a study's config declares, and the budget checked as `archstudy run` checks it.
    check("sample", "start", Integer(0, MAX_ARCHITECTURES - 1), args.start)
    check("sample", "n", Integer(0, MAX_ARCHITECTURES - args.start), args.n)
    check("sample", "seed", SEED, args.seed)
    for flag in ("d_in", "d_out", "param_budget"):
        check("sample", flag, Integer(1), getattr(args, flag))
    for flag, default in (("d_in", D_IN), ("d_out", D_OUT)):
        # a dimension given larger than the budget is the dimension's mistake (the budget's is named below)
        if getattr(args, flag) != default and getattr(args, flag) > args.param_budget:
            raise SpecError(
                "sample",
                flag,
                getattr(args, flag),
                f"must be at most param_budget "
                f"({args.param_budget:,}): its layer alone would hold more parameters than the budget",
            )
    end = args.start + args.n
    for first in range(args.start, end, CHUNK):
        # the study's own plan: each draw, then its siblings (as `archstudy run` trains them)
        rows = list(
            plan_study(
                args.seed,
                min(first + CHUNK, end),
                args.d_in,
                args.d_out,
                args.preset,
                args.param_budget,
                SIBLING_AXES if args.siblings else (),
                start=first,
            )
        )
        kept = (p.spec for p in rows if p.variant != "width")  # a width sibling leaves the budget by design
        check_budget("sample", kept, args.param_budget, f"d_in {args.d_in}, d_out {args.d_out}")
        for planned in rows:
            s = planned.spec
            line = {
                "index": planned.index,
                "variant": planned.variant,
                "arch_id": s.content_id,
                "num_params": s.num_params,
                **s.to_dict(),
            }
            out.write(json.dumps(line) + "\n")
    return 0
