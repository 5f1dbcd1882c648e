"""The paired effects of sibling architectures in figures: for each sibling axis, the test errors of the pairs
against each other and the NLC of all architectures coloured by level (the report's section "Paired effects
of sibling architectures")."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..columns import SIBLING_LEVELS, axis_level
from ..plotting import BLUE, GREY, PALETTE, RED, THEME, density, figure_legend, panels, set_log, set_title
from ..stats import sibling_pairs, sign_test
from .base import FigureData, FigureSpec, NothingToDraw, declare_figure, fmt_p, label, omitted, scatter, _plottable
from scipy import stats as sps


def sibling_figure(d: FigureData, axis: str) -> Figure:
    """Paired panels of one sibling axis: for each pair of levels (A, B), the test error of B against A
    for the sibling pairs (below the diagonal: B is better), with the median difference and the sign
    test in the title, or without pairs the two levels' random draws side by side; last panel: NLC vs test
    error of all architectures, coloured by level. A pair of levels with neither is left out and named under
    the figure."""
    levels = SIBLING_LEVELS[axis]
    present = [v for v in levels if (axis_level(d.arch, axis) == v).any()] if len(d.arch) else []
    if len(present) < 2:
        only = f"every architecture has {axis} = {present[0]}" if present else f"no architecture has a {axis} level"
        raise NothingToDraw(
            f"{axis}: {only}, so there is nothing to compare (siblings along {axis} pair each draw "
            "with its other levels)."
        )
    sample = d.sample
    combos: list[tuple[str, str, pd.DataFrame | None, list[np.ndarray] | None]] = []
    for i, a in enumerate(levels):
        for b in levels[i + 1 :]:
            pairs = sibling_pairs(d.arch, axis, a, b)
            if len(pairs):
                combos.append((a, b, pairs, None))
                continue
            level = axis_level(sample, axis)
            draws = [
                sample.loc[(level == v) & sample["test_error"].notna(), "test_error"].to_numpy(np.float64)
                for v in (a, b)
            ]
            combos.append((a, b, None, draws) if all(len(g) for g in draws) else (a, b, None, None))
    drawn = [c for c in combos if c[2] is not None or c[3] is not None]
    nlc = _plottable(d.arch, "nlc", "test_error", True, False)
    if not drawn and not len(nlc):
        raise NothingToDraw(
            f"{axis}: no sibling pairs, the levels are not both among the random draws, and no "
            "architecture has a finite NLC and test error."
        )
    fig, axes = panels(len(drawn) + (1 if len(nlc) else 0), legend_rows=1)
    for ax, (a, b, pairs, groups) in zip(axes, drawn):
        if pairs is not None:
            _paired(ax, pairs, a, b)
        elif groups is not None:  # drawn: one or the other
            _unpaired(ax, groups, a, b)
    for a, b, pairs, groups in combos:
        if pairs is None and groups is None:
            omitted(fig, f"{a} vs {b}: no sibling pairs, and not both levels among the random draws.")
    if len(nlc):
        ax = axes[-1]
        level = axis_level(nlc, axis)
        with rc_context(THEME):
            series = [
                (part["nlc"].to_numpy(np.float64), part["test_error"].to_numpy(np.float64), c, value)
                for value, c in zip(levels, PALETTE)
                for part in (nlc[level == value],)
            ]
            density(ax, series, logx=True)
            set_log(ax, "x")
            ax.set_xlabel(label("nlc"))
            ax.set_ylabel(label("test_error"))
            set_title(ax, f"all architectures (siblings included) by {axis}")
        shown = [(v, c) for v, c in zip(levels, PALETTE) if (level == v).any()]
        figure_legend(
            fig, [Line2D([], [], ls="", marker="o", ms=6, color=c) for _, c in shown], [v for v, _ in shown], title=None
        )
    else:
        omitted(fig, "No architecture has a finite NLC and test error: the panel of all architectures is not drawn.")
    return fig


def _paired(ax: Axes, pairs: pd.DataFrame, a: str, b: str) -> None:
    t = sign_test((pairs["test_error_b"] - pairs["test_error_a"]).to_numpy(np.float64))
    title = f"{t['n_pairs']} sibling pairs: median Δ = {t['median']:.3f}, sign test p = {fmt_p(t['p_sign'])}"
    contexts = sorted(c for c in pairs["context"].unique() if c)
    if len(contexts) == 1:
        title += f"\n{contexts[0]}"
    if len(contexts) > 1:  # pairs that differ in more than the axis: each kind in its own colour
        with rc_context(THEME):
            series = [
                (part["test_error_a"].to_numpy(np.float64), part["test_error_b"].to_numpy(np.float64), c, context)
                for context, c in zip(contexts, PALETTE[1:])
                for part in (pairs[pairs["context"] == context],)
            ]
            density(ax, series)
            ax.legend(
                handles=[Line2D([], [], ls="", marker="o", ms=6, color=c) for *_, c, _ in series],
                labels=[lab for *_, lab in series],
                loc="upper left",
            )
        set_title(ax, title)
    else:
        scatter(ax, pairs, "test_error_a", "test_error_b", title=title, color=BLUE, jitter=False)
    ax.set_xlabel(f"test error, {a}")
    ax.set_ylabel(f"test error, {b}")
    lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
    hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
    ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.9, ls="--", zorder=2)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)


def _unpaired(ax: Axes, groups: list[np.ndarray], a: str, b: str) -> None:
    """Without sibling pairs: the test error of the random draws at level a and at level b side by side,
    with the Mann-Whitney U test (unpaired, so confounded by every other axis)."""
    with rc_context(THEME):
        ax.boxplot(groups, widths=0.5, medianprops={"color": RED}, flierprops={"markersize": 3})
        ax.set_xticks([1, 2], [f"{a} (n={len(groups[0])})", f"{b} (n={len(groups[1])})"])
        p = sps.mannwhitneyu(groups[0], groups[1]).pvalue if min(map(len, groups)) > 1 else math.nan
        set_title(
            ax,
            f"no sibling pairs; random draws: median Δ = {np.median(groups[1]) - np.median(groups[0]):.3f}, "
            f"Mann-Whitney p = {fmt_p(p)}",
        )
        ax.set_ylabel("test error")


# One figure per sibling axis, in the order the report shows them.
for _axis, _caption in (
    ("weights", "Householder vs dense: paired siblings and all architectures."),
    (
        "param",
        "GmP vs SP: paired siblings (labelled by what input mean normalization does in the pair: it switches "
        "with GmP under imn = auto) and all architectures.",
    ),
    ("norm", "Normalization kinds: paired siblings and all architectures."),
    ("skip", "Skips vs no skips: paired siblings and all architectures."),
    ("imn", "Input mean normalization off vs on (Chen and Ge, eq. 16): paired siblings and all architectures."),
):
    declare_figure(FigureSpec(_axis, _caption, "paired", partial(sibling_figure, axis=_axis)))
del _axis, _caption
