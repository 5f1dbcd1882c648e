"""The best learning rate: each architecture's selected rate and near-optimal band, what they depend on, how they
move between siblings, and what training only a window of rates around a predicted one would cost
(``analysis.learning_rates``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import fmt_p
from ..html import esc, fmt, interval, table, with_interval
from ..learning_rates import (
    BAND_TOLERANCE,
    REGRET_TOLERANCE,
    TARGET_LABELS,
    LearningRates,
    learning_rates,
    window_refusal,
)
from ..stats import sign_test
from ..study_analysis import StudyAnalysis

TOP_DEPENDENCES = 3  # predictors shown per target, by |Kendall tau|
SUMMARY_QUANTILES = (0.1, 0.25, 0.75, 0.9)


def _muted(text: str) -> str:
    return f'<p class="muted">{text}</p>'


def _median_cell(values: np.ndarray, digits: int) -> str:
    """The median with the distribution-free interval of a median (``stats.sign_test`` of the values)."""
    t = sign_test(values)
    ci = interval(t["ci_lo"], t["ci_hi"], digits)
    return f"{t['median']:.{digits}f}{'<br>' + ci if ci else ''}"


def _proportion(k: int, n: int) -> str:
    from scipy import stats as sps

    if not n:
        return "–"
    ci = sps.binomtest(k, n).proportion_ci(method="exact")
    return f"{k} of {n} ({100 * k / n:.0f}%)<br>{interval(100 * ci.low, 100 * ci.high, 0)}"


def summary_html(lr: LearningRates) -> str:
    """The best index, the best rate and the band over the base draws: median with its interval, quantiles, and how
    often the best rate or its band reaches an end of the series."""
    t = lr.table
    base = t[t["variant"] == "base"] if "variant" in t.columns else t
    base = base[np.isfinite(base["best_index"].to_numpy(np.float64))]
    rows = []
    for col, digits in (("best_index", 0), ("best_log10_lr", 2), ("band_width", 0)):
        x = base[col].to_numpy(np.float64)
        x = x[np.isfinite(x)]
        q = np.quantile(x, SUMMARY_QUANTILES) if len(x) else [np.nan] * len(SUMMARY_QUANTILES)
        rows.append(
            [esc(TARGET_LABELS[col]), fmt(len(x)), _median_cell(x, digits)]
            + [f"{v:.{digits}f}" if np.isfinite(v) else "–" for v in q]
        )
    out = table(["", "n", "median [95% interval]", *[f"{int(100 * q)}%" for q in SUMMARY_QUANTILES]], rows)
    n = len(base)
    n_rates = int(lr.best["n_rates"].max())
    dead = int(lr.best["all_diverged"].sum())
    out += table(
        None,
        [
            [f"best index at an end of the series (0 or {n_rates - 1})", _proportion(int(base["edge"].sum()), n)],
            ["near-optimal band reaching an end", _proportion(int(base["band_edge"].sum()), n)],
        ],
    )
    return out + _muted(
        f"Over the base draws (the random sample; siblings are conditioned on them), {n_rates} rates each. Best index "
        "k*: the selected run's <code>lr_index</code> (0 = lowest rate; the rates are lr_min · f^k with lr_min "
        "measured per architecture, so k* is a normalized rate and log10 of the rate itself stands beside it). "
        f"Near-optimal band B = {{k : VE_k ≤ VE_k* + {BAND_TOLERANCE}}} (VE: validation error; {BAND_TOLERANCE} is "
        "about one binomial standard error of a validation error on 1,000 examples), |B| its width. Median "
        "interval: the distribution-free order-statistic interval (at least 95%); proportions: Clopper-Pearson. "
        f"{dead} architecture{'s' if dead != 1 else ''} with every run diverged: no best rate, left out."
    )


def dependence_html(lr: LearningRates) -> str:
    """The strongest correlations of each target with the measures and numeric design axes, then the median best
    index per level of the categorical axes."""
    d = lr.dependence
    parts = []
    if len(d):
        rows = []
        for target in TARGET_LABELS:
            part = d[(d["target"] == target) & (d["n"] >= 3)].dropna(subset=["kendall"])
            part = part.reindex(part["kendall"].abs().sort_values(ascending=False).index).head(TOP_DEPENDENCES)
            for _, r in part.iterrows():
                rows.append(
                    [
                        esc(TARGET_LABELS[target]),
                        esc(r["label"]),
                        fmt(int(r["n"])),
                        with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                        with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                        f"{fmt_p(r['kendall_p'])} / {fmt_p(r['kendall_p_holm'])}",
                    ]
                )
        parts.append(
            table(["", "predictor", "n", "Kendall τ", "Spearman ρ", "Kendall p / Holm over the target's"], rows, left=2)
        )
    lv = lr.levels
    if len(lv):
        rows = []
        for axis, g in lv.groupby("axis", sort=False):
            cells = "; ".join(
                f"{esc(r['level'])}: {r['median']:g} {interval(r['ci_lo'], r['ci_hi'], 0)} (n = {int(r['n'])})"
                for _, r in g.iterrows()
            )
            rows.append([esc(axis), cells, fmt_p(float(g["p_kruskal"].iloc[0]))])
        parts.append(table(["axis", "median best index per level [95% interval] (n)", "Kruskal-Wallis p"], rows, 2))
    if not parts:
        return "<p>No measure or design axis has three finite values beside a best rate.</p>"
    return "".join(parts) + _muted(
        f"The {TOP_DEPENDENCES} strongest of each target by |Kendall τ| among the measures at initialization and "
        "the numeric design axes, over the base draws: intervals from the percentile bootstrap over architectures; "
        "p-values Holm-adjusted over the predictors of one target, and not part of the page's findings. The "
        "categorical axes: the median best index of each level's base draws, its order-statistic interval, and "
        "the Kruskal-Wallis test of one distribution across the levels (confounded by the other axes: a random "
        "draw varies all of them)."
    )


def _paired_cell(r: pd.Series, digits: int) -> str:
    """A paired comparison's median difference, its order-statistic interval (coverage) and B higher / lower /
    equal with the sign test's p."""
    level = "" if not np.isfinite(r["ci_level"]) else f" ({100 * r['ci_level']:.0f}%)"
    ci = interval(r["ci_lo"], r["ci_hi"], digits)
    return (
        f"{r['median'] + 0.0:.{digits}f}{'<br>' + ci + level if ci else ''}<br>"
        f'<span class="ci">{int(r["n_pos"])} / {int(r["n_neg"])} / {int(r["n_zero"])}, p = {fmt_p(r["p_sign"])}</span>'
    )


def transfer_html(lr: LearningRates) -> str:
    """The paired differences of the best rate between siblings, per axis and parameterization: the best index and
    log10 of the rate side by side."""
    t = lr.transfer
    if not len(t):
        return "<p>No sibling pairs with a best rate on both sides: this study has no siblings (or none finished).</p>"
    on = ["axis", "a", "b", "context", "param"]
    index = t[t["target"] == "best_index"]
    rate = t[t["target"] == "best_log10_lr"].set_index(on)
    rows = []
    for _, r in index.iterrows():
        effect = f"{esc(r['a'])} → {esc(r['b'])}" + (f" ({esc(r['context'])})" if r["context"] else "")
        key = tuple(r[c] for c in on)
        rows.append(
            [
                esc(r["axis"]),
                effect,
                esc(r["param"]),
                fmt(int(r["n_pairs"])),
                _paired_cell(r, 1),
                _paired_cell(rate.loc[key], 2) if key in rate.index else "–",
            ]
        )
    return table(
        [
            "axis",
            "A → B",
            "parameterization",
            "pairs",
            "median Δ best index (B − A)",
            "median Δ log10 best rate (B − A)",
        ],
        rows,
        left=3,
    ) + _muted(
        "Pairs: the same draw along one sibling axis (everything else shared). Along <code>param</code> every "
        "pair, SP → GmP; along each other axis, the pairs of one parameterization at a time, where the papers "
        "expect a rate found for one network to transfer or not (GmP reparameterizes the weights, so the same "
        "lr_index is another step). Δ of the best index counts rates (a factor f each, from each network's own "
        "lr_min); Δ of log10 of the rate is the rate itself. Each cell: the median difference, the order-statistic "
        "interval of the median that inverts the sign test (its coverage; none with fewer than 6 pairs), pairs "
        "where B is higher / lower / equal, and the sign test's p (not adjusted, not part of the page's findings)."
    )


def windows_html(lr: LearningRates) -> str:
    """The regret of training only m rates around a predicted best index, against the median rule."""
    w = lr.windows
    if lr.window_reason:
        return f"<p>No window statistics: {esc(lr.window_reason)}.</p>"
    if not len(w):
        return "<p>No window shorter than the series could be measured.</p>"
    rows = []
    for _, r in w.iterrows():
        versus = "–"
        if r["rule"] == "ridge":
            versus = (
                f"{fmt(r['diff'], 4)}<br>{interval(r['diff_lo'], r['diff_hi'], 4)}<br>"
                f'<span class="ci">{int(r["n_better"])} better / {int(r["n_worse"])} worse, p = '
                f"{fmt_p(r['p_sign'])}</span>"
            )
        rows.append(
            [
                fmt(int(r["size"])),
                f"{100 * r['saved']:.0f}%",
                "ridge (cross-fitted)" if r["rule"] == "ridge" else "median of the training folds",
                f"{int(r['n'])} ({int(r['groups'])})",
                with_interval(r["median"], r["median_lo"], r["median_hi"], 3),
                with_interval(r["p90"], r["p90_lo"], r["p90_hi"], 3),
                _proportion(int(r["within_k"]), int(r["n"])),
                versus,
            ]
        )
    ridge = w[w["rule"] == "ridge"].iloc[0]
    refusals = []
    for m in sorted(w["size"].unique()):
        why = window_refusal(w, int(m))
        refusals.append(f"{int(m)} rates: " + ("the predicted window may be used" if why is None else esc(why)))
    return (
        table(
            [
                "rates m",
                "runs saved",
                "centre",
                "architectures (base)",
                "median regret",
                "90th percentile regret",
                f"regret ≤ {REGRET_TOLERANCE}",
                "ridge − median rule: mean regret Δ",
            ],
            rows,
            left=(2,),
        )
        + _muted(
            f"The ridge's held-out predictions against k*: Spearman ρ {fmt(ridge['rho'], 2)} "
            f"{interval(ridge['rho_lo'], ridge['rho_hi'])}. Verdicts: " + "; ".join(refusals) + "."
        )
        + _muted(
            "The rates are trained independently in one stack with the same minibatch order, so training m of them "
            "gives exactly those runs of the full sweep: the window W = {s, …, s + m − 1}, s = clip(c − ⌊m/2⌋, 0, "
            "n − m), selects j = argmin over W of the validation error (ties to the lower rate), and its regret is "
            "TE_j − TE_k* (test error; signed, both selected by validation error). The centre c: a ridge regression "
            "of k* on the measures at initialization (log10 NLC among them) and the design axes, or the median k*, "
            "each fitted on the other folds of a grouped K-fold over base architectures (a draw and its siblings "
            "held out together), rounded and clipped to the series. Intervals of the quantiles and of the mean "
            "difference: percentile bootstrap over base architectures; the share within "
            f"{REGRET_TOLERANCE} (half the band's tolerance, below the standard error of a test error on 1,000 "
            "examples): Clopper-Pearson over architectures. The predicted window is refused unless the interval of its "
            "held-out ρ lies above 0 and that of its mean regret difference to the median rule below 0 "
            "(<code>learning_rates.window_refusal</code>)."
        )
    )


def learning_rates_html(s: StudyAnalysis) -> str:
    """The section: the best-rate summary, its dependences, rate transfer between siblings, the rate window."""
    runs = s.results.runs
    lr = learning_rates(s.arch, runs if isinstance(runs, pd.DataFrame) else pd.DataFrame())
    if lr.reason:
        return f"<p>No statistics of the best learning rate: {esc(lr.reason)}.</p>"
    return (
        summary_html(lr)
        + "<h4>What the best rate depends on</h4>"
        + dependence_html(lr)
        + "<h4>Rate transfer between siblings</h4>"
        + transfer_html(lr)
        + "<h4>Training a window of rates</h4>"
        + windows_html(lr)
    )
