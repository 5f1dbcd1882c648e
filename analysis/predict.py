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
* ``nlc``: the same with the metric fixed to the NLC: "NLC alone".

**Held-out evaluation** (``predict_study``): ``GroupKFold`` with the base architecture (``index``: a draw and its
siblings share it) as the group, so an architecture's siblings never sit on both sides of a split; the folds'
held-out predictions pooled; Spearman's rho, Kendall's tau-b and R^2 of them against test error, with
percentile-bootstrap intervals that resample base architectures (a sibling group together), and the paired
bootstrap difference between the best joint model and NLC alone: the verdict says whether the joint model
beats the NLC, by how much, or that the study is too small to tell (the difference's interval holds 0).

**Why it predicts**: permutation importance on the held-out folds (``sklearn.inspection.permutation_importance``,
scored by Spearman's rho, so an importance is the drop in held-out rho when a feature's values are shuffled) and
partial-dependence curves of the top metrics (``sklearn.inspection.partial_dependence``) of the model fitted on
the whole study; the NLC's should show the paper's window.

**Transfer** (``score_predictor``): a predictor fitted on one study (``fit_predictor``) scored on another's
architectures: does what was learned on waveform-noise hold on MNIST?

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
from archstudy.study.experiment.nlc_window import good_range

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


@dataclass
class Prediction:
    """One study's held-out evaluation (``predict_study``).

    ``scores``: a row per learner (``SCORE_COLUMNS``; ``metric``: the window's metric, the one most folds chose);
    ``best``: the joint learner with the higher held-out rho; ``versus``: the paired differences of its rho with
    NLC alone's and with the best single metric's (``diff``, ``lo``, ``hi``); ``verdict``: the plain sentence;
    ``held_out``: the rows' test error and every learner's held-out prediction, with ``index``, ``arch_id``,
    ``variant`` and ``fold``; ``importance``: permutation importance of ``best`` on the held-out folds (``mean``
    drop of rho, ``lo``/``hi`` its spread over folds and repeats); ``dependence``: partial dependence of ``best``
    fitted on every row (``feature``, ``value`` on the metric's own scale, ``error``: the average prediction),
    with the data's values in ``values``; ``transfer``: the scores of predictors fitted elsewhere, where asked."""

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
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)


def one_thread() -> AbstractContextManager[Any]:
    """scikit-learn's OpenMP and BLAS pools held to one thread: a tree's prediction on a few dozen rows is
    microseconds of work, and waking a pool of threads for each of the thousands of them permutation importance
    makes costs milliseconds (on a busy machine most of the time went there). threadpoolctl limits the pools of
    the libraries loaded when it is entered, so scikit-learn's compiled modules are loaded first."""
    import sklearn.ensemble  # noqa: F401 (its OpenMP runtime)
    import sklearn.linear_model  # noqa: F401 (BLAS)
    from threadpoolctl import threadpool_limits

    limits: AbstractContextManager[Any] = threadpool_limits(limits=1)
    return limits


def predict_study(
    results: Results | pd.DataFrame,
    *,
    descriptors: bool = False,
    folds: int = FOLDS,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    importance: bool = True,
    dependence: bool = True,
) -> Prediction:
    """Held-out evaluation of every learner (``LEARNERS``) on one study's trained architectures (module
    docstring): ``GroupKFold`` on the base architecture with ``folds`` folds (fewer when the study has fewer base
    architectures), bootstrap intervals from ``n_boot`` resamples of base architectures, permutation importance and
    partial dependence of the best joint learner. ``descriptors``: the architecture's own depth, width and
    categories join the metrics."""
    with one_thread():
        return _predict_study(results, descriptors, folds, n_boot, seed, confidence, importance, dependence)


def _predict_study(
    results: Results | pd.DataFrame,
    descriptors: bool,
    folds: int,
    n_boot: int,
    seed: int,
    confidence: float,
    importance: bool,
    dependence: bool,
) -> Prediction:
    where = "predict_study"
    folds = check(where, "folds", Integer(2), folds)
    n_boot = check(where, "n_boot", Integer(1), n_boot)
    seed = check(where, "seed", Integer(0), seed)
    confidence = check(where, "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
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
    splits = group_folds(groups, folds, seed)
    held = {learner: np.full(len(y), np.nan) for learner in LEARNERS}
    fold_of = np.zeros(len(y), dtype=int)
    fitted: dict[str, list[Any]] = {learner: [] for learner in LEARNERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ridge's near-singular solves, constant columns: expected at these sizes
        for k, (train, test) in enumerate(splits):
            fold_of[test] = k
            for learner in LEARNERS:
                model = make_learner(learner, features, seed).fit(X.iloc[train], y[train])
                held[learner][test] = model.predict(X.iloc[test])
                fitted[learner].append(model)
    c = group_counts(groups, n_boot, seed)
    scored = {learner: held_out_scores(y, held[learner], c, confidence) for learner in LEARNERS}
    rows = []
    for learner in LEARNERS:
        s = scored[learner]
        chosen = pd.Series([m.metric_ for m in fitted[learner]]) if learner in ("window", "nlc") else pd.Series([""])
        rows.append(
            {
                "learner": learner,
                "label": LABELS[learner],
                "metric": chosen.mode().iloc[0],
                **{k: v for k, v in s.items() if not k.startswith("_")},
            }
        )
    scores = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    best = max(JOINT, key=lambda name: (np.nan_to_num(scored[name]["spearman"], nan=-2.0), name == "boosted"))
    versus = pd.DataFrame([_difference(best, other, scored, confidence) for other in ("nlc", "window")])
    out = Prediction(
        features,
        scores,
        best,
        versus,
        "",
        pd.DataFrame(),
        pd.DataFrame(),
        pd.DataFrame(),
        groups=int(groups.max()) + 1,
        folds=len(splits),
    )
    out.verdict = verdict(out)
    out.held_out = pd.DataFrame(
        {
            "index": arch["index"].to_numpy(),
            "arch_id": arch["arch_id"].astype(str).to_numpy(),
            "variant": arch["variant"].astype(str).to_numpy() if "variant" in arch.columns else "base",
            "fold": fold_of,
            TARGET: y,
            **held,
        }
    )
    if importance:
        out.importance = permutation_importances(fitted[best], X, y, splits, features, seed)
    if dependence:
        out.dependence, out.values = partial_dependences(best, features, X, y, out.importance, seed)
    return out


def _difference(best: str, other: str, scored: dict[str, dict[str, Any]], confidence: float) -> dict[str, Any]:
    """The paired bootstrap difference of held-out rho, ``best`` minus ``other`` (the same resamples)."""
    d = scored[best]["_spearman"] - scored[other]["_spearman"]
    lo, hi = percentile_interval(d, confidence)
    return {
        "learner": best,
        "versus": other,
        "diff": scored[best]["spearman"] - scored[other]["spearman"],
        "lo": lo,
        "hi": hi,
    }


def verdict(p: Prediction) -> str:
    """The plain sentence: does the joint model beat NLC alone on held-out architectures, by how much, or can
    this study not tell (the paired interval of the difference in rho holds 0)."""
    s = p.scores.set_index("learner")
    b, nlc = s.loc[p.best], s.loc["nlc"]
    v = p.versus.set_index("versus").loc["nlc"]
    head = (
        f"On held-out architectures ({p.folds}-fold GroupKFold over {p.groups} base architectures), the joint "
        f"model ({LABELS[p.best]}) predicts test error with Spearman's ρ = {_num(b['spearman'])} "
        f"[{_num(b['spearman_lo'])}, {_num(b['spearman_hi'])}], NLC alone with ρ = {_num(nlc['spearman'])} "
        f"[{_num(nlc['spearman_lo'])}, {_num(nlc['spearman_hi'])}]; the difference is {_num(v['diff'], True)} "
        f"[{_num(v['lo'], True)}, {_num(v['hi'], True)}]."
    )
    if not (np.isfinite(v["lo"]) and np.isfinite(v["hi"])):
        return head + " The difference has no interval here: this study cannot tell which predicts better."
    if v["lo"] > 0:
        return head + f" The joint model beats NLC alone, by {_num(v['diff'])} in ρ (at least {_num(v['lo'])})."
    if v["hi"] < 0:
        return head + f" NLC alone beats the joint model, by {_num(-v['diff'])} in ρ."
    return (
        head + f" The interval holds 0: with {p.groups} base architectures this study cannot tell whether the "
        "joint model beats NLC alone (a larger study narrows the interval)."
    )


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
    with the higher held-out rho in ``predict_study`` (without importance or partial dependence)."""
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
    if learner == "auto":
        learner = predict_study(
            arch, descriptors=descriptors, folds=folds, n_boot=1, seed=seed, importance=False, dependence=False
        ).best
    features = choose_features(arch, descriptors)
    X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore")
        model = make_learner(learner, features, seed).fit(X, y)
    source = _study_identity(results, arch)
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
    ``export``) and ``source`` (the study it learned from). ``predict`` evaluates it with numpy; ``save`` /
    ``load_predictor`` write and read it as JSON with its sha256."""

    learner: str
    features: list[Feature]
    model: dict[str, Any]
    source: dict[str, Any]

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
    _need(set(d) == keys, f"its keys must be {', '.join(sorted(keys))}")
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
        return FittedPredictor(learner, features, m, d["source"])
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
        return FittedPredictor(learner, features, m, d["source"])
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
    return FittedPredictor(learner, features, m, d["source"])


# -- transfer: a predictor fitted on one study, scored on another ---------------------------------------------

TRANSFER_COLUMNS = ["source", "source_dataset", "learner", "label", "metric"] + SCORE_COLUMNS[3:]


def score_predictor(
    predictor: FittedPredictor,
    results: Results | pd.DataFrame,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """How a predictor fitted elsewhere ranks this study's trained architectures: Spearman, Kendall and R^2 of
    its predictions against their test errors, with bootstrap intervals over base architectures (one row)."""
    n_boot = check("score_predictor", "n_boot", Integer(1), n_boot)
    arch = fit_rows(results)
    if len(arch) < 3:
        raise SpecError("score_predictor", "architectures", len(arch), "must hold at least 3 trained architectures")
    y = arch[TARGET].to_numpy(np.float64)
    s = held_out_scores(y, predictor.predict(arch), group_counts(base_groups(arch), n_boot, seed), confidence)
    src = predictor.source
    return pd.DataFrame(
        [
            {
                "source": src.get("location"),
                "source_dataset": src.get("dataset"),
                "learner": predictor.learner,
                "label": LABELS[predictor.learner],
                "metric": predictor.model.get("metric", ""),
                **{k: v for k, v in s.items() if not k.startswith("_")},
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


def predict_html(s: _WithPrediction) -> str:
    """The report's section (``analysis.report``): the verdict, the held-out scores of every learner, the paired
    differences, the transfer from another study where asked, and how it was computed."""
    from .html import esc, fmt, table, with_interval

    p = s.predict
    if not isinstance(p, Prediction):
        return f"<p>{esc(p or 'No held-out evaluation.')}</p>"
    rows, classes = [], []
    for _, r in p.scores.iterrows():
        rows.append(
            [
                esc(r["label"]) + (" <b>(best joint)</b>" if r["learner"] == p.best else ""),
                esc(r["metric"]) or "–",
                fmt(int(r["n"])),
                with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
            ]
        )
        classes.append("" if r["learner"] in JOINT else "baseline")
    out = [
        f'<div class="box done">{esc(p.verdict)}</div>',
        table(
            ["learner", "its metric", "n", "held-out Spearman ρ", "Kendall τ", "R²"], rows, left=2, row_classes=classes
        ),
    ]
    diff_rows = [
        [esc(LABELS[r["learner"]]) + " − " + esc(LABELS[r["versus"]]), with_interval(r["diff"], r["lo"], r["hi"])]
        for _, r in p.versus.iterrows()
    ]
    out.append(table(["difference in held-out ρ", "paired bootstrap interval"], diff_rows, left=1))
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
                    with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                    with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
                    with_interval(
                        own.at[r["learner"], "spearman"],
                        own.at[r["learner"], "spearman_lo"],
                        own.at[r["learner"], "spearman_hi"],
                    ),
                    with_interval(
                        own.at["nlc", "spearman"], own.at["nlc", "spearman_lo"], own.at["nlc", "spearman_hi"]
                    ),
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
            "share; ρ and τ compare orders only.</p>",
        ]
    names = ", ".join(esc(f.label) for f in p.features)
    out.append(
        f'<p class="muted">Every trained architecture with a test error; features: {names} (log10 where the '
        "correlation table uses log; a missing or non-finite value is left to the learner). Held out: "
        f"{p.folds}-fold GroupKFold over the {p.groups} base architectures (a draw and its siblings are one group, "
        "never on both sides of a split); every architecture is predicted by the model fitted on the other folds. "
        "Learners: ridge regression (RidgeCV) on each metric's rank u among the training architectures (its "
        "empirical CDF) and u² (a window is a parabola in u); gradient-boosted trees (HistGradientBoostingRegressor, "
        "which routes missing values itself); the rank-based baselines: the window predictor of the best single "
        "metric chosen on the training folds, and of the NLC alone (distance from the centre of its good range, "
        "mapped to error by least squares). Intervals: percentile bootstrap over base architectures of the held-out "
        "predictions (differences: the same resamples, paired). The architecture's own depth, width and categories "
        "can join the metrics: <code>archstudy.predict_study(results, descriptors=True)</code>.</p>"
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
