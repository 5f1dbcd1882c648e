"""Several studies side by side, as pycls compares sweeps (``plot_edf``, ``plot_trends``): the report's section
"Studies side by side". Each study is named by its label (its directory, ``FigureData.name``); a study's
analysis (``analysis.study_analysis.StudyAnalysis``) is the ``FigureData`` each figure gets."""

from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from archstudy.study.experiment.window_rule import PAPER_WINDOW

from ..plotting import BLACK, BLUE, GREY, PALETTE, RED, THEME, figure_legend, new_figure, panels, set_log, set_title
from .base import FigureData, NothingToDraw, comparison_figure, label, omitted
from .design import _edf_axes, _ranged, level_colors

STYLES = ("-", "--", ":", "-.")  # one line style per study where the studies share a panel


def _short(name: str, width: int = 16) -> str:
    return "\n".join(textwrap.wrap(name, width, break_long_words=True)) or name


def _styles(datas: Sequence[FigureData]) -> dict[str, str]:
    return {d.name: STYLES[k % len(STYLES)] for k, d in enumerate(datas)}


@comparison_figure(
    "compare-errors",
    "errors",
    "Test error of every study's random draws as an EDF (the share of "
    "architectures with test error at most e; Radosavovic et al. 2019): further left is better; the "
    "points mark each study's best and median.",
)
def fig_errors_compare(datas: Sequence[FigureData]) -> Figure:
    """Each study's test-error EDF over its random draws, one colour per study, its best and median marked."""
    have = [(d, np.sort(d.sample["test_error"].to_numpy(np.float64))) for d in datas]
    have = [(d, e[np.isfinite(e)]) for d, e in have]
    have = [(d, e) for d, e in have if len(e)]
    if not have:
        raise NothingToDraw("No study has a finished architecture with a test error.")
    fig, (ax,) = new_figure(panel=(6.0, 3.4), legend_rows=1)
    with rc_context(THEME):
        for (_, e), c in zip(have, PALETTE):
            share = np.arange(1, len(e) + 1) / len(e)
            ax.plot(np.r_[e[0], e], np.r_[0.0, share], drawstyle="steps-post", color=c, lw=1.5)
            ax.plot([e[0], np.median(e)], [1 / len(e), 0.5], ls="", marker="o", ms=6, color=c, zorder=3)
        ax.set_xlabel("test error")
        ax.set_ylabel("share of architectures")
        ax.set_ylim(0, 1.02)
        set_title(ax, "test error EDFs of the studies (points: best, median)")
    figure_legend(
        fig,
        [Line2D([], [], color=c, lw=1.5) for (_, _), c in zip(have, PALETTE)],
        [f"{d.name} (n = {len(e):,})" for d, e in have],
    )
    return fig


@comparison_figure(
    "compare-edf",
    "edf",
    "Error EDFs of the same axes across studies: one panel per axis, one colour "
    "per level, one line style per study (legend above).",
)
def fig_edf_compare(datas: Sequence[FigureData]) -> Figure:
    """One panel per axis with two levels in at least one study: the axis' error EDFs of every study, the
    levels in one colour each across the studies and the studies in one line style each (the levels' n | min |
    mean are in each study's own EDF table)."""
    names = list(dict.fromkeys(a for d in datas for a in _edf_axes(d.edf, d.dataset)))
    if not names:
        raise NothingToDraw("No axis has two levels in any study: no error EDFs to compare.")
    styles = _styles(datas)
    fig, axes = panels(len(names), legend_rows=1)
    with rc_context(THEME):
        for ax, axis in zip(axes, names):
            levels = list(
                dict.fromkeys(
                    lv
                    for d in datas
                    if d.edf is not None
                    for lv in d.edf.levels.loc[
                        (d.edf.levels["dataset"] == d.dataset) & (d.edf.levels["axis"] == axis), "level"
                    ]
                )
            )
            colors = level_colors(levels)
            shown = []
            for d in datas:
                e = d.edf
                if e is None or axis not in _edf_axes(e, d.dataset):
                    continue
                lv = e.levels[(e.levels["dataset"] == d.dataset) & (e.levels["axis"] == axis)]
                cv = e.curves[(e.curves["dataset"] == d.dataset) & (e.curves["axis"] == axis)]
                for level in lv["level"]:
                    c = cv[cv["level"] == level].sort_values("error")
                    x = np.concatenate([[c["error"].iloc[0]], c["error"].to_numpy()])
                    ax.plot(
                        x,
                        np.concatenate([[0.0], c["cdf"].to_numpy()]),
                        drawstyle="steps-post",
                        color=colors[level],
                        ls=styles[d.name],
                        lw=1.3,
                    )
                shown.append(d.name)
            ax.legend([Line2D([], [], color=colors[lv], lw=1.3) for lv in levels], levels, loc="upper left")
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("test error")
            ax.set_ylabel("share of architectures")
            set_title(ax, axis if len(shown) == len(datas) else f"{axis} (two levels only in {', '.join(shown)})")
    figure_legend(fig, [Line2D([], [], color=BLACK, ls=styles[d.name], lw=1.3) for d in datas], [d.name for d in datas])
    return fig


@comparison_figure(
    "compare-good-ranges",
    "good-ranges",
    "Good ranges across studies: per factor, the observed range "
    "(light), the good range (dark) and the best value (points) of each study; on the NLC, the paper's "
    "[1, 3] dashed in red.",
)
def fig_good_ranges_compare(datas: Sequence[FigureData]) -> Figure:
    """Per factor, one column per study (pycls's ``plot_trends``): the factor's observed range (light band),
    its good range (darker band) and the best value (points), so where the good architectures lie can be
    compared across datasets."""
    ranged = [_ranged(d.good, d.dataset).set_index("factor") for d in datas]
    factors = list(dict.fromkeys(f for g in ranged for f in g.index))
    if not factors:
        raise NothingToDraw("No factor has a good range in any study.")
    fig, axes = panels(len(factors), ncols=4, panel=(2.2, 2.5))
    xs = np.arange(len(datas))
    ticks = [_short(d.name, 12) for d in datas]
    with rc_context(THEME):
        for ax, factor in zip(axes, factors):
            rows = [g.loc[factor] if factor in g.index else None for g in ranged]
            v = {
                key: np.array([r[key] if r is not None else np.nan for r in rows], dtype=float)
                for key in ("min", "max", "low", "high", "best")
            }
            ax.fill_between(xs, v["min"], v["max"], color=GREY, alpha=0.2, lw=0, step="mid")
            ax.fill_between(xs, v["low"], v["high"], color=BLUE, alpha=0.35, lw=0, step="mid")
            ax.plot(xs, v["best"], "o-", color=BLACK, ms=5, lw=0.9)
            if factor == "nlc":
                for edge in PAPER_WINDOW:
                    ax.axhline(edge, color=RED, lw=0.9, ls="--")
            log = any(r is not None and bool(r["log"]) for r in rows)
            if log and np.nanmin(v["min"]) > 0:
                set_log(ax, "y")
            ax.set_xticks(xs, ticks)
            ax.set_xlim(-0.5, len(datas) - 0.5)
            ax.grid(False, axis="x")
            set_title(ax, label(factor))
    missing = [d.name for d, g in zip(datas, ranged) if not len(g)]
    if missing:
        omitted(fig, f"No good range in {', '.join(missing)}.")
    return fig
