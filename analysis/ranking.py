"""The predictor ranking: every predictor's |Kendall tau| with test error (``stats.correlations``) beside the range
scores of the U-shaped metrics and the NLC (``range_predictors.range_predictors``, held out), best first.

One table answers "what predicts test error" everywhere in the report: the overview's best predictors are its
first rows and the ranking chart draws it, so the two cannot disagree. The statistic is |tau|: for a raw
predictor Kendall's tau-b over the random draws, for a range score (the report's "window" rows) the mean tau of
the distance from the good range's centre on held-out halves (``range_predictors``); both are rank correlations
with test error, on the same architectures.

Being first is no evidence: under a null where nothing predicts test error, the first of some twenty predictors
has a |tau| interval above 0 in most studies of 48 architectures or more (docs/analysis.md). ``p_holm`` is the
Kendall p-value adjusted over every predictor tested (``stats.holm``): a verdict that the best predictor predicts
reads it (below 0.05), not the interval of a predictor chosen for being first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RANKING_COLUMNS = [
    "rank",
    "predictor",
    "label",
    "kind",
    "kendall",
    "kendall_lo",
    "kendall_hi",
    "abs_tau",
    "abs_lo",
    "abs_hi",
    "p_holm",
    "n",
]


def abs_interval(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval [lo, hi] of tau mapped through |.|: [0, max(|lo|, |hi|)] when it straddles 0."""
    straddle = (lo < 0) & (hi > 0)
    a, b = np.abs(lo), np.abs(hi)
    return np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b)


def window_rows(windows: pd.DataFrame) -> pd.DataFrame:
    """The window scores that join the predictor ranking: those of the U-shaped metrics (and always the
    NLC's), as rows shaped like the correlation table's (``kendall`` = the mean out-of-sample tau, its
    interval the spread over the splits), of kind "window"."""
    if not len(windows):
        return pd.DataFrame()
    w = windows[(windows["u_shaped"] | (windows["metric"] == "nlc")) & np.isfinite(windows["tau"])]
    return pd.DataFrame(
        {
            "predictor": w["metric"] + ":window",
            "label": "window: " + w["label"],
            "kind": "window",
            "kendall": w["tau"],
            "kendall_lo": w["tau_lo"],
            "kendall_hi": w["tau_hi"],
            "n": w["n"],
            "p_holm": np.nan,
        }
    )


def predictor_ranking(corr: pd.DataFrame, windows: pd.DataFrame | None = None) -> pd.DataFrame:
    """The predictors with a Kendall tau (at least 3 finite values) and the window scores (``window_rows``),
    by |tau| with test error, best first: ``abs_tau`` with its bootstrap interval mapped through |.|
    (``abs_lo``, ``abs_hi``), the sign in ``kendall``, ``p_holm`` (``correlations``' ``kendall_p_holm``;
    NaN for a window score), and ``rank`` (1 = best; equal |tau| share a rank).
    Ties keep the correlation table's order (the declaration's: metrics, proxies, baselines), then the
    window scores'."""
    parts = []
    if len(corr):
        c = corr[(corr["n"] >= 3) & np.isfinite(corr["kendall"].to_numpy(np.float64))]
        cols = ["predictor", "label", "kind", "kendall", "kendall_lo", "kendall_hi", "n"]
        parts.append(c[cols].assign(p_holm=c["kendall_p_holm"] if "kendall_p_holm" in c.columns else np.nan))
    if windows is not None and len(windows):
        parts.append(window_rows(windows))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=RANKING_COLUMNS)
    t = pd.concat(parts, ignore_index=True)
    t["abs_tau"] = t["kendall"].abs().astype(np.float64)
    lo, hi = abs_interval(t["kendall_lo"].to_numpy(np.float64), t["kendall_hi"].to_numpy(np.float64))
    t["abs_lo"], t["abs_hi"] = lo, hi
    t = t.sort_values("abs_tau", ascending=False, kind="stable").reset_index(drop=True)
    t["rank"] = t["abs_tau"].rank(ascending=False, method="min").astype(int)
    return t[RANKING_COLUMNS]
