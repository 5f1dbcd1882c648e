"""What the repeated grouped cross-validation of ``predict_study`` collects, and the intervals of its mean scores.

Each learner is scored on each held-out fold (``fold_scores``): Spearman's rho, Kendall's tau-b, R^2, the mean
absolute error and the root-mean-square error of its predictions there. ``CrossValidation`` holds those scores per
(repeat, fold), the held-out predictions of every repeat and the fold of each row.

**The interval of a mean score** (``cv_interval``). The estimate is the mean m of the r x k fold scores of r
repeats of k-fold cross-validation. Its variance has two parts (Bengio and Grandvalet, *No Unbiased Estimator of
the Variance of K-Fold Cross-Validation*, JMLR 5, 2004, section 3): what a new study would change, and what
another partition of the same study would change, which the r repeats average away. With s_w^2 the mean over the
repeats of the variance of a repeat's k fold scores and s_b^2 the variance of the r repeat means,

    var(m) = s_w^2 / k - (1 - 1/r) s_b^2

(one repeat's mean, its folds counted as independent samples, less the partition noise the repeats remove; a
floor of s_w^2 / (r k)), and the interval is m +- t_{k-1} sqrt(var(m)). ``corrected_interval`` is the corrected
resampled t of Nadeau and Bengio that it replaced: docs/predict.md gives both measured on simulated studies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats as sps

from .learners import CONFIDENCE

# The scores of a learner on one held-out fold: rank agreement with test error, and the error of its values.
STATS = ("spearman", "kendall", "r2", "mae", "rmse")
# The scores a rule (an unfitted baseline, on its column's scale, not the error's) has: its order only.
ORDER_STATS = ("spearman", "kendall")
BOUNDS = {"spearman": 1.0, "kendall": 1.0, "r2": math.inf, "mae": math.inf, "rmse": math.inf}


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, tied values at their mean rank (``scipy.stats.rankdata``'s "average")."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    out = np.empty(len(x))
    out[order] = np.repeat(mean_rank, ends - starts)
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the ranks (ties at their mean rank); NaN where either is constant."""
    ra, rb = _ranks(a), _ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum()) / den if den > 0 else math.nan


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b: sum over pairs of sign(a_i - a_j) sign(b_i - b_j), over the square root of the product of
    each side's untied pairs (Kendall, *The treatment of ties in ranking problems*, Biometrika 33, 1945)."""
    sa = np.sign(a[:, None] - a[None, :])
    sb = np.sign(b[:, None] - b[None, :])
    den = math.sqrt(float(np.abs(sa).sum()) * float(np.abs(sb).sum()))
    return float((sa * sb).sum()) / den if den > 0 else math.nan


def r2(y: np.ndarray, p: np.ndarray) -> float:
    """R^2 = 1 - sum (y - p)^2 / sum (y - mean y)^2; NaN where y is constant."""
    ss = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - p) ** 2).sum()) / ss if ss > 0 else math.nan


def fold_scores(p: np.ndarray, y: np.ndarray, rho_only: bool = False) -> tuple[dict[str, float], bool]:
    """The ``STATS`` of predictions ``p`` against ``y`` on one held-out fold, and whether the predictions are
    constant there (the learner could not fit: no order to score). A fold with a constant ``y`` or under 3 rows
    scores NaN; ``rho_only``: Spearman's rho alone (the others NaN)."""
    nan = dict.fromkeys(STATS, math.nan)
    if not np.all(np.isfinite(p)):
        return nan, True
    if len(p) >= 2 and np.ptp(p) == 0:
        return nan, True
    if len(y) < 3 or np.ptp(y) == 0:
        return nan, False
    if rho_only:
        return {**nan, "spearman": spearman(p, y)}, False
    e = p - y
    return {
        "spearman": spearman(p, y),
        "kendall": kendall(p, y),
        "r2": r2(y, p),
        "mae": float(np.abs(e).mean()),
        "rmse": float(np.sqrt((e * e).mean())),
    }, False


@dataclass
class CrossValidation:
    """The scores of repeated grouped k-fold cross-validation: ``scores[learner]``, an array (repeats, folds,
    ``len(STATS)``) of each held-out fold's ``fold_scores``; ``preds[learner]`` (repeats, rows), its held-out
    predictions; ``fold_of`` (repeats, rows), the fold that held each row out; ``picked``: the learner a nested
    choice took in each (repeat, fold); ``constant``: the learners that could not fit in some fold."""

    names: list[str]
    repeats: int
    folds: int
    rows: int
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    preds: dict[str, np.ndarray] = field(default_factory=dict)
    fold_of: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=int))
    picked: dict[str, list[str]] = field(default_factory=dict)
    constant: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shape = (self.repeats, self.folds, len(STATS))
        self.scores = {m: np.full(shape, np.nan) for m in self.names}
        self.preds = {m: np.full((self.repeats, self.rows), np.nan) for m in self.names}
        self.fold_of = np.zeros((self.repeats, self.rows), dtype=int)
        self.constant = dict.fromkeys(self.names, False)

    def record(self, learner: str, r: int, j: int, test: np.ndarray, p: np.ndarray, y: np.ndarray, rule: bool) -> None:
        """Learner ``learner``'s predictions ``p`` on fold ``j`` of repeat ``r`` (rows ``test``), scored against
        ``y``. A rule constant on a fold (depth, on a fold of one depth) has no order there and is not scored; a
        fitted model with constant predictions could not fit."""
        self.preds[learner][r, test] = p
        self.fold_of[r, test] = j
        s, flat = fold_scores(p, y)
        if rule and np.all(np.isfinite(p)):
            flat = False
        self.constant[learner] |= flat
        self.scores[learner][r, j] = [s[k] for k in STATS]

    def matrix(self, learner: str, stat: str) -> np.ndarray:
        """(repeats, folds) of one score; NaN throughout for a learner that could not fit."""
        if self.constant[learner]:
            return np.full((self.repeats, self.folds), np.nan)
        out: np.ndarray = self.scores[learner][:, :, STATS.index(stat)]
        return out

    def most_picked(self, learner: str) -> str:
        """The learner a nested choice took most often (ties: the first in order of first choice); "" if none."""
        chosen = [c for c in self.picked.get(learner, []) if c]
        if not chosen:
            return ""
        names, counts = np.unique(np.array(chosen), return_counts=True)
        top = set(names[counts == counts.max()].tolist())
        return next(c for c in chosen if c in top)


def cv_variance(scores: np.ndarray) -> tuple[float, float, int]:
    """(mean, variance of the mean, folds) of an (repeats, folds) array of fold scores (module docstring): s_w^2 / k
    - (1 - 1/r) s_b^2, at least s_w^2 / (r k). Non-finite scores are left out of their repeat; a repeat with
    fewer than 2 finite scores is left out; NaN without one."""
    s = np.asarray(scores, dtype=np.float64)
    s = s[None, :] if s.ndim == 1 else s
    means, variances, sizes = [], [], []
    for row in s:
        v = row[np.isfinite(row)]
        if len(v) >= 2:
            means.append(float(v.mean()))
            variances.append(float(v.var(ddof=1)))
            sizes.append(len(v))
    if not means:
        finite = s[np.isfinite(s)]
        return (float(finite.mean()) if len(finite) else math.nan), math.nan, 0
    r, k = len(means), float(np.mean(sizes))
    s_w2 = float(np.mean(variances))
    s_b2 = float(np.var(means, ddof=1)) if r >= 2 else 0.0
    var = max(s_w2 / k - (1 - 1 / r) * s_b2, s_w2 / (r * k))
    return float(np.mean(means)), var, int(round(k))


def cv_interval(
    scores: np.ndarray, confidence: float = CONFIDENCE, bound: float = math.inf
) -> tuple[float, float, float]:
    """(mean, lo, hi) of an (repeats, folds) array of fold scores: m +- t_{k-1} sqrt(var(m)) (``cv_variance``),
    clipped to [-bound, bound] (a correlation's range). NaN bounds below 2 finite scores in a repeat."""
    m, var, k = cv_variance(scores)
    if not (math.isfinite(var) and k >= 2):
        return m, math.nan, math.nan
    half = float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * math.sqrt(var)
    return m, max(m - half, -bound), min(m + half, bound)


def cv_p(scores: np.ndarray, alternative: str = "two-sided") -> float:
    """The p-value of mean 0 that ``cv_interval`` inverts: t = m / sqrt(var(m)) on k - 1 degrees of freedom,
    two-sided, or one-sided (``"greater"``: the mean is above 0)."""
    m, var, k = cv_variance(scores)
    if not (math.isfinite(var) and var > 0 and k >= 2):
        return math.nan
    t = m / math.sqrt(var)
    if alternative == "greater":
        return float(sps.t.sf(t, k - 1))
    return float(2 * sps.t.sf(abs(t), k - 1))


def corrected_interval(
    values: np.ndarray, test_over_train: float, confidence: float = CONFIDENCE, bound: float = math.inf
) -> tuple[float, float, float]:
    """(mean, lo, hi) of per-fold scores of repeated k-fold cross-validation: the corrected resampled t of Nadeau
    and Bengio (*Inference for the Generalization Error*, Machine Learning 52, 2003, section 4), in the r x k
    form of Bouckaert and Frank (*Evaluating the Replicability of Significance Tests*, PAKDD 2004, section 3):
    the J = r k scores x with mean m and variance s^2, var(m) = (1/J + n_test/n_train) s^2 (the second term for
    the overlap of the training sets), m +- t_{J-1} sqrt(var(m)), clipped to [-bound, bound] (a correlation's
    range). Non-finite scores are left out; NaN below 2. Replaced by ``cv_interval`` (too wide with signal:
    docs/predict.md); kept as the measured alternative."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        m = float(x.mean()) if len(x) else math.nan
        return m, math.nan, math.nan
    m, s2 = float(x.mean()), float(x.var(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1)) * math.sqrt((1 / len(x) + test_over_train) * s2)
    return m, max(m - half, -bound), min(m + half, bound)


def interval_row(cv: CrossValidation, learner: str, stats: Sequence[str], confidence: float) -> dict[str, Any]:
    """Each of ``stats`` of ``learner``: its mean over the folds with ``cv_interval`` (``stat``, ``stat_lo``,
    ``stat_hi``); the others of ``STATS`` NaN."""
    out: dict[str, Any] = {}
    for stat in STATS:
        if stat in stats:
            out[stat], out[f"{stat}_lo"], out[f"{stat}_hi"] = cv_interval(
                cv.matrix(learner, stat), confidence, BOUNDS[stat]
            )
        else:
            out[stat] = out[f"{stat}_lo"] = out[f"{stat}_hi"] = math.nan
    return out
