"""Predicting test error from everything measured at initialization, jointly, and which architectures to train.

The NLC paper ranks one metric at a time and proposes discarding architectures before training (section 7);
the zero-cost NAS proxies do the same with one proxy each. Here every init metric of a study predicts test
error together, with scikit-learn, and is judged the way a user would use it: on architectures it never saw.

**Features** (``features``): every init metric and zero-cost proxy of the results schema
(``columns.PREDICTORS`` of kind ``metric`` and ``proxy``: NLC, output bias, AR, variability, the gradient sizes,
NLC_tau(1) and the linear-approximation error of the activation, grad_norm, snip, synflow, jacob_cov, NWOT, the
region diameter where measured), on log10 where its scale is log (the correlation table's choice; a value with
no log, or not finite, is missing); optionally the architecture's own descriptors: depth, log10 width, and the
categories norm, activation, skip, weights and param. A feature needs 3 finite values and two distinct ones.

**Learners** (``LEARNERS``), each a scikit-learn estimator:

* ``linear``: each numeric feature's rank on the training rows (``QuantileTransformer``: its empirical CDF, u in
  [0, 1], so a metric spanning hundreds of decades and a new value beyond the training range both stay in
  bounds), the median u where missing, u together with u^2 (so that a window, error high on both sides of a
  good range, is representable: the NLC paper's figure 2), standardized, one-hot categories, and ridge
  regression with its penalty chosen by efficient leave-one-out on the training rows (``RidgeCV``);
* ``boosted``: gradient-boosted trees (``HistGradientBoostingRegressor``) on the features as they are, a
  missing value routed by each split as training found best;
* ``window``: the rank-based baseline, the best single metric's window predictor (``analysis.windows``): on the
  training rows, each metric's good range (``study.experiment.nlc_window.good_range``, pycls's empirical
  bootstrap), the distance d of a value from its centre, the metric whose d has the largest Kendall tau with
  test error, and test error ~ a + b d by least squares (``LinearRegression``);
* ``nlc``: the same with the metric fixed to the NLC (``fit_predictor`` and ``rank --learner``; the evaluation's
  NLC alone is the paper's unfitted window, ``NLC_RULE``).

**Baselines**, scored as learners (``baseline_rules``, ``candidates``): each metric and proxy raw and unfitted, its
sign chosen on the training rows; NLC alone as the NLC paper proposes it, the distance of log10 NLC from the fixed
window [1, 3] (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 7), nothing fitted; parameter count,
depth, width and FLOPs; and the descriptors alone (the ridge on depth, width and the categories).

**Held-out evaluation** (``predict_study``): grouped K-fold cross-validation with the base architecture
(``index``: a draw and its siblings share it) as the group, repeated with ``REPEATS`` fold seeds. Every learner is
scored on each held-out fold (Spearman's rho, Kendall's tau-b, R^2), so a fold's calibration offset cannot move
its rho (pooling the folds' predictions first biases rho by each fold's intercept, which moves against the fold's
held-out mean); the mean over the r x k fold scores has the corrected resampled t interval (Nadeau and Bengio,
*Inference for the Generalization Error*, 2003; ``corrected_interval``), which counts the split's variability. The
joint model and the best baseline are chosen inside each training fold by a grouped cross-validation of its rows
alone (``choose``: nested), never on the scores they are judged by; a fitted learner whose predictions are constant
in a held-out fold cannot fit and gets no rho. The verdict compares the joint model with the best baseline and
with NLC alone (paired per-fold differences of rho, the same interval); ``analysis.predict_simulation`` measures
how often it fires when nothing predicts. Ranking measures (``ranking_measures``): precision of the top K, NDCG@K
and regret; ``learning_curve``: held-out rho against the number of training architectures.

**Why it predicts**: permutation importance on the held-out folds (``sklearn.inspection.permutation_importance``,
scored by Spearman's rho, so an importance is the drop in held-out rho when a feature's values are shuffled) and
partial-dependence curves of the top metrics (``sklearn.inspection.partial_dependence``) of the model fitted on
the whole study; the NLC's should show the paper's window.

**Transfer** (``score_predictor``): a predictor fitted on one study (``fit_predictor``) scored on another's
architectures: does what was learned on waveform-noise hold on MNIST? Scored again on the new designs only
(``design_keys``: a design the source held, at another width or on other data, is no test of transfer).

**A fitted predictor is data** (``FittedPredictor``): the learner's numbers (the ridge's quantiles, medians,
means, scales, coefficients and intercept; every tree's features, thresholds, missing-value directions, children and
leaf values; the window's metric, centre and line), the feature list and the study it came from (location, dataset,
science fingerprint, rows), in a JSON file with its sha256 (``save``, ``load_predictor``). Loading runs no code
(the rule of checkpoints): the file is parsed as JSON, checked field by field (a tree's children come after
their node, every index is in range) and evaluated by numpy; a file changed after it was saved is refused in one
line.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, TypeVar, overload

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Choice, Integer, Real, check
from archstudy.study.experiment.nlc_window import PAPER_WINDOW, good_range

from .columns import PREDICTOR_BY_COLUMN, PREDICTORS
from .results import Results, architectures_table
from .stats import boot_kendall, boot_spearman, percentile_interval

TARGET = "test_error"
LEARNERS = ("linear", "boosted", "window", "nlc")
JOINT = ("linear", "boosted")  # the joint models: every feature at once
LABELS = {
    "linear": "ridge on the metrics' ranks u and u²",
    "boosted": "gradient-boosted trees",
    "window": "best single metric's window",
    "nlc": "NLC alone (its window)",
}
DESCRIPTOR_NUMERIC = {"depth": False, "width": True}  # column -> on log10
DESCRIPTOR_CATEGORIES = ("norm", "activation", "skip", "weights", "param")
MISSING_LEVEL = "(missing)"
FOLDS = 5
N_BOOT = 1000
CONFIDENCE = 0.95
MIN_ROWS = 8  # trained architectures with a finite test error for a fit at all
ALPHAS = np.logspace(-3, 4, 15)  # the ridge penalties RidgeCV chooses among (features standardized)
QUANTILES = 1000  # at most this many quantiles of a feature's ranks (fewer with fewer rows)
# Gradient-boosted trees for hundreds of rows: shallow trees, a slow rate, leaves of several architectures.
BOOSTED = dict(
    max_iter=150, learning_rate=0.05, max_leaf_nodes=8, min_samples_leaf=8, l2_regularization=1.0, early_stopping=False
)
WINDOW_BOOT = 200  # bootstrap draws of a good range inside a fold (the window's centre is what the score uses)
IMPORTANCE_REPEATS = 5
DEPENDENCE_TOP = 4  # partial-dependence curves: the top metrics by importance, the NLC always among them
GRID = 40

_T = TypeVar("_T")


# -- features ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feature:
    """One input of a predictor: a results column, on log10 (``log``) or as it is; ``kind`` "metric", "proxy"
    or "descriptor"; ``categorical``: a descriptor whose levels are one-hot encoded."""

    column: str
    log: bool = False
    kind: str = "metric"
    categorical: bool = False

    @property
    def label(self) -> str:
        p = PREDICTOR_BY_COLUMN.get(self.column)
        name = p.label if p else self.column
        return f"log10 {name}" if self.log and not p else name

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "log": self.log, "kind": self.kind, "categorical": self.categorical}


METRIC_FEATURES = tuple(Feature(p.column, p.log, p.kind) for p in PREDICTORS if p.kind in ("metric", "proxy"))
DESCRIPTOR_FEATURES = tuple(Feature(c, log, "descriptor") for c, log in DESCRIPTOR_NUMERIC.items()) + tuple(
    Feature(c, False, "descriptor", categorical=True) for c in DESCRIPTOR_CATEGORIES
)
KNOWN = {f.column: f for f in METRIC_FEATURES + DESCRIPTOR_FEATURES}


def _numeric(values: pd.Series | np.ndarray, log: bool) -> np.ndarray:
    """A numeric feature's values: log10 on a log scale (missing where there is no log), non-finite missing."""
    x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(np.float64, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        if log:
            x = np.where(x > 0, np.log10(np.where(x > 0, x, 1.0)), np.nan)
    return np.where(np.isfinite(x), x, np.nan)


def feature_table(arch: pd.DataFrame, features: Sequence[Feature]) -> pd.DataFrame:
    """The predictors' input: one column per feature, named by its results column (numeric ones as float64 with
    NaN where missing, categories as strings with ``MISSING_LEVEL``); a column the table lacks is all missing."""
    out = {}
    for f in features:
        values = arch[f.column] if f.column in arch.columns else pd.Series([None] * len(arch), index=arch.index)
        if f.categorical:
            out[f.column] = values.astype(object).where(values.notna(), MISSING_LEVEL).astype(str).to_numpy()
        else:
            out[f.column] = _numeric(values, f.log)
    return pd.DataFrame(out, index=range(len(arch)))


def choose_features(arch: pd.DataFrame, descriptors: bool = False) -> list[Feature]:
    """The features a study can fit: every metric and proxy with at least 3 finite values, two of them distinct
    (an option that was off, NaN throughout, is left out), then the descriptors when asked."""
    out = []
    for f in METRIC_FEATURES:
        if f.column in arch.columns:
            x = _numeric(arch[f.column], f.log)
            x = x[np.isfinite(x)]
            if len(x) >= 3 and np.ptp(x) > 0:
                out.append(f)
    if descriptors:
        out += [f for f in DESCRIPTOR_FEATURES if f.column in arch.columns]
    return out


def fit_rows(results: Results | pd.DataFrame) -> pd.DataFrame:
    """The architectures a predictor learns from: trained (not pruned at launch or measured only), with a finite
    test error; in the order read."""
    arch = architectures_table(results, "predict")
    if "trained" in arch.columns:
        arch = arch[arch["trained"].astype("boolean").fillna(True).astype(bool)]
    y = pd.to_numeric(arch[TARGET], errors="coerce") if TARGET in arch.columns else pd.Series(dtype=float)
    return arch[np.isfinite(y.to_numpy(np.float64, na_value=np.nan))].reset_index(drop=True)


# -- the learners: scikit-learn estimators -------------------------------------------------------------------


def with_squares(u: np.ndarray) -> np.ndarray:
    """[u, u^2]: a feature's rank and its square, so that a linear model can hold a window."""
    return np.hstack([u, u * u])


def _split(features: Sequence[Feature]) -> tuple[list[str], list[str]]:
    return [f.column for f in features if not f.categorical], [f.column for f in features if f.categorical]


def _columns(numeric_step: Any, numeric: list[str], categorical: list[str]) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    parts = [("num", numeric_step, numeric)] if numeric else []
    if categorical:
        parts.append(("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical))
    return ColumnTransformer(parts, remainder="drop")


def make_learner(learner: str, features: Sequence[Feature], seed: int = 0) -> Any:
    """The scikit-learn estimator of ``learner`` (``LEARNERS``) on ``feature_table`` columns of ``features``."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, QuantileTransformer, StandardScaler

    numeric, categorical = _split(features)
    if learner == "linear":
        u = Pipeline(
            [
                ("rank", QuantileTransformer(n_quantiles=QUANTILES, output_distribution="uniform", random_state=seed)),
                ("impute", SimpleImputer(strategy="median", keep_empty_features=True)),
                ("square", FunctionTransformer(with_squares)),
                ("scale", StandardScaler()),
            ]
        )
        return Pipeline([("columns", _columns(u, numeric, categorical)), ("ridge", RidgeCV(alphas=ALPHAS))])
    if learner == "boosted":
        return Pipeline(
            [
                ("columns", _columns("passthrough", numeric, categorical)),
                ("trees", HistGradientBoostingRegressor(**BOOSTED, random_state=seed)),
            ]
        )
    metrics = [f.column for f in features if f.kind in ("metric", "proxy")]
    if learner == "nlc":
        metrics = [m for m in metrics if m == "nlc"]
    return WindowPredictor(metrics=tuple(metrics), seed=seed)


def _kendall(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return math.nan
    return float(sps.kendalltau(a[ok], b[ok]).statistic)


class WindowPredictor:
    """The best single metric's window predictor (``analysis.windows``) as an estimator: ``fit`` takes each of
    ``metrics`` (columns of a ``feature_table``, already on their scale), its good range on the training rows
    (``good_range``, ``WINDOW_BOOT`` draws), d = |x - centre|, keeps the metric whose d has the largest Kendall tau
    with the target, and fits target ~ a + b d by least squares; a row without the metric gets the training
    rows' mean. ``metric_``, ``centre_``, ``slope_``, ``intercept_``, ``fill_`` hold the fit."""

    def __init__(self, metrics: tuple[str, ...] = (), seed: int = 0) -> None:
        self.metrics = metrics
        self.seed = seed

    def fit(self, X: pd.DataFrame, y: npt.ArrayLike) -> WindowPredictor:
        from sklearn.linear_model import LinearRegression

        y = np.asarray(y, dtype=np.float64)
        best = None
        for name in self.metrics:
            x = X[name].to_numpy(np.float64)
            ok = np.isfinite(x)
            if ok.sum() < 3:
                continue
            low, _, high = good_range(x, y, log=False, n_boot=WINDOW_BOOT, seed=self.seed)
            centre = (low + high) / 2
            tau = _kendall(np.abs(x - centre), y)
            if np.isfinite(tau) and (best is None or tau > best[0]):
                best = (tau, name, centre)
        self.fill_ = float(y.mean())
        if best is None:  # no metric orders the rows: the mean for all
            self.metric_, self.centre_, self.slope_, self.intercept_ = "", 0.0, 0.0, self.fill_
            return self
        _, self.metric_, self.centre_ = best
        d = np.abs(X[self.metric_].to_numpy(np.float64) - self.centre_)
        ok = np.isfinite(d)
        line = LinearRegression().fit(d[ok, None], y[ok])
        self.slope_, self.intercept_ = float(line.coef_[0]), float(line.intercept_)
        return self

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"metrics": self.metrics, "seed": self.seed}

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        if not self.metric_:
            return np.full(len(X), self.fill_)
        d = np.abs(X[self.metric_].to_numpy(np.float64) - self.centre_)
        return np.where(np.isfinite(d), self.intercept_ + self.slope_ * d, self.fill_)


# -- held-out evaluation -----------------------------------------------------------------------------------


def base_groups(arch: pd.DataFrame) -> np.ndarray:
    """The base architecture of each row, as an integer group: a draw and its siblings share (study seed, index)."""
    seed = arch["study_seed"].astype("Int64").fillna(-1).astype(str) if "study_seed" in arch.columns else ""
    key = seed + ":" + arch["index"].astype(str)
    codes: np.ndarray = pd.factorize(key, sort=True)[0]
    return codes


def group_folds(groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, held-out) row indices of ``GroupKFold`` on ``groups``: no group on both sides. The groups are
    relabelled in a seeded random order first, so which base architectures share a fold is random, not the
    order they were drawn in (GroupKFold itself only balances the folds' sizes)."""
    from sklearn.model_selection import GroupKFold

    n_groups = int(groups.max()) + 1 if len(groups) else 0
    k = min(folds, n_groups)
    if k < 2:
        raise SpecError("predict_study", "architectures", n_groups, "must hold at least 2 base architectures")
    shuffled = np.random.default_rng([seed, 24]).permutation(n_groups)[groups]
    return list(GroupKFold(n_splits=k).split(np.zeros(len(groups)), groups=shuffled))


def _spearman_scorer(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
    """Held-out Spearman's rho of the predictions (``permutation_importance``'s score; higher is better)."""
    p = estimator.predict(X)
    if np.ptp(p) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(sps.spearmanr(p, y).statistic)


def group_counts(groups: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) bootstrap counts of the rows: base architectures (groups) drawn with replacement, each row
    counted as often as its group was drawn."""
    n_groups = int(groups.max()) + 1
    draws = np.random.default_rng([seed, 2024]).integers(0, n_groups, size=(n_boot, n_groups))
    per_group = np.zeros((n_boot, n_groups))
    np.add.at(per_group, (np.repeat(np.arange(n_boot), n_groups), draws.ravel()), 1.0)
    return per_group[:, groups]


@overload
def _r2(y: np.ndarray, p: np.ndarray, c: None = None) -> float: ...
@overload
def _r2(y: np.ndarray, p: np.ndarray, c: np.ndarray) -> np.ndarray: ...
def _r2(y: np.ndarray, p: np.ndarray, c: np.ndarray | None = None) -> np.ndarray | float:
    """R^2 = 1 - sum (y - p)^2 / sum (y - mean y)^2, with row weights ``c`` (B, n) per resample when given."""
    if c is None:
        ss = float(((y - y.mean()) ** 2).sum())
        return 1.0 - float(((y - p) ** 2).sum()) / ss if ss > 0 else math.nan
    mean = (c * y).sum(axis=1, keepdims=True) / c.sum(axis=1, keepdims=True)
    ss = (c * (y - mean) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss > 0, 1.0 - (c * (y - p) ** 2).sum(axis=1) / np.where(ss > 0, ss, 1.0), np.nan)


def held_out_scores(y: np.ndarray, p: np.ndarray, c: np.ndarray, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Spearman, Kendall and R^2 of predictions ``p`` against ``y``, each with its percentile-bootstrap interval
    over the resamples ``c`` (``group_counts``), and the resampled rho (``_rho``) for paired differences."""
    out: dict[str, Any] = {"n": len(y)}
    constant = np.ptp(p) == 0 or np.ptp(y) == 0
    statistics: tuple[tuple[str, Callable[[], float], Callable[[], np.ndarray]], ...] = (
        ("spearman", lambda: float(sps.spearmanr(p, y).statistic), lambda: boot_spearman(p, y, c)),
        ("kendall", lambda: float(sps.kendalltau(p, y).statistic), lambda: boot_kendall(p, y, c)),
        ("r2", lambda: _r2(y, p), lambda: _r2(y, p, c)),
    )
    for name, point, boot in statistics:
        values = np.full(len(c), np.nan) if constant and name != "r2" else boot()
        out[name] = math.nan if constant and name != "r2" else point()
        out[f"{name}_lo"], out[f"{name}_hi"] = percentile_interval(values, confidence)
        out[f"_{name}"] = values
    return out


SCORE_COLUMNS = [
    "learner",
    "label",
    "metric",
    "n",
    "spearman",
    "spearman_lo",
    "spearman_hi",
    "kendall",
    "kendall_lo",
    "kendall_hi",
    "r2",
    "r2_lo",
    "r2_hi",
]
EVALUATION_COLUMNS = ["learner", "label", "kind", "status", "metric", "n", "scored_folds"] + SCORE_COLUMNS[4:]
CANNOT_FIT = "cannot fit"
REPEATS = 3  # fold seeds of the repeated grouped cross-validation
INNER_FOLDS = 3  # grouped folds inside a training fold, where the joint learner and the best baseline are chosen
FOLD_ROWS = 4  # base architectures per held-out fold at least: folds = min(FOLDS, groups // FOLD_ROWS)


@dataclass(frozen=True)
class Rule:
    """An unfitted baseline: a column of the architectures table as it is (on log10 where its scale is log: the
    order is the same), its sign chosen on the training rows (the sign of its Spearman rho with test error there)
    unless ``fixed``; a missing value gets the training rows' median. ``window``: the value is instead the
    distance of log10 x from the interval [log10 lo, log10 hi] (0 inside), the NLC paper's rule that error grows
    outside a fixed good range (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 7: NLC in [1, 3])."""

    name: str
    column: str
    log: bool
    label: str
    window: tuple[float, float] | None = None
    fixed: bool = False

    def values(self, arch: pd.DataFrame) -> np.ndarray:
        if self.column not in arch.columns:
            return np.full(len(arch), np.nan)
        x = _numeric(arch[self.column], self.log or self.window is not None)
        if self.window is None:
            return x
        lo, hi = math.log10(self.window[0]), math.log10(self.window[1])
        return np.where(np.isfinite(x), np.maximum(np.maximum(lo - x, x - hi), 0.0), np.nan)


NLC_RULE = Rule("nlc", "nlc", True, "NLC alone (the NLC paper's window [1, 3], unfitted)", PAPER_WINDOW, fixed=True)


def baseline_rules(arch: pd.DataFrame, features: Sequence[Feature]) -> list[Rule]:
    """The unfitted baselines a study has: the NLC paper's window, each metric and proxy raw (``raw:COLUMN``),
    and the trivial ones, parameter count, depth, width and FLOPs (``columns.PREDICTORS`` of kind baseline),
    where a column has 3 finite values, two of them distinct."""
    rules = [NLC_RULE] if "nlc" in arch.columns else []
    for f in features:
        if f.kind in ("metric", "proxy"):
            rules.append(Rule(f"raw:{f.column}", f.column, f.log, f"{f.label} raw (sign from the training folds)"))
    for p in PREDICTORS:
        if p.kind == "baseline" and p.column in arch.columns:
            x = _numeric(arch[p.column], p.log)
            if np.isfinite(x).sum() >= 3 and np.nanmax(x) > np.nanmin(x):
                rules.append(Rule(p.column, p.column, p.log, f"{p.label} (sign from the training folds)"))
    return rules


def rule_predict(v: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, fixed: bool) -> np.ndarray:
    """A rule's held-out values: s * v on ``test``, s = the sign of Spearman's rho of v and y on ``train`` (+1 when
    ``fixed``), a missing v set to the median of v on ``train``; NaN throughout when ``train`` has no finite v."""
    vt = v[train]
    ok = np.isfinite(vt)
    if not ok.any():
        return np.full(len(test), np.nan)
    sign = 1.0
    if not fixed and ok.sum() >= 3 and np.ptp(vt[ok]) > 0 and np.ptp(y[train][ok]) > 0:
        sign = 1.0 if spearman(vt[ok], y[train][ok]) >= 0 else -1.0
    x = v[test]
    return sign * np.where(np.isfinite(x), x, float(np.median(vt[ok])))


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


def fold_score(p: np.ndarray, y: np.ndarray, rho_only: bool = False) -> tuple[float, float, float, bool]:
    """(Spearman's rho, Kendall's tau-b, R^2) of predictions ``p`` against ``y`` on one held-out fold, and whether
    the predictions are constant there (the learner could not fit: no order to score). A fold with a constant
    ``y`` or under 3 rows scores NaN."""
    if not np.all(np.isfinite(p)):
        return math.nan, math.nan, math.nan, True
    if len(p) >= 2 and np.ptp(p) == 0:
        return math.nan, math.nan, math.nan, True
    if len(y) < 3 or np.ptp(y) == 0:
        return math.nan, math.nan, math.nan, False
    if rho_only:
        return spearman(p, y), math.nan, math.nan, False
    return spearman(p, y), kendall(p, y), _r2(y, p), False


def corrected_interval(
    values: np.ndarray, test_over_train: float, confidence: float = CONFIDENCE, bound: float = math.inf
) -> tuple[float, float, float]:
    """(mean, lo, hi) of per-fold scores of repeated k-fold cross-validation: the corrected resampled t of Nadeau
    and Bengio (*Inference for the Generalization Error*, Machine Learning 52, 2003, section 4), in the r x k
    form of Bouckaert and Frank (*Evaluating the Replicability of Significance Tests*, PAKDD 2004, section 3):
    the J = r k scores x with mean m and variance s^2, var(m) = (1/J + n_test/n_train) s^2 (the second term for
    the overlap of the training sets), m +- t_{J-1} sqrt(var(m)), clipped to [-bound, bound] (a correlation's
    range). Non-finite scores are left out; NaN below 2."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        m = float(x.mean()) if len(x) else math.nan
        return m, math.nan, math.nan
    m, s2 = float(x.mean()), float(x.var(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1)) * math.sqrt((1 / len(x) + test_over_train) * s2)
    return m, max(m - half, -bound), min(m + half, bound)


def fold_count(n_groups: int, folds: int) -> int:
    """Held-out folds for ``n_groups`` base architectures: ``folds``, fewer so that each holds ``FOLD_ROWS``, but
    two wherever there are two base architectures (a study too small to tell shows it in its intervals)."""
    return min(n_groups, max(2, min(folds, n_groups // FOLD_ROWS)))


def _relabel(groups: np.ndarray) -> np.ndarray:
    codes: np.ndarray = pd.factorize(groups, sort=True)[0]
    return codes


@dataclass
class _Candidate:
    """One learner of the evaluation: a scikit-learn model (``model``: a ``LEARNERS`` name, on ``features``) or a
    ``Rule`` (``values``: its column, ``fixed``: its sign)."""

    name: str
    label: str
    kind: str  # "joint" or "baseline"
    model: str = ""
    features: Sequence[Feature] = ()
    values: np.ndarray | None = None
    fixed: bool = False
    column: str = ""
    table: pd.DataFrame | None = None  # its own features' table (the descriptors alone), else the study's

    def fit_predict(
        self, X: pd.DataFrame, y: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int
    ) -> tuple[np.ndarray, Any]:
        if self.values is not None:
            return rule_predict(self.values, y, train, test, self.fixed), None
        if self.table is not None:
            X = self.table
        # A feature with no value on the training rows (a metric measured on a few architectures only, all in the
        # held-out fold) has nothing to learn from: scikit-learn's binning refuses an empty column.
        features = [f for f in self.features if _observed(X[f.column].iloc[train])]
        if not features:
            return np.full(len(test), math.nan), None
        model = make_learner(self.model, features, seed).fit(X.iloc[train], y[train])
        return np.asarray(model.predict(X.iloc[test]), dtype=np.float64), model


def _observed(values: pd.Series) -> bool:
    """Whether a feature column holds at least one value (a finite number, or a category)."""
    if pd.api.types.is_numeric_dtype(values):
        return bool(np.isfinite(values.to_numpy(np.float64)).any())
    return bool(values.notna().any())


def candidates(arch: pd.DataFrame, features: Sequence[Feature], joint: Sequence[str] = JOINT) -> list[_Candidate]:
    """Every learner the evaluation scores: the joint ones (``joint``, on every feature), then the baselines: the
    unfitted rules (``baseline_rules``) and, where the study has them, the descriptors alone (the ridge on depth,
    width and the categories)."""
    out = [_Candidate(name, LABELS[name], "joint", model=name, features=features) for name in joint]
    for r in baseline_rules(arch, features):
        out.append(_Candidate(r.name, r.label, "baseline", values=r.values(arch), fixed=r.fixed, column=r.column))
    described = [f for f in DESCRIPTOR_FEATURES if f.column in arch.columns]
    if any(f.column == "depth" for f in described):
        out.append(
            _Candidate(
                "descriptors",
                "the descriptors alone (ridge on depth, width, categories)",
                "baseline",
                model="linear",
                features=described,
                table=feature_table(arch, described),
            )
        )
    return out


def choose(
    pool: Sequence[_Candidate], X: pd.DataFrame, y: np.ndarray, groups: np.ndarray, rows: np.ndarray, seed: int
) -> _Candidate | None:
    """The learner of ``pool`` with the highest mean Spearman's rho over ``INNER_FOLDS`` grouped folds of
    ``rows`` only (the rows it is judged on never take part); a learner with constant predictions in a fold cannot
    fit and is passed over. None when none can (or ``rows`` hold too few base architectures to split)."""
    if len(pool) == 1:
        return pool[0]  # nothing to choose: a learner that cannot fit shows it on the held-out fold
    g = _relabel(groups[rows])
    k = min(INNER_FOLDS, (int(g.max()) + 1) // 2) if len(g) else 0
    if k < 2:
        return None
    splits = group_folds(g, k, seed)
    best, best_score = None, -math.inf
    for c in pool:
        rhos: list[float] = []
        for train, test in splits:
            p, _ = c.fit_predict(X, y, rows[train], rows[test], seed)
            rho, _, _, constant = fold_score(p, y[rows[test]], rho_only=True)
            if constant and (c.values is None or not np.all(np.isfinite(p))):
                rhos = []
                break
            rhos.append(rho)
        score = float(np.nanmean(rhos)) if rhos and np.isfinite(rhos).any() else math.nan
        if np.isfinite(score) and score > best_score:
            best, best_score = c, score
    return best


@dataclass
class Prediction:
    """One study's held-out evaluation (``predict_study``).

    ``scores``: a row per learner (``EVALUATION_COLUMNS``): ``joint`` (the joint learner chosen inside each
    training fold), ``baseline`` (the best baseline, chosen the same way), ``linear`` and ``boosted``, then every
    baseline; ``status`` "cannot fit" where a learner's predictions were constant in a held-out fold; ``metric``:
    the learner most often chosen (nested ones) or the rule's column. ``best``: the joint learner chosen on the
    whole study (the one ``fit_predictor`` fits). ``versus``: the paired differences of the joint model's rho with
    the best baseline's and NLC alone's (``diff``, ``lo``, ``hi``, per fold, corrected resampled t). ``calls``:
    the verdicts as flags (``joint_above_zero``, ``beats_baseline``, ``beats_nlc``: +1 beats, -1 beaten, 0 cannot
    tell); ``verdict``: the plain sentence; ``level``: the report box ("done" when the joint model beats the best
    baseline, else "partial"). ``ranking``: top-K precision, NDCG@K and regret per learner; ``curve``: held-out
    rho against the number of training architectures. ``held_out``: the first repeat's held-out predictions
    (``joint``, ``nlc``) with ``index``, ``arch_id``, ``variant``, ``fold``; ``importance`` and ``dependence``:
    permutation importance and partial dependence of ``best``; ``transfer``: scores of predictors fitted elsewhere."""

    features: list[Feature]
    scores: pd.DataFrame
    best: str
    versus: pd.DataFrame
    verdict: str
    held_out: pd.DataFrame
    importance: pd.DataFrame
    dependence: pd.DataFrame
    values: dict[str, np.ndarray] = field(default_factory=dict)
    groups: int = 0
    folds: int = 0
    repeats: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    level: str = "partial"
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)

    def summary(self) -> dict[str, Any]:
        """The held-out scores as plain data (``predictor.json``, ``ranked.parquet``'s metadata)."""
        s = self.scores.set_index("learner")
        out: dict[str, Any] = {
            "evaluated": True,
            "folds": self.folds,
            "repeats": self.repeats,
            "groups": self.groups,
            "best": self.best,
        }
        for name in ("joint", "baseline", "nlc"):
            if name in s.index:
                r = s.loc[name]
                out[name] = {k: _plain(r[k]) for k in ("status", "metric", "spearman", "spearman_lo", "spearman_hi")}
        for _, r in self.versus.iterrows():
            out[f"joint_minus_{r['versus']}"] = {k: _plain(r[k]) for k in ("diff", "lo", "hi")}
        if len(self.ranking):
            j = self.ranking[self.ranking["learner"] == "joint"]
            out["ranking"] = [{k: _plain(v) for k, v in r.items()} for r in j.to_dict("records")]
        out["calls"] = dict(self.calls)
        out["verdict"] = self.verdict
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    return v


def one_thread() -> AbstractContextManager[Any]:
    """scikit-learn's OpenMP and BLAS pools held to one thread: a tree's prediction on a few dozen rows is
    microseconds of work, and waking a pool of threads for each of the thousands of them permutation importance
    makes costs milliseconds (on a busy machine most of the time went there). threadpoolctl limits the pools of
    the libraries loaded when it is entered, so scikit-learn's compiled modules are loaded first."""
    import sklearn.ensemble  # noqa: F401 (its OpenMP runtime)
    import sklearn.linear_model  # noqa: F401 (BLAS)
    from threadpoolctl import threadpool_limits

    from contextlib import ExitStack

    from sklearn import config_context

    stack = ExitStack()
    stack.enter_context(threadpool_limits(limits=1))
    # the estimators are built here with valid parameters: scikit-learn's check of them on every fit is overhead
    stack.enter_context(config_context(skip_parameter_validation=True))
    return stack


def predict_study(
    results: str | os.PathLike[str] | Results | pd.DataFrame,
    *,
    descriptors: bool = False,
    folds: int = FOLDS,
    repeats: int = REPEATS,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    importance: bool = True,
    dependence: bool = True,
    joint: Sequence[str] = JOINT,
    ranking: bool = True,
    curve: bool = True,
) -> Prediction:
    """Held-out evaluation of the joint predictor and its baselines on one study's trained architectures (module
    docstring): grouped cross-validation on the base architecture with ``folds`` folds (fewer on a small study),
    repeated with ``repeats`` fold seeds; scores per held-out fold, intervals by the corrected resampled t; the
    joint learner (among ``joint``) and the best baseline chosen inside each training fold. ``results``: a study
    directory, ``load_results`` or an architectures table. ``descriptors``: the architecture's own depth, width
    and categories join the metrics. ``ranking``: the top-K measures; ``curve``: held-out rho against the number
    of training architectures (``learning_curve``). ``n_boot`` is kept for callers; no bootstrap is drawn."""
    if isinstance(results, (str, os.PathLike)):
        from .results import load_results

        results = load_results(results, runs=False)
    with one_thread():
        return _predict_study(
            results, descriptors, folds, repeats, seed, confidence, importance, dependence, tuple(joint), ranking, curve
        )


def _predict_study(
    results: Results | pd.DataFrame,
    descriptors: bool,
    folds: int,
    repeats: int,
    seed: int,
    confidence: float,
    importance: bool,
    dependence: bool,
    joint: tuple[str, ...],
    with_ranking: bool,
    with_curve: bool,
) -> Prediction:
    where = "predict_study"
    folds = check(where, "folds", Integer(2), folds)
    repeats = check(where, "repeats", Integer(1), repeats)
    seed = check(where, "seed", Integer(0), seed)
    confidence = check(where, "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    for name in joint:
        check(where, "joint", Choice(JOINT), name)
    arch = fit_rows(results)
    if len(arch) < MIN_ROWS:
        raise SpecError(
            where, "architectures", len(arch), f"must hold at least {MIN_ROWS} trained architectures with a test error"
        )
    features = choose_features(arch, descriptors)
    if not features:
        raise SpecError(where, "features", 0, "no init metric has 3 finite, distinct values")
    X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
    groups = base_groups(arch)
    n_groups = int(groups.max()) + 1
    k = fold_count(n_groups, folds)
    if k < 2:
        raise SpecError(where, "base_architectures", n_groups, "must hold at least 2 for two held-out folds")
    pool = candidates(arch, features, joint)
    by_name = {c.name: c for c in pool}
    joint_pool = [c for c in pool if c.kind == "joint"]
    base_pool = [c for c in pool if c.kind == "baseline"]
    names = ["joint", "baseline"] + [c.name for c in pool]
    n = len(y)
    # per (repeat, fold): each learner's held-out predictions, scores, and the nested choices
    rho: dict[str, list[float]] = {m: [] for m in names}
    tau: dict[str, list[float]] = {m: [] for m in names}
    r2: dict[str, list[float]] = {m: [] for m in names}
    constant = {m: False for m in names}
    picked: dict[str, list[str]] = {"joint": [], "baseline": []}
    test_over_train: list[float] = []
    preds = {m: np.full((repeats, n), np.nan) for m in names}
    fold_of = np.zeros((repeats, n), dtype=int)
    first_models: dict[str, list[Any]] = {c.name: [] for c in joint_pool}
    first_splits: list[tuple[np.ndarray, np.ndarray]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ridge's near-singular solves, constant columns: expected at these sizes
        for r in range(repeats):
            splits = group_folds(groups, k, seed + r)
            if r == 0:
                first_splits = splits
            for j, (train, test) in enumerate(splits):
                fold_of[r, test] = j
                test_over_train.append(len(test) / len(train))
                fold_preds = {}
                for c in pool:
                    p, model = c.fit_predict(X, y, train, test, seed)
                    fold_preds[c.name] = p
                    if r == 0 and c.name in first_models:
                        first_models[c.name].append(model)
                for nested, candidates_ in (("joint", joint_pool), ("baseline", base_pool)):
                    choice = choose(candidates_, X, y, groups, train, seed + r)
                    picked[nested].append(choice.name if choice else "")
                    fold_preds[nested] = fold_preds[choice.name] if choice else np.full(len(test), np.nan)
                for m in names:
                    p = fold_preds[m]
                    preds[m][r, test] = p
                    a, b, c2, flat = fold_score(p, y[test])
                    # a rule constant on a fold (depth, on a fold of one depth) has no order there: not scored;
                    # a fitted model with constant predictions could not fit
                    rule = by_name.get(picked[m][-1] if m in picked else m)
                    if rule is not None and rule.values is not None and np.all(np.isfinite(p)):
                        flat = False
                    constant[m] |= flat
                    rho[m].append(a)
                    tau[m].append(b)
                    r2[m].append(c2)
    ratio = float(np.mean(test_over_train))
    rows = []
    for m in names:
        cand = by_name.get(m)
        label = {"joint": JOINT_LABEL, "baseline": BASELINE_LABEL}.get(m, cand.label if cand else m)
        kind = "joint" if m == "joint" or (cand and cand.kind == "joint") else "baseline"
        if m in picked:
            chosen = pd.Series([c for c in picked[m] if c])
            metric = str(chosen.mode().iloc[0]) if len(chosen) else ""
        else:
            metric = cand.column if cand else ""
        row: dict[str, Any] = {
            "learner": m,
            "label": label,
            "kind": kind,
            "status": CANNOT_FIT if constant[m] else "",
            "metric": metric,
            "n": n,
            "scored_folds": int(np.isfinite(rho[m]).sum()),
        }
        for stat, values in (("spearman", rho[m]), ("kendall", tau[m]), ("r2", r2[m])):
            v = np.asarray(values) if not constant[m] else np.full(len(values), np.nan)
            if stat == "r2" and (m == "baseline" or (cand is not None and cand.values is not None)):
                v = np.full(len(values), np.nan)  # a rule is on its column's scale, not the error's
            bound = 1.0 if stat != "r2" else math.inf
            row[stat], row[f"{stat}_lo"], row[f"{stat}_hi"] = corrected_interval(v, ratio, confidence, bound)
        rows.append(row)
    scores = pd.DataFrame(rows, columns=EVALUATION_COLUMNS)
    versus = []
    for other in ("baseline", "nlc"):
        if other not in rho:
            continue
        d = np.asarray(rho["joint"]) - np.asarray(rho[other])
        if constant["joint"] or constant[other]:
            d = np.full(len(d), np.nan)
        diff, lo, hi = corrected_interval(d, ratio, confidence, 2.0)
        versus.append({"learner": "joint", "versus": other, "diff": diff, "lo": lo, "hi": hi})
    best = choose_joint(X, y, groups, features, k, seed, joint)
    out = Prediction(
        features,
        scores,
        best,
        pd.DataFrame(versus, columns=["learner", "versus", "diff", "lo", "hi"]),
        "",
        pd.DataFrame(),
        pd.DataFrame(),
        pd.DataFrame(),
        groups=n_groups,
        folds=k,
        repeats=repeats,
    )
    out.calls = calls(out)
    out.level = "done" if out.calls.get("joint_above_zero") == 1 and out.calls.get("beats_baseline") == 1 else "partial"
    out.verdict = verdict(out)
    out.held_out = pd.DataFrame(
        {
            "index": arch["index"].to_numpy(),
            "arch_id": arch["arch_id"].astype(str).to_numpy(),
            "variant": arch["variant"].astype(str).to_numpy() if "variant" in arch.columns else "base",
            "fold": fold_of[0],
            TARGET: y,
            **{m: preds[m][0] for m in ("joint", "nlc", best) if m in preds},
        }
    )
    if with_ranking:
        out.ranking = ranking_table(y, preds, fold_of, [m for m in ("joint", "baseline", "nlc") if m in preds])
    if with_curve:
        out.curve = learning_curve(by_name[best], X, y, first_splits, seed, confidence)
    if importance and best in first_models:
        out.importance = permutation_importances(first_models[best], X, y, first_splits, features, seed)
    if dependence:
        out.dependence, out.values = partial_dependences(best, features, X, y, out.importance, seed)
    return out


CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of each training fold's base architectures


def learning_curve(
    learner: _Candidate,
    X: pd.DataFrame,
    y: np.ndarray,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    seed: int,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Held-out Spearman's rho of ``learner`` against the number of architectures it was trained on (the practice
    of NASLib, White et al., *How Powerful are Performance Predictors in Neural Architecture Search?*, NeurIPS
    2021, section 4): in each held-out fold of ``splits``, fitted on a seeded random ``CURVE_FRACTIONS`` share of
    the training fold's rows, scored on the held-out fold; ``train``: the mean training rows; the interval by the
    corrected resampled t over the folds. A size at which it cannot fit (constant predictions) has NaN."""
    rng = np.random.default_rng([seed, 21])
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fraction in CURVE_FRACTIONS:
            rhos: list[float] = []
            sizes: list[int] = []
            ratios: list[float] = []
            flat_any = False
            for train, test in splits:
                m = max(3, round(fraction * len(train)))
                part = np.sort(rng.choice(train, size=min(m, len(train)), replace=False))
                p, _ = learner.fit_predict(X, y, part, test, seed)
                rho, _, _, flat = fold_score(p, y[test], rho_only=True)
                flat_any |= flat
                rhos.append(rho)
                sizes.append(len(part))
                ratios.append(len(test) / len(part))
            values = np.full(len(rhos), np.nan) if flat_any else np.asarray(rhos)
            m_, lo, hi = corrected_interval(values, float(np.mean(ratios)), confidence, 1.0)
            rows.append(
                {
                    "fraction": fraction,
                    "train": float(np.mean(sizes)),
                    "spearman": m_,
                    "spearman_lo": lo,
                    "spearman_hi": hi,
                }
            )
    return pd.DataFrame(rows)


JOINT_LABEL = "joint model (ridge or boosted trees, chosen inside each training fold)"
BASELINE_LABEL = "best baseline (chosen inside each training fold)"


def choose_joint(
    X: pd.DataFrame,
    y: np.ndarray,
    groups: np.ndarray,
    features: Sequence[Feature],
    folds: int,
    seed: int,
    joint: Sequence[str] = JOINT,
) -> str:
    """The joint learner a whole study picks (``fit_predictor``'s ``auto``): the one of ``joint`` with the higher
    mean held-out Spearman's rho over ``folds`` grouped folds of every row, one that cannot fit passed over; the
    first of ``joint`` when none can."""
    if len(joint) == 1:
        return joint[0]
    pool = [_Candidate(name, LABELS[name], "joint", model=name, features=features) for name in joint]
    g = _relabel(groups)
    k = min(folds, (int(g.max()) + 1) // 2)
    if k < 2:
        return joint[0]
    splits = group_folds(g, k, seed)
    scored = []
    rows = np.arange(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in pool:
            rhos: list[float] = []
            for train, test in splits:
                p, _ = c.fit_predict(X, y, rows[train], rows[test], seed)
                rho, _, _, flat = fold_score(p, y[test], rho_only=True)
                if flat:
                    rhos = []
                    break
                rhos.append(rho)
            scored.append(float(np.nanmean(rhos)) if rhos and np.isfinite(rhos).any() else -math.inf)
    return joint[int(np.argmax(scored))]


def top_k_sizes(n: int) -> list[int]:
    """The K of the ranking measures: 5 and 10% of the study (at least 1), each at most n, without repeats."""
    return sorted({min(n, 5), min(n, max(1, round(0.1 * n)))})


def ranking_measures(y: np.ndarray, score: np.ndarray, k: int) -> dict[str, float]:
    """How a ranking by ``score`` (lower: predicted better) picks the best architectures of ``y`` (test error):
    precision of its top k (the share of the k lowest errors among them), NDCG@k with gain max(y) - y (Jarvelin
    and Kekalainen, *Cumulated Gain-Based Evaluation of IR Techniques*, ACM TOIS 2002: DCG = sum of gain_i /
    log2(i + 1) over the top k, divided by the ideal order's), and the regret: the lowest error among the top k
    minus the study's lowest."""
    order = np.argsort(score, kind="stable")[:k]
    ideal = np.argsort(y, kind="stable")[:k]
    gain = np.max(y) - y
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    idcg = float((gain[ideal] * discount).sum())
    return {
        "precision": len(set(order.tolist()) & set(ideal.tolist())) / k,
        "ndcg": float((gain[order] * discount).sum()) / idcg if idcg > 0 else math.nan,
        "regret": float(y[order].min() - y.min()),
    }


def ranking_table(
    y: np.ndarray, preds: Mapping[str, np.ndarray], fold_of: np.ndarray, learners: Sequence[str]
) -> pd.DataFrame:
    """``ranking_measures`` of each learner's held-out predictions pooled over the folds of a repeat, each fold's
    predictions centred on their fold mean first (a fold's calibration offset moves no architecture up or down),
    averaged over the repeats (``lo``/``hi``: their range); ``chance``: a random K's expected precision, K/n."""
    rows = []
    for learner in learners:
        p_all = preds[learner]
        for k in top_k_sizes(len(y)):
            per = []
            for r in range(len(p_all)):
                p = p_all[r].copy()
                if not np.all(np.isfinite(p)):
                    continue
                for f in np.unique(fold_of[r]):
                    p[fold_of[r] == f] -= p[fold_of[r] == f].mean()
                per.append(ranking_measures(y, p, k))
            row: dict[str, Any] = {"learner": learner, "k": k, "chance": k / len(y)}
            for m in ("precision", "ndcg", "regret"):
                v = np.array([d[m] for d in per]) if per else np.array([math.nan])
                row[m] = float(np.mean(v))
                row[f"{m}_lo"], row[f"{m}_hi"] = float(np.min(v)), float(np.max(v))
            rows.append(row)
    return pd.DataFrame(rows)


def calls(p: Prediction) -> dict[str, int]:
    """The verdicts as flags: ``joint_above_zero`` (1 when the joint model's rho interval lies above 0),
    ``beats_baseline`` and ``beats_nlc`` (+1: the paired interval lies above 0, -1: below, 0: it holds 0 or the
    joint model cannot fit)."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    out = {
        "joint_above_zero": int(j["status"] != CANNOT_FIT and np.isfinite(j["spearman_lo"]) and j["spearman_lo"] > 0)
    }
    for _, v in p.versus.iterrows():
        call = 0
        if np.isfinite(v["lo"]) and v["lo"] > 0:
            call = 1
        elif np.isfinite(v["hi"]) and v["hi"] < 0:
            call = -1
        out[f"beats_{v['versus']}"] = call
    return out


def verdict(p: Prediction) -> str:
    """The plain sentence: how well the joint model predicts on held-out architectures, and whether it beats the
    best baseline and NLC alone (each paired interval lies above 0), is beaten, or this study cannot tell."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    how = (
        f"On held-out architectures ({p.folds}-fold grouped cross-validation over {p.groups} base architectures, "
        f"repeated with {p.repeats} fold seeds; {int(CONFIDENCE * 100)}% intervals by the corrected resampled t)"
    )
    if j["status"] == CANNOT_FIT or not np.isfinite(j["spearman"]):
        return (
            f"{how}, the joint model cannot fit: in a held-out fold it could not be chosen or fitted (too few "
            f"architectures to train on: constant predictions). Nothing can be told about predicting test error "
            f"from this study ({p.groups} base architectures)."
        )

    def named(name: str) -> str:
        r = s.loc[name]
        if r["status"] == CANNOT_FIT:
            return f"{r['label']}: cannot fit"
        return f"ρ = {_num(r['spearman'])} [{_num(r['spearman_lo'])}, {_num(r['spearman_hi'])}]"

    chosen = s.at["baseline", "metric"] if "baseline" in s.index else ""
    head = (
        f"{how}, the joint model predicts test error with {named('joint')}; the best baseline "
        f"({s.at[chosen, 'label'] if chosen in s.index else 'none'}, the one most often chosen) with "
        f"{named('baseline')}; NLC alone (the paper's window) with {named('nlc') if 'nlc' in s.index else '–'}."
    )
    if not p.calls.get("joint_above_zero"):
        return (
            head + " The joint model's interval does not lie above 0: nothing can be told about predicting test "
            f"error from this study ({p.groups} base architectures)."
        )
    parts = []
    for _, v in p.versus.iterrows():
        who = "the best baseline" if v["versus"] == "baseline" else "NLC alone"
        diff = f"{_num(v['diff'], True)} [{_num(v['lo'], True)}, {_num(v['hi'], True)}]"
        call = p.calls.get(f"beats_{v['versus']}", 0)
        if call == 1:
            parts.append(f"it beats {who} by {diff} in ρ")
        elif call == -1:
            parts.append(f"{who} beats it, by {diff} in ρ")
        else:
            parts.append(f"it cannot be told from {who} ({diff}: the interval holds 0)")
    return head + " Against the baselines: " + "; ".join(parts) + "."


def _num(x: float, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:+.2f}" if sign else f"{x:.2f}"


def row_wise(model: Any) -> bool:
    """Whether ``model``'s prediction of a row depends on that row alone, bit for bit, however many rows are
    predicted at once: gradient-boosted trees (each row's sum of leaf values, chosen by comparisons, in tree
    order) and the window predictor (elementwise). Not the ridge: its product with the coefficients goes through
    BLAS, whose blocking may round a row differently in a larger matrix."""
    last = model.steps[-1][1] if hasattr(model, "steps") else model
    return isinstance(last, WindowPredictor) or type(last).__name__ == "HistGradientBoostingRegressor"


class BatchedPredictions:
    """A fitted model that answers many ``predict`` calls with one (permutation importance and partial dependence
    predict the same model on dozens of small tables, and each call's fixed cost dwarfs its rows' work).

    scikit-learn runs twice: ``run(call)`` first calls ``call(self)`` recording each table it asks about (and
    answering zeros), predicts them all in one call where ``row_wise`` allows (else one by one, as before), then
    calls ``call(self)`` again, answering each table with its prediction. scikit-learn's own code draws the
    shuffles and grids, so the numbers are those of calling it on ``model``."""

    _estimator_type = "regressor"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.fitted_ = True
        self._tables: list[pd.DataFrame] = []
        self._answers: list[np.ndarray] | None = None

    # scikit-learn's checks ask for one; the model is fitted already
    def fit(self, X: pd.DataFrame, y: object = None) -> BatchedPredictions:
        return self

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import RegressorTags, Tags, TargetTags

        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True), regressor_tags=RegressorTags())

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        if self._answers is None:
            self._tables.append(X.copy())
            return np.zeros(len(X))
        answer = self._answers[len(self._tables)]
        if len(answer) != len(X):
            raise AssertionError("scikit-learn asked for other tables the second time")  # pragma: no cover
        self._tables.append(X)
        copied: np.ndarray = answer.copy()
        return copied

    def run(self, call: Callable[[BatchedPredictions], _T]) -> _T:
        call(self)
        tables, self._tables = self._tables, []
        if row_wise(self.model) and len(tables) > 1:
            whole = self.model.predict(pd.concat(tables, ignore_index=True))
            ends = np.cumsum([len(t) for t in tables])
            self._answers = [np.array(part) for part in np.split(whole, ends[:-1])]
        else:
            self._answers = [self.model.predict(t) for t in tables]
        try:
            return call(self)
        finally:
            self._answers, self._tables = None, []


def permutation_importances(
    models: list[Any],
    X: pd.DataFrame,
    y: np.ndarray,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    features: Sequence[Feature],
    seed: int,
    repeats: int = IMPORTANCE_REPEATS,
) -> pd.DataFrame:
    """Permutation importance of each feature on each held-out fold (its model fitted on the other folds): the
    drop of held-out Spearman's rho when the feature's values are shuffled, ``repeats`` shuffles per fold; ``mean``
    over folds weighted by their size, ``lo``/``hi`` the central 95% of the fold-and-repeat drops."""
    from sklearn.inspection import permutation_importance

    drops, weights = [], []
    for model, (_, test) in zip(models, splits):
        if len(test) < 3:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # ``run`` calls the lambda within this iteration: ``test`` is this fold's
            r = BatchedPredictions(model).run(
                lambda m: permutation_importance(
                    m,
                    X.iloc[test],  # noqa: B023
                    y[test],  # noqa: B023
                    scoring=_spearman_scorer,
                    n_repeats=repeats,
                    random_state=seed,
                )
            )
        drops.append(r.importances)
        weights.append(np.full(repeats, len(test)))
    if not drops:
        return pd.DataFrame(columns=["feature", "label", "kind", "mean", "lo", "hi"])
    d, w = np.hstack(drops), np.hstack(weights).astype(np.float64)
    rows = [
        {
            "feature": f.column,
            "label": f.label,
            "kind": f.kind,
            "mean": float((d[i] * w).sum() / w.sum()),
            "lo": float(np.percentile(d[i], 2.5)),
            "hi": float(np.percentile(d[i], 97.5)),
        }
        for i, f in enumerate(features)
    ]
    return pd.DataFrame(rows).sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)


def partial_dependences(
    learner: str, features: Sequence[Feature], X: pd.DataFrame, y: np.ndarray, importance: pd.DataFrame, seed: int
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Partial dependence (``sklearn.inspection.partial_dependence``, the average prediction over every row with
    the feature set to each grid value) of ``learner`` fitted on all rows, for the ``DEPENDENCE_TOP`` numeric
    metrics of highest importance, the NLC always among them; the grid spans the feature's 2nd to 98th
    percentile of its finite values. ``value`` is on the metric's own scale (10^ of a log feature)."""
    from sklearn.inspection import partial_dependence

    numeric = {f.column: f for f in features if not f.categorical and f.kind != "descriptor"}
    ranked = [c for c in (importance["feature"] if len(importance) else []) if c in numeric]
    chosen = (["nlc"] if "nlc" in numeric else []) + [c for c in ranked if c != "nlc"]
    chosen = chosen[:DEPENDENCE_TOP]
    custom_grid = "custom_values" in inspect.signature(partial_dependence).parameters  # scikit-learn >= 1.7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_learner(learner, features, seed).fit(X, y)
    rows: list[dict[str, Any]] = []
    values: dict[str, np.ndarray] = {}
    for col in chosen:
        x = X[col].to_numpy(np.float64)
        finite = x[np.isfinite(x)]
        if len(finite) < 3 or np.ptp(finite) == 0:
            continue
        grid = np.unique(np.percentile(finite, np.linspace(2, 98, GRID)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # ``run`` calls the lambdas within this iteration: ``col``, ``grid`` and ``x`` are this feature's
            if custom_grid:
                r = BatchedPredictions(model).run(
                    lambda m: partial_dependence(m, X, [col], custom_values={col: grid}, kind="average", method="brute")  # noqa: B023
                )
            else:  # scikit-learn before 1.7: the grid from the rows where the feature is finite
                r = BatchedPredictions(model).run(
                    lambda m: partial_dependence(
                        m,
                        X[np.isfinite(x)],  # noqa: B023
                        [col],  # noqa: B023
                        grid_resolution=GRID,
                        percentiles=(0.02, 0.98),
                        kind="average",
                        method="brute",
                    )
                )
        grid_values = np.asarray(r["grid_values"][0], dtype=np.float64)
        back: Callable[[np.ndarray], np.ndarray] = (lambda v: 10.0**v) if numeric[col].log else (lambda v: v)
        rows += [
            {
                "feature": col,
                "label": PREDICTOR_BY_COLUMN[col].label if col in PREDICTOR_BY_COLUMN else col,
                "log": numeric[col].log,
                "value": float(back(g)),
                "error": float(a),
            }
            for g, a in zip(grid_values, np.asarray(r["average"])[0])
        ]
        values[col] = back(finite)
    return pd.DataFrame(rows, columns=["feature", "label", "log", "value", "error"]), values


# -- fitting on a whole study, saved as data ------------------------------------------------------------------

FORMAT, VERSION = "archstudy.predictor", 1
MAX_BYTES = 64 * 2**20


def _study_identity(results: Results | pd.DataFrame, arch: pd.DataFrame) -> dict[str, Any]:
    """Where a predictor learned: the study's location, dataset, science fingerprint (``StudyConfig``), and its
    rows (how many, and a hash of their architecture ids and test errors)."""
    from archstudy.study.experiment.config import StudyConfig

    config = results.config if isinstance(results, Results) else {}
    try:
        fingerprint = StudyConfig.from_dict(config).science_fingerprint if config else None
    except (UserError, TypeError, ValueError):
        fingerprint = None
    rows = sorted(zip(arch["arch_id"].astype(str), arch[TARGET].astype(float).map(repr)))
    return {
        "location": results.study_dir if isinstance(results, Results) else None,
        "dataset": str(arch["dataset"].dropna().iloc[0])
        if "dataset" in arch.columns and arch["dataset"].notna().any()
        else None,
        "science_fingerprint": fingerprint,
        "rows": len(arch),
        "rows_sha256": hashlib.sha256(json.dumps(rows).encode()).hexdigest(),
    }


def fit_predictor(
    results: str | os.PathLike[str] | Results | pd.DataFrame,
    learner: str = "auto",
    *,
    descriptors: bool = False,
    seed: int = 0,
    folds: int = FOLDS,
) -> "FittedPredictor":
    """A predictor fitted on every trained architecture of a study (``results``: ``load_results``, a study
    directory, or an architectures DataFrame). ``learner``: one of ``LEARNERS``, or ``auto``: the joint learner
    with the higher mean held-out rho in a grouped cross-validation of the study (``choose_joint``)."""
    learner = check("fit_predictor", "learner", Choice(("auto",) + LEARNERS), learner)
    if isinstance(results, (str, os.PathLike)):
        from .results import load_results

        results = load_results(results, runs=False)
    arch = fit_rows(results)
    if len(arch) < MIN_ROWS:
        raise SpecError(
            "fit_predictor",
            "architectures",
            len(arch),
            f"must hold at least {MIN_ROWS} trained architectures with a test error",
        )
    features = choose_features(arch, descriptors)
    X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
    if learner == "auto":
        with one_thread():
            learner = choose_joint(X, y, base_groups(arch), features, folds, seed)
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore")
        model = make_learner(learner, features, seed).fit(X, y)
    source = _study_identity(results, arch)
    source["designs"] = sorted(set(design_keys(arch)))
    return FittedPredictor(learner, list(features), export(learner, model, features), source)


def export(learner: str, model: Any, features: Sequence[Feature]) -> dict[str, Any]:
    """A fitted learner's numbers, as plain data (the module docstring)."""
    numeric, categorical = _split(features)
    if learner in ("window", "nlc"):
        return {
            "metric": model.metric_,
            "centre": float(model.centre_),
            "slope": float(model.slope_),
            "intercept": float(model.intercept_),
            "fill": float(model.fill_),
        }
    columns = model.named_steps["columns"]
    levels = [list(map(str, c)) for c in columns.named_transformers_["cat"].categories_] if categorical else []
    if learner == "linear":
        out = {
            "levels": levels,
            "coef": _floats(model.named_steps["ridge"].coef_),
            "intercept": float(model.named_steps["ridge"].intercept_),
        }
        if numeric:
            u = columns.named_transformers_["num"]
            rank = u.named_steps["rank"]
            out.update(
                quantiles=[_floats(q) for q in np.asarray(rank.quantiles_).T],
                references=_floats(rank.references_),
                median=_floats(u.named_steps["impute"].statistics_),
                mean=_floats(u.named_steps["scale"].mean_),
                scale=_floats(u.named_steps["scale"].scale_),
            )
        else:
            out.update(quantiles=[], references=[], median=[], mean=[], scale=[])
        return out
    trees = model.named_steps["trees"]
    exported = []
    for iteration in trees._predictors:  # one regression tree per iteration (squared error: one output)
        nodes = iteration[0].nodes
        if np.any(nodes["is_categorical"]):
            raise ValueError("a categorical split: the features are one-hot encoded, so none is expected")
        exported.append(
            {
                "feature": nodes["feature_idx"].astype(int).tolist(),
                "threshold": _floats(nodes["num_threshold"]),
                "missing_left": nodes["missing_go_to_left"].astype(bool).tolist(),
                "left": nodes["left"].astype(int).tolist(),
                "right": nodes["right"].astype(int).tolist(),
                "leaf": nodes["is_leaf"].astype(bool).tolist(),
                "value": _floats(nodes["value"]),
            }
        )
    return {
        "levels": levels,
        "baseline": float(np.asarray(trees._baseline_prediction, dtype=np.float64).ravel()[0]),
        "trees": exported,
    }


def _floats(values: npt.ArrayLike) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]


@dataclass
class FittedPredictor:
    """A fitted predictor as data (module docstring): ``learner``, ``features``, ``model`` (the learner's numbers,
    ``export``) and ``source`` (the study it learned from); ``held_out``: how well it predicted there, on
    architectures it never saw (``Prediction.summary``), where that was measured. ``predict`` evaluates it with
    numpy; ``save`` / ``load_predictor`` write and read it as JSON with its sha256."""

    learner: str
    features: list[Feature]
    model: dict[str, Any]
    source: dict[str, Any]
    held_out: dict[str, Any] | None = None

    # -- prediction --
    def matrix(self, arch: pd.DataFrame) -> np.ndarray:
        """The numeric input of the joint learners: the numeric features, then each category's one-hot levels."""
        X = feature_table(arch, self.features)
        numeric, categorical = _split(self.features)
        parts = [X[c].to_numpy(np.float64)[:, None] for c in numeric]
        for col, levels in zip(categorical, self.model.get("levels", [])):
            parts += [(X[col].to_numpy() == level).astype(np.float64)[:, None] for level in levels]
        return np.hstack(parts) if parts else np.zeros((len(arch), 0))

    def predict(self, arch: pd.DataFrame) -> np.ndarray:
        """Predicted test error of each row of an architectures table (``load_results(...).architectures``)."""
        arch = architectures_table(arch, "FittedPredictor.predict").reset_index(drop=True)
        m = self.model
        if self.learner in ("window", "nlc"):
            if not m["metric"]:
                return np.full(len(arch), m["fill"])
            x = feature_table(arch, [f for f in self.features if f.column == m["metric"]])[m["metric"]]
            d = np.abs(x.to_numpy(np.float64) - m["centre"])
            window: np.ndarray = np.where(np.isfinite(d), m["intercept"] + m["slope"] * d, m["fill"])
            return window
        if self.learner == "linear":
            n_num = len(m["median"])
            X = self.matrix(arch)
            num, cat = X[:, :n_num].copy(), X[:, n_num:]
            ref = np.asarray(m["references"])
            for j, q in enumerate(m["quantiles"]):  # QuantileTransformer's uniform output: the interpolation both
                q, x = np.asarray(q), num[:, j].copy()  # ways averaged (ties), then its ends exactly 1 and 0
                ok = ~np.isnan(x)
                num[ok, j] = 0.5 * (np.interp(x[ok], q, ref) - np.interp(-x[ok], -q[::-1], -ref[::-1]))
                num[x == q[-1], j] = 1.0
                num[x == q[0], j] = 0.0
            u = np.where(np.isnan(num), np.asarray(m["median"]), num)
            z = (np.hstack([u, u * u]) - np.asarray(m["mean"])) / np.asarray(m["scale"])
            linear: np.ndarray = np.hstack([z, cat]) @ np.asarray(m["coef"]) + m["intercept"]
            return linear
        X = self.matrix(arch)
        out = np.full(len(X), m["baseline"])
        rows = np.arange(len(X))
        for t in m["trees"]:
            feature, threshold = np.asarray(t["feature"]), np.asarray(t["threshold"])
            left, right, leaf = np.asarray(t["left"]), np.asarray(t["right"]), np.asarray(t["leaf"])
            missing_left = np.asarray(t["missing_left"])
            node = np.zeros(len(X), dtype=np.int64)
            for _ in range(len(feature)):  # children come after their node: at most this many steps
                live = ~leaf[node]
                if not live.any():
                    break
                x = X[rows, feature[node]]
                go_left = np.where(np.isnan(x), missing_left[node], x <= threshold[node])
                node = np.where(live, np.where(go_left, left[node], right[node]), node)
            out += np.asarray(t["value"])[node]
        return out

    # -- as data --
    def to_dict(self) -> dict[str, Any]:
        body = {
            "format": FORMAT,
            "version": VERSION,
            "learner": self.learner,
            "features": [f.to_dict() for f in self.features],
            "model": self.model,
            "source": self.source,
        }
        if self.held_out is not None:
            body["held_out"] = self.held_out
        return {**body, "sha256": _digest(body)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the predictor as JSON (whole, then renamed)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=True) + "\n", encoding="utf-8")
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def from_dict(cls, d: Any, where: str = "predictor") -> "FittedPredictor":
        """A predictor from its dict form, checked field by field; anything else is a one-line ``UserError``."""
        try:
            return _validated(d)
        except _Invalid as e:
            raise UserError(f"{where}: not a valid archstudy predictor: {e}") from None


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()).hexdigest()


def load_predictor(path: str | os.PathLike[str]) -> FittedPredictor:
    """Read a predictor saved by ``FittedPredictor.save``: JSON only (no code runs), every field checked, the
    sha256 compared; a file that is not one, or was changed after it was saved, is refused in one line."""
    shown = os.fspath(path)
    p = Path(shown)
    if not p.is_file():
        raise SpecError(
            "load_predictor", "path", shown, "must be a predictor file (`archstudy rank` writes DIR/predictor.json)"
        )
    if p.stat().st_size > MAX_BYTES:
        raise UserError(f"{shown}: not a valid archstudy predictor: larger than {MAX_BYTES // 2**20} MiB")
    try:
        d = json.loads(p.read_bytes())
    except (ValueError, RecursionError) as e:
        raise UserError(
            f"{shown}: not a valid archstudy predictor: not JSON ({str(e).splitlines()[0][:100]})"
        ) from None
    return FittedPredictor.from_dict(d, shown)


class _Invalid(ValueError):
    pass


def _need(ok: object, why: str) -> None:
    if not ok:
        raise _Invalid(why)


def _float_list(v: Any, name: str, n: int | None = None, finite: bool = True) -> list[float]:
    _need(
        isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v),
        f"{name} must be a list of numbers",
    )
    _need(n is None or len(v) == n, f"{name} must have {n} entries, not {len(v)}")
    _need(not finite or all(math.isfinite(x) for x in v), f"{name} must be finite")
    return [float(x) for x in v]


def _int_list(v: Any, name: str, lo: int, hi: int, n: int) -> list[int]:
    _need(
        isinstance(v, list) and len(v) == n and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
        f"{name} must be a list of {n} integers",
    )
    _need(all(lo <= x < hi for x in v), f"{name} must lie in [{lo}, {hi})")
    ints: list[int] = v  # checked above
    return ints


def _bool_list(v: Any, name: str, n: int) -> list[bool]:
    _need(
        isinstance(v, list) and len(v) == n and all(isinstance(x, bool) for x in v),
        f"{name} must be a list of {n} booleans",
    )
    bools: list[bool] = v  # checked above
    return bools


def _number(v: Any, name: str) -> float:
    _need(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v), f"{name} must be a finite number"
    )
    return float(v)


def _validated(d: Any) -> FittedPredictor:
    _need(isinstance(d, dict), "not a JSON object")
    keys = {"format", "version", "learner", "features", "model", "source", "sha256"}
    _need(set(d) - {"held_out"} == keys, f"its keys must be {', '.join(sorted(keys))} (and held_out)")
    _need(isinstance(d.get("held_out", {}), dict), "held_out must be an object")
    _need(d["format"] == FORMAT and d["version"] == VERSION, f"format must be {FORMAT!r} version {VERSION}")
    body = {k: v for k, v in d.items() if k != "sha256"}
    _need(
        d["sha256"] == _digest(body),
        "its sha256 does not match its content (the file was changed after archstudy saved it)",
    )
    learner = d["learner"]
    _need(learner in LEARNERS, f"learner must be one of {', '.join(LEARNERS)}")
    _need(isinstance(d["features"], list) and d["features"], "features must be a non-empty list")
    features = []
    for f in d["features"]:
        _need(
            isinstance(f, dict) and set(f) == {"column", "log", "kind", "categorical"},
            "a feature must have column, log, kind, categorical",
        )
        _need(f["column"] in KNOWN, f"feature {str(f['column'])[:40]!r} is not an init metric or descriptor")
        known = KNOWN[f["column"]]
        _need(Feature(**f) == known, f"feature {f['column']!r} must be {known.to_dict()}")
        features.append(known)
    _need(len({f.column for f in features}) == len(features), "a feature is listed twice")
    numeric, categorical = _split(features)
    m = d["model"]
    _need(isinstance(m, dict), "model must be an object")
    _need(isinstance(d["source"], dict), "source must be an object")
    if learner in ("window", "nlc"):
        _need(
            set(m) == {"metric", "centre", "slope", "intercept", "fill"},
            "a window model has metric, centre, slope, intercept, fill",
        )
        _need(m["metric"] == "" or m["metric"] in numeric, "the window's metric must be one of the features")
        for k in ("centre", "slope", "intercept", "fill"):
            _number(m[k], f"model.{k}")
        return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))
    levels = m.get("levels")
    _need(
        isinstance(levels, list)
        and len(levels) == len(categorical)
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in levels),
        "model.levels must list each category's levels",
    )
    width = len(numeric) + sum(len(v) for v in levels)
    if learner == "linear":
        _need(
            set(m) == {"levels", "quantiles", "references", "median", "mean", "scale", "coef", "intercept"},
            "a linear model has levels, quantiles, references, median, mean, scale, coef, intercept",
        )
        ref = _float_list(m["references"], "model.references")
        _need(ref == sorted(ref), "model.references must be increasing")
        _need(
            isinstance(m["quantiles"], list) and len(m["quantiles"]) == len(numeric),
            "model.quantiles must list each numeric feature's quantiles",
        )
        for j, q in enumerate(m["quantiles"]):
            q = _float_list(q, f"model.quantiles[{j}]", len(ref))
            _need(q == sorted(q), f"model.quantiles[{j}] must be increasing")
        _float_list(m["median"], "model.median", len(numeric))
        _float_list(m["mean"], "model.mean", 2 * len(numeric))
        scale = _float_list(m["scale"], "model.scale", 2 * len(numeric))
        _need(all(s > 0 for s in scale), "model.scale must be positive")
        _float_list(m["coef"], "model.coef", 2 * len(numeric) + width - len(numeric))
        _number(m["intercept"], "model.intercept")
        return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))
    _need(set(m) == {"levels", "baseline", "trees"}, "a boosted model has levels, baseline, trees")
    _number(m["baseline"], "model.baseline")
    _need(isinstance(m["trees"], list), "model.trees must be a list")
    for i, t in enumerate(m["trees"]):
        name = f"model.trees[{i}]"
        _need(
            isinstance(t, dict)
            and set(t) == {"feature", "threshold", "missing_left", "left", "right", "leaf", "value"},
            f"{name} must have feature, threshold, missing_left, left, right, leaf, value",
        )
        n = len(t["leaf"]) if isinstance(t["leaf"], list) else 0
        _need(n >= 1, f"{name} must have nodes")
        leaf = _bool_list(t["leaf"], f"{name}.leaf", n)
        _bool_list(t["missing_left"], f"{name}.missing_left", n)
        feature = _int_list(t["feature"], f"{name}.feature", 0, max(width, 1), n)
        left = _int_list(t["left"], f"{name}.left", 0, n, n)
        right = _int_list(t["right"], f"{name}.right", 0, n, n)
        threshold = _float_list(t["threshold"], f"{name}.threshold", n, finite=False)
        _float_list(t["value"], f"{name}.value", n)
        for j in range(n):
            if not leaf[j]:
                _need(left[j] > j and right[j] > j, f"{name}: a node's children must come after it")
                _need(width > 0 and feature[j] < width, f"{name}: a split on a feature the model does not have")
                _need(not math.isnan(threshold[j]), f"{name}: a split threshold must be a number")
    return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))


# -- transfer: a predictor fitted on one study, scored on another ---------------------------------------------

TRANSFER_COLUMNS = ["source", "source_dataset", "learner", "label", "metric"] + SCORE_COLUMNS[3:]
TRANSFER_COLUMNS += ["shared", "n_new", "spearman_new", "spearman_new_lo", "spearman_new_hi"]
NOT_DESIGN = ("width", "d_in", "d_out")  # what a study's budget and dataset decide: the same design otherwise


def design_keys(arch: pd.DataFrame) -> list[str]:
    """Each row's design: 16 hex digits of the sha256 of its spec without width and the data's dimensions (every
    ``ArchSpec`` field the table has but ``NOT_DESIGN``). The same study seed draws the same designs on every
    dataset and budget (only the width is solved anew), so two such studies share their designs."""
    from archstudy.sampling.spec import SPEC_FIELDS

    cols = [c for c in SPEC_FIELDS if c not in NOT_DESIGN and c in arch.columns]
    keys = []
    for values in arch[cols].itertuples(index=False, name=None):
        plain = [
            None if (isinstance(v, float) and math.isnan(v)) else (v.item() if hasattr(v, "item") else v)
            for v in values
        ]
        text = json.dumps(dict(zip(cols, plain)), sort_keys=True, separators=(",", ":"), default=str)
        keys.append(hashlib.sha256(text.encode()).hexdigest()[:16])
    return keys


def score_predictor(
    predictor: FittedPredictor,
    results: Results | pd.DataFrame,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """How a predictor fitted elsewhere ranks this study's trained architectures: Spearman, Kendall and R^2 of
    its predictions against their test errors, with bootstrap intervals over base architectures (one row); and
    Spearman's rho again on the new designs only (``design_keys`` not among the predictor's source's): a design
    it was trained on, at another width or on another dataset, is not a test of transfer. ``shared``: how many
    rows share a design with the source (NaN where the predictor does not list its designs)."""
    n_boot = check("score_predictor", "n_boot", Integer(1), n_boot)
    arch = fit_rows(results)
    if len(arch) < 3:
        raise SpecError("score_predictor", "architectures", len(arch), "must hold at least 3 trained architectures")
    y = arch[TARGET].to_numpy(np.float64)
    predicted = predictor.predict(arch)
    groups = base_groups(arch)
    s = held_out_scores(y, predicted, group_counts(groups, n_boot, seed), confidence)
    src = predictor.source
    new: dict[str, Any] = {"shared": math.nan, "n_new": math.nan}
    new.update(spearman_new=math.nan, spearman_new_lo=math.nan, spearman_new_hi=math.nan)
    if isinstance(src.get("designs"), list):
        fresh = ~np.isin(design_keys(arch), src["designs"])
        new["shared"], new["n_new"] = int((~fresh).sum()), int(fresh.sum())
        if fresh.sum() >= 3:
            g = _relabel(groups[fresh])
            t = held_out_scores(y[fresh], predicted[fresh], group_counts(g, n_boot, seed), confidence)
            new.update(spearman_new=t["spearman"], spearman_new_lo=t["spearman_lo"], spearman_new_hi=t["spearman_hi"])
    return pd.DataFrame(
        [
            {
                "source": src.get("location"),
                "source_dataset": src.get("dataset"),
                "learner": predictor.learner,
                "label": LABELS[predictor.learner],
                "metric": predictor.model.get("metric", ""),
                **{k: v for k, v in s.items() if not k.startswith("_")},
                **new,
            }
        ],
        columns=TRANSFER_COLUMNS,
    )


def predictor_from(source: FittedPredictor | str | os.PathLike[str] | Results | pd.DataFrame) -> FittedPredictor:
    """A predictor from a study directory (fitted on it, ``fit_predictor``) or a saved predictor file."""
    if isinstance(source, FittedPredictor):
        return source
    if isinstance(source, (str, os.PathLike)) and Path(source).is_file():
        return load_predictor(source)
    return fit_predictor(source)


def rank_rows(predictor: FittedPredictor, arch: pd.DataFrame) -> pd.DataFrame:
    """``arch`` with ``predicted_test_error`` and ``predicted_rank`` (1 = lowest predicted error; ties in the
    table's order), sorted by it."""
    out = arch.reset_index(drop=True).copy()
    out["predicted_test_error"] = predictor.predict(out)
    order = np.argsort(out["predicted_test_error"].to_numpy(np.float64), kind="stable")
    rank = np.empty(len(out), dtype=np.int64)
    rank[order] = np.arange(1, len(out) + 1)
    out["predicted_rank"] = rank
    return out.sort_values("predicted_rank", kind="stable").reset_index(drop=True)


# -- the report's section ---------------------------------------------------------------------------------------

REPORT_BOOT = 1000  # at most this many bootstrap resamples for the section (the report's --n-boot, capped)


def report_prediction(
    arch: pd.DataFrame, *, n_boot: int, seed: int, predictor: FittedPredictor | None = None
) -> Prediction | str:
    """The report's evaluation of one study's trained architectures (``predict_study``, with the scores of
    ``predictor`` fitted elsewhere in ``transfer``), or the one line saying why there is none."""
    try:
        p = predict_study(arch, n_boot=max(1, min(n_boot, REPORT_BOOT)), seed=seed)
    except SpecError as e:
        return f"No held-out evaluation: {e}."
    if predictor is not None:
        p.transfer = score_predictor(predictor, arch, n_boot=max(1, min(n_boot, REPORT_BOOT)), seed=seed)
    return p


class _WithPrediction(Protocol):
    """What ``predict_html`` reads of a study's section (``sections.StudyAnalysis``, whose module imports this one)."""

    predict: Any


def _own(scores: pd.DataFrame, learner: str, with_interval: Callable[[float, float, float], str]) -> str:
    """This study's own held-out rho of ``learner`` with its interval, or "–" where it was not evaluated."""
    if learner not in scores.index or scores.at[learner, "status"] == CANNOT_FIT:
        return "–"
    r = scores.loc[learner]
    return with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"])


def predict_html(s: _WithPrediction) -> str:
    """The report's section (``analysis.report``): the verdict, the held-out scores of every learner, the paired
    differences, the transfer from another study where asked, and how it was computed."""
    from .html import esc, fmt, table, with_interval

    p = s.predict
    if not isinstance(p, Prediction):
        return f"<p>{esc(p or 'No held-out evaluation.')}</p>"
    rows, classes = [], []
    for _, r in p.scores.iterrows():
        label = esc(r["label"])
        if r["learner"] in ("joint", "baseline") and r["metric"]:
            label += f' <span class="muted">(most often: {esc(r["metric"])})</span>'
        if r["status"] == CANNOT_FIT:
            cells = [f"<i>{CANNOT_FIT}</i>", "–", "–"]
        else:
            cells = [
                with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
            ]
        rows.append([label, fmt(int(r["scored_folds"])), *cells])
        classes.append("" if r["kind"] == "joint" else "baseline")
    out = [
        f'<div class="box {p.level}">{esc(p.verdict)}</div>',
        table(["learner", "scored folds", "held-out Spearman ρ", "Kendall τ", "R²"], rows, left=1, row_classes=classes),
    ]
    diff_rows = [
        [
            "joint model − " + ("best baseline" if r["versus"] == "baseline" else "NLC alone"),
            with_interval(r["diff"], r["lo"], r["hi"]),
        ]
        for _, r in p.versus.iterrows()
    ]
    out.append(table(["difference in held-out ρ", "paired, per fold (corrected resampled t)"], diff_rows, left=1))
    if len(p.ranking):
        who = {"joint": "joint model", "baseline": "best baseline", "nlc": "NLC alone"}
        r_rows = [
            [
                esc(who.get(r["learner"], r["learner"])),
                fmt(int(r["k"])),
                f"{r['precision']:.2f} (chance {r['chance']:.2f})",
                f"{r['ndcg']:.2f}",
                f"{r['regret']:.4f}",
            ]
            for _, r in p.ranking.iterrows()
        ]
        out.append(
            table(["ranking by", "top K", "precision of the top K", "NDCG@K", "regret (test error)"], r_rows, left=1)
        )
    if len(p.curve):
        c_rows = [
            [fmt(round(r["train"])), with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"])]
            for _, r in p.curve.iterrows()
        ]
        out.append(
            table([f"training architectures ({LABELS[p.best]})", "held-out ρ (first fold seed)"], c_rows, left=0)
        )
    if len(p.transfer):
        own = p.scores.set_index("learner")
        t_rows = []
        for _, r in p.transfer.iterrows():
            t_rows.append(
                [
                    esc(r["source"] or "–"),
                    esc(r["source_dataset"] or "–"),
                    esc(r["label"]),
                    with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                    (
                        with_interval(r["spearman_new"], r["spearman_new_lo"], r["spearman_new_hi"])
                        + f"<br>{int(r['n_new'])} new, {int(r['shared'])} shared"
                        if np.isfinite(r["shared"])
                        else "– (designs not recorded)"
                    ),
                    with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                    with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
                    _own(own, r["learner"], with_interval),
                    _own(own, "nlc", with_interval),
                ]
            )
        out += [
            "<h4>Transfer: a predictor fitted on another study, scored on this one</h4>",
            table(
                [
                    "fitted on",
                    "its dataset",
                    "learner",
                    "Spearman ρ here",
                    "ρ on new designs only",
                    "Kendall τ",
                    "R²",
                    "this study's own held-out ρ (same learner)",
                    "NLC alone here (held out)",
                ],
                t_rows,
                left=3,
            ),
            '<p class="muted">Fitted on every trained architecture of the other study (or read from a saved '
            "predictor) and applied unchanged to this study's: the ranking it gives here against test error. "
            "R² compares predicted and actual error on this dataset's scale, which another dataset need not "
            "share; ρ and τ compare orders only. A design the predictor was trained on (the same spec but for its "
            "width and the data's dimensions: the same study seed draws the same designs on every dataset) is "
            "no test of transfer: ρ on new designs only leaves those out.</p>",
        ]
    names = ", ".join(esc(f.label) for f in p.features)
    out.append(
        f'<p class="muted">Every trained architecture with a test error; features: {names} (log10 where the '
        "correlation table uses log; a missing or non-finite value is left to the learner). Held out: "
        f"{p.folds}-fold grouped cross-validation over the {p.groups} base architectures (a draw and its siblings are "
        f"one group, never on both sides of a split), repeated with {p.repeats} fold seeds; each learner is scored "
        "on each held-out fold (so a fold's calibration offset cannot move its ρ) and its interval is the corrected "
        "resampled t over the folds (Nadeau and Bengio 2003), which counts the splits' own variability. The joint "
        "model is ridge regression (RidgeCV) on each metric's rank u and u², or gradient-boosted trees "
        "(HistGradientBoostingRegressor), whichever scores higher in a grouped cross-validation inside the "
        "training folds alone; the best baseline is chosen the same way among the unfitted rules (each metric "
        "raw, its sign from the training folds; the NLC paper's window [1, 3]; parameter count, depth, width, "
        "FLOPs) and the descriptors alone. NLC alone is the paper's window, unfitted. A learner whose predictions "
        "were constant in a held-out fold cannot fit there and gets no ρ. Ranking measures: each fold's "
        "predictions centred, pooled, averaged over the repeats (range over repeats not shown). The box is green "
        "only when the joint model beats the best baseline; these verdicts fire at their nominal rate on "
        "simulated studies where nothing predicts test error (docs/predict.md).</p>"
    )
    return "\n".join(out)


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
    medians at once; a resample in which a set is empty is left out. Non-finite errors are left out."""
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
    return out
