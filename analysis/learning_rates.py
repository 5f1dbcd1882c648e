"""The best starting learning rate of each architecture: what it is, what it depends on, whether it transfers to
a sibling, and whether it can be predicted well enough to train fewer rates.

Every architecture is trained at n starting rates lr_k = lr_min * f^k, k = 0 .. n - 1 (``lr_index`` k; the NLC
paper's protocol: n = 40, f = 3, lr_min from the architecture's gradients at initialization; Philipp and
Carbonell, *The Nonlinearity Coefficient*, appendix E.2), and the run of lowest validation error is selected
(ties to the lower index, as the trainer selects). From the study's ``runs`` table:

* ``best_rates``: each trained architecture's selected index k*, log10 lr_k*, and its near-optimal band
  B = {k : VE_k <= VE_k* + ``BAND_TOLERANCE``} (VE: validation error at the run's best state): its width |B|,
  lowest and highest index, whether k* or B touches an end of the series (the optimum may lie beyond it).
* ``rate_dependence``: the correlations (``stats.correlations``: Pearson, Spearman, Kendall with bootstrap
  intervals) of k*, log10 lr_k* and |B| with the design axes and the measures at initialization;
  ``level_medians``: the median k* of each level of the categorical design axes.
* ``rate_transfer``: the paired difference of k* (and of log10 lr_k*) between sibling architectures
  (``stats.paired_effects``: median, sign test, the order-statistic interval), along every sibling axis, per
  parameterization.
* ``rate_windows``: training only m rates centred on a predicted index c gives exactly the runs of the full
  sweep at those rates (the rates are trained independently, in one stack, with the same minibatch order), so
  the window's result is measured offline: W(c, m) = {s, ..., s + m - 1}, s = clip(c - floor(m / 2), 0, n - m),
  its selected run j = argmin_{k in W} VE_k (ties to the lower index), and its regret
  R = TE_j - TE_k* (TE: test error; signed: selection is by validation error, so a window can also be lucky).
  c is predicted by cross-fitting (``cross_fitted_centres``): a ridge regression of k* on the measures at
  initialization and the design axes, fitted on the training folds of a grouped K-fold over base architectures
  (a draw and its siblings on one side), beside the rule "the median k* of the training folds".
  ``window_refusal`` says when the predicted window must not be used: when it does not beat the median rule.

Pure functions of DataFrames (and the (units, rates) matrices ``rate_sweep`` builds from them); float64
throughout; no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from archstudy.sampling import SpecError
from archstudy.study.experiment.rate_window import centre_index, window_start

from .columns import UNIT_KEY
from .predict.evaluation import base_groups, fold_count, group_counts, group_folds
from .predict.learners import (
    ALPHAS,
    DESCRIPTOR_FEATURES,
    FOLDS,
    Feature,
    GroupRidgeCV,
    choose_features,
    feature_table,
)
from .predict.folds import spearman
from .stats import boot_spearman, correlations, paired_effects, percentile_interval, sign_test

# A rate is near-optimal when its validation error is within 0.01 (absolute) of the selected run's: the binomial
# standard error of a validation error p on n_val examples is sqrt(p (1 - p) / n_val), 0.009 to 0.015 for p in
# [0.1, 0.3] on the 1,000 validation examples of waveform-noise, so two runs within 0.01 are not told apart by
# the split that selects them.
BAND_TOLERANCE = 0.01
# A window "loses nothing" when its regret is at most 0.005 test error: half the band's tolerance, below the
# standard error of a test error on 1,000 test examples (about 0.01), so a regret within it is not a measurable
# loss of the selected network.
REGRET_TOLERANCE = 0.005
WINDOW_SIZES = (4, 8, 12, 16)  # rates trained per architecture, of the paper protocol's 40
# Base architectures (a draw and its siblings count once: the unit of the folds and of the bootstrap) with a best
# rate before the section states any statistic of them: below it, a grouped K-fold holds a handful per fold.
MIN_ARCHITECTURES = 12
CONFIDENCE = 0.95
DEPENDENCE_BOOT = 200  # bootstrap resamples of the dependences' intervals (three targets: the section's cost)
WINDOW_BOOT = 1000  # resamples of base architectures for the regret quantiles' and the comparison's intervals
REGRET_QUANTILES = (0.5, 0.9)  # the median regret and its 90th percentile
# Validation errors are counts over the validation set: a band bound VE* + 0.01 is compared with this slack, so
# that 0.31 <= 0.30 + 0.01 holds despite the binary representation of the three numbers.
ROUNDING = 1e-9
# The categorical design axes whose levels ``level_medians`` compares (the joint predictor's descriptors).
CATEGORICAL_AXES = tuple(f.column for f in DESCRIPTOR_FEATURES if f.categorical)
# The rules ``rate_windows`` measures: the cross-fitted ridge's prediction and the training folds' median.
RULES = ("ridge", "median")


@dataclass(frozen=True)
class RateSweep:
    """The runs of the trained architectures as (units, rates) matrices: ``units`` (one row per architecture:
    its ``columns.UNIT_KEY``, ``variant`` where the runs have it), ``val`` / ``test`` (errors at each run's best
    state, NaN where a run is missing), ``log10_lr``, ``diverged`` and ``selected`` (the index of each unit's
    selected run)."""

    units: pd.DataFrame
    val: np.ndarray
    test: np.ndarray
    log10_lr: np.ndarray
    diverged: np.ndarray
    selected: np.ndarray

    @property
    def n_rates(self) -> int:
        return int(self.val.shape[1])


def _key(table: pd.DataFrame) -> list[str]:
    return [c for c in UNIT_KEY if c in table.columns]


def trained_rows(arch: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``arch`` that were trained (``trained`` true, or missing: every architecture was trained before
    pruning at launch existed)."""
    if "trained" not in arch.columns:
        return arch
    return arch[arch["trained"].astype("boolean").fillna(True).astype(bool)]


def rate_sweep(arch: pd.DataFrame, runs: pd.DataFrame) -> RateSweep:
    """The runs of ``arch``'s trained architectures as matrices (``RateSweep``), units in ``arch``'s order. The
    selected run is the one the runs table marks ``selected``; a unit without the mark gets argmin_k VE_k (ties to
    the lower index, as the trainer selects). One groupby-free pass: each run is placed by (unit code, lr_index)."""
    if "init_index" in runs.columns:  # the architecture's own initialization (init_seeds: the others are its noise)
        runs = runs[runs["init_index"].fillna(0) == 0]
    key = _key(arch)
    units = trained_rows(arch)[key + (["variant"] if "variant" in arch.columns else [])].drop_duplicates(key)
    units = units.reset_index(drop=True)
    code = pd.Series(np.arange(len(units)), index=pd.MultiIndex.from_frame(units[key].astype(str)))
    where = pd.MultiIndex.from_frame(runs[key].astype(str))
    u = code.reindex(where).to_numpy(np.float64)  # NaN: a run of an architecture not in ``arch``
    keep = np.isfinite(u)
    u = u[keep].astype(np.int64)
    k = runs["lr_index"].to_numpy(np.int64)[keep]
    n = int(k.max()) + 1 if len(k) else 0
    shape = (len(units), n)

    def place(column: str, fill: float = math.nan) -> np.ndarray:
        out = np.full(shape, fill, dtype=np.float64)
        if column in runs.columns:
            out[u, k] = pd.to_numeric(runs[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)[keep]
        return out

    val, test = place("val_error"), place("test_error")
    with np.errstate(divide="ignore", invalid="ignore"):
        log10_lr = np.log10(place("lr"))
    diverged = place("diverged", 0.0) > 0
    marked = place("selected", 0.0) > 0
    by_val = np.argmin(np.where(np.isfinite(val), val, np.inf), axis=1) if n else np.zeros(len(units), np.int64)
    selected = np.where(marked.any(axis=1), np.argmax(marked, axis=1), by_val) if n else by_val
    return RateSweep(units, val, test, log10_lr, diverged, selected.astype(np.int64))


def best_rates(arch: pd.DataFrame, runs: pd.DataFrame, tolerance: float = BAND_TOLERANCE) -> pd.DataFrame:
    """One row per trained architecture of ``arch`` with runs (its ``columns.UNIT_KEY`` and variant): ``n_rates``;
    ``best_index`` k* (the selected run's ``lr_index``), ``best_log10_lr`` = log10 lr_k*, ``best_val`` and
    ``best_test`` (its errors); the near-optimal band B = {k : VE_k <= VE_k* + ``tolerance``}: ``band_width`` |B|,
    ``band_lo`` min B, ``band_hi`` max B (B need not be contiguous); ``edge``: k* is the lowest or highest rate,
    ``band_edge``: B holds one of them (the optimum, or the band, may go on beyond the series); ``n_diverged``
    (runs whose loss was non-finite at least once: rows like any other, their errors finite, a rewound run's at its
    best state) and ``all_diverged``: every run diverged, so no rate trained and k*, log10 lr_k* and B are NaN
    (the trainer still marks one run, at chance); NaN too for an architecture without runs."""
    return sweep_best(rate_sweep(arch, runs), tolerance)


def sweep_best(s: RateSweep, tolerance: float = BAND_TOLERANCE) -> pd.DataFrame:
    """``best_rates`` of a ``RateSweep``."""
    rows = np.arange(len(s.units))
    n = s.n_rates
    if not len(rows) or not n:
        cols = ["n_rates", "best_index", "best_log10_lr", "best_val", "best_test", "band_width", "band_lo"]
        return s.units.assign(**{c: pd.Series(dtype=np.float64) for c in cols})
    best_val = s.val[rows, s.selected]
    band = s.val <= (best_val + tolerance + ROUNDING)[:, None]  # NaN (a missing run) compares False
    width = band.sum(axis=1).astype(np.float64)
    lo = np.argmax(band, axis=1).astype(np.float64)
    hi = (n - 1 - np.argmax(band[:, ::-1], axis=1)).astype(np.float64)
    n_div = s.diverged.sum(axis=1)
    # no best rate: every run diverged, or the unit has no runs (a runs file left out as corrupt)
    dead = (n_div == n) | ~np.isfinite(s.val).any(axis=1)

    def nan_dead(x: np.ndarray) -> np.ndarray:
        return np.where(dead, np.nan, x)

    best = s.selected.astype(np.float64)
    return s.units.assign(
        n_rates=n,
        best_index=nan_dead(best),
        best_log10_lr=nan_dead(s.log10_lr[rows, s.selected]),
        best_val=best_val,
        best_test=s.test[rows, s.selected],
        band_width=nan_dead(width),
        band_lo=nan_dead(lo),
        band_hi=nan_dead(hi),
        edge=~dead & ((s.selected == 0) | (s.selected == n - 1)),
        band_edge=~dead & (band[:, 0] | band[:, -1]),
        n_diverged=n_div.astype(np.int64),
        all_diverged=n_div == n,
    )


# The best-rate columns ``with_best_rates`` adds to the architectures table (the targets of ``rate_dependence``).
TARGETS = ("best_index", "best_log10_lr", "band_width")
TARGET_LABELS = {
    "best_index": "best rate index k*",
    "best_log10_lr": "log10 best rate",
    "band_width": "near-optimal band width |B|",
}


def with_best_rates(arch: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """A copy of the trained rows of ``arch`` with ``best_rates``' columns beside them (joined on the unit key;
    the architectures without runs keep NaN)."""
    key = _key(arch)
    extra = [c for c in best.columns if c not in key and c != "variant"]
    out = trained_rows(arch).drop(columns=[c for c in extra if c in arch.columns])
    b = best[key + extra].copy()
    for c in key:
        b[c] = b[c].astype(out[c].dtype)
    return out.merge(b, on=key, how="left")


def rate_dependence(table: pd.DataFrame, n_boot: int = DEPENDENCE_BOOT, seed: int = 0) -> pd.DataFrame:
    """``stats.correlations`` of each of ``TARGETS`` (a ``with_best_rates`` table) with every predictor column the
    table has (the measures at initialization and the numeric design axes: depth, width, parameters), over the
    base draws, the rows of all-diverged architectures left out (their target is NaN); the rows of the three
    targets one after the other (``target`` names each). Granulated Kendall is not computed (``axes={}``): the
    section compares siblings directly (``rate_transfer``)."""
    parts = [
        correlations(table, target=t, n_boot=n_boot, seed=seed, axes={})
        for t in TARGETS
        if t in table.columns and np.isfinite(table[t].to_numpy(np.float64)).sum() >= 3
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def level_medians(table: pd.DataFrame, target: str = "best_index") -> pd.DataFrame:
    """For each categorical design axis (``CATEGORICAL_AXES``) with at least two levels among the base draws: each
    level's median ``target`` with the distribution-free interval of a median (``stats.sign_test`` of the values:
    [x_(k), x_(n+1-k)]), and the Kruskal-Wallis p-value of equal distributions across the levels."""
    base = table[table["variant"] == "base"] if "variant" in table.columns else table
    rows = []
    for axis in CATEGORICAL_AXES:
        if axis not in base.columns:
            continue
        y = base[target].to_numpy(np.float64)
        ok = np.isfinite(y) & base[axis].notna().to_numpy()
        levels = sorted(base.loc[ok, axis].astype(str).unique())
        if len(levels) < 2:
            continue
        groups = [y[ok & (base[axis].astype(str) == v).to_numpy()] for v in levels]
        with np.errstate(all="ignore"):
            p = sps.kruskal(*groups).pvalue if all(len(g) for g in groups) and np.ptp(y[ok]) > 0 else math.nan
        for v, g in zip(levels, groups):
            t = sign_test(g)
            rows.append(
                {
                    "axis": axis,
                    "level": v,
                    "n": len(g),
                    "median": t["median"],
                    "ci_lo": t["ci_lo"],
                    "ci_hi": t["ci_hi"],
                    "p_kruskal": float(p),
                }
            )
    return pd.DataFrame(rows, columns=["axis", "level", "n", "median", "ci_lo", "ci_hi", "p_kruskal"])


TRANSFER_TARGETS = ("best_index", "best_log10_lr")


def rate_transfer(table: pd.DataFrame) -> pd.DataFrame:
    """The paired difference of the best rate between sibling architectures (``stats.paired_effects``: B - A, its
    median, the sign test and the order-statistic interval), for k* and log10 lr_k* (``target``): along
    ``param`` over every pair (its ``context`` says what IMN does in the pair), along each other sibling axis
    once per parameterization (``param``: the pairs' shared one; a sibling shares its draw's). k* counts rates in
    units of the series' factor from lr_min, which is measured per architecture; log10 lr_k* is the rate itself.
    Only comparisons with pairs; empty without siblings."""
    out = []
    for target in TRANSFER_TARGETS:
        if target not in table.columns:
            continue
        whole = paired_effects(table, target=target)
        out.append(whole[whole["axis"] == "param"].assign(param="sp → gmp", target=target))
        if "param" in table.columns:
            for level in sorted(table["param"].dropna().astype(str).unique()):
                part = paired_effects(table[table["param"].astype(str) == level], target=target)
                out.append(part[part["axis"] != "param"].assign(param=level, target=target))
    if not out:
        return pd.DataFrame()
    t = pd.concat(out, ignore_index=True)
    return t[t["n_pairs"] > 0].drop(columns=["p_holm"]).reset_index(drop=True)


# -- the rate window ---------------------------------------------------------------------------------------------


def window_choice(val: np.ndarray, centre: np.ndarray, m: int) -> np.ndarray:
    """The run each unit's window selects: j = argmin_{k in W} VE_k over W = {s, ..., s + m - 1}
    (``window_start``), ties to the lower index, as the trainer selects over the whole series."""
    n = val.shape[1]
    if not 1 <= m <= n:
        raise ValueError(f"a window of {m} rates in a series of {n}")
    s = window_start(centre, m, n)[:, None]
    k = np.arange(n)[None, :]
    inside = (k >= s) & (k < s + m) & np.isfinite(val)
    chosen: np.ndarray = np.argmin(np.where(inside, val, np.inf), axis=1)
    return chosen


def window_regret(sweep: RateSweep, centre: np.ndarray, m: int) -> np.ndarray:
    """R = TE_j - TE_k* for each unit: the test error of the run its window of ``m`` rates centred on ``centre``
    selects (``window_choice``) less that of the full sweep's selected run. Signed: both are selected by
    validation error, so R < 0 happens."""
    rows = np.arange(len(sweep.units))
    j = window_choice(sweep.val, centre, m)
    regret: np.ndarray = sweep.test[rows, j] - sweep.test[rows, sweep.selected]
    return regret


def _ridge(features: Sequence[Feature], groups: np.ndarray) -> Any:
    """Ridge regression on ``feature_table`` columns: numeric ones imputed with the training median and
    standardized, categorical ones one-hot; the penalty chosen leaving out one base architecture at a time
    (``learners.GroupRidgeCV`` over ``learners.ALPHAS``)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [f.column for f in features if not f.categorical]
    categorical = [f.column for f in features if f.categorical]
    parts = []
    if numeric:
        scale = Pipeline(
            [("impute", SimpleImputer(strategy="median", keep_empty_features=True)), ("scale", StandardScaler())]
        )
        parts.append(("num", scale, numeric))
    if categorical:
        parts.append(("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical))
    return Pipeline(
        [("columns", ColumnTransformer(parts, remainder="drop")), ("ridge", GroupRidgeCV(ALPHAS, groups=groups))]
    )


def cross_fitted_centres(table: pd.DataFrame, folds: int = FOLDS, seed: int = 0) -> pd.DataFrame:
    """The held-out prediction of each row's best index k* (a ``with_best_rates`` table, rows with a finite
    ``best_index``): ``fold`` (grouped K-fold over base architectures, ``evaluation.group_folds`` with
    ``evaluation.fold_count`` folds: a draw and its siblings are held out together), ``ridge`` (the ridge
    regression of k* on log10 NLC and every other measure at initialization on its log or linear scale, depth,
    log10 width and the categorical axes one-hot (``learners.choose_features``), fitted on the other folds) and
    ``median`` (the median k* of the other folds). Nothing of a held-out row, its target or its features, enters
    the fit that predicts it."""
    rows = table[np.isfinite(table["best_index"].to_numpy(np.float64))].reset_index(drop=True)
    y = rows["best_index"].to_numpy(np.float64)
    groups = base_groups(rows)
    ridge = np.full(len(rows), np.nan)
    median = np.full(len(rows), np.nan)
    fold = np.full(len(rows), -1, dtype=np.int64)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    for j, (train, test) in enumerate(group_folds(groups, fold_count(n_groups, folds), seed)):
        fold[test] = j
        median[test] = float(np.median(y[train]))
        features = choose_features(rows.iloc[train], descriptors=True)
        features = [f for f in features if f.column in rows.columns]
        X = feature_table(rows, features)
        model = _ridge(features, groups[train]).fit(X.iloc[train], y[train])
        ridge[test] = np.asarray(model.predict(X.iloc[test]), dtype=np.float64)
    return rows[_key(rows)].assign(fold=fold, ridge=ridge, median=median, best_index=y, group=groups)


def _boot_quantiles(x: np.ndarray, c: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of ``x`` weighted by each resample's counts ``c`` (B, n): the smallest x_(i) whose cumulative
    count reaches q times the total (numpy's ``inverted_cdf``, what ``np.quantile`` gives with unit counts)."""
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(c[:, order], axis=1)
    at = (cum < q * cum[:, -1:] - ROUNDING).sum(axis=1)
    out: np.ndarray = x[order][np.minimum(at, len(x) - 1)]
    return out


def _clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """``verdict_calibration.clopper_pearson``; NaN of no trial."""
    from .verdict_calibration import clopper_pearson

    return (math.nan, math.nan) if not n else clopper_pearson(k, n, confidence)


WINDOW_COLUMNS = [
    "size",
    "rule",
    "n",
    "groups",
    "saved",
    "median",
    "median_lo",
    "median_hi",
    "p90",
    "p90_lo",
    "p90_hi",
    "mean",
    "within",
    "within_k",
    "within_lo",
    "within_hi",
    "diff",
    "diff_lo",
    "diff_hi",
    "n_better",
    "n_worse",
    "p_sign",
    "rho",
    "rho_lo",
    "rho_hi",
]


def rate_windows(
    sweep: RateSweep,
    centres: pd.DataFrame,
    sizes: Sequence[int] = WINDOW_SIZES,
    tolerance: float = REGRET_TOLERANCE,
    n_boot: int = WINDOW_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """For each window size m of ``sizes`` below the series' length and each rule of ``RULES`` (the centres of
    ``cross_fitted_centres``, matched to ``sweep``'s units by key): over the n held-out architectures, the regret
    R (``window_regret``) as ``median`` and ``p90`` (the 90th percentile; both numpy's ``inverted_cdf``) with
    percentile-bootstrap intervals over base architectures (``WINDOW_BOOT`` resamples of the groups, the
    regrets held fixed), ``mean``, ``within``: the fraction with R <= ``tolerance`` (``within_k`` of n) with its
    Clopper-Pearson interval (architectures counted as independent; siblings share a draw), ``saved`` = 1 - m / n
    (the fraction of runs not trained). On the ridge's rows, its comparison with the median rule over the same
    architectures: ``diff`` = mean(R_ridge - R_median) with its bootstrap interval over base architectures (the
    ridge beats the rule where the interval lies below 0), ``n_better`` / ``n_worse`` (R_ridge below / above
    R_median) and ``p_sign``, the sign test of the paired differences; and ``rho``, Spearman's rho of the ridge's
    held-out predictions with k*, with its bootstrap interval over base architectures (whether it predicts at
    all)."""
    key = _key(centres)
    units = sweep.units[key].astype(str)
    at = pd.Series(np.arange(len(units)), index=pd.MultiIndex.from_frame(units))
    pos = at.reindex(pd.MultiIndex.from_frame(centres[key].astype(str))).to_numpy()
    n_rates = sweep.n_rates
    sub = RateSweep(
        sweep.units.iloc[pos].reset_index(drop=True),
        sweep.val[pos],
        sweep.test[pos],
        sweep.log10_lr[pos],
        sweep.diverged[pos],
        sweep.selected[pos],
    )
    groups = pd.factorize(centres["group"].to_numpy(), sort=True)[0]
    counts = group_counts(groups, n_boot, seed) if len(groups) else np.zeros((n_boot, 0))
    p, y = centres["ridge"].to_numpy(np.float64), centres["best_index"].to_numpy(np.float64)
    rho = spearman(p, y) if len(p) >= 3 else math.nan
    rho_lo, rho_hi = percentile_interval(boot_spearman(p, y, counts), confidence) if len(p) >= 3 else (math.nan,) * 2
    rows = []
    for m in sizes:
        if not 1 <= m < n_rates or not len(pos):
            continue
        regret = {r: window_regret(sub, centre_index(centres[r].to_numpy(np.float64), n_rates), m) for r in RULES}
        for rule in RULES:
            x = regret[rule]
            n = len(x)
            k = int((x <= tolerance + ROUNDING).sum())
            row = {"size": m, "rule": rule, "n": n, "groups": int(groups.max()) + 1, "saved": 1 - m / n_rates}
            for name, q in zip(("median", "p90"), REGRET_QUANTILES):
                row[name] = float(np.quantile(x, q, method="inverted_cdf"))
                row[f"{name}_lo"], row[f"{name}_hi"] = percentile_interval(_boot_quantiles(x, counts, q), confidence)
            row["mean"] = float(x.mean())
            row["within"], row["within_k"] = k / n, k
            row["within_lo"], row["within_hi"] = _clopper_pearson(k, n, confidence)
            if rule == "ridge":
                d = x - regret["median"]
                row["diff"] = float(d.mean())
                row["diff_lo"], row["diff_hi"] = percentile_interval(counts @ d / counts.sum(axis=1), confidence)
                t = sign_test(d)
                row.update(n_better=t["n_neg"], n_worse=t["n_pos"], p_sign=t["p_sign"])
                row.update(rho=rho, rho_lo=rho_lo, rho_hi=rho_hi)
            rows.append(row)
    return pd.DataFrame(rows, columns=WINDOW_COLUMNS)


def window_refusal(windows: pd.DataFrame, size: int) -> str | None:
    """None where the ridge's window of ``size`` rates (a ``rate_windows`` table) may be used, else the one line
    saying why not: too few base architectures (``MIN_ARCHITECTURES``), the size not measured, held-out predictions
    that do not order the best indices (the interval of Spearman's rho not above 0), or the ridge not beating the
    median rule (the interval of mean(R_ridge - R_median) not below 0). Both are asked: a predictor no better than
    the median of the study's best indices adds a fit, and its risk, for nothing. The regret comparison alone
    favoured a predictor of pure noise in 3 of 12 simulated studies of 40 base draws with a param sibling each (the
    tests' simulation: a few lucky windows carry the mean); with the rank condition too, in none of 20, while a best
    index linear in log10 NLC passed in all 20."""
    row = windows[(windows["rule"] == "ridge") & (windows["size"] == size)] if len(windows) else windows
    if not len(row):
        return f"no window of {size} rates was measured (the series is not longer, or no architecture has a best rate)"
    r = row.iloc[0]
    if r["groups"] < MIN_ARCHITECTURES:
        return (
            f"{int(r['groups'])} base architectures with a best rate, fewer than the {MIN_ARCHITECTURES} a window needs"
        )
    if not (np.isfinite(r["diff_hi"]) and np.isfinite(r["rho_lo"])):
        return f"the comparison with the median rule has no interval over {int(r['n'])} architectures"
    if r["rho_lo"] <= 0:
        return (
            f"the predictor does not order the best indices of held-out architectures: Spearman rho {r['rho']:+.2f} "
            f"[{r['rho_lo']:+.2f}, {r['rho_hi']:+.2f}] over {int(r['n'])} architectures (it must lie above 0)"
        )
    if r["diff_hi"] >= 0:
        return (
            f"the predicted window of {size} rates does not beat the median rule: mean regret difference "
            f"{r['diff']:+.4f} [{r['diff_lo']:+.4f}, {r['diff_hi']:+.4f}] over {int(r['n'])} architectures "
            "(predictor minus rule; it must lie below 0)"
        )
    return None


@dataclass(frozen=True)
class LearningRates:
    """Everything the report's section states (``learning_rates``): ``best`` (``best_rates``), ``table`` (the
    architectures with them, ``with_best_rates``), ``dependence``, ``levels``, ``transfer``, ``centres`` and
    ``windows``; ``reason``: the one line saying why there are no statistics, else ""."""

    best: pd.DataFrame
    table: pd.DataFrame
    dependence: pd.DataFrame
    levels: pd.DataFrame
    transfer: pd.DataFrame
    centres: pd.DataFrame
    windows: pd.DataFrame
    reason: str = ""
    window_reason: str = ""  # why ``windows`` is empty where the section has statistics otherwise


WINDOWED = (
    "the study trained a window of rates around a predicted best rate (lr_window), not the full sweep, so a "
    "window's regret against the sweep cannot be measured here: it is measured on a study of the full sweep"
)


def learning_rates(arch: pd.DataFrame, runs: pd.DataFrame, seed: int = 0) -> LearningRates:
    """The section's numbers for a study's trained architectures ``arch`` and its ``runs``: nothing but the
    ``reason`` below ``MIN_ARCHITECTURES`` base architectures with a best rate."""
    empty = pd.DataFrame()
    if not len(runs) or "lr_index" not in runs.columns:
        return LearningRates(empty, empty, empty, empty, empty, empty, empty, "the study's runs table is empty")
    sweep = rate_sweep(arch, runs)
    best = sweep_best(sweep)
    with_best = best[np.isfinite(best["best_index"].to_numpy(np.float64))] if len(best) else best
    have = len(np.unique(base_groups(with_best))) if "index" in with_best.columns else len(with_best)
    if have < MIN_ARCHITECTURES:
        return LearningRates(
            best,
            empty,
            empty,
            empty,
            empty,
            empty,
            empty,
            f"{have} base architectures with a best rate (trained, not every run diverged; a draw and its "
            f"siblings count once), fewer than the {MIN_ARCHITECTURES} the section's statistics need",
        )
    table = with_best_rates(arch, best)
    windowed = bool(len(sweep.val)) and not np.isfinite(sweep.val).all()  # a rate window's study (lr_window)
    centres = empty if windowed else cross_fitted_centres(table, seed=seed)
    windows = empty if windowed else rate_windows(sweep, centres, seed=seed)
    return LearningRates(
        best,
        table,
        rate_dependence(table, seed=seed),
        level_medians(table),
        rate_transfer(table),
        centres,
        windows,
        window_reason=WINDOWED if windowed else "",
    )


def resolve_window(
    arch: pd.DataFrame, runs: pd.DataFrame, size: int, predictor: str, source: str = ""
) -> dict[str, Any]:
    """A study's ``lr_window`` (``study.experiment.rate_window``) of ``size`` rates, from a finished study of the
    full sweep (its trained architectures ``arch`` and ``runs``): ``predictor`` "median" centres every window on the
    study's median best index k* (rounded, halves to even); "measures" on the ridge regression of k* on the
    measures at initialization and the design (``cross_fitted_centres``' model, fitted on every architecture),
    written as its linear terms: used only where ``window_refusal`` finds that its held-out window of this size
    beats the median rule, else ``SpecError`` saying why in one line. ``source``: the study's name, recorded."""
    where = "lr_window"
    lr = learning_rates(arch, runs)
    if lr.reason:
        raise SpecError(where, "from", source or "the study", f"has no best rates to predict from: {lr.reason}")
    if lr.window_reason:
        raise SpecError(where, "from", source or "the study", f"is no study of the full sweep: {lr.window_reason}")
    n = int(lr.best["n_rates"].max())
    if not 1 <= size < n:
        raise SpecError(where, "size", size, f"must be from 1 to {n - 1}, below the training study's {n} rates")
    y = lr.table["best_index"].to_numpy(np.float64)
    y = y[np.isfinite(y)]
    out: dict[str, Any] = {"size": int(size), "predictor": predictor} | ({"from": source} if source else {})
    if predictor == "median":
        return out | {"centre": int(centre_index(np.median(y), n))}
    if predictor != "measures":
        raise SpecError(where, "predictor", predictor, "must be one of median, measures")
    measured = set(lr.windows["size"]) if len(lr.windows) else set()
    if size not in measured:  # the section measures WINDOW_SIZES; another size is measured here alike
        lr = replace(lr, windows=rate_windows(rate_sweep(arch, runs), lr.centres, sizes=(size,)))
    refusal = window_refusal(lr.windows, size)
    if refusal:
        raise SpecError(where, "predictor", predictor, f"is refused on {source or 'the study'}: {refusal}")
    return out | {"centre": linear_centre(lr.table)}


def linear_centre(table: pd.DataFrame) -> dict[str, Any]:
    """The ridge of ``cross_fitted_centres`` fitted on every row of ``table`` with a best index, as the linear
    terms ``study.experiment.rate_window.predicted_centre`` evaluates: per numeric feature its column, log, the
    imputation (``fill``, the training median on the feature's scale), ``mean`` and ``scale`` of the standardization
    and its ``weight``; per level of a categorical feature its column, level and weight; and the ``intercept``."""
    rows = table[np.isfinite(table["best_index"].to_numpy(np.float64))].reset_index(drop=True)
    features = [f for f in choose_features(rows, descriptors=True) if f.column in rows.columns]
    model = _ridge(features, base_groups(rows)).fit(feature_table(rows, features), rows["best_index"].to_numpy())
    columns = model.named_steps["columns"]
    coef = np.asarray(model.named_steps["ridge"].coef_, dtype=np.float64).ravel()
    terms: list[dict[str, Any]] = []
    at = 0
    for name, step, cols in columns.transformers_:
        if name == "num":
            fill, scaler = step.named_steps["impute"].statistics_, step.named_steps["scale"]
            log = {f.column: f.log for f in features}
            for j, c in enumerate(cols):
                terms.append(
                    {
                        "column": c,
                        "log": bool(log[c]),
                        "mean": float(scaler.mean_[j]),
                        "scale": float(scaler.scale_[j]),
                        "fill": float(fill[j]),
                        "weight": float(coef[at]),
                    }
                )
                at += 1
        elif name == "cat":
            for c, levels in zip(cols, step.categories_):
                for level in levels:
                    terms.append({"column": c, "level": str(level), "weight": float(coef[at])})
                    at += 1
    return {"intercept": float(np.asarray(model.named_steps["ridge"].intercept_).ravel()[0]), "terms": terms}
