"""``archstudy top STUDY``: the leaderboard: a study's best architectures and its leading predictors of test error.

The best ``-k`` architectures by ``--by`` (test error by default; any error or predictor column), each with its
errors, the spec fields that describe it and its metrics at initialization, then the predictors of test error as
the report ranks them (``analysis.leaderboard``). Read-only; works on a study that is still running (it ranks what
has finished). ``--json`` prints the same as one JSON object.

On a terminal the text keeps within ``flags.WIDTH`` columns (``--wide``, a pipe or a file: all of it): the
architectures' table drops columns in a fixed order (``DROPPED_FIRST``) and says which; a long predictor label is
shown by its column name; prose lines are wrapped. With few trained architectures (fewer than ``analysis.stats.FEW``)
it says how coarse Kendall's tau is: over n architectures it moves in steps of 4 / (n (n - 1)) (tau = (concordant -
discordant) / (n (n - 1) / 2), Kendall, *A New Measure of Rank Correlation*, 1938), and the smallest two-sided
exact p-value, of a perfect order, is 2 / n!.
"""

from __future__ import annotations

import dataclasses
import json
import math

from archstudy.study.experiment.schema import ARCHITECTURES, columns

from .flags import WIDTH, add_wide, fit, output_width
from .commands import subcommand

ERRORS = ("test_error", "val_error", "train_error")
# The columns of the architectures' table a narrow terminal loses, in order (after the metrics beyond NLC, bias and
# the one ranked by): four spec fields, the errors other than test error, then bias, width and the parameter
# count; the rank, the index, the variant, the test error, depth, activation and the NLC stay.
DROPPED_FIRST = ("param", "weights", "skip", "norm", "train_error", "val_error", "bias", "width", "num_params")
SHOWN_HEADERS = {"rank": "#", "test_error": "test", "val_error": "val", "train_error": "train", "num_params": "params"}


def _column_help() -> str:
    """What each column of the two tables is, from the schema's declarations (their descriptions)."""
    described = {c.name: c for c in columns(ARCHITECTURES)}
    lines = [
        "architectures' table: # rank by --by (1 = best); index: the draw's index in the study; variant: base, or the "
        "factor a sibling differs in; test, val, train: the error rates of the selected run; params: trainable "
        "parameters;"
    ]
    spec = ("depth", "width", "activation", "norm", "skip", "weights", "param")
    lines.append("; ".join(f"{name}: {described[name].meaning}" for name in spec if name in described) + ";")
    metrics = [
        c
        for c in columns(ARCHITECTURES)
        if c.predictor is not None and c.predictor.kind in ("metric", "proxy") and c.meaning
    ]
    lines.append(
        "metrics at initialization (headed by their label, or their column name when the label is long): "
        + "; ".join(
            (c.name if c.predictor.label == c.name else f"{c.name} ({c.predictor.label})") + f": {c.meaning}"
            for c in metrics
            if c.predictor
        )
        + "."
    )
    lines.append(
        "predictors' table: rank by |Kendall tau| with test error (as the report ranks them); kind: metric, proxy or "
        "baseline; tau: Kendall's tau with test error; p: its two-sided p-value; p Holm: adjusted over every "
        "predictor ranked; spearman: Spearman's rho; lift: |tau| beyond the best baseline, named in over."
    )
    return "\n\n".join("\n".join(fit(line, WIDTH)) for line in lines)


@subcommand("top", order=50, activity="reading the study", reads=("study",))
def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "top",
        help="the leaderboard: the best architectures and the top predictors of test error",
        description="\n".join(
            fit(
                "Print the study's best architectures (errors, key spec fields, metrics at initialization) and its "
                "leading predictors of test error, ranked as the report ranks them. Read-only; a running study "
                f"shows what has finished. At most {WIDTH} columns unless --wide: the architectures' table then "
                "drops columns in a fixed order and says which. The columns:",
                WIDTH,
                hang=0,
            )
        ),
        epilog=_column_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    add_wide(p)
    p.set_defaults(func=command)


def _table_width(board) -> int:
    """The widest line of the architectures' table ``board.text()`` prints (its lines start with two spaces)."""
    text = board.text().splitlines()
    start = 2 if len(board.architectures) else len(text)
    return max((len(line) for line in text[start : start + 1 + len(board.architectures)]), default=0)


def narrowed(board, width: int):
    """``board`` with the architectures' table cut to ``width`` columns (``DROPPED_FIRST``), and the columns it
    lost."""
    df = board.architectures
    keep = {"nlc", "bias", board.by}
    order = [c for c in board.metrics if c not in keep] + [c for c in DROPPED_FIRST if c != board.by]
    dropped: list[str] = []
    for column in order:
        if _table_width(board) <= width:
            break
        if column in df.columns:
            df = df.drop(columns=[column])
            dropped.append(column)
            board = dataclasses.replace(board, architectures=df)
    if len(board.predictors):
        preds = board.predictors.copy()
        preds["label"] = [lab if len(lab) <= 12 else col for lab, col in zip(preds["label"], preds["predictor"])]
        board = dataclasses.replace(board, predictors=preds)
    return board, dropped


def caution(n: int, few: int) -> str | None:
    """What a correlation over only ``n`` (< ``few``) trained architectures can say (module docstring)."""
    if n >= few or n < 2:
        return None
    pairs = n * (n - 1) // 2
    steps = pairs + 1  # tau = (C - D) / pairs, C + D = pairs: C = 0 .. pairs
    p_min = 2 / math.factorial(n)
    return (
        f"caution: only {n} trained architectures (the report warns below {few}): tau takes one of {steps} values "
        f"(steps of {4 / (n * (n - 1)):.3g}) and its smallest exact p-value is 2/{n}! = {p_min:.2g}, so a "
        "tau of +-1.000 can be chance: read the p-values, not the coefficients"
    )


def text(board, width: int | None, few: int) -> str:
    """The leaderboard for a terminal (module docstring)."""
    dropped: list[str] = []
    if width is not None:
        board, dropped = narrowed(board, width)
    lines = board.text().splitlines()
    if dropped:
        table_end = 2 + 1 + len(board.architectures)
        shown = ", ".join(SHOWN_HEADERS.get(c, c) for c in dropped)
        lines.insert(table_end, f"  (--wide: also {shown})")
    if len(board.predictors):
        warn = caution(int(board.predictors["n"].max()), few)
        if warn:
            lines.append(warn)
    return "\n".join(out for line in lines for out in fit(line, width))


def command(args) -> int:
    from archstudy.analysis import load_results
    from archstudy.analysis.leaderboard import leaderboard
    from archstudy.analysis.stats import FEW  # not analysis.report: importing it takes seconds (matplotlib)

    results = load_results(args.study, runs=False)
    board = leaderboard(results, args.k, args.by, predictors=args.predictors, study=args.study)
    if args.json:
        print(json.dumps(board.to_dict(), indent=1))
        return 0
    print(text(board, output_width(args.wide), FEW))
    return 0
