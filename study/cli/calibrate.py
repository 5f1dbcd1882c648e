"""``archstudy calibrate``: how often the analysis' verdicts fire on simulated studies, where the truth is known;
no torch. ``predictor``: the joint predictor's verdicts when nothing predicts test error (null) and how often the
raw NLC's interval covers its true held-out rho (signal) (``analysis.predict_simulation.calibration_rates``,
docs/predict.md). ``verdicts``: the report's other verdicts (significant correlations, U-shapes, paired effects,
EDF tests, ...) on simulated null studies, and the NLC window rule on windowed ones
(``analysis.verdict_calibration.null_rates``, docs/analysis.md)."""

from __future__ import annotations

import json
import sys

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Integer, check

from .commands import subcommand

CALIBRATIONS = ("predictor", "verdicts")


@subcommand("calibrate", order=115, activity="calibrating the verdicts")
def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="how often the analysis' verdicts fire on simulated studies with a known truth",
        description="Simulate studies whose truth is known and count how often each verdict fires: 'predictor', "
        "the joint predictor's verdicts when nothing predicts test error (null) and how often the raw NLC's "
        "interval covers its true held-out rho (signal) (analysis.predict_simulation); 'verdicts', the report's "
        "other verdicts (significant correlations, U-shapes, paired effects, EDF tests, ...) on simulated null "
        "studies and the NLC window rule on windowed ones (analysis.verdict_calibration). No torch.",
    )
    p.add_argument("calibration", choices=CALIBRATIONS, help="which verdicts: %(choices)s")
    p.add_argument("--replicates", type=int, default=200, help="studies per size and kind (default %(default)s)")
    p.add_argument("--sizes", default="48,120", help="architectures per study, comma-separated (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    p.set_defaults(func=command)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(n) for n in text.split(",") if n.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 8:
        raise SpecError("calibrate", "sizes", text, "must be a comma-separated list of integers >= 8")
    return sizes


def command(args) -> int:
    """The rates of ``analysis.predict_simulation.calibration_rates`` (``predictor``) or of
    ``analysis.verdict_calibration.null_rates`` (``verdicts``), as a table or JSON; progress on standard error."""
    replicates = check("calibrate", "replicates", Integer(1), args.replicates)
    sizes = _sizes(args.sizes)
    if args.calibration == "verdicts":
        from archstudy.analysis.verdict_calibration import null_rates

        table = null_rates(sizes, replicates, progress=lambda line: print(line, file=sys.stderr, flush=True))
    else:
        from archstudy.analysis.predict_simulation import calibration_rates

        table = calibration_rates(replicates, sizes, progress=sys.stderr)
    if args.json:
        json.dump(table.to_dict("records"), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0
