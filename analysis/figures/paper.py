"""The NLC paper's figures (Philipp and Carbonell, *The Nonlinearity Coefficient*: figures 1, 2, 3A-C and E, 4, 7,
8, 9, 10; appendix E.2 says what each plots), in the report's section "The NLC paper's figures".

As in the paper, each point is one architecture, a quantity on a log axis is correlated on its log, and each
panel's title gives the Pearson correlation, its p-value and Kendall's tau. Scatter plots show the study's
random draws (``variant == "base"``) so that the titles match the correlation table. A panel whose quantity was
not measured (the optional E.1 and E.3 metrics) is left out and named under the figure.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..plotting import BLACK, GREY, RED, THEME, figure_legend, new_figure, panels, set_title
from .base import (
    KIND_COLORS,
    FigureData,
    NothingToDraw,
    correlation_title,
    figure,
    label,
    omitted,
    plottable,
    point_kind,
    scatter,
    _plottable,
)

MAGNIFIED = (0.8, 100.0)  # figure 2's magnified region of the NLC


def _kind_legend(fig: Figure, df: pd.DataFrame) -> None:
    """Figure 2's colours (``point_kind``) as a legend across the top of the figure."""
    kinds = set(point_kind(df)) if len(df) else set()
    shown = [(k, c) for k, c in KIND_COLORS if k in kinds]
    handles = [Line2D([], [], ls="", marker="o", ms=6, color=c) for _, c in shown]
    figure_legend(fig, handles, [k for k, _ in shown])


def _no_lar(d: FigureData) -> str | None:
    if plottable(d.sample, "nlc", "lar_diameter", True, True):
        return None
    return (
        "Figure 1 (NLC vs the relative diameter of linearly approximable regions) needs the optional metric E.1, "
        "which this study did not compute (metrics: {lar: true})."
    )


@figure(
    "fig1",
    "paper",
    "Figure 1: NLC vs relative diameter of linearly approximable regions (dashed: 1/NLC, the "
    "relation section 3 derives).",
    skip=_no_lar,
)
def fig1_regions(d: FigureData) -> Figure:
    """Figure 1: NLC vs the relative diameter of linearly approximable regions (E.1; dashed: 1/NLC)."""
    fig = _one(d, d.sample, "nlc", "lar_diameter", "Figure 1", logx=True, logy=True)
    _one_over(fig.axes[0])
    return fig


def _one_over(ax: Axes) -> None:
    lo, hi = ax.get_xlim()
    grid = np.geomspace(lo, hi, 50)
    ax.plot(grid, 1.0 / grid, color=GREY, lw=0.9, ls="--", zorder=2)


@figure(
    "fig2",
    "paper",
    "Figure 2: NLC before training vs test error; right: the region 0.8 < NLC < 100 magnified. "
    "Red: high output bias (bias > 1000); blue: skip connections.",
)
def fig2_nlc_vs_test_error(d: FigureData) -> Figure:
    """Figure 2: NLC before training vs test error; red = high output bias, blue = skips; beside it (the
    paper's inset) the magnified region 0.8 < NLC < 100."""
    df = d.sample
    pts = _plottable(df, "nlc", "test_error", True, False)
    if not len(pts):
        raise NothingToDraw("Figure 2: no architecture has a finite NLC and test error.")
    near = pts[(pts["nlc"] > MAGNIFIED[0]) & (pts["nlc"] < MAGNIFIED[1])]
    fig, axes = panels(2 if len(near) else 1, panel=(4.4, 3.2), legend_rows=1)
    scatter(axes[0], df, "nlc", "test_error", logx=True, colored=True)
    if len(near):
        scatter(
            axes[1],
            near,
            "nlc",
            "test_error",
            logx=True,
            colored=True,
            title=f"{MAGNIFIED[0]:g} < NLC < {MAGNIFIED[1]:g}: {correlation_title(near, 'nlc', 'test_error', True)}",
        )
        axes[1].set_xlim(*MAGNIFIED)
    else:
        omitted(fig, f"No architecture has {MAGNIFIED[0]:g} < NLC < {MAGNIFIED[1]:g}: no magnified panel.")
    _kind_legend(fig, pts)
    return fig


def _one(
    d: FigureData, df: pd.DataFrame, x: str, y: str, what: str, *, logx: bool = False, logy: bool = False
) -> Figure:
    if not plottable(df, x, y, logx, logy):
        raise NothingToDraw(f"{what}: no architecture has a finite {label(x)} and {label(y)}.")
    fig, (ax,) = new_figure()
    scatter(ax, df, x, y, logx=logx, logy=logy)
    return fig


def fig3a_bias_vs_test_error(d: FigureData) -> Figure:
    """Figure 3A alone: output bias before training vs test error."""
    return _one(d, d.sample, "bias", "test_error", "Figure 3A", logx=True)


def fig3b_nlc_before_after(d: FigureData) -> Figure:
    """Figure 3B alone: NLC before vs after training (dashed: equal)."""
    fig = _one(d, d.sample, "nlc", "nlc_after", "Figure 3B", logx=True, logy=True)
    _diagonal(fig.axes[0])
    return fig


def fig3c_nlc_after_vs_test_error(d: FigureData) -> Figure:
    """Figure 3C alone: NLC after training vs test error."""
    return _one(d, d.sample, "nlc_after", "test_error", "Figure 3C", logx=True)


# A lettered panel of a paper figure: (letter, x, y, log x, log y, whether it draws the dashed diagonal y = x).
Panel = tuple[str, str, str, bool, bool, bool]


def _lettered_panels(
    df: pd.DataFrame,
    spec: tuple[Panel, ...],
    nothing: str,
    *,
    ncols: Callable[[int], int] = lambda n: 3,
    why: Callable[[str, str, str], str] = lambda letter, x, y: f"no finite {label(x)} and {label(y)}",
) -> Figure:
    """The panels of ``spec`` that have points, ``ncols(n)`` across for n of them: each a scatter titled by its
    letter and its correlation (``correlation_title``), with its diagonal where asked; each other panel named
    under the figure with ``why(letter, x, y)`` it is not drawn. ``nothing``: the message when no panel has
    points."""
    have = [p for p in spec if plottable(df, p[1], p[2], p[3], p[4])]
    if not have:
        raise NothingToDraw(nothing)
    fig, axes = panels(len(have), ncols=ncols(len(have)))
    for ax, (letter, x, y, lx, ly, diag) in zip(axes, have):
        title = f"{letter}: {correlation_title(_plottable(df, x, y, lx, ly), x, y, lx, ly)}"
        scatter(ax, df, x, y, logx=lx, logy=ly, title=title)
        if diag:
            _diagonal(ax)
    for letter, x, y, *_ in (p for p in spec if p not in have):
        omitted(fig, f"Panel {letter} not drawn: {why(letter, x, y)}.")
    return fig


# Figure 3's panels (``Panel``); E is the optional E.3 metric.
FIG3: tuple[Panel, ...] = (
    ("A", "bias", "test_error", True, False, False),
    ("B", "nlc", "nlc_after", True, True, True),
    ("C", "nlc_after", "test_error", True, False, False),
    ("E", "nlc", "error_perturbation", True, True, False),
)


@figure(
    "fig3",
    "paper",
    "Figure 3: output bias before training vs test error (A), NLC before vs after training "
    "(B, dashed: equal), NLC after training vs test error (C) and, where the optional metric E.3 was computed "
    "(metrics: {perturbation: true}), NLC vs the maximal error-preserving perturbation of the trained network (E).",
)
def fig3(d: FigureData) -> Figure:
    """Figure 3, panels A, B, C and E: each panel that has points (E: an optional metric)."""
    return _lettered_panels(
        d.sample,
        FIG3,
        "Figure 3: no architecture has a finite bias, NLC after training or test error.",
        ncols=lambda n: 2 if n == 4 else 3,
        why=lambda letter, x, y: (
            "the optional metric E.3 was not computed (metrics: {perturbation: true})"
            if letter == "E"
            else f"no finite {label(x)} and {label(y)}"
        ),
    )


def fig1_fig3e_regions(d: FigureData) -> Figure:
    """Figure 1 (NLC vs the relative diameter of linearly approximable regions, E.1; dashed: 1/NLC, the relation
    section 3 derives) and figure 3E (NLC vs the maximal error-preserving perturbation of the trained network,
    E.3) side by side: the panels of the optional metrics the study computed."""
    have = [c for c in ("lar_diameter", "error_perturbation") if plottable(d.sample, "nlc", c, True, True)]
    if not have:
        raise NothingToDraw(
            "Figures 1 and 3E need the optional metrics E.1 and E.3 (metrics: {lar: true, "
            "perturbation: true}), which this study did not compute."
        )
    fig, axes = panels(len(have))
    for ax, col in zip(axes, have):
        scatter(ax, d.sample, "nlc", col, logx=True, logy=True)
        if col == "lar_diameter":
            _one_over(ax)
    return fig


@figure("fig4", "paper", "Figure 4: depth vs test error.")
def fig4_depth_vs_test_error(d: FigureData) -> Figure:
    return _one(d, d.sample, "depth", "test_error", "Figure 4")


def _trained(d: FigureData) -> pd.DataFrame:
    """Figures 7 and 8 omit architectures "which did not achieve a better-than-random test error"."""
    df = d.sample
    return df[df["test_error"] < d.threshold]


@figure(
    "fig7",
    "paper",
    "Figure 7: how often each training run (1 = lowest starting learning rate) gave the lowest "
    "validation error; architectures with a random test error omitted. Dashed: the five lowest and highest "
    "runs, which should never be chosen.",
)
def fig7_lr_index_histogram(d: FigureData) -> Figure:
    """Figure 7: how often each run (1 = lowest starting rate) was selected, better-than-random only."""
    df = _trained(d)
    idx = df["lr_index"].dropna().astype(int).to_numpy() + 1
    if not len(idx):
        raise NothingToDraw(f"Figure 7: no architecture has a better-than-random test error (< {d.threshold:.2f}).")
    n_runs = int(d.arch["n_runs"].max()) if d.arch["n_runs"].notna().any() else 40
    fig, (ax,) = new_figure(panel=(6.0, 3.0))
    with rc_context(THEME):
        counts = np.bincount(idx, minlength=n_runs + 1)[1 : n_runs + 1]
        ax.bar(np.arange(1, n_runs + 1), counts, width=0.85, color=BLACK)
        for edge in (5.5, n_runs - 4.5):  # the paper's check: never the lowest or highest five
            ax.axvline(edge, color=RED, lw=0.9, ls="--")
        ax.set_xlim(0.5, n_runs + 0.5)
        ax.set_xlabel(label("lr_index"))
        ax.set_ylabel("architectures")
        ax.grid(False, axis="x")
        set_title(ax, f"{len(idx)} architectures with test error < {d.threshold:.2f}")
    return fig


@figure(
    "fig8",
    "paper",
    "Figure 8: starting learning rate of the selected run vs NLC; architectures with a random test error omitted.",
)
def fig8_lr_vs_nlc(d: FigureData) -> Figure:
    return _one(d, _trained(d), "nlc", "lr", "Figure 8", logx=True, logy=True)


# Figure 9's panels (``Panel``).
FIG9: tuple[Panel, ...] = (
    ("A", "bias", "bias_after", True, True, True),
    ("B", "bias_after", "test_error", True, False, False),
    ("C", "nlc", "bias", True, True, False),
)


@figure(
    "fig9",
    "paper",
    "Figure 9: bias before vs after training (A, dashed: equal), bias after training vs test error "
    "(B), NLC vs bias before training (C).",
)
def fig9_bias(d: FigureData) -> Figure:
    """Figure 9: bias before vs after training (A), bias after training vs test error (B), NLC vs bias
    before training (C)."""
    return _lettered_panels(d.sample, FIG9, "Figure 9: no architecture has a finite output bias.")


@figure(
    "fig10",
    "paper",
    "Figure 10: figure 2 for architectures without (left) and with (right) skip connections; red: high output bias.",
)
def fig10_skips_side_by_side(d: FigureData) -> Figure:
    """Figure 10: figure 2 split into architectures without (left) and with (right) skip connections."""
    df = d.sample
    sides = []
    for has, name in ((False, "without skips"), (True, "with skips")):
        part = df[(df["skip"].astype(str) != "none") == has]
        pts = _plottable(part, "nlc", "test_error", True, False)
        sides.append((name, part, pts))
    have = [s for s in sides if len(s[2])]
    if not have:
        raise NothingToDraw("Figure 10: no architecture has a finite NLC and test error.")
    fig, axes = panels(len(have), ncols=2, panel=(4.4, 3.2), legend_rows=1)
    for ax, (name, part, pts) in zip(axes, have):
        scatter(
            ax,
            part,
            "nlc",
            "test_error",
            logx=True,
            colored=True,
            title=f"{name}: {correlation_title(pts, 'nlc', 'test_error', True)}",
        )
    for name, _, pts in sides:
        if not len(pts):
            omitted(fig, f"No architecture {name}: that panel is not drawn.")
    _share_limits(axes)
    _kind_legend(fig, _plottable(df, "nlc", "test_error", True, False))
    return fig


def _diagonal(ax: Axes) -> None:
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.9, ls="--", zorder=2)
    ax.set_xlim(lo, hi)


def _share_limits(axes: Iterable[Axes]) -> None:
    have = [a for a in axes if a.collections]
    if len(have) < 2:
        return
    xs = [a.get_xlim() for a in have]
    ys = [a.get_ylim() for a in have]
    for a in have:
        a.set_xlim(min(x[0] for x in xs), max(x[1] for x in xs))
        a.set_ylim(min(y[0] for y in ys), max(y[1] for y in ys))
