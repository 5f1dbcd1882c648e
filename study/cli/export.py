"""``archstudy export STUDY --to optuna|mlflow|tensorboard|hf --out DEST``: the study in a tool researchers already use,
through that tool's own library (``analysis.exports``; the optional extra ``export``). One way: the study is read, never
written; ``DEST`` is a new directory that holds the whole export or, when it fails, nothing.
"""

from __future__ import annotations

import sys
from .commands import subcommand


@subcommand("export", order=56, activity="exporting the study", reads=("study",))
def register(sub) -> None:
    from archstudy.analysis.exports import INSTALL, TARGETS

    p = sub.add_parser(
        "export",
        help="the study as an Optuna study, MLflow runs, TensorBoard HParams or a Hugging Face dataset",
        description="Export the study in STUDY to DEST (a new directory) for optuna-dashboard, the MLflow UI, "
        "TensorBoard's HParams dashboard or Hugging Face datasets, through each one's own library: "
        f"{INSTALL}. The study is only read. DEST then opens with: "
        + "; ".join(f"{t}: {how.format(out='DEST')}" for t, (_, _, how) in TARGETS.items()),
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("--to", required=True, choices=list(TARGETS), help="the tool to export to")
    p.add_argument("--out", required=True, metavar="DEST", help="a new (or empty) directory to write the export in")
    p.add_argument(
        "--no-rate-runs",
        dest="rate_runs",
        action="store_false",
        help="mlflow only: no nested run per learning rate (each architecture's run still holds every rate's errors "
        "as a metric history over the rate index); a nested run costs tens of milliseconds, 40 per architecture",
    )
    p.set_defaults(func=command)


def command(args) -> int:
    from archstudy.analysis.exports import export_study
    from archstudy.sampling import UserError

    if args.to != "mlflow" and not args.rate_runs:
        raise UserError("export: --no-rate-runs applies to --to mlflow only")
    say = lambda line: print(f"archstudy: {line}", file=sys.stderr, flush=True)  # noqa: E731
    done = export_study(args.study, args.to, args.out, rate_runs=args.rate_runs, say=say)
    print(done.line())
    return 0
