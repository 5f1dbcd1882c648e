"""The check of a ranking (``archstudy rank --check``): the lift of the predicted top K over K drawn otherwise."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from archstudy.sampling import SpecError

from ..stats import percentile_interval
from .learners import CONFIDENCE

# -- the check of a ranking: the top K against K drawn at random -------------------------------------------------


def median_lift(
    top: Sequence[float] | npt.NDArray[np.float64],
    drawn: Sequence[float] | npt.NDArray[np.float64],
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """What a ranking before training was worth (``archstudy rank --check``): the median test error of the top K
    by prediction and of K drawn at random from the same ranked architectures, each with its percentile-bootstrap
    interval, and the lift = median(drawn) - median(top) (positive: the ranking picked better architectures),
    with the interval of the two groups resampled independently. Non-finite errors are left out."""
    top = np.asarray(top, dtype=np.float64)
    drawn = np.asarray(drawn, dtype=np.float64)
    top, drawn = top[np.isfinite(top)], drawn[np.isfinite(drawn)]
    if not len(top) or not len(drawn):
        raise SpecError("median_lift", "errors", (len(top), len(drawn)), "must hold a finite test error in each group")
    rng = np.random.default_rng([seed, 7])
    bt = np.median(top[rng.integers(0, len(top), (n_boot, len(top)))], axis=1)
    bd = np.median(drawn[rng.integers(0, len(drawn), (n_boot, len(drawn)))], axis=1)
    out = {"n_top": len(top), "n_drawn": len(drawn), "top": float(np.median(top)), "drawn": float(np.median(drawn))}
    out["top_lo"], out["top_hi"] = percentile_interval(bt, confidence)
    out["drawn_lo"], out["drawn_hi"] = percentile_interval(bd, confidence)
    out["lift"] = out["drawn"] - out["top"]
    out["lift_lo"], out["lift_hi"] = percentile_interval(bd - bt, confidence)
    return out


def paired_lift(
    errors: Mapping[int, float],
    top: Sequence[int],
    other: Sequence[int],
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """The lift of a ranking's top K over another choice of K (``archstudy rank --check``): median test error of
    ``other`` minus that of ``top`` (positive: the ranking picked better architectures), ``errors`` the trained
    architectures' test errors by index. Its interval is a paired percentile bootstrap: each resample draws the
    architectures of both sets together (the union, with replacement), so an architecture in both sets moves both
    medians at once; a resample in which a set is empty is left out. Non-finite errors are left out. Beside it,
    ``p_rank_sum``: the two-sided rank-sum p-value of the two sets' errors (exact for small sets), and
    ``smallest_p`` (``smallest_rank_sum_p``): ``too_small`` where even a perfect separation could not reach the
    level: a bootstrap of so few architectures is no evidence, whatever its interval says."""
    a = [i for i in top if i in errors and math.isfinite(errors[i])]
    b = [i for i in other if i in errors and math.isfinite(errors[i])]
    if not a or not b:
        raise SpecError("paired_lift", "errors", (len(a), len(b)), "must hold a finite test error in each group")
    union = sorted(set(a) | set(b))
    e = np.array([errors[i] for i in union], dtype=np.float64)
    in_a, in_b = np.isin(union, a), np.isin(union, b)
    counts = np.random.default_rng([seed, 8]).multinomial(len(union), np.full(len(union), 1 / len(union)), n_boot)
    diffs = []
    for c in counts:
        ta, tb = np.repeat(e[in_a], c[in_a]), np.repeat(e[in_b], c[in_b])
        if len(ta) and len(tb):
            diffs.append(float(np.median(tb) - np.median(ta)))
    out: dict[str, Any] = {
        "n_top": len(a),
        "n_other": len(b),
        "shared": int((in_a & in_b).sum()),
        "top": float(np.median(e[in_a])),
        "other": float(np.median(e[in_b])),
    }
    out["lift"] = out["other"] - out["top"]
    out["lift_lo"], out["lift_hi"] = percentile_interval(np.asarray(diffs), confidence)
    out["p_rank_sum"] = float(sps.mannwhitneyu(e[in_b], e[in_a], alternative="two-sided").pvalue)
    out["smallest_p"] = smallest_rank_sum_p(len(a), len(b))
    out["too_small"] = out["smallest_p"] > 1 - confidence
    return out


def smallest_rank_sum_p(k_a: int, k_b: int) -> float:
    """The smallest two-sided p-value the exact rank-sum test (Mann and Whitney, *On a test of whether one of two
    random variables is stochastically larger than the other*, 1947) can give two sets of k_a and k_b: every
    member of one below every member of the other, 2 / C(k_a + k_b, k_a). Above the level, no outcome of a check
    with so few architectures could tell a ranking from chance (K = 3 per set: 2 / 20 = 0.1)."""
    return min(1.0, 2.0 / math.comb(k_a + k_b, k_a))


def smallest_useful_k(alpha: float = 1 - CONFIDENCE) -> int:
    """The fewest architectures per set of ``rank --check`` whose rank-sum test can reach ``alpha``."""
    k = 1
    while smallest_rank_sum_p(k, k) > alpha:
        k += 1
    return k
