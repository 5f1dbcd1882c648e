"""The joint predictor of test error in figures (the report's section "Predicting test error from everything
measured at initialization", numbers from ``analysis.predict``): held-out predictions against test error, the
permutation importance of every feature on the held-out folds, and the partial dependence of the top metrics.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from ..plotting import BLACK, BLUE, GREY, MIN_PT, RED, THEME, density, new_figure, set_log, set_title
from ..predict import CANNOT_FIT, LABELS, TARGET, Prediction
from .base import FigureData, figure


def _skipped(d: FigureData) -> str | None:
    """Not drawn without a held-out evaluation: the section's own text says why."""
    return None if isinstance(d.predict, Prediction) else ""


@figure(
    "predict-held-out",
    "predict",
    "Held-out prediction of test error: each architecture's prediction by a "
    "model fitted on the other folds (GroupKFold on the base architecture: its siblings were never in the "
    "model's training rows; the first of the repeated splits), for the joint model a whole study picks and for "
    "NLC alone (the NLC paper's window [1, 3], unfitted: its distance from the window). The mean Spearman's ρ "
    "over held-out folds and repeats in each title; the dashed line is y = x.",
    needs=("predict",),
    skip=_skipped,
    note_skip=False,
)
def fig_predict_held_out(d: FigureData) -> Figure:
    """Held-out prediction vs test error, the best joint learner beside NLC alone (``Prediction.held_out``)."""
    p = d.predict
    fig, axes = new_figure(ncols=2)
    h = p.held_out
    scores = p.scores.set_index("learner")
    y = h[TARGET].to_numpy(np.float64)
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    for ax, learner, color in zip(axes, (p.best, "nlc"), (BLUE, BLACK)):
        if learner not in h.columns or learner not in scores.index:
            ax.set_axis_off()
            continue
        x = h[learner].to_numpy(np.float64)
        with rc_context(THEME):
            density(ax, [(x, y, color, None)])
            if learner != "nlc":  # the NLC's rule is a distance in decades, not an error: no y = x
                both = np.concatenate([x[np.isfinite(x)], y])
                a, b = float(both.min()), float(both.max())
                ax.plot([a, b], [a, b], ls="--", lw=0.8, color=GREY)
            ax.set_ylim(lo - 0.03 * (hi - lo + 1e-9), hi + 0.03 * (hi - lo + 1e-9))
            ax.set_xlabel(
                f"held-out prediction: {LABELS[learner]}"
                if learner != "nlc"
                else "NLC's distance from [1, 3] (decades)"
            )
            ax.set_ylabel("test error")
            s = scores.loc[learner]
            if s["status"] == CANNOT_FIT or not np.isfinite(s["spearman"]):
                set_title(ax, f"{CANNOT_FIT}, n = {int(s['n'])}")
            else:
                set_title(
                    ax,
                    f"ρ = {s['spearman']:.2f} [{s['spearman_lo']:.2f}, {s['spearman_hi']:.2f}], n = {int(s['n'])}",
                )
    return fig


@figure(
    "predict-importance",
    "predict",
    "Why it predicts: permutation importance of every feature for the best "
    "joint model, on the held-out folds (scikit-learn's permutation_importance): the drop in held-out "
    "Spearman's ρ when the feature's values are shuffled among the fold's architectures. Bar: the mean over "
    "folds (weighted by their size); whiskers: the central 95% of the folds' and repeats' drops. Near 0: the "
    "model does not rely on it (a feature that shares its information with another can score low while "
    "the other is there).",
    needs=("predict",),
    skip=_skipped,
    note_skip=False,
)
def fig_predict_importance(d: FigureData) -> Figure:
    """Permutation importance per feature, most important on top (``Prediction.importance``)."""
    imp = d.predict.importance
    n = max(len(imp), 1)
    fig, axes = new_figure(panel=(6.4, max(2.4, 0.26 * n + 1.0)), left=2.6)
    ax = axes[0]
    with rc_context(THEME):
        if len(imp):
            order = imp.iloc[::-1]
            pos = np.arange(len(order))
            colors = [
                RED if k == "descriptor" else (BLUE if f == "nlc" else BLACK)
                for k, f in zip(order["kind"], order["feature"])
            ]
            ax.barh(pos, order["mean"], color=colors, alpha=0.75)
            ax.errorbar(
                order["mean"],
                pos,
                xerr=[order["mean"] - order["lo"], order["hi"] - order["mean"]],
                fmt="none",
                ecolor=GREY,
                lw=0.9,
                capsize=2,
            )
            ax.set_yticks(pos)
            ax.set_yticklabels(order["label"], fontsize=MIN_PT)
            ax.axvline(0, color=GREY, lw=0.8)
        else:
            ax.text(
                0.5,
                0.5,
                "no held-out fold of 3 architectures or more",
                ha="center",
                va="center",
                transform=ax.transAxes,
                color=GREY,
            )
        ax.set_xlabel("drop of held-out Spearman's ρ when shuffled")
        set_title(ax, f"{LABELS[d.predict.best]} ({d.predict.folds} folds)")
    return fig


@figure(
    "predict-dependence",
    "predict",
    "Partial dependence of the best joint model, fitted on every trained "
    "architecture (scikit-learn's partial_dependence): the average predicted test error when a metric is set "
    "to each value for every architecture, for the NLC and the metrics of highest importance. Ticks at the "
    "bottom: the architectures' values. The NLC paper's window (section 4, figure 2) is a valley: error "
    "lowest for an initial NLC of about 1 to 3 (shaded).",
    needs=("predict",),
    skip=_skipped,
    note_skip=False,
)
def fig_predict_dependence(d: FigureData) -> Figure:
    """One panel per metric: the partial-dependence curve and the data's values (``Prediction.dependence``)."""
    dep, values = d.predict.dependence, d.predict.values
    names = list(dict.fromkeys(dep["feature"])) if len(dep) else []
    ncols = min(max(len(names), 1), 4)
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(names) / ncols)))
    for ax, name in zip(axes, names):
        curve = dep[dep["feature"] == name]
        with rc_context(THEME):
            ax.plot(curve["value"], curve["error"], color=BLUE if name == "nlc" else BLACK, lw=1.6)
            if name in values and len(values[name]):
                lo, hi = ax.get_ylim()
                ax.plot(values[name], np.full(len(values[name]), lo), "|", color=GREY, ms=8, alpha=0.6)
            if name == "nlc":
                ax.axvspan(1.0, 3.0, color=BLUE, alpha=0.08, lw=0)
            if bool(curve["log"].iloc[0]):
                set_log(ax, "x")
            ax.set_xlabel(str(curve["label"].iloc[0]))
            ax.set_ylabel("predicted test error (average)")
            set_title(ax, str(curve["label"].iloc[0]))
    if not names:
        axes[0].text(
            0.5, 0.5, "no metric with finite values", ha="center", va="center", transform=axes[0].transAxes, color=GREY
        )
    for ax in axes[len(names) :] if names else []:
        ax.set_visible(False)
    return fig
