"""What predicts test error, in figures: every predictor's |Kendall tau| ranked (with the window scores), and
the predictors without a figure of their own against test error, one scatter grid per kind (the grid a
predictor joins is its column's declaration, ``study.experiment.schema.AsPredictor.figure``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from ..columns import PREDICTOR_BY_COLUMN, figure_grid
from ..plotting import BLACK, BLUE, GREEN, GREY, RED, THEME, new_figure
from .base import FigureData, figure, scatter
from .design import good_band

# The scatter grids: the predictors whose declaration names the figure, in ``columns.PREDICTORS`` order.
METRIC_GRID = figure_grid("metrics")
PROXY_GRID = figure_grid("proxies")
BASELINE_GRID = figure_grid("baselines")


def abs_interval(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval [lo, hi] of tau mapped through |.|: [0, max(|lo|, |hi|)] when it straddles 0."""
    straddle = (lo < 0) & (hi > 0)
    a, b = np.abs(lo), np.abs(hi)
    return np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b)


def window_rows(windows: pd.DataFrame) -> pd.DataFrame:
    """The window scores that join the predictor ranking: those of the U-shaped metrics (and always the
    NLC's), as rows shaped like the correlation table's (``kendall`` = the mean out-of-sample tau, its
    interval the spread over the splits), of kind "window"."""
    if not len(windows):
        return pd.DataFrame()
    w = windows[(windows["u_shaped"] | (windows["metric"] == "nlc")) & np.isfinite(windows["tau"])]
    return pd.DataFrame({"predictor": w["metric"] + ":window", "label": "window: " + w["label"],
                         "kind": "window", "kendall": w["tau"], "kendall_lo": w["tau_lo"],
                         "kendall_hi": w["tau_hi"]})


@figure("ranking", "predictors", "Predictor ranking by |Kendall τ| with test error, with bootstrap intervals.",
        needs=("corr", "windows"))
def fig_ranking(d: FigureData) -> Figure:
    """Every predictor's |Kendall tau| with test error and its bootstrap interval, best first; trivial
    baselines in grey, the best baseline's level as a dashed line; the window scores of the U-shaped
    metrics (``window_rows``) in green beside them."""
    c = d.corr[np.isfinite(d.corr["kendall"])] if len(d.corr) else d.corr
    c = pd.concat([c, window_rows(d.windows)], ignore_index=True) if len(c) else c
    fig, (ax,) = new_figure(panel=(6.0, max(2.5, 0.28 * len(c) + 1.0)), left=2.2)
    with rc_context(THEME):
        if len(c):
            c = c.assign(abs_tau=c["kendall"].abs()).sort_values("abs_tau", ascending=False)
            colors = [GREY if k == "baseline" else (BLUE if k == "proxy" else (GREEN if k == "window" else BLACK))
                      for k in c["kind"]]
            y = np.arange(len(c))
            ax.barh(y, c["abs_tau"], color=colors)
            lo, hi = abs_interval(c["kendall_lo"].to_numpy(float), c["kendall_hi"].to_numpy(float))
            err = np.vstack([np.clip(c["abs_tau"] - lo, 0, None), np.clip(hi - c["abs_tau"], 0, None)])
            ax.errorbar(c["abs_tau"], y, xerr=np.nan_to_num(err), fmt="none", ecolor=RED, lw=0.8, capsize=2)
            ax.set_yticks(y, [f"{lbl} ({'+' if t >= 0 else '−'})" for lbl, t in zip(c["label"], c["kendall"])],
                          fontsize=7)
            ax.invert_yaxis()
            base = c[c["kind"] == "baseline"]
            if len(base):
                ax.axvline(base["abs_tau"].max(), color=GREY, ls="--", lw=0.8)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        ax.set_xlabel("|Kendall τ| with test error (sign in brackets; bars: bootstrap interval)")
        ax.set_title("black: init metrics, blue: proxies, grey: trivial baselines,\ngreen: window scores "
                     "(out of sample; bars: spread over splits)", fontsize=7)
    return fig


def _grid(d: FigureData, columns: tuple[str, ...], ncols: int = 3) -> Figure:
    present = [c for c in columns if c in d.sample.columns]
    nrows = max(1, math.ceil(len(present) / ncols))
    fig, axes = new_figure(ncols=ncols, nrows=nrows)
    for ax, col in zip(axes, present):
        p = PREDICTOR_BY_COLUMN.get(col)
        scatter(ax, d.sample, col, "test_error", logx=bool(p and p.log))
        good_band(ax, d, col)
    for ax in axes[len(present):]:
        ax.set_visible(False)
    return fig


@figure("metrics", "more", "Activation ratio, variability, gradient confounders and the activation's NLC_τ(1) and "
        "linear-approximation error vs test error (shaded: good range, black line: its best value).", needs=("good",))
def fig_metrics(d: FigureData) -> Figure:
    """Activation ratio (the variability paper, *Variability of Neural Networks and Han-Layer*, eq. 5),
    variability (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3) and the gradient confounders of
    the NLC paper's section 6 vs test error."""
    return _grid(d, METRIC_GRID)


@figure("proxies", "more", "Zero-cost proxies at initialization vs test error (shaded: good range).",
        needs=("good",))
def fig_proxies(d: FigureData) -> Figure:
    """Zero-cost proxies at initialization vs test error."""
    return _grid(d, PROXY_GRID)


@figure("baselines", "more", "Trivial baselines vs test error (shaded: good range).", needs=("good",))
def fig_baselines(d: FigureData) -> Figure:
    """Trivial baselines vs test error (depth is figure 4)."""
    return _grid(d, BASELINE_GRID)
