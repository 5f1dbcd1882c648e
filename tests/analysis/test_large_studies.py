"""Statistics whose cost stays bounded on large studies (analysis.stats, analysis.edf): a bootstrap of more than
``BOOTSTRAP_SAMPLE_MAX`` units runs on a random subsample of them with its spread rescaled to the whole sample
(and says so), and keeps its coverage and width; the sign test's interval, computed at once, equals the loop it
replaced."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import correlations, granulated_kendall_interval
from archstudy.analysis import stats as st
from archstudy.analysis.stats import bootstrap_note, rescaled, sign_test, subsample


def _old_sign_test_k(n: int, confidence: float) -> int:
    """The loop ``sign_test`` ran before: the largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) is at least
    ``confidence``, found by stepping k up one at a time."""
    k_best = 0
    for k in range(1, n // 2 + 1):
        if 1.0 - 2.0 * sps.binom.cdf(k - 1, n, 0.5) >= confidence:
            k_best = k
        else:
            break
    return k_best


def test_the_sign_test_interval_equals_the_loop_it_replaced():
    rng = np.random.default_rng(0)
    for n in [*range(0, 40), 57, 100, 333, 1000]:
        for confidence in (0.8, 0.95, 0.99):
            d = rng.normal(0.1, 1.0, n)
            t = sign_test(d, confidence)
            k = _old_sign_test_k(n, confidence)
            s = np.sort(d)
            if k:
                assert (t["ci_lo"], t["ci_hi"]) == (s[k - 1], s[n - k])
                assert t["ci_level"] == pytest.approx(1.0 - 2.0 * sps.binom.cdf(k - 1, n, 0.5), abs=0)
            else:
                assert math.isnan(t["ci_lo"]) and math.isnan(t["ci_level"])


def test_the_subsample_and_the_rescaling_follow_their_formulas():
    assert subsample(100, seed=0, m=100) is None
    sub = subsample(1000, seed=4, m=30)
    assert sub is not None and len(np.unique(sub)) == 30 and (np.diff(sub) > 0).all() and sub.max() < 1000
    assert np.array_equal(sub, subsample(1000, seed=4, m=30))  # seeded
    v = np.array([0.1, 0.3, 0.5])
    np.testing.assert_allclose(rescaled(v, full=0.2, sub=0.3, m=25, n=100), 0.2 + 0.5 * (v - 0.3))
    assert rescaled(v, 0.2, 0.3, m=100, n=100) is v


@pytest.fixture
def small_cap(monkeypatch):
    """Bootstraps of more than 150 units subsample 150 of them."""
    monkeypatch.setattr(st, "BOOTSTRAP_SAMPLE_MAX", 150)


def test_a_subsampled_bootstrap_keeps_its_coverage_and_the_whole_samples_width(small_cap):
    """Bivariate normal, rho = 0.5, n = 600 (Kendall's tau 2/pi asin(rho)): over 60 simulated studies the 95%
    interval from 150 of the 600 covers the truth in 51 to 59 of them (85-98%; binomial sd 2.8%), and is as wide
    as the bootstrap of all 600 (mean width within 15%); without the rescaling it would be twice as wide
    (sqrt(600 / 150)) and cover in all 60."""
    rho, n, sims, compared = 0.5, 600, 60, 8
    truth = {"pearson": rho, "kendall": 2 / math.pi * math.asin(rho), "spearman": 6 / math.pi * math.asin(rho / 2)}
    rng = np.random.default_rng(7)
    covered = {k: 0 for k in truth}
    width = {k: [0.0, 0.0] for k in truth}
    for s in range(sims):
        xy = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
        df = pd.DataFrame({"x": xy[:, 0], "test_error": xy[:, 1]})
        c = correlations(df, predictors=["x"], n_boot=200, seed=s, axes={}).iloc[0]
        assert (c["boot_n"], c["boot_of"]) == (150, 600)
        for k, t in truth.items():
            covered[k] += c[f"{k}_lo"] <= t <= c[f"{k}_hi"]
            width[k][0] += c[f"{k}_hi"] - c[f"{k}_lo"]
        if s < compared:  # the bootstrap of all 600 on the first studies
            st.BOOTSTRAP_SAMPLE_MAX = 10_000
            full = correlations(df, predictors=["x"], n_boot=200, seed=s, axes={}).iloc[0]
            st.BOOTSTRAP_SAMPLE_MAX = 150
            assert full["boot_n"] == 600
            for k in truth:
                width[k][1] += (full[f"{k}_hi"] - full[f"{k}_lo"]) * sims / compared
    for k in truth:
        assert 51 <= covered[k] <= 59, (k, covered[k])
        assert width[k][0] / width[k][1] == pytest.approx(1.0, abs=0.15), k


def test_the_report_is_told_when_the_bootstrap_was_sampled(small_cap):
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    df = pd.DataFrame({"x": x, "test_error": x + rng.normal(size=400), "dataset": "cifar10"})
    note = bootstrap_note(correlations(df, predictors=["x"], n_boot=50, axes={}))
    assert note is not None and "cifar10: 150 of 400 architectures" in note and "sampled" in note
    assert bootstrap_note(correlations(df.iloc[:150], predictors=["x"], n_boot=50, axes={})) is None


def test_a_subsampled_psi_interval_is_as_wide_as_the_whole_samples(small_cap):
    """Pairs of base draws differing in norm only (a cell each; 1,000 base draws): the interval of Psi from 150 of
    them, rescaled, is within 20% of the width from all of them and centred near Psi."""
    rng = np.random.default_rng(3)
    k = 1000
    rows = []
    for i in range(k):
        depth = int(rng.integers(2, 40))
        for norm in ("none", "batch"):
            rows.append({"index": i, "variant": "base", "dataset": "d", "depth": depth, "norm": norm})
    df = pd.DataFrame(rows)
    df["x"] = rng.normal(size=len(df))
    df["test_error"] = df["x"] + rng.normal(0, 1.5, len(df))
    axes = {"depth": ("depth",), "norm": ("norm",)}
    lo, hi = granulated_kendall_interval(df, "x", axes=axes, n_boot=400, seed=2)
    st.BOOTSTRAP_SAMPLE_MAX = 10_000
    full_lo, full_hi = granulated_kendall_interval(df, "x", axes=axes, n_boot=400, seed=2)
    assert (hi - lo) / (full_hi - full_lo) == pytest.approx(1.0, abs=0.2)
    assert (lo + hi) / 2 == pytest.approx((full_lo + full_hi) / 2, abs=0.25 * (full_hi - full_lo))


def test_a_subsampled_permutation_p_value_keeps_its_level_and_says_so(monkeypatch):
    """Two levels of 300 architectures each with the same error distribution and unequal weights: the p-value
    from permutations of 60 of the 600 falls at or below 0.1 in 10-30 of 200 trials (level 0.1; binomial sd 4.2
    trials); a real shift is still found; ``edf`` records how many it dealt, and the note says so."""
    import importlib

    from archstudy.analysis.edf import edf, ks_p_permutation, permutation_note

    edf_module = importlib.import_module("archstudy.analysis.edf")  # the package exports a function of its name

    rng = np.random.default_rng(5)
    low = 0
    for t in range(200):
        a, b = rng.normal(size=300), rng.normal(size=300)
        wa, wb = rng.uniform(0.5, 1.5, 300), rng.uniform(0.5, 1.5, 300)
        low += ks_p_permutation(a, b, wa, wb, permutations=99, seed=t, max_points=60) <= 0.1
    assert 10 <= low <= 30, low
    a, b = rng.normal(size=300), rng.normal(1.0, 1.0, 300)
    assert ks_p_permutation(a, b, np.ones(300), np.ones(300), permutations=99, max_points=60) == 0.01

    monkeypatch.setattr(edf_module, "PERMUTATION_SAMPLE_MAX", 100)
    n = 240
    df = pd.DataFrame(
        {
            "norm": np.repeat(["none", "batch"], n // 2),
            "test_error": rng.uniform(size=n),
            "num_params": 1000.0,
            "variant": "base",
            "arch_id": [f"a{i}" for i in range(n)],
        }
    )
    result = edf(df, "norm", permutations=99)
    row = result.ks.iloc[0]
    assert (row["n_permuted"], row["permuted_of"]) == (100, 240)
    note = permutation_note(result)
    assert note is not None and "100 of their up to 240" in note and "sampled" in note
    assert permutation_note(edf(df.iloc[70:170], "norm", permutations=99)) is None


def test_large_cells_sum_their_pairs_in_n_log_n_as_the_pairs_do(monkeypatch):
    """A small discrete space drawn 600 times (cells of up to ~40 coincident draws), with ties and missing
    values: Psi (Jiang et al.'s and the tau-b variant) from every cell's O(m log m) Kendall sums equals the one
    from all its pairs, and both equal a double loop over each cell's pairs."""
    from archstudy.analysis import psi_table, psi_table_tau_b

    rng = np.random.default_rng(11)
    n = 600
    df = pd.DataFrame(
        {
            "dataset": "d",
            "index": np.arange(n),
            "variant": "base",
            "depth": rng.choice([3, 5], n),
            "norm": rng.choice(["none", "batch", "layer"], n),
            "activation": rng.choice(["relu", "tanh"], n),
            "x": np.round(rng.normal(size=n), 1),
            "test_error": np.round(rng.uniform(size=n), 2),
        }
    )
    df.loc[rng.choice(n, 40, replace=False), "x"] = np.nan
    df.loc[df["norm"] == "layer", "x"] = 1.0  # constant in some cells
    axes = {"depth": ("depth",), "norm": ("norm",), "activation": ("activation",)}
    monkeypatch.setattr(st, "PAIR_CELL_MAX", 10**6)
    pairs = psi_table(df, ["x"], axes=axes), psi_table_tau_b(df, ["x"], axes=axes)
    monkeypatch.setattr(st, "PAIR_CELL_MAX", 2)
    sorted_ = psi_table(df, ["x"], axes=axes), psi_table_tau_b(df, ["x"], axes=axes)
    for a, b in zip(pairs, sorted_):
        assert a[["axis", "cells"]].equals(b[["axis", "cells"]])
        np.testing.assert_allclose(a["psi"], b["psi"], rtol=0, atol=1e-12)
    # a double loop: Jiang et al.'s psi_i = mean over cells of (1 / (m (m-1) / 2)) sum_{i<j} sign dx sign dy
    for axis in axes:
        others = [f for a in axes if a != axis for f in axes[a]]
        taus = []
        for _, g in df[np.isfinite(df["x"])].groupby(others):
            x, y = g["x"].to_numpy(), g["test_error"].to_numpy()
            m = len(x)
            if m >= 2:
                s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(m) for j in range(i + 1, m))
                taus.append(s / (m * (m - 1) / 2))
        assert sorted_[0].set_index("axis").loc[axis, "psi"] == pytest.approx(np.mean(taus), abs=1e-12)
