"""Why the joint predictor predicts: permutation importance on the held-out folds and partial dependence of the
model fitted on the whole study, with scikit-learn's own functions answered in batches (``BatchedPredictions``)."""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps


from ..columns import PREDICTOR_BY_COLUMN
from .learners import DEPENDENCE_TOP, Feature, GRID, IMPORTANCE_REPEATS, WindowPredictor, _T, make_learner


def _spearman_scorer(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
    """Held-out Spearman's rho of the predictions (``permutation_importance``'s score; higher is better)."""
    p = estimator.predict(X)
    if np.ptp(p) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(sps.spearmanr(p, y).statistic)


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
    learner: str,
    features: Sequence[Feature],
    X: pd.DataFrame,
    y: np.ndarray,
    importance: pd.DataFrame,
    seed: int,
    groups: np.ndarray | None = None,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Partial dependence (``sklearn.inspection.partial_dependence``, the average prediction over every row with
    the feature set to each grid value) of ``learner`` fitted on all rows, for the ``DEPENDENCE_TOP`` numeric
    metrics of highest importance, the NLC always among them; the grid spans the feature's 2nd to 98th
    percentile of its finite values. ``value`` is on the metric's own scale (10^ of a log feature). ``groups``:
    each row's base architecture (the ridge's penalty, ``learners.GroupRidgeCV``)."""
    from sklearn.inspection import partial_dependence

    numeric = {f.column: f for f in features if not f.categorical and f.kind != "descriptor"}
    ranked = [c for c in (importance["feature"] if len(importance) else []) if c in numeric]
    chosen = (["nlc"] if "nlc" in numeric else []) + [c for c in ranked if c != "nlc"]
    chosen = chosen[:DEPENDENCE_TOP]
    custom_grid = "custom_values" in inspect.signature(partial_dependence).parameters  # scikit-learn >= 1.7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_learner(learner, features, seed, groups).fit(X, y)
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
