"""The good range of a factor: where the best architectures lie, by the empirical bootstrap of pycls.

The empirical bootstrap (Radosavovic, Kosaraju, Girshick, He and Dollar, *Designing Network Design Spaces*,
2020, section 3.1; pycls's ``pycls/sweep/analysis.py``, ``get_filters``): draw a subsample of 25% of the n
architectures with replacement, keep the factor's value x of its lowest-error architecture, repeat B times;
the good range is the central 95% of those B values (its 2.5th and 97.5th percentiles: ``low``, ``high``)
and ``best`` their median, on the scale the factor is plotted on (log10 for the NLC). ``band_stability`` gives
how far the range's ends move when the architectures are resampled.

Torch-free and declared beside the config: the NLC window rule of pruning at launch (``window_rule``) decides with
it which architectures a study trains, and the analysis (``analysis.good_ranges``, the range-distance predictors,
the joint predictor's baseline) computes every factor's good range with it.
"""

from __future__ import annotations

import math

import numpy as np

SUBSAMPLE = 0.25  # pycls get_filters(sample=0.25): a quarter of the architectures per bootstrap draw
N_BOOT = 2500  # pycls get_filters(b=2500)
CONFIDENCE = 0.95  # pycls get_filters(alpha=5): the 2.5th and 97.5th percentiles
STABILITY_DRAWS = 100  # resamples of the whole study for the band's stability (``band_stability``)


def subsample_size(n: int, sample: float = SUBSAMPLE) -> int:
    """pycls's rule: ``sample`` architectures if it is above 1, else that share of n (at least 1)."""
    return int(sample) if sample > 1 else max(1, int(n * sample))


def best_of_subsamples(y: np.ndarray, n_boot: int, sample: float, rng: np.random.Generator) -> np.ndarray:
    """Index of the lowest-``y`` point in each of ``n_boot`` subsamples of k = ``subsample_size(n, sample)`` points
    drawn with replacement (ties: any of the tied points, each equally likely), in O(n + n_boot) time: the
    subsample itself is never drawn, only the rank of its minimum. With the points sorted by y (ranks 0..n-1), a
    draw's rank is floor(n U) for U uniform on [0, 1), so the minimum's rank over k draws is floor(n M) with M the
    minimum of k uniforms, whose CDF is 1 - (1 - m)^k: M = 1 - (1 - V)^(1/k) for V uniform (inverse transform),
    exactly, and P(rank >= r) = ((n - r) / n)^k. Tied y values share the event "the minimum is among them": given
    it, the first drawn of them is equally likely any one of them, so the rank picks the tie group and a second
    uniform picks within it (the distribution of drawing the k indices and taking the first argmin)."""
    y = np.asarray(y)
    n = len(y)
    k = subsample_size(n, sample)
    if n_boot == 0:
        return np.zeros(0, dtype=np.int64)
    u = rng.random((2, n_boot))
    rank = np.minimum(np.floor(n * -np.expm1(np.log1p(-u[0]) / k)).astype(np.int64), n - 1)
    # only the lowest ranks are drawn (P(rank >= r) = (1 - r/n)^k, about exp(-r / 4) at pycls's k = n/4): the points
    # up to the highest drawn rank's value, every tie of it included, sorted (stable: the order of a full sort)
    top = np.partition(y, int(rank.max()))[int(rank.max())]
    low = np.flatnonzero(y <= top)
    order = low[np.argsort(y[low], kind="stable")]
    ys = y[order]
    # the tie group [start, end) of each sorted position
    new_value = np.r_[True, ys[1:] != ys[:-1]]
    starts = np.flatnonzero(new_value)
    ends = np.r_[starts[1:], len(ys)]
    group = np.cumsum(new_value) - 1
    g = group[rank]
    pick = starts[g] + np.minimum(np.floor(u[1] * (ends[g] - starts[g])).astype(np.int64), ends[g] - starts[g] - 1)
    best: np.ndarray = order[pick]
    return best


def good_range(
    x: np.ndarray,
    y: np.ndarray,
    *,
    log: bool = False,
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int | np.random.Generator = 0,
) -> tuple[float, float, float]:
    """(low, best, high) of factor ``x`` for target ``y`` (lower is better) by the empirical bootstrap (see
    the module docstring); points where x or y is not finite (or x <= 0 on a log scale) are left out. NaN
    without points."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y) & ((x > 0) if log else True)
    if not ok.any():
        return math.nan, math.nan, math.nan
    t = np.log10(x[ok]) if log else x[ok]
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    best = t[best_of_subsamples(y[ok], n_boot, sample, rng)]
    a = 100 * (1 - confidence) / 2
    lo, mid, hi = np.percentile(best, [a, 50, 100 - a])
    back = (lambda v: float(10.0**v)) if log else float
    return back(lo), back(mid), back(hi)


def band_stability(
    x: np.ndarray,
    y: np.ndarray,
    *,
    log: bool = True,
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    draws: int = STABILITY_DRAWS,
    seed: int = 0,
    around: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Spread of the good range's two ends (in decades on a log scale) over ``draws`` resamples of the points with
    replacement, each resample's band from ``good_range``: their standard deviations, or with ``around`` (the
    band's own ends) their root-mean-square distances from it, sqrt(mean_r (e*_r - e)^2) (the bootstrap's
    estimate of an end's error: its spread and its bias; Efron and Tibshirani, *An Introduction to the Bootstrap*,
    1993, sections 6.2 and 10.2)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng = np.random.default_rng([seed, 1])  # a stream of its own: the band itself is unchanged by this
    ends = []
    for _ in range(draws):
        i = rng.integers(0, len(x), len(x))
        lo, _, hi = good_range(x[i], y[i], log=log, sample=sample, n_boot=n_boot, confidence=confidence, seed=rng)
        ends.append((lo, hi))
    e = np.log10(np.array(ends)) if log else np.array(ends)
    if around is None:
        return float(np.std(e[:, 0], ddof=1)), float(np.std(e[:, 1], ddof=1))
    centre = np.log10(np.array(around)) if log else np.array(around)
    rms = np.sqrt(np.mean((e - centre) ** 2, axis=0))
    return float(rms[0]), float(rms[1])
