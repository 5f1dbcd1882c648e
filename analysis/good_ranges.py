"""Good ranges: where the best architectures lie, for every numeric factor and initialization metric, by the
empirical bootstrap of pycls's sweep analysis; and the NLC's good range with the window it gives.

The empirical bootstrap (Radosavovic, Kosaraju, Girshick, He and Dollár, *Designing Network Design Spaces*,
2020, section 3.1; pycls's ``pycls/sweep/analysis.py``, ``get_filters``): draw a subsample of 25% of the n
architectures with replacement, keep the factor's value x of its lowest-error architecture, repeat B times;
the good range is the central 95% of those B values (its 2.5th and 97.5th percentiles: ``low``, ``high``)
and ``best`` their median. Percentiles are taken on the scale the report plots the factor on (log10 for the
NLC, bias, proxies, ...: ``columns.PREDICTORS``), so the interpolation is geometric there.

The NLC's good range is the data's answer to an open question of the NLC paper (section 4: "we do not
currently have a way to detect the ideal NLC range for a given dataset, except through observation"); the
paper's own window is [1, 3] (section 4, figure 2). ``nlc_good_range`` decides whether the study is large enough
for its band to be used instead, from the bootstrap itself: the band must not move much if the study were drawn
again. The study's architectures are resampled with replacement R = 100 times, the band recomputed each time, and
the root-mean-square distance of each end from the study's own (in decades of NLC: its spread and bias together)
required to be at most a third of the band's own width and of the paper's window's (log10 3 = 0.48 decades):

    large enough  <=>  subsample >= 5 architectures  and  rms(low), rms(high) <= min(width, log10 3) / 3

(width = log10 high - log10 low > 0). With fewer than 5 architectures per subsample the "best of a subsample"
is close to a random architecture (pycls's 25% of n < 20). An end whose resampling spread is above a third
of the window puts the keep/skip decision of the architectures near it at the mercy of which architectures
the study happened to draw; a band wide because the best architectures are not concentrated has ends in
the population's thin tails, which move by more than the absolute limit. On synthetic windowed populations
(tests/analysis, ``window_population``: error flat at 0.15 inside NLC [1, 3], rising to 0.64 outside) the
criterion holds for 0 of 8 seeds at n = 20 to 40, 1 of 8 at 60 and 8 of 8 at 90, 120, 250 and 500, where the
band lies around [1, 3] and its ends move by 0.03 to 0.15 decades (docs/analysis.md).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Integer, Real, check

from archstudy.study.experiment.good_range import (
    CONFIDENCE,
    N_BOOT,
    STABILITY_DRAWS,
    SUBSAMPLE,
    good_range,
    subsample_size,
)

from archstudy.study.experiment.window_rule import PAPER_WINDOW, window_of

from .columns import AXES, PREDICTOR_BY_COLUMN, PREDICTORS
from .results import Results, architectures_table

U_TAIL = 0.10  # U-shaped: at least this share of the architectures below the good range and above it
U_PERMUTATIONS = 99  # permutations of test error for the U-shape's p-value (resolution 0.01)
U_ALPHA = 0.05  # the level of the U-shape verdict


def tails(x: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """Shares of the points below ``low`` and above ``high``."""
    x = np.asarray(x, dtype=np.float64)
    return (float((x < low).mean()), float((x > high).mean())) if len(x) else (math.nan, math.nan)


def is_u_shaped(below: float, above: float) -> bool:
    """The best architectures lie inside the factor's range: at least ``U_TAIL`` of all on each side."""
    return bool(below >= U_TAIL and above >= U_TAIL)


def u_shape_p(
    x: np.ndarray,
    y: np.ndarray,
    below: float,
    above: float,
    *,
    log: bool,
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    permutations: int = U_PERMUTATIONS,
) -> float:
    """Permutation p-value of the U-shape: with u = min(below, above) the shares of the points outside the good
    range, p = (1 + #{u* >= u}) / (1 + P), u* of the good range refitted (``good_range``, the same settings)
    after test error is dealt to the points at random, P = ``permutations`` times. Exact under the null that
    test error does not depend on x. NaN where the tails are not both at least ``U_TAIL`` (not U-shaped
    whatever the p-value, so not computed). ``x``, ``y``: the points the range was fitted on (finite).

    Without it the verdict fired under the null: the best of a 25% subsample is one of the few lowest-error
    architectures of the study most of the time, so the range spans their x wherever they happen to lie, and
    often leaves 10% of the points beyond it on each side for a factor unrelated to test error
    (docs/analysis.md)."""
    u = min(below, above)
    if not (len(x) and is_u_shaped(below, above)):
        return math.nan
    rng = np.random.default_rng([seed, 4])
    hits = 0
    for _ in range(permutations):
        low, _, high = good_range(
            x, rng.permutation(y), log=log, sample=sample, n_boot=n_boot, confidence=confidence, seed=rng
        )
        hits += min(tails(x, low, high)) >= u
    return (1 + hits) / (1 + permutations)


def u_shaped_verdict(below: float, above: float, p: float) -> bool:
    """U-shaped: at least ``U_TAIL`` of the points on each side of the good range (``is_u_shaped``) and the
    permutation p-value of that (``u_shape_p``) below ``U_ALPHA``."""
    return bool(is_u_shaped(below, above) and math.isfinite(p) and p < U_ALPHA)


def _scale(column: str) -> tuple[str, bool]:
    p = PREDICTOR_BY_COLUMN.get(column)
    return (p.label, p.log) if p else (column, False)


def default_factors(df: pd.DataFrame) -> list[str]:
    """Every predictor of ``columns.PREDICTORS`` (init metrics, proxies, trivial baselines), then every
    numeric field of a sampled axis (dilation, shift, init_scale, skip strength, ...), present in ``df``."""
    out = [p.column for p in PREDICTORS if p.column in df.columns]
    for group in AXES.values():
        for f in group:
            if (
                f in df.columns
                and f not in out
                and pd.api.types.is_numeric_dtype(df[f])
                and not pd.api.types.is_bool_dtype(df[f])
            ):
                out.append(f)
    return out


def _sample(df: pd.DataFrame, variants: Iterable[str] | None) -> pd.DataFrame:
    if variants is None or "variant" not in df.columns:
        return df
    return df[df["variant"].isin(list(variants))]


def _groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "dataset" not in df.columns:
        return [("", df)]
    return list(df.groupby(df["dataset"].astype(str), sort=True))


def _check(where: str, sample: float, n_boot: int, confidence: float) -> tuple[float, int, float]:
    sample = check(where, "sample", Real(0.0, lo_open=True), sample)
    n_boot = check(where, "n_boot", Integer(1), n_boot)
    confidence = check(where, "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    return sample, n_boot, confidence


GOOD_RANGE_COLUMNS = [
    "dataset",
    "factor",
    "label",
    "log",
    "n",
    "subsample",
    "low",
    "best",
    "high",
    "min",
    "max",
    "below",
    "above",
    "u_p",
    "u_shaped",
]


def good_ranges(
    results: Results | pd.DataFrame,
    factors: Iterable[str] | None = None,
    *,
    target: str = "test_error",
    variants: Iterable[str] | None = ("base",),
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per dataset and factor: the good range (``low``, ``best``, ``high``; see ``good_range``) of
    each factor (default ``default_factors``) over the random draws (``variants``) with a finite target and
    factor, the factor's observed ``min`` / ``max``, the share of architectures ``below`` low and ``above``
    high, and ``u_shaped``: both shares at least ``U_TAIL`` (the best architectures lie inside the range,
    not at an end of it) and ``u_p``, the permutation p-value of that (``u_shape_p``), below ``U_ALPHA``.
    Every factor draws from the same seeded stream, so factors measured on the same architectures share their
    subsamples. ``results``: a ``Results`` or its architectures table."""
    df = architectures_table(results, "good_ranges")
    sample, n_boot, confidence = _check("good_ranges", sample, n_boot, confidence)
    if target not in df.columns:
        raise SpecError("good_ranges", "target", target, "must be a column of the table")
    names = default_factors(df) if factors is None else list(factors)
    for name in names:
        if name not in df.columns or not pd.api.types.is_numeric_dtype(df[name]):
            raise SpecError("good_ranges", "factors", name, "must name numeric columns of the table")
    rows = []
    for ds, g in _groups(_sample(df, variants)):
        y_all = g[target].to_numpy(np.float64)
        for name in names:
            label, log = _scale(name)
            x_all = g[name].to_numpy(np.float64)
            ok = np.isfinite(x_all) & np.isfinite(y_all) & ((x_all > 0) if log else True)
            x = x_all[ok]
            low, best, high = good_range(
                x, y_all[ok], log=log, sample=sample, n_boot=n_boot, confidence=confidence, seed=seed
            )
            n = int(ok.sum())
            below, above = tails(x, low, high)
            u_p = u_shape_p(
                x, y_all[ok], below, above, log=log, sample=sample, n_boot=n_boot, confidence=confidence, seed=seed
            )
            rows.append(
                {
                    "dataset": ds,
                    "factor": name,
                    "label": label,
                    "log": log,
                    "n": n,
                    "subsample": subsample_size(n, sample) if n else 0,
                    "low": low,
                    "best": best,
                    "high": high,
                    "min": float(x.min()) if n else math.nan,
                    "max": float(x.max()) if n else math.nan,
                    "below": below,
                    "above": above,
                    "u_p": u_p,
                    "u_shaped": u_shaped_verdict(below, above, u_p),
                }
            )
    return pd.DataFrame(rows, columns=GOOD_RANGE_COLUMNS)


# -- the NLC's good range and the window it gives ----------------------------------------------------------------------

NLC_GOOD_RANGE_COLUMNS = [
    "dataset",
    "n",
    "subsample",
    "low",
    "best",
    "high",
    "sd_low",
    "sd_high",
    "width",
    "large_enough",
    "reason",
    "lo",
    "hi",
    "source",
]


def nlc_good_range(
    results: Results | pd.DataFrame,
    *,
    target: str = "test_error",
    variants: Iterable[str] | None = ("base",),
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    draws: int = STABILITY_DRAWS,
    fallback: tuple[float, float] = PAPER_WINDOW,
) -> pd.DataFrame:
    """One row per dataset: the NLC's good range (``low``, ``best``, ``high``, as ``good_ranges``), the
    root-mean-square distances of its ends from the study's own over ``draws`` resamples of the study
    (``sd_low``, ``sd_high``, in decades: ``band_stability(..., around=...)``) and its ``width`` in decades,
    whether the study is ``large_enough`` for it to serve as the pruning window (module docstring) and if not the
    ``reason``; ``lo``, ``hi``: the window to use, the
    study's own band when large enough, else ``fallback`` (the NLC paper's [1, 3]), named by ``source``
    ("study" or "paper")."""
    df = architectures_table(results, "nlc_good_range")
    sample, n_boot, confidence = _check("nlc_good_range", sample, n_boot, confidence)
    draws = check("nlc_good_range", "draws", Integer(2), draws)
    rows: list[dict[str, Any]] = []
    if "nlc" not in df.columns or target not in df.columns:
        return pd.DataFrame(rows, columns=NLC_GOOD_RANGE_COLUMNS)
    for ds, g in _groups(_sample(df, variants)):
        rows.append(
            {
                "dataset": ds,
                **window_of(
                    g["nlc"].to_numpy(np.float64),
                    g[target].to_numpy(np.float64),
                    sample=sample,
                    n_boot=n_boot,
                    confidence=confidence,
                    seed=seed,
                    draws=draws,
                    fallback=fallback,
                ),
            }
        )
    return pd.DataFrame(rows, columns=NLC_GOOD_RANGE_COLUMNS)
