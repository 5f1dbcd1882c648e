"""``archstudy top STUDY``: the leaderboard: a study's best architectures and its leading predictors of test error.

The best ``-k`` architectures by ``--by`` (test error by default; any error or predictor column), each with its
errors, the spec fields that describe it and its metrics at initialization, then the predictors of test error as
the report ranks them (``analysis.leaderboard``). Read-only; works on a study that is still running (it ranks what
has finished). ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser(
        "top",
        help="the leaderboard: the best architectures and the top predictors of test error",
        description="Print the study's best architectures (errors, key spec fields, metrics at "
        "initialization) and its leading predictors of test error, ranked as the report ranks them. "
        "Read-only; a running study shows what has finished.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("-k", type=int, default=10, metavar="K", help="architectures shown (default %(default)s)")
    p.add_argument(
        "--by",
        default="test_error",
        metavar="COLUMN",
        help="rank by this column: an error (test_error, val_error, train_error: lowest first) or a "
        "predictor (nlc, variability, grad_norm, ...: the end that goes with low test error in this "
        "study first); default %(default)s",
    )
    p.add_argument("--predictors", type=int, default=5, metavar="N", help="predictors shown (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the leaderboard as one JSON object")
    p.set_defaults(func=command)


def command(args) -> int:
    from archstudy.analysis import load_results
    from archstudy.analysis.leaderboard import leaderboard

    board = leaderboard(
        load_results(args.study, runs=False), args.k, args.by, predictors=args.predictors, study=args.study
    )
    print(json.dumps(board.to_dict(), indent=1) if args.json else board.text())
    return 0
