"""The seed-noise ceiling (``analysis.seed_ceiling``): how well one initialization's test error predicts another's,
the most a predictor of test error can reach, and the page's predictors beside it."""

from __future__ import annotations

import math

import numpy as np

from ..html import esc, fmt, table, with_interval
from ..seed_ceiling import UNKNOWN, of_ceiling
from ..study_analysis import StudyAnalysis

SHOWN = 8  # predictors shown beside the ceiling, by |tau|


def _joint_rho(s: StudyAnalysis) -> tuple[float, float, float]:
    """The joint predictor's held-out Spearman rho with its interval, NaN where the page has none."""
    scores = getattr(s.predict, "scores", None)
    if scores is None or not len(scores) or "learner" not in scores.columns:
        return math.nan, math.nan, math.nan
    joint = scores[scores["learner"] == "joint"]
    if not len(joint):
        return math.nan, math.nan, math.nan
    r = joint.iloc[0]
    return float(r["spearman"]), float(r["spearman_lo"]), float(r["spearman_hi"])


def ceiling_html(s: StudyAnalysis) -> str:
    """The initializations' agreement and the ceiling of a predictor's |tau| and |rho| (each with its bootstrap
    interval), then the strongest predictors of the page and the joint model's held-out rho, each as a fraction of
    the ceiling; with one initialization, the line that says it is unknown and how to measure it."""
    c = s.ceiling
    if not c or c.get("inits", 1) < 2:
        return f"<p>The seed-noise ceiling is {esc(UNKNOWN)}.</p>"
    if c.get("why"):
        return f"<p>The seed-noise ceiling cannot be stated: {esc(c['why'])}.</p>"
    pairs = c["inits"] * (c["inits"] - 1) // 2
    head = table(
        ["", "Kendall τ-b", "Spearman ρ"],
        [
            [
                f"the initializations agree ({c['inits']} initializations, {pairs} pair(s), {fmt(c['n'])} base "
                "architectures)",
                with_interval(c["kendall"], c["kendall_lo"], c["kendall_hi"]),
                with_interval(c["spearman"], c["spearman_lo"], c["spearman_hi"]),
            ],
            [
                "the most a predictor can reach (|τ|, |ρ| with the first initialization's test error)",
                with_interval(c["kendall_ceiling"], c["kendall_ceiling_lo"], c["kendall_ceiling_hi"]),
                with_interval(c["spearman_ceiling"], c["spearman_ceiling_lo"], c["spearman_ceiling_hi"]),
            ],
        ],
    )
    rows = []
    corr = s.corr
    if len(corr):
        shown = corr[corr["n"] >= 3].assign(_a=lambda t: t["kendall"].abs()).sort_values("_a", ascending=False)
        for _, r in shown.head(SHOWN).iterrows():
            rows.append(
                [
                    esc(r["label"]),
                    with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                    fmt(of_ceiling(r["kendall"], c["kendall_ceiling"]), 2),
                    with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                    fmt(of_ceiling(r["spearman"], c["spearman_ceiling"]), 2),
                ]
            )
    rho, lo, hi = _joint_rho(s)
    if np.isfinite(rho):
        rows.append(
            [
                "the joint model (held out)",
                "–",
                "–",
                with_interval(rho, lo, hi),
                fmt(of_ceiling(rho, c["spearman_ceiling"]), 2),
            ]
        )
    beside = table(["predictor", "Kendall τ-b", "of the ceiling", "Spearman ρ", "of the ceiling"], rows) if rows else ""
    return (
        head
        + beside
        + '<p class="muted">Two initializations of the same architecture, trained at the same rates, agree only '
        "this far; with test error = what the architecture decides + the initialization's own noise, no predictor "
        "of the architecture correlates with one initialization's error beyond √(their correlation) (Spearman's "
        "attenuation, on ranks through the normal relation τ = (2/π) asin r). The fraction is a predictor's |score| "
        "over that ceiling: 1 is all the seed noise leaves to predict.</p>"
    )
