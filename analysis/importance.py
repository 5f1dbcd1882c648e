"""How much of test error (and of the selected learning rate) each design axis and each measure at initialization
accounts for: fANOVA (Hutter, Hoos and Leyton-Brown, *An Efficient Approach for Assessing Hyperparameter
Importance*, ICML 2014), through Optuna's ``FanovaImportanceEvaluator`` (the extra ``export``).

fANOVA fits a random forest of the target on the features and decomposes the variance of the forest's prediction
over the feature space (each feature uniform over its range, on a log scale where the column is declared log,
``AsPredictor.log``) into the parts each feature explains alone: its main effect. A feature's importance is that
fraction of the variance (not normalized: what the features leave is their interactions). The features are the
design axes that take two or more values in the study (``analysis.features.design_axes``) and the measures at
initialization finite on every architecture used (``analysis.features.measures``; an architecture without a finite
value of one of them is left out, and counted).

The estimate is a description, not a finding: correlated features share their effect as the forest happens to
split them (the NLC is a function of depth and activation, among others), and no significance is claimed. Its
variability is shown over ``REPLICATES`` replicates, each a bootstrap resample of the architectures (at most
``MAX_ROWS`` of them: fANOVA's marginals cost grows with the trees, 4 s per fit of 500 architectures and 28 features
on this project's 2-core machine) with its own forest seed: the median and the range of the replicates.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .columns import PREDICTOR_BY_COLUMN
from .features import design_axes, measures

REPLICATES = 10
MAX_ROWS = 500
N_TREES = 16
MAX_DEPTH = 8
MIN_ROWS = 20  # fewer architectures than this: no importance (a forest of a handful of points describes nothing)
# The targets: test error, and where the study chose among learning rates, the selected rate (log10).
TARGETS = {"test_error": "test error", "log10_lr": "selected learning rate (log10)"}


@dataclass(frozen=True)
class Importance:
    """The importances of the features for one target (module docstring): ``table`` has one row per feature
    (``feature``, ``kind``: axis or measure, ``median``, ``low`` and ``high``: the range over the replicates), most
    important first; ``rows``: the architectures used, ``left_out``: those without a value of a feature."""

    target: str
    table: pd.DataFrame
    rows: int
    left_out: int
    replicates: int
    per_replicate: int


def available() -> str | None:
    """None where Optuna is installed; else why the importance cannot be computed, in one line."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        return 'needs Optuna, of the optional extra export: pip install "archstudy[export]"'
    return None


def _features(arch: pd.DataFrame) -> tuple[list[str], list[str]]:
    axes = [a for a in design_axes(arch) if arch[a].nunique(dropna=True) > 1]
    kept = [m for m in measures(arch) if np.isfinite(pd.to_numeric(arch[m], errors="coerce")).mean() >= 0.9]
    return axes, kept


def _distribution(values: pd.Series, column: str) -> Any:
    import optuna.distributions as d

    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return d.CategoricalDistribution(sorted({str(v) for v in values}))
    x = values.to_numpy(np.float64)
    lo, hi = float(x.min()), float(x.max())
    predictor = PREDICTOR_BY_COLUMN.get(column)
    log = bool(predictor and predictor.log) and lo > 0
    return d.FloatDistribution(lo, hi if hi > lo else lo * (1 + 1e-9) + 1e-12, log=log)


def _fit(table: pd.DataFrame, features: list[str], target: str, seed: int) -> dict[str, float]:
    import optuna

    dists = {c: _distribution(table[c], c) for c in features}
    trials = []
    for row in table.to_dict("records"):
        params = {
            c: (str(row[c]) if isinstance(dists[c], optuna.distributions.CategoricalDistribution) else float(row[c]))
            for c in features
        }
        trials.append(optuna.trial.create_trial(params=params, distributions=dists, value=float(row[target])))
    study = optuna.create_study()
    study.add_trials(trials)
    evaluator = optuna.importance.FanovaImportanceEvaluator(n_trees=N_TREES, max_depth=MAX_DEPTH, seed=seed)
    with warnings.catch_warnings():  # normalize=False is marked experimental in optuna: said once per fit otherwise
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        found = optuna.importance.get_param_importances(study, evaluator=evaluator, normalize=False)
    return {k: float(v) for k, v in found.items()}


def importance(
    arch: pd.DataFrame, target: str = "test_error", *, replicates: int = REPLICATES, seed: int = 0
) -> Importance | None:
    """The importances of the design axes and measures for ``target`` (``TARGETS``) over the trained architectures
    ``arch`` (module docstring); None with fewer than ``MIN_ROWS`` usable architectures or no feature."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table = arch.copy()
    if target == "log10_lr":
        with np.errstate(all="ignore"):
            table["log10_lr"] = np.log10(pd.to_numeric(table["lr"], errors="coerce"))
    axes, kept = _features(table)
    features = axes + kept
    values = pd.to_numeric(table[target], errors="coerce")
    ok = np.isfinite(values.to_numpy(np.float64))
    for m in kept:
        ok &= np.isfinite(pd.to_numeric(table[m], errors="coerce").to_numpy(np.float64))
    for a in axes:
        ok &= table[a].notna().to_numpy()
    used = table[ok].reset_index(drop=True)
    if len(used) < MIN_ROWS or not features:
        return None
    rng = np.random.default_rng(seed)
    size = min(len(used), MAX_ROWS)
    fits = []
    for k in range(replicates):
        sample = used.iloc[rng.integers(0, len(used), size)].reset_index(drop=True)
        fits.append(_fit(sample, features, target, seed + k))
    grid = np.array([[f.get(c, 0.0) for c in features] for f in fits])
    out = pd.DataFrame(
        {
            "feature": features,
            "kind": ["axis"] * len(axes) + ["measure"] * len(kept),
            "median": np.median(grid, axis=0),
            "low": grid.min(axis=0),
            "high": grid.max(axis=0),
        }
    ).sort_values("median", ascending=False, kind="stable")
    return Importance(TARGETS[target], out.reset_index(drop=True), len(used), int((~ok).sum()), replicates, size)


def targets(arch: pd.DataFrame) -> list[str]:
    """The targets a study has: test error, and the selected rate where more than one rate was selected."""
    out = ["test_error"]
    if "lr" in arch.columns and pd.to_numeric(arch["lr"], errors="coerce").nunique() > 1:
        out.append("log10_lr")
    return out
