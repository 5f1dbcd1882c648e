"""The design space in figures (the report's sections on error EDFs, good ranges and NLC-guided pruning): error
EDFs per level of every sampled axis (``analysis.edf``), good ranges as shaded bands on factor-vs-error
scatters (``analysis.good_ranges``; ``good_band`` also shades the predictor grids), and the pruning trade-off.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

import seaborn as sns

from ..columns import PREDICTORS
from ..edf import ErrorEDF
from ..plotting import BLACK, BLUE, GREY, RED, THEME, new_figure, set_log
from ..pruning import PAPER_WINDOW, pruning_curve
from .base import FigureData, figure, fmt_p, label, scatter

# The predictors a scatter grid shows with its band (``figures.predictors``): the good-ranges figure leaves them out.
GRIDDED = tuple(p.column for p in PREDICTORS if p.figure)


def _edf_panel(ax, e: ErrorEDF, dataset: str, axis: str, *, normalized: bool = True, title: str | None = None,
               colors: dict | None = None, legend: str = "stats") -> None:
    """One axis' EDFs: a step line per level; dashed, the normalized EDF where the axis has more than one
    shared complexity bin (the levels differ in size). ``colors``: level -> colour (default: in order);
    ``legend``: "stats" (level: n | min | mean), "levels" (the names) or "none"."""
    lv = e.levels[(e.levels["dataset"] == dataset) & (e.levels["axis"] == axis)]
    cv = e.curves[(e.curves["dataset"] == dataset) & (e.curves["axis"] == axis)]
    ks = e.ks[(e.ks["dataset"] == dataset) & (e.ks["axis"] == axis)]
    differ = normalized and len(lv) and int(lv["bins"].max()) > 1
    colors = colors or dict(zip(lv["level"], sns.color_palette("deep", len(lv))))
    with rc_context(THEME):
        for _, row in lv.iterrows():
            c = cv[cv["level"] == row["level"]].sort_values("error")
            x = np.concatenate([[c["error"].iloc[0]], c["error"].to_numpy()])
            text = (f"{row['level']}: {int(row['n'])} | {row['min']:.3f} | {row['mean']:.3f}" if legend == "stats"
                    else row["level"])
            ax.plot(x, np.concatenate([[0.0], c["cdf"].to_numpy()]), drawstyle="steps-post",
                    color=colors[row["level"]], lw=1.2, label=text)
            if differ and np.isfinite(c["normalized_cdf"]).any():
                ax.plot(x, np.concatenate([[0.0], c["normalized_cdf"].to_numpy()]), drawstyle="steps-post",
                        color=colors[row["level"]], lw=0.9, ls="--")
        if legend != "none":
            ax.legend(fontsize=6, title="n | min | mean" if legend == "stats" else None, title_fontsize=6,
                      loc="lower right")
        ax.set_xlabel("test error")
        ax.set_ylabel("cumulative share")
        ax.set_ylim(0, 1.02)
        if title is None:
            top = ks.loc[ks["ks"].idxmax()] if len(ks) else None
            title = axis if top is None else (f"{axis}: largest KS {top['ks']:.2f} ({top['a']} vs {top['b']}, "
                                              f"p = {fmt_p(top['p'])})")
        ax.set_title(title, fontsize=7)


def _edf_axes(e: ErrorEDF | None, dataset: str) -> list[str]:
    if e is None or not len(e.levels):
        return []
    return list(dict.fromkeys(e.levels.loc[e.levels["dataset"] == dataset, "axis"]))


@figure("edf", "edf", "Error EDFs per level of every sampled axis (Radosavovic, Johnson, Xie, Lo and Dollár, "
        "“On Network Design Spaces for Visual Recognition”, 2019, section 3): the share of architectures with test "
        "error at most e. Legend: level, n | min | mean. Dashed: the complexity-normalized EDF, where the levels "
        "differ in size.", needs=("edf",))
def fig_edf(d: FigureData) -> Figure:
    """Error EDFs per level of every sampled axis with at least two levels (``analysis.edf``)."""
    axes_names = _edf_axes(d.edf, d.dataset)
    ncols = 3
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(axes_names) / ncols)))
    for ax, axis in zip(axes, axes_names):
        _edf_panel(ax, d.edf, d.dataset, axis)
    if not axes_names:
        axes[0].text(0.5, 0.5, "no axis has two levels among the random draws", ha="center", va="center",
                     transform=axes[0].transAxes, color=GREY)
    for ax in axes[max(1, len(axes_names)):]:
        ax.set_visible(False)
    return fig


def _band(ax, low: float, best: float, high: float, log: bool) -> None:
    if np.isfinite(low) and np.isfinite(high):
        ax.axvspan(low, high, color=BLUE, alpha=0.15, lw=0, zorder=0)
    if np.isfinite(best):
        ax.axvline(best, color=BLACK, lw=0.9, zorder=1)


def _ranged(good: pd.DataFrame, dataset: str | None = None) -> pd.DataFrame:
    g = good if dataset is None or not len(good) else good[good["dataset"] == dataset]
    return g[(g["n"] >= 3) & np.isfinite(g["low"]) & (g["min"] < g["max"])] if len(g) else g


def good_band(ax, d: FigureData, column: str) -> None:
    """The good range of ``column`` (``analysis.good_ranges``) shaded on a factor-vs-error scatter, its best
    value as a black line (pycls's ``plot_values``), the range in the title; on the NLC, the paper's
    window [1, 3] dashed in red."""
    g = _ranged(d.good, d.dataset)
    r = g[g["factor"] == column] if len(g) else g
    if not len(r):
        return
    r = r.iloc[0]
    _band(ax, r["low"], r["best"], r["high"], bool(r["log"]))
    if column == "nlc":
        for edge in PAPER_WINDOW:
            ax.axvline(edge, color=RED, lw=0.8, ls="--", zorder=1)
    ax.set_title(f"{ax.get_title()}\ngood range [{r['low']:.3g}, {r['high']:.3g}], best {r['best']:.3g}"
                 + (" (U-shaped)" if r["u_shaped"] else ""), fontsize=7)


@figure("good-ranges", "good-ranges", "Good ranges (pycls's empirical bootstrap) of the NLC, bias, depth and the "
        "numeric axes against test error; shaded: where the best architectures of 25% subsamples fall (2.5th to "
        "97.5th percentile), black line: their median; red dashes on the NLC: the NLC paper's window [1, 3]. The "
        "other factors' bands are on their own scatters below (more predictors).", needs=("good",))
def fig_good_ranges(d: FigureData) -> Figure:
    """The factors with a good range (``analysis.good_ranges``) that no other scatter of the report shows
    (the NLC, bias, depth, the numeric axes: the metric, proxy and baseline grids carry their own bands)
    against test error, the random draws as points, the good range shaded (``good_band``)."""
    g = _ranged(d.good, d.dataset)
    g = g[~g["factor"].isin(GRIDDED)] if len(g) else g
    ncols = 4
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(g) / ncols)), panel=(4.2, 3.5))
    for ax, (_, r) in zip(axes, g.iterrows()):
        scatter(ax, d.sample, r["factor"], "test_error", logx=bool(r["log"]), size=8, title=label(r["factor"]))
        good_band(ax, d, r["factor"])
    if not len(g):
        axes[0].text(0.5, 0.5, "no factor has a good range", ha="center", va="center", transform=axes[0].transAxes,
                     color=GREY)
    for ax in axes[max(1, len(g)):]:
        ax.set_visible(False)
    return fig


@figure("pruning", "pruning", "NLC-guided pruning: compute saved and best test error lost as the NLC window widens.",
        needs=("window",))
def fig_pruning(d: FigureData) -> Figure:
    """NLC pruning trade-off: keeping only architectures with NLC in [lo, hi], as hi grows, the share of
    training time saved and the best test error lost (regret)."""
    fig, axes = new_figure(ncols=2)
    curve = pruning_curve(d.arch, lo=d.window[0])
    with rc_context(THEME):
        for ax, col, name in ((axes[0], "saved_fraction", "share of compute saved"),
                              (axes[1], "regret", "regret (best test error lost)")):
            ok = curve[np.isfinite(curve[col])]
            if len(ok):
                ax.plot(ok["hi"], ok[col], color=BLACK, marker="o", ms=3, lw=1)
                set_log(ax, "x")
                ax.axvline(d.window[1], color=RED, ls="--", lw=0.8)
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
            ax.set_xlabel(f"upper end of the NLC window [{d.window[0]:g}, hi]")
            ax.set_ylabel(name)
            ax.set_title(f"{name} (dashed: hi = {d.window[1]:g})", fontsize=8)
    return fig
