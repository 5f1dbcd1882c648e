"""``archstudy calibrate``: how often the analysis' verdicts fire on simulated studies, where the truth is known.

``predictor``: the joint predictor's verdicts (``analysis.predict_simulation.calibration_bench``): how often each fires
when nothing predicts test error (null), and how often the raw NLC's interval covers its true held-out rho (signal).
``verdicts``: the report's other verdicts (significant correlations, U-shapes, paired effects, EDF tests, ...) on
simulated null studies (``analysis.verdict_calibration.null_rates``). No torch; statistics only.
"""

from __future__ import annotations

import json
import sys

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Integer, check

from .commands import subcommand

KINDS = ("predictor", "verdicts")


@subcommand("calibrate", order=115, activity="calibrating the verdicts")
def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="how often the analysis' verdicts fire on simulated studies (null rates, coverage)",
        description="Simulate studies whose truth is known and count how often each verdict of the analysis "
        "fires: 'predictor', the joint predictor's verdicts under the null and its interval's coverage with a "
        "known signal; 'verdicts', the report's other verdicts on null studies. No torch.",
    )
    p.add_argument("kind", choices=KINDS, help="which verdicts: predictor or verdicts")
    p.add_argument("--replicates", type=int, default=200, help="studies per size and kind (default %(default)s)")
    p.add_argument("--sizes", default="48,120", help="architectures per study, comma-separated (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    p.set_defaults(func=command)


def sizes_of(text: str) -> tuple[int, ...]:
    """``--sizes``: study sizes of at least 8 architectures."""
    try:
        sizes = tuple(int(n) for n in text.split(",") if n.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 8:
        raise SpecError("calibrate", "sizes", text, "must be a comma-separated list of integers >= 8")
    return sizes


def command(args) -> int:
    replicates = check("calibrate", "replicates", Integer(1), args.replicates)
    sizes = sizes_of(args.sizes)
    if args.kind == "verdicts":
        from archstudy.analysis.verdict_calibration import null_rates

        table = null_rates(sizes, replicates, progress=lambda line: print(line, file=sys.stderr, flush=True))
    else:
        from archstudy.analysis.predict_simulation import calibration_bench

        table = calibration_bench(replicates, sizes, progress=sys.stderr)
    if args.json:
        json.dump(table.to_dict("records"), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0
