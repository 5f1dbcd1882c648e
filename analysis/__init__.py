"""What was learned: loading a study's results, correlation statistics, figures, the HTML report.

Reads Parquet and study.yaml only; never imports torch. ``write_report`` (and ``analysis.figures``)
load matplotlib and seaborn on first use, so loading results and computing statistics stays light.
"""

if __name__ != "archstudy.analysis":  # one module object per file: the packages are imported as archstudy.analysis
    raise ImportError(f"import archstudy.analysis, not {__name__} (archstudy's packages live under archstudy)")

from typing import Any

from archstudy.study.experiment.window_rule import PAPER_WINDOW
from archstudy.study.experiment.schema import RESULTS_SCHEMA_VERSION

from .columns import AXES, BASELINES, PREDICTORS, Predictor
from .edf import ErrorEDF, edf
from .good_ranges import good_ranges, nlc_good_range
from .leaderboard import Leaderboard, leaderboard
from .pruning import nlc_pruning, pruning_curve
from .results import Results, load_results, planned_count, read_curves
from .stats import (
    correlations,
    granulated_kendall,
    granulated_kendall_interval,
    granulated_kendall_tau_b,
    paired_effects,
    psi_table,
    psi_table_tau_b,
    sign_test,
)
from .range_predictors import range_predictors

__all__ = [
    "AXES",
    "BASELINES",
    "ErrorEDF",
    "Leaderboard",
    "PAPER_WINDOW",
    "PREDICTORS",
    "Predictor",
    "Results",
    "RESULTS_SCHEMA_VERSION",
    "leaderboard",
    "correlations",
    "edf",
    "good_ranges",
    "nlc_good_range",
    "range_predictors",
    "granulated_kendall",
    "granulated_kendall_interval",
    "granulated_kendall_tau_b",
    "load_results",
    "nlc_pruning",
    "paired_effects",
    "planned_count",
    "pruning_curve",
    "psi_table",
    "psi_table_tau_b",
    "read_curves",
    "sign_test",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name == "write_report":
        from .report import write_report

        return write_report
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")
