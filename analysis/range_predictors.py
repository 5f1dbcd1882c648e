"""Range predictors: a U-shaped relation needs a score that measures the distance from its good range.

The NLC predicts test error through a window (NLC paper, section 4, figure 2: optimal error needs an initial
NLC of about 1 to 3, and the error grows the further one deviates), which a rank correlation of the raw
NLC under-states: below the window and above it the error is high, so no monotone score orders both
sides. The range score of a metric x is its distance from the centre of its good range (``good_ranges``),

    d(x) = |t(x) - (t(low) + t(high)) / 2|,    t = log10 on a log scale (``columns.PREDICTORS``), else x,

and it is judged out of sample, so that fitting the range does not flatter it: the architectures are split
at random into two halves, the good range is fitted on one, and Kendall's tau between d and test error is
computed on the other; repeated ``splits`` times. The table gives the mean tau and its spread over the
splits, beside the raw metric's tau on the same held-out halves (so the two are compared on the same
architectures), and the gain |tau_range| - |tau_raw| per split.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats as sps

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Integer, Real, check
from archstudy.study.experiment.good_range import CONFIDENCE, N_BOOT, SUBSAMPLE, good_range

from .columns import PREDICTOR_BY_COLUMN, PREDICTORS
from .good_ranges import _groups, _sample, tails, u_shape_p, u_shaped_verdict
from .results import Results, architectures_table
from .stats import MATRIX_BOOTSTRAP_MAX, _blas_threads, boot_kendall

SPLITS = 50  # random halves: the spread of tau over them is the uncertainty the table reports
FIT_BOOT = 500  # bootstrap draws of each half's good range (its centre is what the score uses)
MIN_POINTS = 8  # architectures with a finite metric and target for a good range to be fitted at all


def range_distance(x: np.ndarray, low: float, high: float, log: bool) -> np.ndarray:
    """d(x) = |t(x) - (t(low) + t(high)) / 2| (module docstring); NaN where t(x) is undefined."""
    x = np.asarray(x, dtype=np.float64)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(x > 0, np.log10(np.where(x > 0, x, 1.0)), np.nan)
        centre = (math.log10(low) + math.log10(high)) / 2
    else:
        t, centre = x, (low + high) / 2
    return np.abs(t - centre)


RANGE_PREDICTOR_COLUMNS = [
    "dataset",
    "metric",
    "label",
    "log",
    "n",
    "splits",
    "u_shaped",
    "centre",
    "tau",
    "tau_sd",
    "tau_lo",
    "tau_hi",
    "raw_tau",
    "raw_tau_sd",
    "gain",
    "gain_lo",
    "gain_hi",
    "kendall_full",
]


# Up to this many points one Kendall tau is faster from ``stats.boot_kendall``'s n x n sign matrices than from
# scipy's O(n log n) ``kendalltau``; above, scipy's (docs/analysis.md has the timings).
MATRIX_TAU_MAX = 200
# scipy's kendalltau without its input-checking wrapper (the nan-policy and axis handling cost more than the
# statistic at a few hundred points): the points given it here are finite, one-dimensional and of equal length.
_KENDALLTAU = getattr(sps.kendalltau, "__wrapped__", sps.kendalltau)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall tau-b of the finite pairs: by ``stats.boot_kendall``'s sign matrices up to ``MATRIX_TAU_MAX``
    points, by scipy above (the two agree to rounding)."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return math.nan
    if ok.sum() <= MATRIX_TAU_MAX:
        return float(boot_kendall(a[ok], b[ok], np.ones((1, int(ok.sum()))))[0])
    return float(_KENDALLTAU(a[ok], b[ok]).statistic)


def _subset_taus(x: np.ndarray, y: np.ndarray, subsets: list[np.ndarray]) -> np.ndarray:
    """Kendall tau-b of (x, y) on each subset of the points (indices; all finite): one ``boot_kendall`` over the
    subsets' 0/1 masks (a pair counts with weight c_i c_j, so a mask's tau-b is the subset's) up to
    ``MATRIX_BOOTSTRAP_MAX`` points, else ``_tau`` of each."""
    if not subsets:
        return np.zeros(0)
    if len(x) > MATRIX_BOOTSTRAP_MAX:
        return np.array([_tau(x[s], y[s]) for s in subsets])
    masks = np.zeros((len(subsets), len(x)))
    for k, s in enumerate(subsets):
        masks[k, s] = 1.0
    taus = boot_kendall(x, y, masks)
    return np.where(np.array([len(s) for s in subsets]) >= 3, taus, np.nan)


def range_predictors(
    results: Results | pd.DataFrame,
    metrics: Iterable[str] | None = None,
    *,
    target: str = "test_error",
    variants: Iterable[str] | None = ("base",),
    splits: int = SPLITS,
    sample: float = SUBSAMPLE,
    n_boot: int = FIT_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per dataset and metric (default every predictor of ``columns.PREDICTORS`` with at least
    ``MIN_POINTS`` finite values among the random draws): the range score's out-of-sample Kendall tau with
    ``target`` (module docstring): ``tau`` (mean over ``splits`` random halves), ``tau_sd``, ``tau_lo`` /
    ``tau_hi`` (the central ``confidence`` share of the splits), the raw metric's ``raw_tau`` / ``raw_tau_sd``
    on the same held-out halves, ``gain`` = mean of |tau| - |raw tau| with ``gain_lo`` / ``gain_hi``,
    ``centre`` (median fitted centre, on the metric's own scale), ``kendall_full`` (the raw metric's tau-b on
    all the draws), and ``u_shaped`` (as ``good_ranges`` says of the metric on all the draws). The good range of
    each half is fitted with ``n_boot`` bootstrap draws of ``sample`` of its architectures."""
    df = architectures_table(results, "range_predictors")
    if target not in df.columns:
        raise SpecError("range_predictors", "target", target, "must be a column of the table")
    splits = check("range_predictors", "splits", Integer(1), splits)
    sample = check("range_predictors", "sample", Real(0.0, lo_open=True), sample)
    n_boot = check("range_predictors", "n_boot", Integer(1), n_boot)
    confidence = check("range_predictors", "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    names = [p.column for p in PREDICTORS if p.column in df.columns] if metrics is None else list(metrics)
    for name in names:
        if name not in df.columns or not pd.api.types.is_numeric_dtype(df[name]):
            raise SpecError("range_predictors", "metrics", name, "must name numeric columns of the table")
    a = 100 * (1 - confidence) / 2
    with _blas_threads().limit(limits=1, user_api="blas"):  # small products: see ``stats.correlations``
        rows = _predictor_rows(df, names, target, variants, splits, sample, n_boot, confidence, seed, metrics, a)
    return pd.DataFrame(rows, columns=RANGE_PREDICTOR_COLUMNS)


def _predictor_rows(
    df: pd.DataFrame,
    names: list[str],
    target: str,
    variants: Iterable[str] | None,
    splits: int,
    sample: float,
    n_boot: int,
    confidence: float,
    seed: int,
    metrics: Iterable[str] | None,
    a: float,
) -> list[dict[str, Any]]:
    rows = []
    for ds, g in _groups(_sample(df, variants)):
        y_all = g[target].to_numpy(np.float64)
        for name in names:
            p = PREDICTOR_BY_COLUMN.get(name)
            log = bool(p and p.log)
            x_all = g[name].to_numpy(np.float64)
            ok = np.isfinite(x_all) & np.isfinite(y_all) & ((x_all > 0) if log else True)
            x, y = x_all[ok], y_all[ok]
            n = len(x)
            if n < MIN_POINTS and metrics is None:
                continue
            rng = np.random.default_rng([seed, 2])  # the same halves for every metric measured on the same rows
            split_taus: list[float] = []
            helds: list[np.ndarray] = []
            centres: list[float] = []
            for _ in range(splits if n >= MIN_POINTS else 0):
                perm = rng.permutation(n)
                fit, held = perm[: n // 2], perm[n // 2 :]
                low, _, high = good_range(
                    x[fit], y[fit], log=log, sample=sample, n_boot=n_boot, confidence=confidence, seed=rng
                )
                d = range_distance(x[held], low, high, log)
                split_taus.append(_tau(d, y[held]))
                helds.append(held)
                centres.append((math.log10(low) + math.log10(high)) / 2 if log else (low + high) / 2)
            # the raw metric on the same held-out halves, all splits at once
            taus, raws = np.array(split_taus), _subset_taus(x, y, helds)
            gain = np.abs(taus) - np.abs(raws)
            # the shape is that of ``good_ranges`` (same draws, same seed): one verdict in the whole report
            full_low, _, full_high = good_range(
                x, y, log=log, sample=sample, n_boot=N_BOOT, confidence=confidence, seed=seed
            )
            centre = float(np.median(centres)) if centres else math.nan
            below, above = tails(x, full_low, full_high)
            u_p = u_shape_p(x, y, below, above, log=log, sample=sample, n_boot=N_BOOT, confidence=confidence, seed=seed)
            rows.append(
                {
                    "dataset": ds,
                    "metric": name,
                    "label": p.label if p else name,
                    "log": log,
                    "n": n,
                    "splits": len(taus),
                    "u_shaped": u_shaped_verdict(below, above, u_p),
                    "centre": 10**centre if log and math.isfinite(centre) else centre,
                    **_summary("tau", taus, a),
                    "raw_tau": _mean(raws),
                    "raw_tau_sd": _sd(raws),
                    "gain": _mean(gain),
                    "gain_lo": _pct(gain, a),
                    "gain_hi": _pct(gain, 100 - a),
                    "kendall_full": _tau(x, y),
                }
            )
    return rows


def _mean(v: np.ndarray) -> float:
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else math.nan


def _sd(v: np.ndarray) -> float:
    v = v[np.isfinite(v)]
    return float(v.std(ddof=1)) if len(v) > 1 else math.nan


def _pct(v: np.ndarray, q: float) -> float:
    v = v[np.isfinite(v)]
    return float(np.percentile(v, q)) if len(v) else math.nan


def _summary(name: str, v: np.ndarray, a: float) -> dict[str, float]:
    return {name: _mean(v), f"{name}_sd": _sd(v), f"{name}_lo": _pct(v, a), f"{name}_hi": _pct(v, 100 - a)}
