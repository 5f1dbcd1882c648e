"""The design-space analysis: error EDFs (plain and complexity-normalized) and KS against hand computations and
scipy, good ranges recovering a known interval, the study's own NLC window and its stability rule, window
predictors, and the training-curves figure on a synthetic curves table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import synthetic_study as synth
from scipy import stats as sps

from archstudy.analysis import edf, good_ranges, nlc_good_range, range_predictors
from archstudy.analysis.edf import axis_levels, ks_distance, ks_p_weighted, normalized_weights, step_cdf
from archstudy.study.experiment.good_range import best_of_subsamples, good_range, subsample_size
from archstudy.analysis.range_predictors import _tau, range_distance
from archstudy.sampling import SpecError


# -- error EDFs --------------------------------------------------------------------------------------------------------


def small_table() -> pd.DataFrame:
    """Two norm levels. log10 num_params: 3 (1000), 3.477 (3000), 4 (10000); with bins a tenth of a decade
    wide from 3, they fall in bins 0, 4 and 10. batch occupies {0, 4}, none {0, 4, 10}: the shared bins are
    {0, 4}, k = 2.
    batch: errors 0.10 (bin 0), 0.45 (bin 0), 0.20 (bin 4): weights 1/(2*2), 1/(2*2), 1/(2*1) = .25, .25, .5
    none:  errors 0.40 (bin 0), 0.15 (bin 4), 0.50 (bin 4), 0.60 (bin 10): weights .5, .25, .25, 0"""
    return pd.DataFrame(
        {
            "dataset": "d",
            "variant": "base",
            "arch_id": list("abcdefg"),
            "norm": ["batch"] * 3 + ["none"] * 4,
            "num_params": [1000, 1000, 3000, 1000, 3000, 3000, 10000],
            "test_error": [0.10, 0.45, 0.20, 0.40, 0.15, 0.50, 0.60],
        }
    )


def test_edf_and_normalized_edf_equal_a_hand_computation():
    e = edf(small_table(), by="norm")
    c = e.curves.set_index("arch_id")
    # plain EDF at each architecture's own error: the share of its level at or below it
    assert c.loc[["a", "c", "b"], "cdf"].tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert c.loc[["e", "d", "f", "g"], "cdf"].tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0])
    # normalized weights and EDF (the docstring of small_table)
    assert c.loc[list("abcdefg"), "normalized_weight"].tolist() == pytest.approx([0.25, 0.25, 0.5, 0.5, 0.25, 0.25, 0])
    assert c.loc[["a", "c", "b"], "normalized_cdf"].tolist() == pytest.approx([0.25, 0.75, 1.0])
    assert c.loc[["e", "d", "f", "g"], "normalized_cdf"].tolist() == pytest.approx([0.25, 0.75, 1.0, 1.0])
    lv = e.levels.set_index("level")
    assert lv.loc["batch", ["n", "min", "mean"]].tolist() == pytest.approx([3, 0.10, 0.25])
    assert lv.loc["none", ["n", "min", "mean"]].tolist() == pytest.approx([4, 0.15, 0.4125])
    assert lv.loc["none", "n_normalized"] == 3 and (lv["bins"] == 2).all()
    assert lv.loc["none", "normalized_mean"] == pytest.approx(0.5 * 0.40 + 0.25 * 0.15 + 0.25 * 0.50)
    # KS by hand on the grid of all errors (.10 .15 .20 .40 .45 .50 .60): plain |F_b - F_n| =
    # 1/3, 1/12, 5/12, 1/6, 1/2, 1/4, 0 -> 1/2; normalized: .25, 0, .5, 0, .25, 0, 0 -> 1/2
    k = e.ks.iloc[0]
    assert (k["a"], k["b"], k["n_a"], k["n_b"]) == ("batch", "none", 3, 4)
    assert k["ks"] == pytest.approx(0.5) and k["ks_normalized"] == pytest.approx(0.5)
    ref = sps.ks_2samp([0.10, 0.45, 0.20], [0.40, 0.15, 0.50, 0.60])
    assert k["ks"] == pytest.approx(ref.statistic) and k["p"] == pytest.approx(ref.pvalue)
    # the complexity distributions differ too: batch {3, 3, 3.477}, none {3, 3.477, 3.477, 4} -> 2/3 - 1/4
    assert k["complexity_ks"] == pytest.approx(2 / 3 - 1 / 4)


def test_the_weighted_ks_equals_scipy_on_the_samples_the_weights_replicate():
    """Integer-proportional weights are replicated points: the weighted KS of (a, w_a) and (b, w_b) equals
    scipy's KS of a repeated w_a times and b repeated w_b times (weights .25/.25/.5 = counts 1/1/2)."""
    a, wa = np.array([0.10, 0.45, 0.20]), np.array([1, 1, 2])
    b, wb = np.array([0.40, 0.15, 0.50, 0.60, 0.33]), np.array([2, 1, 1, 0, 3])
    want = sps.ks_2samp(np.repeat(a, wa), np.repeat(b, wb)).statistic
    assert ks_distance(a, b, wa / wa.sum(), wb / wb.sum()) == pytest.approx(want)
    assert ks_distance(a, b, wa, wb) == pytest.approx(want)  # only proportions matter


def test_ks_distance_equals_scipy_with_ties_and_unequal_sizes():
    rng = np.random.default_rng(4)
    for n, m in ((5, 9), (30, 31), (200, 17)):
        a = np.round(rng.normal(size=n), 1)
        b = np.round(rng.normal(0.3, 1.2, size=m), 1)
        assert ks_distance(a, b) == pytest.approx(sps.ks_2samp(a, b).statistic, abs=1e-12)
    assert math.isnan(ks_distance(a, b, np.zeros(len(a))))


def test_the_weighted_ks_p_value_is_kolmogorovs_with_effective_sizes():
    """Equal weights: Kish's effective size is n, so the p-value is scipy's asymptotic KS p-value."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=400), rng.normal(0.2, 1, size=300)
    d = ks_distance(a, b)
    want = sps.ks_2samp(a, b, method="asymp").pvalue
    assert ks_p_weighted(d, np.ones(400), np.ones(300)) == pytest.approx(want, rel=1e-6)


def test_step_cdf_and_normalized_weights_basics():
    assert step_cdf(np.array([0.3, 0.1, 0.3, 0.2])).tolist() == pytest.approx([1.0, 0.25, 1.0, 0.5])  # ties share
    w, k = normalized_weights(np.array([100.0, 100.0, 100.0]), np.array(["x", "y", "y"]))
    assert k == 1 and w.tolist() == pytest.approx([1.0, 0.5, 0.5])  # one size: the plain weights
    w, k = normalized_weights(np.array([10.0, 1000.0, np.nan]), np.array(["x", "y", "y"]))
    assert k == 0 and not w.any()  # no bin shared by both levels


def test_axis_levels_bin_depth_and_keep_categories_in_order():
    df = pd.DataFrame({"depth": [3, 5, 13, 15, 25, 27, 37, 49, 49], "norm": list("bnlbnlbnl"), "skip": ["none"] * 9})
    depth = axis_levels(df, "depth")  # 7 distinct values <= 8: kept as they are
    assert list(depth.cat.categories) == ["3", "5", "13", "15", "25", "27", "37", "49"]
    binned = axis_levels(df, "depth", max_levels=4, numeric_bins=4)  # 4 bins of width 11.5 from 3
    assert list(binned.cat.categories) == ["3-13", "15-25", "27-37", "49-49"]
    assert binned.astype(str).tolist() == ["3-13"] * 3 + ["15-25"] * 2 + ["27-37"] * 2 + ["49-49"] * 2
    assert list(axis_levels(df, "norm").cat.categories) == ["b", "l", "n"]


def test_edf_covers_every_axis_with_two_levels_and_checks_its_inputs(tiny_study_dir):
    from archstudy.analysis import load_results
    from archstudy.analysis.columns import AXES

    r = load_results(tiny_study_dir)
    e = edf(r)
    base = r.architectures[r.architectures["variant"] == "base"]
    for axis, fields in AXES.items():
        assert (axis in set(e.levels["axis"])) == (base[fields[0]].nunique() >= 2), axis
    for _, g in e.curves.groupby(["axis", "level"]):  # every level's EDF ends at 1
        assert g["cdf"].max() == pytest.approx(1.0)
        assert g["normalized_cdf"].max() == pytest.approx(1.0)
    assert (e.levels.groupby("axis")["n"].sum() <= len(base)).all()
    with pytest.raises(SpecError, match=r"edf.by = 'nope': must be an axis"):
        edf(r, by="nope")
    with pytest.raises(SpecError, match=r"edf.complexity = 'activation': must name a numeric column"):
        edf(r, complexity="activation")


# -- good ranges -------------------------------------------------------------------------------------------------------


def test_good_ranges_recover_the_interval_where_the_best_models_lie():
    """x uniform on [0, 10]; every architecture with x in [4, 6] has error 0.1 (a tie: a subsample's best is
    the first of them drawn, a uniformly random one), every other 0.5-0.9. A subsample of 50 of 200 holds
    one from [4, 6] except with probability 0.8^50 (1e-5), so the best of each subsample lies in [4, 6],
    uniformly: the good range is inside [4, 6] and covers most of it. The same on a log scale."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 200)
    inside = (x >= 4) & (x <= 6)
    y = np.where(inside, 0.1, rng.uniform(0.5, 0.9, 200))
    df = pd.DataFrame({"x": x, "lx": 10 ** (x / 5 + 0.2), "test_error": y, "variant": "base", "dataset": "d"})
    g = good_ranges(df, ["x"]).iloc[0]
    assert 4 <= g["low"] < 4.3 and 5.7 < g["high"] <= 6 and 4.5 < g["best"] < 5.5
    assert g["subsample"] == 50 and g["n"] == 200 and g["u_shaped"]
    assert g["below"] == pytest.approx((x < g["low"]).mean()) and g["above"] == pytest.approx((x > g["high"]).mean())
    from archstudy.analysis.columns import Predictor, PREDICTOR_BY_COLUMN

    PREDICTOR_BY_COLUMN["lx"] = Predictor("lx", "metric", True, "test", column="lx")  # a log-scale factor
    try:
        lg = good_ranges(df, ["lx"]).iloc[0]
    finally:
        del PREDICTOR_BY_COLUMN["lx"]
    assert lg["log"] and 10 ** (4 / 5 + 0.2) <= lg["low"] and lg["high"] <= 10 ** (6 / 5 + 0.2)
    # on the log scale the percentiles interpolate geometrically: best = 10^(median of log10 of the bests)
    assert math.log10(lg["best"]) == pytest.approx(g["best"] / 5 + 0.2, abs=1e-9)


def test_good_range_is_pycls_empirical_bootstrap_by_hand():
    """The same draws by hand: B subsamples of k = max(1, int(0.25 n)) indices with replacement, the argmin of y
    in each, the 2.5 / 50 / 97.5th percentiles of x there. Recomputed (2026-11-28) for the O(B) draw, which draws
    each subsample's minimum rank, floor(n (1 - (1 - U)^(1 / k))) of y's ascending order, instead of its k
    indices (test_good_range_draws: the same distribution as drawing them), so the seeded numbers changed; the
    percentiles of pycls's own draw agree within their Monte Carlo error."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=37), rng.normal(size=37)
    u = np.random.default_rng(7).random((2, 300))  # the rank's uniform, and the tie's (no ties here)
    rank = np.floor(37 * (1 - (1 - u[0]) ** (1 / 9))).astype(int)
    want = np.percentile(x[np.argsort(y)[rank]], [2.5, 50, 97.5])
    assert good_range(x, y, n_boot=300, seed=7) == pytest.approx(tuple(want))
    assert subsample_size(37) == 9 and subsample_size(3) == 1 and subsample_size(10, 4) == 4
    best = best_of_subsamples(y, 100, 0.25, np.random.default_rng(0))
    assert best.shape == (100,) and set(best) <= set(range(37))
    # pycls's draw (k indices, the first argmin), many times: the same band within its Monte Carlo error
    idx = np.random.default_rng(8).integers(0, 37, size=(20000, 9))
    pycls = np.percentile(x[idx[np.arange(20000), np.argmin(y[idx], axis=1)]], [2.5, 50, 97.5])
    assert good_range(x, y, n_boot=20000, seed=9) == pytest.approx(tuple(pycls), abs=0.05)


def test_good_ranges_defaults_inputs_and_missing_values(tiny_study_dir):
    from archstudy.analysis import load_results

    arch = load_results(tiny_study_dir).architectures
    g = good_ranges(arch).set_index("factor")
    assert {"nlc", "bias", "depth", "width", "ar", "variability", "nwot", "init_scale", "dilation"} <= set(g.index)
    assert g.loc["lar_diameter", "n"] == 0 and math.isnan(g.loc["lar_diameter", "low"])  # not measured
    assert (g.loc[g["n"] > 0, "low"] <= g.loc[g["n"] > 0, "high"]).all()
    with pytest.raises(SpecError, match=r"good_ranges.factors = 'activation': must name numeric columns"):
        good_ranges(arch, ["activation"])
    with pytest.raises(SpecError, match=r"good_ranges.sample = 0"):
        good_ranges(arch, sample=0)


# -- the study's own NLC window ----------------------------------------------------------------------------------------


def test_the_nlc_window_of_a_large_windowed_study_is_its_good_range():
    df = synth.window_population(120, seed=0)
    w = nlc_good_range(df).iloc[0]
    g = good_ranges(df, ["nlc"]).iloc[0]
    assert w["large_enough"] and w["source"] == "study" and w["reason"] == ""
    assert (w["lo"], w["hi"]) == (w["low"], w["high"]) == (g["low"], g["high"])
    assert 0.6 < w["low"] < 1.2 and 2.5 < w["high"] < 5  # the population's window is [1, 3]
    assert 0 < max(w["sd_low"], w["sd_high"]) <= min(w["width"], math.log10(3)) / 3


def test_a_small_study_keeps_the_papers_window_and_says_why():
    tiny = nlc_good_range(synth.window_population(12, seed=0)).iloc[0]
    assert not tiny["large_enough"] and tiny["source"] == "paper" and (tiny["lo"], tiny["hi"]) == (1.0, 3.0)
    assert "a bootstrap subsample holds 3 (< 5)" in tiny["reason"]
    small = nlc_good_range(synth.window_population(30, seed=0)).iloc[0]
    assert not small["large_enough"] and (small["lo"], small["hi"]) == (1.0, 3.0)
    assert small["reason"].startswith("the band is not stable: an end moves by")
    assert max(small["sd_low"], small["sd_high"]) > min(small["width"], math.log10(3)) / 3
    none = nlc_good_range(pd.DataFrame({"nlc": [np.nan, 2.0], "test_error": [0.1, np.nan]})).iloc[0]
    assert not none["large_enough"] and none["n"] == 0


# -- window predictors -------------------------------------------------------------------------------------------------


def test_the_window_score_shows_a_windowed_relation_that_the_raw_nlc_understates():
    """The researcher's case: median test error 0.15 inside NLC [1, 3], 0.64 above 100, raw Kendall 0.44.
    The window distance, fitted on random halves and scored on the others, ranks far better."""
    df = synth.window_population(120, seed=0)
    nlc, err = df["nlc"].to_numpy(), df["test_error"].to_numpy()
    assert np.median(err[(nlc >= 1) & (nlc <= 3)]) == pytest.approx(0.15, abs=0.01)
    assert np.median(err[nlc > 100]) == pytest.approx(0.64, abs=0.01)
    w = range_predictors(df, ["nlc"]).iloc[0]
    assert w["kendall_full"] == pytest.approx(sps.kendalltau(nlc, err).statistic) and 0.4 < w["kendall_full"] < 0.47
    assert w["splits"] == 50 and w["u_shaped"]
    assert w["tau"] > 0.55 and w["tau"] - w["raw_tau"] > 0.15 and w["gain_lo"] > 0
    assert abs(w["raw_tau"] - w["kendall_full"]) < 0.05  # the halves see the same relation
    assert 1.0 < w["centre"] < 3.0


def test_a_monotone_relation_gains_nothing_from_a_window():
    rng = np.random.default_rng(3)
    x = 10 ** rng.uniform(0, 3, 150)
    df = pd.DataFrame({"nlc": x, "test_error": 0.1 * np.log10(x) + rng.normal(0, 0.05, 150), "variant": "base"})
    w = range_predictors(df, ["nlc"], splits=20).iloc[0]
    assert not w["u_shaped"] and w["raw_tau"] > 0.6 and w["gain"] < 0.05


def test_window_distance_and_tau():
    assert range_distance(np.array([1.0, 10.0, 100.0, 0.0]), 1.0, 100.0, log=True)[:3].tolist() == pytest.approx(
        [1.0, 0.0, 1.0]
    )
    assert math.isnan(range_distance(np.array([0.0]), 1.0, 100.0, log=True)[0])
    assert range_distance(np.array([-1.0, 3.0]), 0.0, 2.0, log=False).tolist() == pytest.approx([2.0, 2.0])
    rng = np.random.default_rng(8)
    a, b = np.round(rng.normal(size=60), 1), np.round(rng.normal(size=60), 1)  # ties: tau-b
    assert _tau(a, b) == pytest.approx(sps.kendalltau(a, b).statistic, abs=1e-6)


# -- training curves ---------------------------------------------------------------------------------------------------


def test_the_curves_figure_draws_the_selected_run_of_the_best_and_typical_architectures():
    """A synthetic curves table (one row per architecture, run and epoch): the panels are the 2 best and the
    2 closest to the median test error, each with the selected run's validation error and training loss."""
    from archstudy.analysis.figures import fig_curves

    rng = np.random.default_rng(0)
    arch = pd.DataFrame(
        {
            "arch_id": [f"a{k}" for k in range(7)],
            "test_error": [0.5, 0.1, 0.3, 0.2, 0.9, 0.4, 0.35],
            "lr_index": rng.integers(0, 3, 7),
        }
    )
    rows = []
    for a in arch["arch_id"]:
        for run in range(3):
            for epoch in range(1, 11):
                rows.append(
                    {
                        "arch_id": a,
                        "lr_index": run,
                        "epoch": epoch,
                        "train_loss": 2.0 / epoch + run,
                        "monitored_error": 0.5 / epoch + 0.1 * run,
                        "monitored": "val",
                        "lr": 0.1 / 3 ** (epoch // 5),
                    }
                )
    curves = pd.DataFrame(rows)
    fig = fig_curves(curves, arch, n_best=2, n_typical=2)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    titles = [ax.get_title() for ax in panels]
    assert titles[:2] == ["best #1: a1 (test error 0.100)", "best #2: a3 (test error 0.200)"]
    assert sorted(t.split(":")[1].split()[0] for t in titles[2:]) == ["a2", "a6"]  # 0.30, 0.35 around 0.35
    first = panels[0]
    val = first.lines[0].get_ydata()
    want = curves[(curves["arch_id"] == "a1") & (curves["lr_index"] == arch.loc[1, "lr_index"])]["monitored_error"]
    assert np.allclose(val, want) and first.lines[0].get_label() == "validation error"
    with pytest.raises(ValueError, match="lacks lr"):
        fig_curves(curves.drop(columns="lr"), arch)
