"""What the repeated grouped cross-validation of ``predict_study`` collects, and the intervals of its mean scores.

Each learner is scored on each held-out fold (``fold_scores``): Spearman's rho, Kendall's tau-b, R^2, the mean
absolute error and the root-mean-square error of its predictions there. ``CrossValidation`` holds those scores per
(repeat, fold), the held-out predictions of every repeat and the fold of each row.

**The interval of a mean score** (``cv_interval``). The estimate is the mean m of the r x k fold scores of r
repeats of k-fold cross-validation. Its variance has two parts (Bengio and Grandvalet, *No Unbiased Estimator of the
Variance of K-Fold Cross-Validation*, JMLR 5, 2004, section 3): the evaluation's, which rows the folds happened to
hold, and the models', what other training sets would have fitted. The first is a bootstrap of the base
architectures (a draw and its siblings) with every held-out prediction held fixed: each resample's fold scores,
averaged as m is, B = ``BOOT`` times, their variance V_boot (the bootstrap of out-of-fold predictions, grouped).
The second is what another partition of the same study changes, the variance s_b^2 of the r repeats' means
(within a study, a repeat's training sets are the only thing that changes). So

    var(m) = V_boot + s_b^2,   m +- z_{(1+c)/2} sqrt(var(m)),

its coverage and width measured on simulated studies (``predict_simulation.coverage_rates``; docs/analysis.md,
"Intervals"). ``corrected_interval`` is the corrected resampled t of Nadeau and Bengio (*Inference for the
Generalization Error*, 2003), kept as the alternative it is measured against.
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


BOOT = 200  # bootstrap resamples of the base architectures for an interval of a cross-validated score


def boot_counts(groups: np.ndarray, seed: int, n_boot: int = BOOT) -> np.ndarray:
    """(n_boot, rows) bootstrap counts: base architectures (``groups``) drawn with replacement, each row counted
    as often as its group was drawn (numpy's generator of (``seed``, 2024))."""
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    draws = np.random.default_rng([seed, 2024]).integers(0, n_groups, size=(n_boot, n_groups))
    per_group = np.zeros((n_boot, n_groups))
    np.add.at(per_group, (np.repeat(np.arange(n_boot), n_groups), draws.ravel()), 1.0)
    out: np.ndarray = per_group[:, groups]
    return out


def _weighted(stat: str, p: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``stat`` of predictions ``p`` against ``y`` in every resample given by counts ``c`` (B, m); NaN where a
    resample holds fewer than 3 rows."""
    from ..stats import boot_kendall, boot_spearman

    with np.errstate(invalid="ignore", divide="ignore"):
        if stat == "spearman":
            out = boot_spearman(p, y, c)
        elif stat == "kendall":
            out = boot_kendall(p, y, c)
        else:
            w = c.sum(axis=1)
            e = p - y
            if stat == "mae":
                out = (c * np.abs(e)).sum(axis=1) / w
            elif stat == "rmse":
                out = np.sqrt((c * e * e).sum(axis=1) / w)
            else:
                mean = (c * y).sum(axis=1, keepdims=True) / w[:, None]
                ss = (c * (y - mean) ** 2).sum(axis=1)
                out = np.where(ss > 0, 1.0 - (c * e * e).sum(axis=1) / np.where(ss > 0, ss, 1.0), np.nan)
    result: np.ndarray = np.where(c.sum(axis=1) >= 3, out, np.nan)
    return result


def boot_means(preds: np.ndarray, y: np.ndarray, fold_of: np.ndarray, stat: str, counts: np.ndarray) -> np.ndarray:
    """The cross-validated ``stat`` (the mean over repeats and folds) of held-out predictions ``preds`` (repeats,
    rows), each fold ``fold_of`` scored apart, in every bootstrap resample ``counts`` (B, rows), the predictions
    held fixed. NaN where a repeat's predictions are not all finite (a learner that could not fit)."""
    per = []
    for r in range(len(preds)):
        if not np.all(np.isfinite(preds[r])):
            return np.full(len(counts), np.nan)
        for f in np.unique(fold_of[r]):
            rows = fold_of[r] == f
            per.append(_weighted(stat, preds[r][rows], y[rows], counts[:, rows]))
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out: np.ndarray = np.nanmean(np.vstack(per), axis=0) if per else np.full(len(counts), np.nan)
    return out


def cv_variance(scores: np.ndarray, boot: np.ndarray) -> tuple[float, float]:
    """(mean, variance of the mean) of an (repeats, folds) array of fold scores with ``boot``, the bootstrap
    means of the same (``boot_means``): V_boot + s_b^2 (module docstring). Non-finite scores are left out; NaN
    without a finite bootstrap spread."""
    s = np.asarray(scores, dtype=np.float64)
    s = s[None, :] if s.ndim == 1 else s
    finite = s[np.isfinite(s)]
    if len(finite) < 2:
        return (float(finite.mean()) if len(finite) else math.nan), math.nan
    b = np.asarray(boot, dtype=np.float64)
    b = b[np.isfinite(b)]
    if len(b) < 2:
        return float(finite.mean()), math.nan
    means = [float(row[np.isfinite(row)].mean()) for row in s if np.isfinite(row).any()]
    s_b2 = float(np.var(means, ddof=1)) if len(means) >= 2 else 0.0
    return float(finite.mean()), float(np.var(b, ddof=1)) + s_b2


def cv_interval(
    scores: np.ndarray, boot: np.ndarray, confidence: float = CONFIDENCE, bound: float = math.inf
) -> tuple[float, float, float]:
    """(mean, lo, hi) of an (repeats, folds) array of fold scores: m +- z sqrt(var(m)) (``cv_variance``), clipped
    to [-bound, bound] (a correlation's range)."""
    m, var = cv_variance(scores, boot)
    if not math.isfinite(var):
        return m, math.nan, math.nan
    half = float(sps.norm.ppf(0.5 + confidence / 2)) * math.sqrt(var)
    return m, max(m - half, -bound), min(m + half, bound)


def cv_p(scores: np.ndarray, boot: np.ndarray, alternative: str = "two-sided") -> float:
    """The p-value of mean 0 that ``cv_interval`` inverts: z = m / sqrt(var(m)), two-sided, or one-sided
    (``"greater"``: the mean is above 0)."""
    m, var = cv_variance(scores, boot)
    if not (math.isfinite(var) and var > 0):
        return math.nan
    z = m / math.sqrt(var)
    return float(sps.norm.sf(z)) if alternative == "greater" else float(2 * sps.norm.sf(abs(z)))


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


def interval_row(
    cv: CrossValidation, learner: str, stats: Sequence[str], y: np.ndarray, counts: np.ndarray, confidence: float
) -> dict[str, Any]:
    """Each of ``stats`` of ``learner``: its mean over the folds with ``cv_interval`` (``stat``, ``stat_lo``,
    ``stat_hi``; the bootstrap ``counts`` shared by every learner); the others of ``STATS`` NaN; ``p``: the
    one-sided p-value of its rho above 0 (``cv_p``)."""
    out: dict[str, Any] = {}
    for stat in STATS:
        if stat in stats:
            boot = (
                boot_means(cv.preds[learner], y, cv.fold_of, stat, counts) if not cv.constant[learner] else np.zeros(0)
            )
            out[stat], out[f"{stat}_lo"], out[f"{stat}_hi"] = cv_interval(
                cv.matrix(learner, stat), np.asarray(boot), confidence, BOUNDS[stat]
            )
            if stat == "spearman":
                out["p"] = cv_p(cv.matrix(learner, stat), np.asarray(boot), "greater")
        else:
            out[stat] = out[f"{stat}_lo"] = out[f"{stat}_hi"] = math.nan
    return out


def paired_interval(
    cv: CrossValidation, a: str, b: str, y: np.ndarray, counts: np.ndarray, confidence: float
) -> tuple[float, float, float, float]:
    """(diff, lo, hi, p) of learner ``a``'s cross-validated rho less ``b``'s: the paired fold differences and the
    same bootstrap resamples of both (``cv_interval``; ``p`` two-sided)."""
    d = cv.matrix(a, "spearman") - cv.matrix(b, "spearman")
    if cv.constant[a] or cv.constant[b]:
        return math.nan, math.nan, math.nan, math.nan
    boot = boot_means(cv.preds[a], y, cv.fold_of, "spearman", counts) - boot_means(
        cv.preds[b], y, cv.fold_of, "spearman", counts
    )
    diff, lo, hi = cv_interval(d, boot, confidence, 2.0)
    return diff, lo, hi, cv_p(d, boot)
