"""The paired effects of sibling architectures in figures: for each sibling axis, the test errors of the pairs
against each other and the NLC of all architectures coloured by level (the report's section "Paired effects
of sibling architectures")."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

import seaborn as sns

from ..columns import SIBLING_LEVELS, axis_level
from ..plotting import BLUE, GREY, RED, THEME, new_figure, set_log
from ..stats import sibling_pairs, sign_test
from .base import FigureData, FigureSpec, declare, fmt_p, label, scatter, _plottable
from scipy import stats as sps


def sibling_figure(d: FigureData, axis: str) -> Figure:
    """Paired panels of one sibling axis: for each pair of levels (A, B), the test error of B against A
    for the sibling pairs (below the diagonal: B is better), with the median difference and the sign
    test in the title; last panel: NLC vs test error of all architectures, coloured by level."""

    levels = SIBLING_LEVELS[axis]
    combos = [(a, b) for i, a in enumerate(levels) for b in levels[i + 1:]]
    fig, axes = new_figure(ncols=len(combos) + 1)
    for ax, (a, b) in zip(axes, combos):
        pairs = sibling_pairs(d.arch, axis, a, b)
        if not len(pairs):
            _unpaired(ax, d.sample, axis, a, b)
            continue
        t = sign_test((pairs["test_error_b"] - pairs["test_error_a"]).to_numpy(np.float64))
        title = f"{t['n_pairs']} sibling pairs: median Δ = {t['median']:.3f}, sign test p = {fmt_p(t['p_sign'])}"
        contexts = sorted(c for c in pairs["context"].unique() if c)
        if len(contexts) == 1:
            title += f"\n{contexts[0]}"
        scatter(ax, pairs, "test_error_a", "test_error_b", title=title, color=BLUE)
        if len(contexts) > 1:  # pairs that differ in more than the axis: each kind in its own colour
            with rc_context(THEME):
                for context, c in zip(contexts, sns.color_palette("deep")[1:]):
                    part = pairs[pairs["context"] == context]
                    ax.scatter(part["test_error_a"], part["test_error_b"], s=12, color=c, linewidths=0,
                               label=context)
                ax.legend(fontsize=6)
        ax.set_xlabel(f"test error, {a}")
        ax.set_ylabel(f"test error, {b}")
        lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
        hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
        ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.8, ls="--", zorder=0)
    ax = axes[-1]
    df = _plottable(d.arch, "nlc", "test_error", True, False)
    level = axis_level(df, axis)
    with rc_context(THEME):
        if len(df):
            for value, c in zip(levels, sns.color_palette("deep")):
                part = df[level == value]
                if len(part):
                    ax.scatter(part["nlc"], part["test_error"], s=10, color=c, linewidths=0, alpha=0.8, label=value)
            set_log(ax, "x")
            ax.legend(fontsize=7, title=axis, title_fontsize=7)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        ax.set_xlabel(label("nlc"))
        ax.set_ylabel(label("test_error"))
        ax.set_title(f"all architectures (siblings included) by {axis}", fontsize=8)
    return fig


def _unpaired(ax, sample: pd.DataFrame, axis: str, a: str, b: str) -> None:
    """Without sibling pairs: the test error of the random draws at level a and at level b side by side,
    with the Mann-Whitney U test (unpaired, so confounded by every other axis)."""
    level = axis_level(sample, axis)
    groups = [sample.loc[(level == v) & sample["test_error"].notna(), "test_error"].to_numpy(np.float64)
              for v in (a, b)]
    with rc_context(THEME):
        if all(len(g) for g in groups):
            ax.boxplot(groups, widths=0.5, medianprops={"color": RED}, flierprops={"markersize": 2})
            ax.set_xticks([1, 2], [f"{a} (n={len(groups[0])})", f"{b} (n={len(groups[1])})"])
            p = sps.mannwhitneyu(groups[0], groups[1]).pvalue if min(map(len, groups)) > 1 else math.nan
            ax.set_title(f"no sibling pairs; random draws: median Δ = "
                         f"{np.median(groups[1]) - np.median(groups[0]):.3f}, Mann-Whitney p = {fmt_p(p)}", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no sibling pairs, and not both levels\namong the random draws", ha="center",
                    va="center", transform=ax.transAxes, color=GREY)
            ax.set_title(f"{a} vs {b}", fontsize=8)
        ax.set_ylabel("test error")


# One figure per sibling axis, in the order the report shows them.
for _axis, _caption in (
    ("weights", "Householder vs dense: paired siblings and all architectures."),
    ("param", "GmP vs SP: paired siblings (labelled by what input mean normalization does in the pair: it switches "
     "with GmP under imn = auto) and all architectures."),
    ("norm", "Normalization kinds: paired siblings and all architectures."),
    ("skip", "Skips vs no skips: paired siblings and all architectures."),
    ("imn", "Input mean normalization off vs on (Chen and Ge, eq. 16): paired siblings and all architectures."),
):
    declare(FigureSpec(_axis, _caption, "paired", partial(sibling_figure, axis=_axis)))
del _axis, _caption
