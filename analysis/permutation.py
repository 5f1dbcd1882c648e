"""Permutation p-values fine enough for a family of tests: sequential Monte Carlo that stops once the answer is clear.

A report's findings are controlled together (``analysis.findings``), so a p-value may have to be as small as 0.05
divided by a hundred tests or more: a fixed 99 or 999 permutations cannot reach it. Besag and Clifford's
sequential p-value (*Sequential Monte Carlo p-values*, Biometrika 78, 1991) draws permutations until h of them
reach the observed statistic or N have been drawn: p = h / L after L draws when the h-th exceedance came at draw L,
else (g + 1) / (N + 1) with g exceedances in all N. It is exactly valid (P(p <= a) <= a under the null) and costs
about h / p draws: a statistic unrelated to test error stops after a few dozen, one that may be a finding runs to N.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

HITS = 10  # h: exceedances after which a test stops
MAX_DRAWS = 9_999  # N: the most permutations of one test (p-values down to 1e-4)
FIRST_BATCH = 99  # permutations drawn for every test before any stops; then batches ten times larger


def sequential_p(
    observed: np.ndarray,
    draw: Callable[[int, np.ndarray], np.ndarray],
    *,
    hits: int = HITS,
    max_draws: int = MAX_DRAWS,
    first: int = FIRST_BATCH,
) -> tuple[np.ndarray, np.ndarray]:
    """Besag and Clifford's sequential p-values (module docstring) of T tests at once, large statistics
    significant: ``observed`` (T,); ``draw(m, active)`` returns (m, len(active)) statistics of m fresh
    permutations for the tests ``active`` (indices). Returns (p, draws) per test; NaN where ``observed`` is NaN."""
    observed = np.asarray(observed, dtype=np.float64)
    t = len(observed)
    p = np.full(t, math.nan)
    used = np.zeros(t, dtype=np.int64)
    exceed = np.zeros(t, dtype=np.int64)
    active = np.flatnonzero(np.isfinite(observed))
    size = first
    while len(active):
        m = min(size, max_draws - int(used[active[0]]))
        stats = np.asarray(draw(m, active), dtype=np.float64).reshape(m, len(active))
        # a permuted statistic equal to the observed one counts (ties: the conservative side); rounding alone (the
        # same sum in another order) must not separate them
        hit = stats >= observed[active] - 1e-9 * np.maximum(1.0, np.abs(observed[active]))
        running = np.cumsum(hit, axis=0) + exceed[active]
        done = running[-1] >= hits
        for i in np.flatnonzero(done):
            at = int(np.argmax(running[:, i] >= hits))  # the draw of the h-th exceedance
            p[active[i]] = hits / (used[active[i]] + at + 1)
        exceed[active] = running[-1]
        used[active] += m
        stop = done | (used[active] >= max_draws)
        for i in np.flatnonzero(stop & ~done):
            p[active[i]] = (exceed[active[i]] + 1) / (used[active[i]] + 1)
        active = active[~stop]
        size *= 10
    return p, used
