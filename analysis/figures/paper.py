"""The NLC paper's figures (Philipp and Carbonell, *The Nonlinearity Coefficient*: figures 1, 2, 3A-C and E, 4, 7,
8, 9, 10; appendix E.2 says what each plots), in the report's section "The NLC paper's figures".

As in the paper, each point is one architecture, a quantity on a log axis is correlated on its log, and each
panel's title gives the Pearson correlation, its p-value and Kendall's tau. Scatter plots show the study's
random draws (``variant == "base"``) so that the titles match the correlation table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

import seaborn as sns

from ..plotting import BLACK, BLUE, GREY, RED, THEME, new_figure, set_log
from .base import FigureData, correlation_title, figure, label, point_kind, scatter, _plottable


@figure("fig2", "paper", "Figure 2: NLC before training vs test error. Red: high output bias (bias > 1000); blue: "
        "skip connections. Inset: 0.8 < NLC < 100.")
def fig2_nlc_vs_test_error(d: FigureData) -> Figure:
    """Figure 2: NLC before training vs test error; red = high output bias, blue = skips; inset: the
    magnified region 0.8 < NLC < 100."""
    fig, (ax,) = new_figure(panel=(6.0, 4.4))
    df = d.sample
    scatter(ax, df, "nlc", "test_error", logx=True, colored=True)
    inset = _plottable(df, "nlc", "test_error", True, False)
    inset = inset[(inset["nlc"] > 0.8) & (inset["nlc"] < 100)]
    if len(inset):
        with rc_context(THEME):
            sub = ax.inset_axes([0.62, 0.06, 0.36, 0.36])
            kinds = point_kind(inset)
            sub.scatter(inset["nlc"], inset["test_error"], s=5, linewidths=0,
                        c=kinds.map({"other": BLACK, "skips": BLUE, "high bias": RED}).to_list())
            set_log(sub, "x")
            sub.set_xlim(0.8, 100)
            sub.tick_params(labelsize=6)
            sub.set_title("0.8 < NLC < 100", fontsize=6)
    return fig


@figure("fig3a", "paper", "Figure 3A: output bias before training vs test error.")
def fig3a_bias_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "bias", "test_error", logx=True)
    return fig


@figure("fig3b", "paper", "Figure 3B: NLC before vs after training (dashed: equal).")
def fig3b_nlc_before_after(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "nlc", "nlc_after", logx=True, logy=True)
    _diagonal(ax)
    return fig


@figure("fig3c", "paper", "Figure 3C: NLC after training vs test error.")
def fig3c_nlc_after_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "nlc_after", "test_error", logx=True)
    return fig


@figure("fig1-3e", "paper", "Figure 1: NLC vs relative diameter of linearly approximable regions (dashed: 1/NLC); "
        "figure 3E: NLC vs maximal error-preserving perturbation of the trained network. Optional metrics "
        "(MetricOptions lar / perturbation): \"no data\" when the study did not compute them.")
def fig1_fig3e_regions(d: FigureData) -> Figure:
    """Figure 1: NLC vs the relative diameter of linearly approximable regions (E.1; dashed: 1/NLC, the
    relation section 3 derives); figure 3E: NLC vs the maximal error-preserving perturbation of the trained
    network (E.3). Both are optional metrics: a panel says "no data" when the study did not compute it."""
    fig, axes = new_figure(ncols=2)
    scatter(axes[0], d.sample, "nlc", "lar_diameter", logx=True, logy=True)
    pts = _plottable(d.sample, "nlc", "lar_diameter", True, True)
    if len(pts):
        lo, hi = axes[0].get_xlim()
        grid = np.geomspace(lo, hi, 50)
        axes[0].plot(grid, 1.0 / grid, color=GREY, lw=0.8, ls="--", zorder=0)
    scatter(axes[1], d.sample, "nlc", "error_perturbation", logx=True, logy=True)
    return fig


@figure("fig4", "paper", "Figure 4: depth vs test error.")
def fig4_depth_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "depth", "test_error")
    return fig


def _trained(d: FigureData) -> pd.DataFrame:
    """Figures 7 and 8 omit architectures "which did not achieve a better-than-random test error"."""
    df = d.sample
    return df[df["test_error"] < d.threshold]


@figure("fig7", "paper", "Figure 7: how often each training run (1 = lowest starting learning rate) gave the lowest "
        "validation error; architectures with a random test error omitted. Dashed: the five lowest and highest "
        "runs, which should never be chosen.")
def fig7_lr_index_histogram(d: FigureData) -> Figure:
    """Figure 7: how often each run (1 = lowest starting rate) was selected, better-than-random only."""
    fig, (ax,) = new_figure(panel=(6.0, 3.3))
    df = _trained(d)
    idx = df["lr_index"].dropna().astype(int).to_numpy() + 1
    n_runs = int(d.arch["n_runs"].max()) if d.arch["n_runs"].notna().any() else 40
    with rc_context(THEME):
        if len(idx):
            sns.histplot(x=idx, bins=np.arange(0.5, n_runs + 1.5), ax=ax, color=BLACK, edgecolor="white")
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        for edge in (5.5, n_runs - 4.5):  # the paper's check: never the lowest or highest five
            ax.axvline(edge, color=RED, lw=0.8, ls="--")
        ax.set_xlim(0.5, n_runs + 0.5)
        ax.set_xlabel(label("lr_index"))
        ax.set_ylabel("architectures")
        ax.set_title(f"{len(idx)} architectures with test error < {d.threshold:.2f}", fontsize=8)
    return fig


@figure("fig8", "paper", "Figure 8: starting learning rate of the selected run vs NLC; architectures with a random "
        "test error omitted.")
def fig8_lr_vs_nlc(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, _trained(d), "nlc", "lr", logx=True, logy=True)
    return fig


@figure("fig9", "paper", "Figure 9: bias before vs after training (A), bias after training vs test error (B), NLC "
        "vs bias before training (C).")
def fig9_bias(d: FigureData) -> Figure:
    """Figure 9: bias before vs after training (A), bias after training vs test error (B), NLC vs bias
    before training (C)."""
    fig, axes = new_figure(ncols=3)
    df = d.sample
    scatter(axes[0], df, "bias", "bias_after", logx=True, logy=True)
    _diagonal(axes[0])
    scatter(axes[1], df, "bias_after", "test_error", logx=True)
    scatter(axes[2], df, "nlc", "bias", logx=True, logy=True)
    return fig


@figure("fig10", "paper", "Figure 10: figure 2 for architectures without (left) and with (right) skip connections; "
        "red: high output bias.")
def fig10_skips_side_by_side(d: FigureData) -> Figure:
    """Figure 10: figure 2 split into architectures without (left) and with (right) skip connections."""
    fig, axes = new_figure(ncols=2)
    df = d.sample
    for ax, has, name in ((axes[0], False, "without skips"), (axes[1], True, "with skips")):
        part = df[(df["skip"].astype(str) != "none") == has]
        pts = _plottable(part, "nlc", "test_error", True, False)
        scatter(ax, part, "nlc", "test_error", logx=True, colored=True,
                title=f"{name}: {correlation_title(pts, 'nlc', 'test_error', True)}")
    _share_limits(axes)
    return fig


def _diagonal(ax) -> None:
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.8, ls="--", zorder=0)


def _share_limits(axes) -> None:
    have = [a for a in axes if a.collections]
    if len(have) < 2:
        return
    xs = [a.get_xlim() for a in have]
    ys = [a.get_ylim() for a in have]
    for a in have:
        a.set_xlim(min(x[0] for x in xs), max(x[1] for x in xs))
        a.set_ylim(min(y[0] for y in ys), max(y[1] for y in ys))
