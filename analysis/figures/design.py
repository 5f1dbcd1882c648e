"""The design space in figures (the report's sections on error EDFs, good ranges and NLC-guided pruning): error
EDFs per level of every sampled axis (``analysis.edf``), good ranges as shaded bands on factor-vs-error
scatters (``analysis.good_ranges``; ``good_band`` also shades the predictor grids), and the pruning trade-off.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from archstudy.study.experiment.window_rule import PAPER_WINDOW

from ..columns import PREDICTORS
from ..edf import ErrorEDF
from ..plotting import BLACK, BLUE, PALETTE, RED, THEME, panels, set_log, set_title
from ..pruning import pruning_curve
from .base import FigureData, NothingToDraw, figure, fmt_p, label, scatter

# The predictors a scatter grid shows with its band (``figures.predictors``): the good-ranges figure leaves them out.
GRIDDED = tuple(p.column for p in PREDICTORS if p.figure)


def level_colors(levels: Iterable[Any]) -> dict[Any, str]:
    """One colour per level, in order (the palette repeats past ten levels)."""
    return {lv: PALETTE[k % len(PALETTE)] for k, lv in enumerate(levels)}


def _edf_panel(
    ax: Axes,
    e: ErrorEDF,
    dataset: str,
    axis: str,
    *,
    normalized: bool = True,
    title: str | None = None,
    colors: dict[Any, str] | None = None,
    legend: bool = True,
) -> None:
    """One axis' EDFs: a step line per level; dashed, the normalized EDF where the axis has more than one
    shared complexity bin (the levels differ in size). ``colors``: level -> colour (default: in order);
    ``legend``: the levels' names in the upper left (where an EDF rarely runs: low error, high share)."""
    lv = e.levels[(e.levels["dataset"] == dataset) & (e.levels["axis"] == axis)]
    cv = e.curves[(e.curves["dataset"] == dataset) & (e.curves["axis"] == axis)]
    ks = e.ks[(e.ks["dataset"] == dataset) & (e.ks["axis"] == axis)]
    differ = normalized and len(lv) and int(lv["bins"].max()) > 1
    colors = colors or level_colors(lv["level"])
    with rc_context(THEME):
        for _, row in lv.iterrows():
            c = cv[cv["level"] == row["level"]].sort_values("error")
            x = np.concatenate([[c["error"].iloc[0]], c["error"].to_numpy()])
            ax.plot(
                x,
                np.concatenate([[0.0], c["cdf"].to_numpy()]),
                drawstyle="steps-post",
                color=colors[row["level"]],
                lw=1.4,
                label=f"{row['level']} ({int(row['n'])})",
            )
            if differ and np.isfinite(c["normalized_cdf"]).any():
                ax.plot(
                    x,
                    np.concatenate([[0.0], c["normalized_cdf"].to_numpy()]),
                    drawstyle="steps-post",
                    color=colors[row["level"]],
                    lw=1.0,
                    ls="--",
                )
        if legend:
            ax.legend(loc="upper left")
        ax.set_xlabel("test error")
        ax.set_ylabel("share of architectures")
        ax.set_ylim(0, 1.02)
        if title is None:
            top = ks.loc[ks["ks"].idxmax()] if len(ks) else None
            title = axis if top is None else f"{axis}: largest KS {top['ks']:.2f} (p = {fmt_p(top['p'])})"
        set_title(ax, title)


def _edf_axes(e: ErrorEDF | None, dataset: str) -> list[str]:
    if e is None or not len(e.levels):
        return []
    return list(dict.fromkeys(e.levels.loc[e.levels["dataset"] == dataset, "axis"]))


@figure(
    "edf",
    "edf",
    "Error EDFs per level of every sampled axis (Radosavovic, Johnson, Xie, Lo and Dollár, "
    "“On Network Design Spaces for Visual Recognition”, 2019, section 3): the share of architectures with test "
    "error at most e. Legend: level (n); the table above gives each level's min and mean and which two levels "
    "the KS distance separates. Dashed: the complexity-normalized EDF, where the levels differ in size.",
    needs=("edf",),
)
def fig_edf(d: FigureData) -> Figure:
    """Error EDFs per level of every sampled axis with at least two levels (``analysis.edf``)."""
    names = _edf_axes(d.edf, d.dataset)
    if d.edf is None or not names:  # no EDFs, no axes
        raise NothingToDraw("No sampled axis has two levels among the random draws: no error EDFs.")
    fig, axes = panels(len(names))
    for ax, axis in zip(axes, names):
        _edf_panel(ax, d.edf, d.dataset, axis)
    return fig


def _band(ax: Axes, low: float, best: float, high: float, log: bool) -> None:
    if np.isfinite(low) and np.isfinite(high):
        ax.axvspan(low, high, color=BLUE, alpha=0.14, lw=0, zorder=0)
    if np.isfinite(best):
        ax.axvline(best, color=BLACK, lw=1.0, zorder=1, alpha=0.7)


def _ranged(good: pd.DataFrame, dataset: str | None = None) -> pd.DataFrame:
    g = good if dataset is None or not len(good) else good[good["dataset"] == dataset]
    return g[(g["n"] >= 3) & np.isfinite(g["low"]) & (g["min"] < g["max"])] if len(g) else g


def _keep_margins(ax: Axes) -> None:
    """The points' own margins back after a band: ``axvspan`` / ``axhspan`` pin the limits to their edges, which
    put the points at a band's ends on the frame."""
    ax.use_sticky_edges = False
    ax.margins(x=0.04, y=0.05)
    ax.autoscale_view()


def good_band(ax: Axes, d: FigureData, column: str) -> None:
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
            ax.axvline(edge, color=RED, lw=0.9, ls="--", zorder=1)
    _keep_margins(ax)
    set_title(
        ax,
        f"{ax.get_title()}\ngood range [{r['low']:.3g}, {r['high']:.3g}], best {r['best']:.3g}"
        + (" (U-shaped)" if r["u_shaped"] else ""),
    )


@figure(
    "good-ranges",
    "good-ranges",
    "Good ranges (pycls's empirical bootstrap) of the NLC, bias, depth and the "
    "numeric axes against test error; shaded: where the best architectures of 25% subsamples fall (2.5th to "
    "97.5th percentile), black line: their median; red dashes on the NLC: the NLC paper's window [1, 3]; a factor "
    "of few values drawn as a strip (its points spread sideways). The other factors' bands are on their own "
    "scatters below (more predictors).",
    needs=("good",),
)
def fig_good_ranges(d: FigureData) -> Figure:
    """The factors with a good range (``analysis.good_ranges``) that no other scatter of the report shows
    (the NLC, bias, depth, the numeric axes: the metric, proxy and baseline grids carry their own bands)
    against test error, the random draws as points, the good range shaded (``good_band``)."""
    g = _ranged(d.good, d.dataset)
    g = g[~g["factor"].isin(GRIDDED)] if len(g) else g
    if not len(g):
        raise NothingToDraw("No factor has a good range yet (at least 3 random draws with different values).")
    fig, axes = panels(len(g))
    for ax, (_, r) in zip(axes, g.iterrows()):
        scatter(ax, d.sample, r["factor"], "test_error", logx=bool(r["log"]), title=label(r["factor"]))
        good_band(ax, d, r["factor"])
    return fig


@figure(
    "pruning",
    "pruning",
    "NLC-guided pruning: compute saved and best test error lost as the NLC window widens.",
    needs=("pruning_window",),
)
def fig_pruning(d: FigureData) -> Figure:
    """NLC pruning trade-off: keeping only architectures with NLC in [lo, hi], as hi grows, the share of
    training time saved and the best test error lost (regret)."""
    curve = pruning_curve(d.arch, lo=d.pruning_window[0])
    cols = [
        (c, n)
        for c, n in (("saved_fraction", "share of compute saved"), ("regret", "regret (best test error lost)"))
        if len(curve) and np.isfinite(curve[c]).any()
    ]
    if not cols:
        raise NothingToDraw("No architecture with a finite NLC and test error: no pruning trade-off.")
    fig, axes = panels(len(cols), ncols=2)
    with rc_context(THEME):
        for ax, (col, name) in zip(axes, cols):
            ok = curve[np.isfinite(curve[col])]
            ax.plot(ok["hi"], ok[col], color=BLACK, marker="o", ms=3.5, lw=1.2)
            set_log(ax, "x")
            ax.axvline(d.pruning_window[1], color=RED, ls="--", lw=0.9)
            ax.set_xlabel(f"upper end hi of the NLC window [{d.pruning_window[0]:g}, hi]")
            ax.set_ylabel(name)
            set_title(ax, f"{name} (dashed: hi = {d.pruning_window[1]:.3g})")
    return fig
