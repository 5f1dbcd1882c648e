"""The drawing pieces every figure of archstudy shares (the report's, the reproductions'): a seaborn theme without
pyplot (no display, no global state: a ``matplotlib.figure.Figure`` rendered to PNG with Agg), fixed margins, the
colours, log axes that stay legible, and inline PNG encoding."""

from __future__ import annotations

import base64
import io

import numpy as np
import seaborn as sns
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

# A fixed title height: matplotlib otherwise measures every tick label of every panel to place titles,
# which took most of the drawing time.
THEME = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.75), "axes.titley": 1.0}
RED, BLUE, BLACK, GREY, GREEN = "#d62728", "#1f77b4", "#222222", "#999999", "#2ca02c"
DPI = 80
PANEL = (4.2, 3.3)  # inches per panel


def new_figure(ncols: int = 1, nrows: int = 1, panel=PANEL, left: float = 0.8) -> tuple[Figure, np.ndarray]:
    """A figure of ncols x nrows panels with fixed margins in inches (a layout engine measures every
    tick label and costs more than the drawing)."""
    w, h = panel[0] * ncols, panel[1] * nrows
    margins = {"left": left / w, "right": 1 - 0.3 / w, "bottom": 0.5 / h, "top": 1 - 0.35 / h,
               "wspace": 1.1 / (panel[0] - 1.1), "hspace": 0.85 / (panel[1] - 0.85)}
    with rc_context(THEME):
        fig = Figure(figsize=(w, h))
        axes = fig.subplots(nrows, ncols, squeeze=False, gridspec_kw=margins)
    return fig, axes.ravel()


def to_png(fig: Figure, dpi: int = DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _decade(v: float, _pos=None) -> str:
    """Tick label of a log axis as plain text ("0.01", "1", "1000", "1e+06"): mathtext labels (10^k)
    cost more to lay out than the whole plot."""
    return f"{v:g}"


def set_log(ax, which: str = "x") -> None:
    """A log axis with labelled decades and no minor ticks (a 13-decade NLC axis would get ~120); over
    less than two decades, 1-2-5 steps are labelled so that the axis has a scale at all."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = ax.dataLim.intervalx if which == "x" else ax.dataLim.intervaly
    narrow = lo > 0 and np.isfinite(hi / lo) and hi / lo < 100
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,), numticks=7))
    axis.set_major_formatter(FuncFormatter(_decade))
    axis.set_minor_locator(NullLocator())


def png_base64(fig: Figure, dpi: int = DPI) -> str:
    return base64.b64encode(to_png(fig, dpi)).decode("ascii")
