"""The best learning rate in a figure (the report's section "The best learning rate", ``analysis.learning_rates``):
each architecture's selected rate index against its NLC at initialization and against its depth, as the NLC paper
plots the selected rate against the NLC (Philipp and Carbonell, *The Nonlinearity Coefficient*, figure 8), coloured
by parameterization where the study has both, else by activation; and the best rate of each sibling against its
pair's (rate transfer)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..columns import SIBLING_LEVELS
from ..plotting import GREY, PALETTE, THEME, density, figure_legend, panels, set_log, set_title
from ..stats import sibling_pairs, sign_test
from .base import FigureData, NothingToDraw, correlation_title, figure, jittered, label

BEST_INDEX_LABEL = "best rate index k* (0 = lowest rate)"
LEGEND_PER_ROW = 5  # legend entries per row above the panels


def colour_axis(arch: pd.DataFrame) -> str:
    """The column the points are coloured by: ``param`` where both parameterizations are present (SP and GmP are
    where the papers expect the best rate to differ), else ``activation``."""
    if "param" in arch.columns and arch["param"].nunique() > 1:
        return "param"
    return "activation"


def _with_best(arch: pd.DataFrame) -> pd.DataFrame:
    """The architectures with a best rate: trained, not every run diverged (their selected run is at chance)."""
    if "lr_index" not in arch.columns:
        return arch.iloc[:0]
    ok = np.isfinite(pd.to_numeric(arch["lr_index"], errors="coerce").to_numpy(np.float64, na_value=np.nan))
    if "all_diverged" in arch.columns:
        ok &= ~arch["all_diverged"].astype("boolean").fillna(False).to_numpy(bool)
    return arch[ok]


@figure(
    "best-rate",
    "learning-rates",
    "The best learning rate: the selected run's rate index against the NLC before training (left, log axis) and "
    "against depth (right), every architecture with a best rate (siblings included), coloured by parameterization "
    "(or activation where the study has one parameterization).",
)
def fig_best_rate(d: FigureData) -> Figure:
    df = _with_best(d.arch)
    if not len(df):
        raise NothingToDraw("The best learning rate: no architecture has a best rate (none trained, or all diverged).")
    by = colour_axis(df)
    levels = sorted(df[by].dropna().astype(str).unique())
    colours = dict(zip(levels, PALETTE * (len(levels) // len(PALETTE) + 1)))
    y_all = df["lr_index"].to_numpy(np.float64)
    fig, axes = panels(2, ncols=2, legend_rows=math.ceil(len(levels) / LEGEND_PER_ROW))
    for ax, (x, logx) in zip(axes, (("nlc", True), ("depth", False))):
        xs_all = df[x].to_numpy(np.float64) if x in df.columns else np.full(len(df), np.nan)
        xs_all = xs_all if logx else jittered(xs_all)
        with rc_context(THEME):
            series = [
                (xs_all[mask], y_all[mask], colours[v], v)
                for v in levels
                for mask in ((df[by].astype(str) == v).to_numpy(),)
            ]
            density(ax, series, logx=logx)
            if logx:
                set_log(ax, "x")
            ax.set_xlabel(label(x))
            ax.set_ylabel(BEST_INDEX_LABEL)
            shown = df.assign(_y=y_all)
            set_title(ax, correlation_title(shown, x, "_y", logx) if x in df.columns else f"no {x} column")
    figure_legend(
        fig,
        [Line2D([], [], ls="", marker="o", ms=6, color=colours[v]) for v in levels],
        [f"{by} = {v}" for v in levels],
        ncol=min(len(levels), LEGEND_PER_ROW),
    )
    return fig


def _without_siblings(d: FigureData) -> str | None:
    """Why the rate-transfer figure is not drawn: a study without siblings has no pair."""
    if "variant" in d.arch.columns and (d.arch["variant"] != "base").any():
        return None
    return (
        "Rate transfer: the study has no siblings (archstudy run --siblings width,param pairs each draw with a twice "
        "as wide twin and its other parameterization)."
    )


@figure(
    "rate-transfer",
    "learning-rates",
    "Rate transfer: the best rate index of each sibling (B) against its pair's (A), one panel per sibling axis with "
    "pairs, coloured by parameterization; on the dashed diagonal the best rate stayed put (the title: the median "
    "paired difference B − A and the sign test).",
    skip=_without_siblings,
)
def fig_rate_transfer(d: FigureData) -> Figure:
    df = _with_best(d.arch)
    found = []
    for axis, levels in SIBLING_LEVELS.items():
        for i, a in enumerate(levels):
            for b in levels[i + 1 :]:
                pairs = sibling_pairs(df, axis, a, b, target="lr_index") if len(df) else pd.DataFrame()
                if len(pairs):
                    found.append((axis, a, b, pairs))
    if not found:
        raise NothingToDraw("Rate transfer: no sibling pairs with a best rate on both sides (a study with siblings).")
    by = "param" if "param" in df.columns else None
    fig, axes = panels(len(found), legend_rows=0)
    for ax, (axis, a, b, pairs) in zip(axes, found):
        side = df.set_index("arch_id")[by] if by else None
        level = pairs["arch_id_a"].map(side).astype(str) if side is not None else pd.Series("", index=pairs.index)
        with rc_context(THEME):
            series = [
                (part["lr_index_a"].to_numpy(np.float64), part["lr_index_b"].to_numpy(np.float64), c, f"{by} {v}")
                for v, c in zip(sorted(level.unique()), PALETTE)
                for part in (pairs[level == v],)
            ]
            density(ax, series)
            lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
            hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
            ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.9, ls="--", zorder=2)
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            ax.set_xlabel(f"k*, {axis} = {a}")
            ax.set_ylabel(f"k*, {axis} = {b}")
            t = sign_test((pairs["lr_index_b"] - pairs["lr_index_a"]).to_numpy(np.float64))
            set_title(
                ax, f"{axis}: {t['n_pairs']} pairs, median Δk* = {t['median']:g}, sign test p = {t['p_sign']:.2g}"
            )
            if len(series) > 1:
                ax.legend(loc="upper left")
    return fig
