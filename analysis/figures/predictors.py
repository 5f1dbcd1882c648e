"""What predicts test error, in figures: the predictor ranking (``analysis.ranking``: every predictor's |Kendall tau|
with the window scores, the table the overview reads its best predictors from), and the predictors without a
figure of their own against test error, one scatter grid per kind (the grid a predictor joins is its column's
declaration, ``study.experiment.schema.AsPredictor.figure``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..columns import PREDICTOR_BY_COLUMN, figure_grid
from ..plotting import BLACK, BLUE, GREEN, GREY, RED, THEME, figure_legend, new_figure, panels, text_width
from ..ranking import abs_interval, predictor_ranking, window_rows
from .base import FigureData, NothingToDraw, figure, label, omitted, plottable, scatter
from .design import good_band

# The scatter grids: the predictors whose declaration names the figure, in ``columns.PREDICTORS`` order.
METRIC_GRID = figure_grid("metrics")
PROXY_GRID = figure_grid("proxies")
BASELINE_GRID = figure_grid("baselines")

KIND_COLOR = {"metric": BLACK, "proxy": BLUE, "baseline": GREY, "window": GREEN}
KIND_NAME = {
    "metric": "init metric",
    "proxy": "zero-cost proxy",
    "baseline": "trivial baseline",
    "window": "window score (held out)",
}

__all__ = [
    "BASELINE_GRID",
    "METRIC_GRID",
    "PROXY_GRID",
    "abs_interval",
    "fig_baselines",
    "fig_metrics",
    "fig_proxies",
    "fig_ranking",
    "ranking_labels",
    "window_rows",
]


def ranking_labels(r: pd.DataFrame) -> list[str]:
    """The ranking chart's labels: rank, name and the sign of tau ("1. window: NLC (+)")."""
    return [f"{k}. {lbl} ({'+' if t >= 0 else '−'})" for k, lbl, t in zip(r["rank"], r["label"], r["kendall"])]


@figure(
    "ranking",
    "predictors",
    "Predictor ranking by |Kendall τ| with test error, best first (the overview's "
    "best predictors are its first rows): bars with bootstrap intervals; dashed, the best trivial baseline.",
    needs=("corr", "window_scores"),
)
def fig_ranking(d: FigureData) -> Figure:
    """Every predictor's |Kendall tau| with test error and its bootstrap interval, best first
    (``ranking.predictor_ranking``); trivial baselines in grey, the best baseline's level as a dashed line;
    the window scores of the U-shaped metrics in green beside them."""
    r = predictor_ranking(d.corr, d.window_scores)
    if not len(r):
        raise NothingToDraw("No predictor has three finite values with a test error yet: no ranking.")
    labels = ranking_labels(r)
    fig, (ax,) = new_figure(panel=(5.2, 0.25 * len(r) + 0.3), left=text_width(labels) + 0.3, legend_rows=2)
    with rc_context(THEME):
        y = np.arange(len(r))
        ax.barh(y, r["abs_tau"], color=[KIND_COLOR.get(k, BLACK) for k in r["kind"]], height=0.7)
        err = np.vstack([np.clip(r["abs_tau"] - r["abs_lo"], 0, None), np.clip(r["abs_hi"] - r["abs_tau"], 0, None)])
        ax.errorbar(r["abs_tau"], y, xerr=np.nan_to_num(err), fmt="none", ecolor=RED, lw=0.9, capsize=2)
        ax.set_yticks(y, labels)
        ax.set_ylim(len(r) - 0.4, -0.6)
        ax.grid(False, axis="y")
        base = r[r["kind"] == "baseline"]
        if len(base):
            ax.axvline(base["abs_tau"].max(), color=GREY, ls="--", lw=0.9)
        ax.set_xlim(
            0, max(1e-3, float(np.nanmax(np.r_[r["abs_hi"].to_numpy(float), r["abs_tau"].to_numpy(float)]))) * 1.05
        )
        ax.set_xlabel("|Kendall τ| with test error (sign in brackets)")
        kinds = [k for k in KIND_NAME if k in set(r["kind"])]
        figure_legend(fig, [Patch(color=KIND_COLOR[k]) for k in kinds], [KIND_NAME[k] for k in kinds], ncol=2)
    return fig


def _grid(d: FigureData, columns: tuple[str, ...], what: str) -> Figure:
    """One panel per column of ``columns`` with points against test error, its good range shaded; the columns
    without (not measured) are named under the figure."""
    sample = d.sample
    log = {c: bool(PREDICTOR_BY_COLUMN[c].log) if c in PREDICTOR_BY_COLUMN else False for c in columns}
    present = [c for c in columns if c in sample.columns and plottable(sample, c, "test_error", log[c])]
    missing = [c for c in columns if c not in present]
    if not present:
        raise NothingToDraw(f"No {what} were measured with a finite value ({', '.join(label(c) for c in columns)}).")
    fig, axes = panels(len(present))
    for ax, col in zip(axes, present):
        scatter(ax, sample, col, "test_error", logx=log[col])
        good_band(ax, d, col)
    if missing:
        omitted(fig, f"Not measured (no finite value): {', '.join(label(c) for c in missing)}.")
    return fig


@figure(
    "metrics",
    "more",
    "Activation ratio, variability, gradient confounders and the activation's NLC_τ(1) and "
    "linear-approximation error vs test error (shaded: good range, black line: its best value).",
    needs=("good",),
)
def fig_metrics(d: FigureData) -> Figure:
    """Activation ratio (the variability paper, *Variability of Neural Networks and Han-Layer*, eq. 5),
    variability (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3) and the gradient confounders of
    the NLC paper's section 6 vs test error."""
    return _grid(d, METRIC_GRID, "metrics")


@figure("proxies", "more", "Zero-cost proxies at initialization vs test error (shaded: good range).", needs=("good",))
def fig_proxies(d: FigureData) -> Figure:
    """Zero-cost proxies at initialization vs test error."""
    return _grid(d, PROXY_GRID, "zero-cost proxies")


@figure("baselines", "more", "Trivial baselines vs test error (shaded: good range).", needs=("good",))
def fig_baselines(d: FigureData) -> Figure:
    """Trivial baselines vs test error (depth is figure 4)."""
    return _grid(d, BASELINE_GRID, "trivial baselines")
