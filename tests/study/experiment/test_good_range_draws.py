"""The best of a bootstrap subsample (study.experiment.good_range.best_of_subsamples) draws only the rank of each
subsample's minimum, in O(n log n + B): its distribution is that of pycls's draw, k indices with replacement and
the first argmin (``drawn_best_of_subsamples``, which draws every subsample), checked against exact probabilities
enumerated over every ordered draw for a tiny n with ties, and against those draws on a larger n."""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats as sps

from archstudy.study.experiment.good_range import best_of_subsamples, subsample_size


def drawn_best_of_subsamples(y: np.ndarray, n_boot: int, sample: float, rng: np.random.Generator) -> np.ndarray:
    """pycls's draw in O(B n): draw the (B, k) indices, keep the first drawn lowest y of each row."""
    n = len(y)
    idx = rng.integers(0, n, size=(n_boot, subsample_size(n, sample)))
    best: np.ndarray = idx[np.arange(n_boot), np.argmin(y[idx], axis=1)]
    return best


def exact(y: np.ndarray, k: int) -> np.ndarray:
    """P(index i is the first argmin of k indices drawn uniformly with replacement), by enumerating all n^k draws."""
    n = len(y)
    p = np.zeros(n)
    for draw in itertools.product(range(n), repeat=k):
        d = np.array(draw)
        p[d[np.argmin(y[d])]] += 1
    return p / n**k


def test_the_rank_formula_has_the_exact_distribution_of_the_old_draw():
    y = np.array([0.3, 0.1, 0.5, 0.1, 0.9, 0.3, 0.2])  # ties: 0.1 twice, 0.3 twice
    for k in (2, 3, 5):  # a sample above 1 is a count (pycls), so k = sample
        want = exact(y, k)
        # the closed form best_of_subsamples samples from: P(min rank >= r) = ((n - r) / n)^k, shared within a tie
        n, order = len(y), np.argsort(y, kind="stable")
        by_rank = ((n - np.arange(n)) / n) ** k - ((n - np.arange(n) - 1) / n) ** k
        closed = np.zeros(n)
        for v in np.unique(y):
            members = np.flatnonzero(y == v)
            ranks = np.flatnonzero(y[order] == v)
            closed[members] = by_rank[ranks].sum() / len(members)
        np.testing.assert_allclose(closed, want, rtol=1e-12)
        draws = 200_000
        got = np.bincount(best_of_subsamples(y, draws, k, np.random.default_rng(k)), minlength=n)
        assert got.sum() == draws
        chi2 = sps.chisquare(got[want > 0], draws * want[want > 0])
        assert chi2.pvalue > 1e-4, (k, got / draws, want)
        assert np.all(got[want == 0] == 0)


def test_the_rank_draw_matches_pycls_draws_on_a_larger_sample():
    """n = 37, k = 9 (pycls's 25%), y with a tie group: the two draws' index counts over 60,000 draws each are
    one distribution (chi-square test of homogeneity), and the band's percentiles agree."""
    rng = np.random.default_rng(5)
    y = np.round(rng.normal(size=37), 1)  # rounded: several tie groups
    x = rng.normal(size=37)
    ranked = best_of_subsamples(y, 60_000, 0.25, np.random.default_rng(1))
    drawn = drawn_best_of_subsamples(y, 60_000, 0.25, np.random.default_rng(2))
    table = np.array([np.bincount(ranked, minlength=37), np.bincount(drawn, minlength=37)])
    table = table[:, table.sum(0) > 0]
    assert sps.chi2_contingency(table).pvalue > 1e-4
    np.testing.assert_allclose(
        np.percentile(x[ranked], [2.5, 50, 97.5]), np.percentile(x[drawn], [2.5, 50, 97.5]), atol=0.2
    )


def full_sort(y: np.ndarray, n_boot: int, sample: float, rng: np.random.Generator) -> np.ndarray:
    """The rank draw with every point sorted (O(n log n)), which the code's partial sort must equal exactly."""
    n, k = len(y), subsample_size(len(y), sample)
    u = rng.random((2, n_boot))
    rank = np.minimum(np.floor(n * (1 - (1 - u[0]) ** (1 / k))).astype(int), n - 1)
    order = np.argsort(y, kind="stable")
    ys = y[order]
    out = []
    for r, v in zip(rank, u[1]):
        tie = np.flatnonzero(ys == ys[r])
        out.append(order[tie[0] + min(int(v * len(tie)), len(tie) - 1)])
    return np.array(out)


def test_the_partial_sort_draws_exactly_what_a_full_sort_would():
    rng = np.random.default_rng(11)
    for n, sample in ((37, 0.25), (500, 0.25), (500, 3), (2000, 0.01)):
        y = np.round(rng.normal(size=n), 1)  # many ties, some at the highest rank drawn
        got = best_of_subsamples(y, 400, sample, np.random.default_rng(n))
        assert np.array_equal(got, full_sort(y, 400, sample, np.random.default_rng(n))), (n, sample)
    assert best_of_subsamples(y, 0, 0.25, rng).shape == (0,)


def test_the_draw_costs_no_subsample():
    """Every index in range, n_boot of them, the same for the same generator; a single point is always the best."""
    y = np.random.default_rng(0).normal(size=100_000)
    best = best_of_subsamples(y, 2500, 0.25, np.random.default_rng(3))  # drawn: 62.5 million indices
    assert best.shape == (2500,) and best.min() >= 0 and best.max() < len(y)
    assert np.array_equal(best, best_of_subsamples(y, 2500, 0.25, np.random.default_rng(3)))
    # the minimum of 25,000 draws lies in the lowest ~0.1% of 100,000 ranks nearly always
    assert np.mean(np.argsort(np.argsort(y))[best] < 400) > 0.98
    assert best_of_subsamples(np.array([1.0]), 5, 0.25, np.random.default_rng(0)).tolist() == [0] * 5
