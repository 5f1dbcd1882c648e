"""The joint predictor's verdicts are calibrated (analysis.predict_simulation): on simulated studies where nothing
predicts test error, "the joint model beats the best baseline / NLC alone" fires at most at its nominal one-sided
2.5% and a learner's interval excludes 0 at most at its nominal 5% (within binomial error over the replicates a test
can afford; the full run is `archstudy calibrate predictor`, docs/predict.md); with a known signal the interval of
the raw NLC covers its true held-out rho (Moran's formula). The code before the corrected evaluation failed this:
on the same null it said "the joint model beats NLC alone" in 16 of 100 studies of 48 architectures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import predict_simulation as S

N = 40


@pytest.fixture(scope="module")
def null():
    # the joint model is the ridge alone (the boosted trees' fits dominate the time; the choice among joint
    # learners is tested in test_predict), two fold seeds: about a second a study on an idle core
    return S.calibrate("null", 12, N, seed=0, joint=("linear",), repeats=2)


def test_under_the_null_the_beats_verdicts_fire_at_most_at_their_nominal_rate(null):
    bound = sps.binom.ppf(0.99, len(null), 0.025)  # 99% of nominal studies fire at most this often
    for flag in ("beats_baseline", "beats_nlc"):
        assert (null[flag] == 1).sum() <= bound, (flag, null[flag].tolist())
    assert (null["joint_above_zero"] == 1).sum() <= sps.binom.ppf(0.99, len(null), 0.025)


def test_under_the_null_no_learners_interval_excludes_zero_beyond_its_nominal_rate(null):
    flags = null[[c for c in null.columns if c.startswith("excludes:")]]
    assert flags.shape[1] >= 18  # the joint model, the best baseline, the ridge, every rule, the descriptors
    fired, trials = int(np.nansum(flags.to_numpy())), int(flags.notna().to_numpy().sum())
    assert trials >= 12 * 15
    # pooled over learners (correlated within a study, so a generous 99.9% binomial bound)
    assert fired <= sps.binom.ppf(0.999, trials, 0.05), (fired, trials)
    # and no single learner fires in more than a third of the studies
    assert (flags.mean() <= 1 / 3).all(), flags.mean()[flags.mean() > 1 / 3]


def test_morans_expected_spearman_is_the_mean_of_simulated_small_samples():
    rng = np.random.default_rng(0)
    r, m, draws = 0.6, 9, 20000
    a = rng.normal(size=(draws, m))
    b = r * a + np.sqrt(1 - r * r) * rng.normal(size=(draws, m))
    ra, rb = a.argsort(1).argsort(1), b.argsort(1).argsort(1)
    rho = 1 - 6 * ((ra - rb) ** 2).sum(1) / (m * (m * m - 1))
    assert S.expected_spearman(r, m) == pytest.approx(rho.mean(), abs=4 * rho.std() / np.sqrt(draws))
    assert S.expected_spearman(r, 10**6) == pytest.approx(6 / np.pi * np.arcsin(r / 2), abs=1e-5)


def test_with_a_known_signal_the_raw_nlcs_interval_covers_its_true_rho():
    table = S.calibrate("signal", 6, N, seed=100, r=0.6, joint=("linear",), repeats=2)
    assert table["covers"].sum() >= sps.binom.ppf(0.01, len(table), 0.95), table[["truth", "covers"]]
    assert (table["excludes:raw:nlc"] == 1).mean() >= 0.5  # and it has the power to see it


def test_rates_are_counts_with_clopper_pearson_intervals():
    table = pd.DataFrame({"replicate": range(4), "beats_nlc": [1, 0, 0, -1], "covers": [1.0, 1.0, np.nan, 0.0]})
    r = S.rates(table).set_index("flag")
    assert (r.at["beats_nlc", "fired"], r.at["beats_nlc", "of"]) == (1, 4)
    assert r.at["covers", "rate"] == pytest.approx(2 / 3)
    assert r.at["beats_nlc", "lo"] == pytest.approx(sps.beta.ppf(0.025, 1, 4))
    assert r.at["beats_nlc", "hi"] == pytest.approx(sps.beta.ppf(0.975, 2, 3))
