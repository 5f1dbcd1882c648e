"""Training curves (pycls's ``plot_curves``) and the NLC during training, drawn from a ``curves`` table (one row
per architecture, run and epoch; docs/results.md), for the selected run of the best and of typical
architectures: the report's section "Training curves"."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from archstudy.study.experiment.window_rule import PAPER_WINDOW

from ..plotting import (
    BLACK,
    BLUE,
    GAP_W,
    GREEN,
    PALETTE,
    RED,
    THEME,
    figure_legend,
    new_figure,
    panels,
    set_log,
    set_title,
    text_width,
)
from .base import FigureData, NothingToDraw, figure, omitted

TWIN = 0.75  # inches at a panel's right for its learning-rate axis' tick labels and label


# The columns of the ``curves`` table ``fig_curves`` draws from (any DataFrame of that shape).
CURVE_COLUMNS = ("arch_id", "lr_index", "epoch", "train_loss", "monitored_error", "lr")
_SPLIT_LABEL = {"val": "validation error", "train": "training error"}


def curve_architectures(
    arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3, target: str = "test_error"
) -> list[tuple[pd.Series, str]]:
    """(row, why) of the ``n_best`` lowest-``target`` architectures and the ``n_typical`` closest to the
    median ``target`` (the others), best first: the row, not the arch_id, since a large study samples some specs
    more than once (an arch_id at several indices)."""
    a = arch[np.isfinite(arch[target].to_numpy(np.float64))].sort_values([target, "arch_id"], kind="stable")
    best = a.head(n_best)
    rest = a.iloc[n_best:]
    typical = (
        rest.iloc[np.argsort(np.abs(rest[target].to_numpy(np.float64) - a[target].median()), kind="stable")[:n_typical]]
        if len(rest)
        else rest
    )
    return [(r, f"best #{k + 1}") for k, (_, r) in enumerate(best.iterrows())] + [
        (r, "typical") for _, r in typical.sort_values(target, kind="stable").iterrows()
    ]


def selected_curves(curves: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
    """The curve of the selected run (its ``lr_index``) of the architecture in ``row`` (a row of the architectures
    table), by epoch: its arch_id at its ``index`` where both tables have one."""
    keep = (curves["arch_id"] == row["arch_id"]) & (curves["lr_index"] == row["lr_index"])
    if "index" in curves.columns and "index" in row.index:
        keep &= curves["index"] == row["index"]
    return curves[keep].sort_values("epoch")


def fig_curves(curves: pd.DataFrame, arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3) -> Figure:
    """The selected run's training curves of the best and of typical architectures (``curve_architectures``; the
    ``curves`` table, docs/results.md), one panel each, as pycls's ``plot_curves``: the monitored error (solid;
    the validation error, or the training error under the long protocol; absent under a steps schedule) and
    the mean training loss (dashed) per epoch, the learning rate as steps on a log axis at the right (its
    divisions show where the patience ran out), the best monitored error as a dotted line. An architecture
    without a curve of its selected run is named under the figure."""
    missing = [c for c in CURVE_COLUMNS if c not in curves.columns]
    if missing:
        raise ValueError(f"fig_curves: the curves table lacks {', '.join(missing)} (needs {', '.join(CURVE_COLUMNS)})")
    chosen = curve_architectures(arch, n_best, n_typical)
    runs = [(row, why, selected_curves(curves, row)) for row, why in chosen]
    have = [r for r in runs if len(r[2])]
    if not have:
        raise NothingToDraw("No curve of the selected run of the architectures drawn (best and typical).")
    # two across: each panel's learning-rate axis needs its tick labels and label at the right
    fig, axes = panels(len(have), ncols=2, panel=(3.9, 2.8), legend_rows=1, gap_w=GAP_W + TWIN, right=TWIN)
    split = "val"
    for ax, (row, why, run) in zip(axes, have):
        split = str(run["monitored"].iloc[0]) if "monitored" in run.columns else "val"
        with rc_context(THEME):
            if np.isfinite(run["monitored_error"].to_numpy(np.float64)).any():
                ax.plot(run["epoch"], run["monitored_error"], color=BLUE, lw=1.4, label=_SPLIT_LABEL.get(split, split))
                ax.axhline(run["monitored_error"].min(), color=BLUE, lw=0.8, ls=":")
            ax.plot(run["epoch"], run["train_loss"], color=BLACK, lw=1.1, ls="--", label="training loss")
            lr_ax = ax.twinx()
            lr_ax.plot(run["epoch"], run["lr"], color=RED, lw=1.0, drawstyle="steps-post", label="learning rate")
            set_log(lr_ax, "y")
            lr_ax.set_ylabel("learning rate", color=RED)
            lr_ax.tick_params(colors=RED, axis="y")
            lr_ax.grid(False)
            set_title(ax, f"{why}: {row['arch_id']} (test error {float(row['test_error']):.3f})")
            ax.set_xlabel("epoch")
            ax.set_ylabel("error / loss")
    lost = [f"{why} ({row['arch_id']})" for row, why, run in runs if not len(run)]
    if lost:
        omitted(fig, f"No curve of the selected run of {', '.join(lost)}.")
    figure_legend(
        fig,
        [
            Line2D([], [], color=BLUE, lw=1.4),
            Line2D([], [], color=BLACK, lw=1.1, ls="--"),
            Line2D([], [], color=RED, lw=1.0),
        ],
        [_SPLIT_LABEL.get(split, split), "training loss", "learning rate (right axis)"],
    )
    return fig


def fig_nlc_trajectory(curves: pd.DataFrame, arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3) -> Figure:
    """The NLC during training of the selected run of the best and of typical architectures: the points of the
    ``nlc`` column (the epochs of ``metrics: {nlc_trajectory: [...]}``; epoch 0 is the initialization) on a log
    axis, one line per architecture, with the NLC paper's window [1, 3] shaded."""
    chosen = curve_architectures(arch, n_best, n_typical)
    lines = []
    for (row, why), c in zip(chosen, PALETTE):
        run = selected_curves(curves, row)
        run = run[np.isfinite(run["nlc"].to_numpy(np.float64)) & (run["nlc"] > 0)] if len(run) else run
        if len(run):
            lines.append((run, c, f"{why}: {row['arch_id']} ({float(row['test_error']):.3f})"))
    if not lines:
        raise NothingToDraw("No NLC trajectory recorded for the architectures drawn (metrics: nlc_trajectory).")
    names = [t for _, _, t in lines] + ["the NLC paper's [1, 3]"]
    fig, (ax,) = new_figure(panel=(5.0, 3.2), right=text_width(names) + 0.75)
    with rc_context(THEME):
        ax.axhspan(*PAPER_WINDOW, color=GREEN, alpha=0.12, lw=0, label=names[-1])
        for run, c, text in lines:
            ax.plot(run["epoch"], run["nlc"], marker="o", ms=3.5, lw=1.1, color=c, label=text)
        set_log(ax, "y")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        ax.set_xlabel("epoch")
        ax.set_ylabel("NLC of the selected run")
        set_title(ax, "NLC during training (legend: test error)")
    return fig


NO_CURVES = "No training curves recorded for these architectures (a study run before archstudy recorded them)."


def _no_curves(d: FigureData) -> str | None:
    return NO_CURVES if not len(d.curves) else None


def _no_trajectory(d: FigureData) -> str | None:
    if not len(d.curves):
        return NO_CURVES
    return None if d.curves["nlc"].notna().any() else "No NLC trajectory recorded (metrics: nlc_trajectory is off)."


@figure(
    "curves",
    "curves",
    "Training curves of the selected run of the best and of typical architectures (pycls's "
    "plot_curves): the monitored error, the mean training loss and the learning rate per epoch.",
    needs=("curves",),
    skip=_no_curves,
)
def curves_figure(d: FigureData) -> Figure:
    return fig_curves(d.curves, d.arch)


@figure(
    "nlc-trajectory",
    "curves",
    "The NLC during training of the same runs (metrics: nlc_trajectory), with the NLC paper's window [1, 3] shaded.",
    needs=("curves",),
    skip=_no_trajectory,
    note_skip=False,
)
def nlc_trajectory_figure(d: FigureData) -> Figure:
    return fig_nlc_trajectory(d.curves, d.arch)
