"""What was learned: loading a study's results, correlation statistics, figures, the HTML report.

Reads Parquet and study.yaml only; never imports torch. ``write_report`` (and ``analysis.figures``)
load matplotlib and seaborn on first use, so loading results and computing statistics stays light.
"""

from study.schema import SCHEMA_VERSION

from .columns import AXES, BASELINES, PREDICTORS, Predictor
from .pruning import PAPER_WINDOW, nlc_pruning, pruning_curve
from .results import Results, load_results, planned_count
from .stats import correlations, granulated_kendall, paired_effects, psi_table, sign_test

__all__ = [
    "AXES", "BASELINES", "PAPER_WINDOW", "PREDICTORS", "Predictor", "Results", "SCHEMA_VERSION", "correlations",
    "granulated_kendall", "load_results", "nlc_pruning", "paired_effects", "planned_count", "pruning_curve",
    "psi_table", "sign_test", "write_report",
]


def __getattr__(name: str):
    if name == "write_report":
        from .report import write_report

        return write_report
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")
