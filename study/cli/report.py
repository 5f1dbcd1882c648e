"""``archstudy report``: one self-contained HTML report of one or more studies (e.g. one per dataset).

Imports only ``analysis``, ``sampling``, the torch-free ``study.experiment`` and the standard library: drawing a
report needs no torch. ``--n-boot`` is bounded up front by ``N_BOOT_MAX``: the bootstrap holds ``n_boot`` resamples
of every statistic's sample at once (``--n-boot 10**12`` asked numpy for 21.8 TiB), and the Monte Carlo error of a
percentile interval's level, the binomial standard error ``sqrt(p (1 - p) / n_boot)`` of the share ``p`` of resamples
below its end, is already below 0.001 at 100,000 resamples (p = 0.025: 0.00049).
"""

from __future__ import annotations

import os
import sys
import time

from ..experiment.config import N_BOOT_MAX
from .commands import subcommand


@subcommand("report", order=60, activity="reading the studies and writing the report", reads=("study_dirs",))
def register(sub) -> None:
    from archstudy.sampling.constraints import numbers_of

    from ..experiment.config import REPORT_NAME
    from ..experiment.window_rule import PAPER_WINDOW  # torch-free, like the analysis
    from .flags import Words

    lo, hi = PAPER_WINDOW
    p = sub.add_parser(
        "report",
        help="draw the HTML report of one or more studies",
        description="Analyse one or more study directories (one per dataset, say) and write one self-contained "
        "HTML file: what predicts test error (Pearson, Spearman, Kendall with bootstrap intervals, granulated "
        "Kendall, lift over trivial baselines, window scores), error EDFs and good ranges of the design space (the "
        "study's own NLC window among them), paired sibling effects, NLC pruning, and the NLC paper's figures; "
        "several studies side by side. Works on a study that is still running (it says so).",
    )
    p.add_argument("study_dirs", nargs="+", metavar="STUDY_DIR", help="study directory (or s3:// / gs:// prefix)")
    p.add_argument(
        "--out",
        help=f"HTML file to write (default: STUDY_DIR/{REPORT_NAME} for one study directory, where `run --report` "
        f"writes it; ./{REPORT_NAME} for several studies or an s3:// or gs:// one)",
    )
    p.add_argument(
        "--n-boot",
        type=int,
        default=1000,
        help=f"bootstrap resamples per statistic (default %(default)s, at most {N_BOOT_MAX:,})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default %(default)s)")
    p.add_argument(
        "--nlc-window",
        action=Words,
        read=numbers_of,
        metavar=("LO", "HI"),
        help="NLC window of the pruning analysis, LO,HI or LO HI as `run --nlc-window` takes it (default: "
        "the study's own NLC window, its good range, where the study is large enough for it, else "
        f"{lo:g},{hi:g}, the NLC paper's range)",
    )
    p.add_argument(
        "--reproductions",
        metavar="DIR",
        help="also list the verdicts of the paper reproductions in DIR "
        "(the --out of `archstudy reproduce`), linked to their pages",
    )
    p.add_argument(
        "--predict-from",
        metavar="STUDY|FILE",
        help="also score on each study the joint predictor of "
        "test error fitted on the study STUDY (or saved in FILE by `archstudy rank`): does what was learned "
        "there hold here?",
    )
    p.add_argument(
        "--figures",
        metavar="DIR",
        help="also write every figure as a file, DIR/<study>-<figure>.<format> (DIR is made if missing)",
    )
    p.add_argument(
        "--format",
        dest="figure_format",
        choices=("png", "svg", "pdf"),
        default="png",
        help="format of the --figures files: png (the page's images), svg or pdf (vectors, for a paper; "
        "default %(default)s)",
    )
    p.set_defaults(func=command)


def command(args) -> int:
    from archstudy.analysis import write_report
    from archstudy.sampling import SpecError
    from archstudy.sampling.constraints import Integer, check

    # Every study location was opened, and object storage asked once, before this ran (study.cli.open_locations).
    check("report", "n_boot", Integer(0, N_BOOT_MAX), args.n_boot)
    if args.out is None:
        args.out = default_out(args.study_dirs)
    if os.path.isdir(args.out):
        raise SpecError("report", "out", args.out, "is a directory: give the HTML file to write (e.g. DIR/report.html)")
    t0 = time.perf_counter()
    if args.figure_format != "png" and args.figures is None:
        raise SpecError(
            "report", "--format", args.figure_format, "is the format of the --figures files: give --figures DIR too"
        )
    out = write_report(
        args.study_dirs,
        args.out,
        n_boot=args.n_boot,
        seed=args.seed,
        window=args.nlc_window,
        reproductions=args.reproductions,
        figures=args.figures,
        figure_format=args.figure_format,
        predict_from=args.predict_from,
    )
    figures = ""
    if args.figures is not None:
        figures = f"; figures as {args.figure_format} in {args.figures}"
    print(
        f"wrote {out} ({len(args.study_dirs)} stud{'y' if len(args.study_dirs) == 1 else 'ies'}, "
        f"{time.perf_counter() - t0:.1f} s{figures})",
        file=sys.stdout,
    )
    return 0


def default_out(study_dirs: list[str]) -> str:
    """Where the report goes without ``--out``: beside one local study's files (``STUDY/report.html``, where `run
    --report` writes it, the one file a report may write in a study); in the current directory (``./report.html``)
    for several studies, which no one study holds, and for an s3:// or gs:// study."""
    from ..execution.location import names_a_uri
    from ..experiment.config import REPORT_NAME

    if len(study_dirs) == 1 and not names_a_uri(study_dirs[0]):
        return os.path.join(study_dirs[0], REPORT_NAME)
    return REPORT_NAME
