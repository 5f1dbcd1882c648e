"""The best learning rate in a figure (the report's section "The best learning rate", ``analysis.learning_rates``):
each architecture's selected rate index against its NLC at initialization and against its depth, as the NLC paper
plots the selected rate against the NLC (Philipp and Carbonell, *The Nonlinearity Coefficient*, figure 8), coloured
by parameterization where the study has both, else by activation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..plotting import PALETTE, THEME, density, figure_legend, panels, set_log, set_title
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
