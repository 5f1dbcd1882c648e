"""The joint predictor's inputs and learners: the features (every init metric and proxy, the descriptors) and the
scikit-learn estimators that fit them (``LEARNERS``); the shared constants of ``analysis.predict``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from archstudy.study.experiment.good_range import good_range

from ..columns import PREDICTOR_BY_COLUMN, PREDICTORS
from ..results import Results, architectures_table

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
    """The best single metric's window predictor (``analysis.range_predictors``) as an estimator: ``fit`` takes each of
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
