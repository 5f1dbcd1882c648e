"""Several studies (one per dataset) side by side, as pycls compares sweeps (``plot_edf``, ``plot_trends``): the
report's section "Studies side by side"."""

from __future__ import annotations

import math

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

import seaborn as sns

from ..plotting import BLACK, BLUE, GREY, RED, THEME, new_figure, set_log
from ..pruning import PAPER_WINDOW
from .base import FigureData, comparison_figure, label
from .design import _edf_axes, _edf_panel, _ranged


@comparison_figure("compare-edf", "edf", "Error EDFs of the same axes side by side across studies (one column per "
                   "study).")
def fig_edf_compare(datas: list[FigureData]) -> Figure:
    """Rows: the axes with two levels in at least one study; columns: the studies; each panel the axis'
    error EDFs in that study (plain), one colour per level across the row, the x range shared along it
    (the levels' n | min | mean are in each study's own EDF figure)."""
    names = list(dict.fromkeys(a for d in datas for a in _edf_axes(d.edf, d.dataset)))
    fig, axes = new_figure(ncols=len(datas), nrows=max(1, len(names)), panel=(4.2, 3.0))
    grid = np.asarray(axes).reshape(max(1, len(names)), len(datas))
    for i, axis in enumerate(names):
        levels = list(dict.fromkeys(lv for d in datas if d.edf is not None
                                    for lv in d.edf.levels.loc[(d.edf.levels["dataset"] == d.dataset)
                                                               & (d.edf.levels["axis"] == axis), "level"]))
        colors = dict(zip(levels, sns.color_palette("deep", len(levels))))
        for j, d in enumerate(datas):
            ax = grid[i, j]
            if axis in _edf_axes(d.edf, d.dataset):
                _edf_panel(ax, d.edf, d.dataset, axis, normalized=False, title=f"{d.dataset}: {axis}", colors=colors,
                           legend="levels" if j == 0 else "none")
            else:
                ax.text(0.5, 0.5, f"{axis}: fewer than two levels", ha="center", va="center",
                        transform=ax.transAxes, color=GREY)
                ax.set_title(f"{d.dataset}: {axis}", fontsize=7)
        lo = min(ax.get_xlim()[0] for ax in grid[i])
        hi = max(ax.get_xlim()[1] for ax in grid[i])
        for ax in grid[i]:
            ax.set_xlim(lo, hi)
    if not names:
        grid[0, 0].text(0.5, 0.5, "no axis has two levels", ha="center", va="center", transform=grid[0, 0].transAxes,
                        color=GREY)
    return fig


@comparison_figure("compare-good-ranges", "good-ranges", "Good ranges across studies: per factor, the observed range "
                   "(light), the good range (dark) and the best value (points) of each study; on the NLC, the paper's "
                   "[1, 3] dashed in red.")
def fig_good_ranges_compare(datas: list[FigureData]) -> Figure:
    """Per factor, one column per study (pycls's ``plot_trends``): the factor's observed range (light band),
    its good range (darker band) and the best value (points), so where the good architectures lie can be
    compared across datasets."""
    ranged = [_ranged(d.good, d.dataset).set_index("factor") for d in datas]
    factors = list(dict.fromkeys(f for g in ranged for f in g.index))
    ncols = 4
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(factors) / ncols)))
    xs = np.arange(len(datas))
    with rc_context(THEME):
        for ax, factor in zip(axes, factors):
            rows = [g.loc[factor] if factor in g.index else None for g in ranged]
            get = lambda key: np.array([r[key] if r is not None else np.nan for r in rows], dtype=float)  # noqa: E731
            ax.fill_between(xs, get("min"), get("max"), color=GREY, alpha=0.15, lw=0, step="mid")
            ax.fill_between(xs, get("low"), get("high"), color=BLUE, alpha=0.3, lw=0, step="mid")
            ax.plot(xs, get("best"), "o-", color=BLACK, ms=4, lw=0.8)
            if factor == "nlc":
                for edge in PAPER_WINDOW:
                    ax.axhline(edge, color=RED, lw=0.8, ls="--")
            log = any(r is not None and bool(r["log"]) for r in rows)
            if log and np.nanmin(get("min")) > 0:
                set_log(ax, "y")
            ax.set_xticks(xs, [d.dataset for d in datas], fontsize=7)
            ax.set_xlim(-0.5, len(datas) - 0.5)
            ax.set_title(label(factor), fontsize=8)
    if not factors:
        axes[0].text(0.5, 0.5, "no factor has a good range", ha="center", va="center", transform=axes[0].transAxes,
                     color=GREY)
    for ax in axes[max(1, len(factors)):]:
        ax.set_visible(False)
    return fig
