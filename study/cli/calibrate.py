"""``archstudy calibrate``: how often the analysis' verdicts fire on simulated studies, where the truth is known;
no torch. ``predictor``: the joint predictor's verdicts when nothing predicts test error (null) and how often the
raw NLC's interval covers its true held-out rho (signal) (``analysis.predict_simulation.calibration_rates``,
docs/predict.md). ``verdicts``: the report's other verdicts (significant correlations, U-shapes, paired effects,
EDF tests, ...) on simulated null studies, one by one, and the NLC window rule on windowed ones
(``analysis.verdict_calibration.null_rates``, docs/analysis.md). ``findings``: the report's findings as a whole
(``analysis.findings``): how often a study where test error depends on nothing shows "some finding", with and without
siblings, and how often a study with a U-shaped NLC effect and a second metric shows them
(``analysis.verdict_calibration.findings_rates``; ``--predict`` adds the joint predictor's comparisons, seconds a
study). ``intervals``: the coverage and width of the joint model's paired-difference intervals on studies with
signal (``analysis.predict_simulation.coverage_rates``, docs/analysis.md)."""

from __future__ import annotations

import json
import sys

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Integer, check

from .commands import subcommand

CALIBRATIONS = ("predictor", "verdicts", "findings", "intervals")


@subcommand("calibrate", order=115, activity="calibrating the verdicts")
def register(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="how often the analysis' verdicts fire on simulated studies with a known truth",
        description="Simulate studies whose truth is known and count how often each verdict fires: 'predictor', "
        "the joint predictor's verdicts when nothing predicts test error (null) and how often the raw NLC's "
        "interval covers its true held-out rho (signal) (analysis.predict_simulation); 'verdicts', the report's "
        "other verdicts (significant correlations, U-shapes, paired effects, EDF tests, ...) on simulated null "
        "studies, one by one, and the NLC window rule on windowed ones (analysis.verdict_calibration); "
        "'findings', the report's findings as a whole: some finding under the null, and the power to find a "
        "U-shaped NLC and a second metric (analysis.verdict_calibration); 'intervals', the coverage and width of "
        "the joint model's paired-difference intervals with signal (analysis.predict_simulation). No torch.",
    )
    p.add_argument("calibration", choices=CALIBRATIONS, help="which verdicts: %(choices)s")
    p.add_argument("--replicates", type=int, default=200, help="studies per size and kind (default %(default)s)")
    p.add_argument("--sizes", default="48,120", help="architectures per study, comma-separated (default %(default)s)")
    p.add_argument(
        "--predict",
        action="store_true",
        help="findings: with the joint predictor's held-out comparisons (seconds a study; default: the other families)",
    )
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
    """The rates of ``analysis.predict_simulation.calibration_rates`` (``predictor``), of
    ``analysis.verdict_calibration.null_rates`` (``verdicts``), of its ``findings_rates`` (``findings``) or of
    ``analysis.predict_simulation.coverage_rates`` (``intervals``), as a table or JSON; progress on standard error."""
    replicates = check("calibrate", "replicates", Integer(1), args.replicates)
    sizes = _sizes(args.sizes)
    if args.predict and args.calibration != "findings":  # said, not silently dropped
        raise UserError(
            f"calibrate: --predict adds the joint predictor's comparisons to `calibrate findings` only; "
            f"`calibrate {args.calibration}` has none to add (leave --predict out)"
        )
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    if args.calibration == "verdicts":
        from archstudy.analysis.verdict_calibration import null_rates

        table = null_rates(sizes, replicates, progress=say)
    elif args.calibration == "findings":
        import pandas as pd

        from archstudy.analysis.verdict_calibration import findings_rates

        table = pd.concat(
            [findings_rates(sizes, replicates, kind=k, predict=args.predict, progress=say) for k in ("null", "signal")],
            ignore_index=True,
        )
    elif args.calibration == "intervals":
        from archstudy.analysis.predict_simulation import coverage_rates

        table = coverage_rates(replicates, sizes, progress=say)
    else:
        from archstudy.analysis.predict_simulation import calibration_rates

        table = calibration_rates(replicates, sizes, progress=sys.stderr)
    if args.json:
        json.dump(table.to_dict("records"), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0
