"""The report's verdicts under a simulated null (``analysis.verdict_calibration``): test error independent of every
metric, proxy, baseline and sibling axis. Each verdict fixed for calibration fires at most at its nominal rate,
within binomial error over the replicates these tests afford (the bound: nominal + 2.5 binomial standard errors;
docs/analysis.md gives the rates measured at full size).

The replicates share one study plan per test (``plan_table``) and redraw the measured columns (``null_measures``):
the null holds conditionally on the designs, which is what a verdict on a given study must respect."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis.columns import PREDICTORS
from archstudy.analysis.edf import edf
from archstudy.analysis.good_ranges import good_ranges
from archstudy.analysis.stats import correlations, granulated_kendall_interval, holm, paired_effects
from archstudy.analysis.verdict_calibration import (
    ALPHA,
    WINDOW_TRUTH,
    WINDOW_VERDICTS,
    null_measures,
    null_rates,
    plan_table,
    window_miss,
    window_rates,
    window_study,
    window_tolerance,
)


def bound(nominal: float, trials: int, z: float = 2.5) -> float:
    """The largest rate consistent with ``nominal`` over ``trials`` independent trials (z binomial SEs above)."""
    return nominal + z * math.sqrt(nominal * (1 - nominal) / trials)


@functools.lru_cache(maxsize=None)
def plan(architectures: int, siblings: bool) -> pd.DataFrame:
    return plan_table(architectures, 5, siblings=siblings)


def test_holm_adjusts_as_the_step_down_formula_says():
    """p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)), NaN left out of m: sorted 0.005, 0.01, 0.03, 0.04 give
    0.02, 0.03, max(0.03, 0.06) = 0.06, max(0.06, 0.04) = 0.06."""
    got = holm(np.array([0.01, 0.04, 0.03, np.nan, 0.005]))
    assert got[[0, 1, 2, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(got[3])
    assert holm(np.array([0.5, 0.9])).tolist() == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm(np.array([])).shape == (0,)


def test_a_significant_predictor_is_judged_over_all_predictors_tested():
    """48 architectures, 50 null studies, the 18 predictors of the correlation table: some raw Kendall p-value
    is below 0.05 in far more than 5% of the studies (the table tests them all at once); after Holm over the
    predictors, in at most 5% within binomial error."""
    raw = adjusted = 0
    studies = 50
    for r in range(studies):
        c = correlations(null_measures(plan(48, False), r), n_boot=0, axes={})
        raw += bool((c["kendall_p"] < ALPHA).any())
        adjusted += bool((c["kendall_p_holm"] < ALPHA).any())
    assert raw / studies > bound(ALPHA, studies)
    assert adjusted / studies <= bound(ALPHA, studies)


def test_some_paired_sibling_effect_fires_at_most_at_its_level_after_holm():
    """Every sibling comparison of a study (weights, parameterization, three pairs of norms, skips, IMN, and
    the contexts they split into) is tested at once: after Holm over them, some effect is declared in at most
    5% of null studies (24 base draws with siblings, 60 studies)."""
    fired = 0
    studies = 60
    for r in range(studies):
        p = paired_effects(null_measures(plan(24, True), r))
        fired += bool((p["p_holm"] < ALPHA).any())
    assert fired / studies <= bound(ALPHA, studies)


def test_the_interval_of_psi_covers_zero_under_the_null():
    """Psi of the NLC on null studies of 24 base draws with siblings (three plans, 20 studies each): its 95%
    interval excludes 0 in at most 5% of them within binomial error. Resampling cells within each axis
    independently (the code before) excluded 0 in about half the studies of the plan of seed 6, whose depth axis
    has one cell (two base draws that happen to differ in depth only): a lone cell is the same in every resample,
    so its tau (+1 or -1 by chance) moved Psi by a sixth with no spread."""
    fired = 0
    studies = 0
    for seed in (5, 6, 7):
        design = plan_table(24, seed, siblings=True)
        for r in range(20):
            lo, hi = granulated_kendall_interval(null_measures(design, r), "nlc", n_boot=400, seed=r)
            fired += bool(lo > 0 or hi < 0)
            studies += 1
    assert fired / studies <= bound(ALPHA, studies)


def test_the_normalized_ks_p_value_is_calibrated_in_small_studies():
    """8 base draws: levels of one or two architectures, where Kolmogorov's asymptotic distribution at Kish's
    effective sizes (the code before) gave p = 0 to two single architectures of different error. The
    permutation p-value of every pair of levels is below 0.05 in at most 5% of the pairs."""
    fired = trials = 0
    for r in range(40):
        ks = edf(null_measures(plan(8, False), r), permutations=199, seed=r).ks
        p = ks["p_normalized"].to_numpy(np.float64)
        fired += int((p[np.isfinite(p)] < ALPHA).sum())
        trials += int(np.isfinite(p).sum())
    assert trials > 200
    assert fired / trials <= bound(ALPHA, trials)


def test_the_largest_ks_of_an_axis_is_judged_over_its_pairs():
    """The report's EDF table shows, per axis, the largest KS of any two levels with its p-value: activation has
    up to 10 levels (45 pairs), depth 4 bins. Over 30 null studies of 48 architectures the raw p of the largest
    KS is below 0.05 for far more than 5% of the axes; Holm's adjusted p (over the axis' pairs), for at most 5%."""
    raw = adjusted = axes = 0
    for r in range(30):
        ks = edf(null_measures(plan(48, False), r), permutations=19, seed=r).ks
        top = ks.loc[ks.groupby("axis")["ks"].idxmax()]
        raw += int((top["p"] < ALPHA).sum())
        adjusted += int((top["p_holm"] < ALPHA).sum())
        axes += len(top)
    assert raw / axes > bound(ALPHA, axes)
    assert adjusted / axes <= bound(ALPHA, axes)


def test_u_shaped_fires_at_most_at_its_level_for_unrelated_factors():
    """The 18 predictors of 40 null studies of 48 architectures: the good range of the best-of-subsample bootstrap
    leaves 10% of the points on each side for about 9% of them (the code before called those U-shaped); with the
    permutation p-value required below 0.05, at most 5% within binomial error are."""
    fired = trials = 0
    factors = [p.column for p in PREDICTORS]
    for r in range(40):
        g = good_ranges(null_measures(plan(48, False), r), factors=factors, seed=r)
        fired += int(g["u_shaped"].sum())
        trials += len(g)
    assert fired / trials <= bound(ALPHA, trials)


def test_null_rates_counts_trials_and_rates_per_verdict():
    """The bench function on two tiny null studies: one row per verdict asked, rate = fired / trials, and the
    study-level verdict has one trial per study."""
    names = ["Kendall p < 0.05 (each predictor)", "some predictor's Kendall p < 0.05 (study)"]
    t = null_rates([8], 2, verdicts=names, n_boot=50).set_index("verdict")
    assert list(t.index) == names
    assert t.loc[names[1], "trials"] == 2
    assert t.loc[names[0], "trials"] == 2 * 18  # every predictor of the table, both studies
    assert (t["rate"] == t["fired"] / t["trials"]).all()
    assert t.loc[names[0], "sd"] == pytest.approx(math.sqrt(0.05 * 0.95 / 36))


def test_the_window_populations_true_bands_are_what_their_draws_give():
    """The true band of each population of the NLC window's verdict, against an independent computation: with no
    NLC effect the central 95% of log10 NLC over 200,000 draws; with the window, the NLC paper's [1, 3]; and the
    rule's tolerance of one sd of an end, a third of log10 3 decades for both (both bands are wider than that)."""
    x, _ = window_study(200_000, 0, "flat")
    lo, hi = np.percentile(np.log10(x), [2.5, 97.5])
    assert WINDOW_TRUTH["flat"] == pytest.approx((lo, hi), abs=0.03)
    assert WINDOW_TRUTH["window"] == (0.0, pytest.approx(math.log10(3)))
    assert window_tolerance(WINDOW_TRUTH["window"]) == pytest.approx(window_tolerance(WINDOW_TRUTH["flat"]))
    assert window_tolerance(WINDOW_TRUTH["window"]) == pytest.approx(math.log10(3) / 3)
    assert window_miss(1.0, 3.0, WINDOW_TRUTH["window"]) == pytest.approx(0.0, abs=1e-12)
    assert window_miss(0.5, 3.0, WINDOW_TRUTH["window"]) == pytest.approx(math.log10(2))


def test_the_study_s_own_nlc_window_is_rarely_called_large_enough_when_far_from_the_true_band():
    """48 architectures of the windowed population (error flat inside NLC [1, 3]), 40 studies: the study's own
    band is called large enough yet lies more than two of the rule's tolerances from [1, 3] in at most 5% of them,
    within binomial error; 120 architectures, 5 studies: most bands are called large enough and none is far
    (at least 3 of 5: the rule is not calibrated by never firing). docs/analysis.md gives the rates at full size."""
    t = window_rates([48], 40, kinds=["window"], seed=3).iloc[0]
    assert t["trials"] == 40 and t["rate"] == t["fired"] / 40
    assert t["rate"] <= bound(ALPHA, 40)
    big = window_rates([120], 5, kinds=["window"], seed=3).iloc[0]
    assert big["large_enough"] >= 0.6 and big["far"] == 0.0 and big["fired"] == 0


def test_null_rates_carries_the_nlc_window_verdicts():
    """The bench's table (``archstudy calibrate verdicts``) holds the window verdicts' rows, named and
    counted as the others (one trial per study)."""
    name = WINDOW_VERDICTS["flat"]
    t = null_rates([20], 2, verdicts=[name]).set_index("verdict")
    assert list(t.index) == [name] and t.loc[name, "trials"] == 2 and t.loc[name, "unit"] == "study"
    with pytest.raises(KeyError):
        null_rates([20], 1, verdicts=["no such verdict"])
