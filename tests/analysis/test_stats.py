"""Correlations, bootstrap intervals, granulated Kendall and lift, against scipy and hand computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import (
    correlations,
    granulated_kendall,
    granulated_kendall_interval,
    granulated_kendall_tau_b,
    psi_table,
    psi_table_tau_b,
)
from archstudy.analysis.columns import AXES
from archstudy.analysis.stats import (
    boot_kendall,
    boot_pearson,
    boot_spearman,
    bootstrap_indices,
    bootstrap_statistic,
    counts,
    pearson_on_scale,
)
from archstudy.sampling import ArchSpec, SpecError

PLAIN = ArchSpec(depth=3, width=10, d_in=4, d_out=2).to_dict()


def grid(values: dict[str, list], **columns) -> pd.DataFrame:
    """A full-factorial grid over spec fields, every other spec field fixed: one row per cell point."""
    rows = [dict(PLAIN, **dict(zip(values, combo))) for combo in itertools.product(*values.values())]
    df = pd.DataFrame(rows)
    df["index"] = np.arange(len(df))
    df["variant"] = "base"
    df["dataset"] = "synthetic"
    for k, v in columns.items():
        df[k] = v
    return df


# -- known relations -------------------------------------------------------------------------------------------


def test_monotone_relation_gives_one_everywhere():
    """test error = 0.1 log10(NLC) + 0.2 exactly: Pearson on log NLC, Spearman, Kendall, every bootstrap
    resample and the granulated Psi are all 1."""
    g = grid({"depth": [3, 5, 7, 9], "norm": ["none", "batch", "layer"], "activation": ["relu", "tanh"]})
    rng = np.random.default_rng(0)
    g["nlc"] = 10 ** rng.uniform(-1, 3, len(g))
    g["test_error"] = 0.1 * np.log10(g["nlc"]) + 0.2
    c = correlations(g, predictors=["nlc"], n_boot=200).iloc[0]
    for k in (
        "pearson",
        "spearman",
        "kendall",
        "pearson_lo",
        "pearson_hi",
        "spearman_lo",
        "spearman_hi",
        "kendall_lo",
        "kendall_hi",
        "psi",
    ):
        assert c[k] == pytest.approx(1.0, abs=1e-12), k
    assert c["psi_axes"] == 3  # depth, norm and activation each have cells; the others none
    assert c["psi_cells"] == 3 * 2 + 4 * 2 + 4 * 3  # cells of depth (norm x act), norm (depth x act), activation


def test_independent_relation_gives_near_zero_with_large_p():
    rng = np.random.default_rng(7)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n), "test_error": rng.normal(size=n)})
    c = correlations(df, predictors=["x"], n_boot=400, axes={}).iloc[0]
    se_tau = math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))  # tau's standard deviation under independence
    assert abs(c["kendall"]) < 2.5 * se_tau
    assert abs(c["spearman"]) < 2.5 / math.sqrt(n - 1) and abs(c["pearson"]) < 2.5 / math.sqrt(n - 1)
    for k in ("pearson", "spearman", "kendall"):
        assert c[f"{k}_p"] > 0.05, k
        assert c[f"{k}_lo"] < 0 < c[f"{k}_hi"], k


def test_bootstrap_interval_covers_the_truth_about_95_percent_of_the_time():
    """Bivariate normal with rho = 0.5: the true Pearson is rho, Kendall 2/pi asin(rho), Spearman
    6/pi asin(rho/2). Over 200 simulated studies each 95% interval covers its truth 88-99% of the time
    (binomial sd of the coverage: 1.5%)."""
    rho, n, sims = 0.5, 80, 200
    truth = {"pearson": rho, "kendall": 2 / math.pi * math.asin(rho), "spearman": 6 / math.pi * math.asin(rho / 2)}
    rng = np.random.default_rng(123)
    covered = {k: 0 for k in truth}
    cov = [[1, rho], [rho, 1]]
    for s in range(sims):
        xy = rng.multivariate_normal([0, 0], cov, size=n)
        df = pd.DataFrame({"x": xy[:, 0], "test_error": xy[:, 1]})
        c = correlations(df, predictors=["x"], n_boot=300, seed=s, axes={}).iloc[0]
        for k, t in truth.items():
            covered[k] += c[f"{k}_lo"] <= t <= c[f"{k}_hi"]
    for k in truth:
        assert 0.88 <= covered[k] / sims <= 0.99, (k, covered[k] / sims)


# -- the bootstrap machinery against scipy on explicit resamples -------------------------------------------------


def test_matrix_bootstrap_equals_scipy_on_explicit_resamples_with_ties():
    rng = np.random.default_rng(1)
    n, b = 40, 60
    x = rng.integers(0, 8, n).astype(float)  # many ties, in x and y
    y = np.round(x * 0.3 + rng.normal(size=n), 1)
    idx = bootstrap_indices(n, b, seed=5)
    c = counts(idx, n)
    assert (c.sum(axis=1) == n).all()
    for mine, ref in ((boot_kendall, sps.kendalltau), (boot_spearman, sps.spearmanr), (boot_pearson, sps.pearsonr)):
        got = mine(x, y, c)
        want = np.array([ref(x[i], y[i]).statistic for i in idx])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10, err_msg=mine.__name__)
    for kind in ("pearson", "spearman", "kendall"):
        np.testing.assert_allclose(
            bootstrap_statistic(kind, x, y, idx, "matrix"), bootstrap_statistic(kind, x, y, idx, "explicit"), atol=1e-10
        )


def test_matrix_and_explicit_methods_agree_through_correlations_with_missing_and_nonpositive_values():
    rng = np.random.default_rng(3)
    n = 60
    df = pd.DataFrame(
        {
            "nlc": 10 ** rng.normal(0, 1, n),
            "synflow": rng.lognormal(0, 3, n),
            "depth": rng.integers(3, 50, n).astype(float),
            "jacob_cov": rng.normal(size=n),
        }
    )
    df["test_error"] = 0.1 * np.log10(df["nlc"]) + rng.normal(0, 0.1, n)
    df.loc[[1, 7, 20], "nlc"] = np.nan
    df.loc[[3, 4], "synflow"] = 0.0  # no log: left out of Pearson only
    df.loc[[5], "test_error"] = np.nan
    a = correlations(df, n_boot=80, method="matrix", axes={})
    b = correlations(df, n_boot=80, method="explicit", axes={})
    cols = [c for c in a.columns if c.endswith(("_lo", "_hi")) or c in ("pearson", "kendall", "spearman", "lift")]
    np.testing.assert_allclose(a[cols].to_numpy(float), b[cols].to_numpy(float), atol=1e-10)
    s = a.set_index("predictor")
    assert (s.loc["synflow", "n"], s.loc["synflow", "n_pearson"]) == (59, 57)
    assert (s.loc["nlc", "n"], s.loc["nlc", "n_pearson"]) == (56, 56)


def test_pearson_uses_the_log_where_the_paper_does():
    rng = np.random.default_rng(4)
    x = 10 ** rng.normal(0, 2, 50)
    x[:3] = [0.0, -1.0, np.nan]
    y = rng.normal(size=50) + np.log10(np.abs(x) + 1e-9)
    r, p, n = pearson_on_scale(x, y, log=True)
    ok = np.isfinite(x) & (x > 0)
    ref = sps.pearsonr(np.log10(x[ok]), y[ok])
    assert (r, p, n) == pytest.approx((ref.statistic, ref.pvalue, 47))
    # the output bias, a log-scaled column no degenerate rule reads (an NLC of 0 or below would be one: no signal back
    # through the net, left out of every fit, tests/analysis/test_degenerate.py)
    df = pd.DataFrame({"bias": x, "test_error": y})
    row = correlations(df, predictors=["bias"], n_boot=10, axes={}).iloc[0]
    assert row["log"] and row["pearson"] == pytest.approx(ref.statistic)
    ref_tau = sps.kendalltau(x[np.isfinite(x)], y[np.isfinite(x)])  # ranks: every finite point, 0 and -1 too
    assert row["kendall"] == pytest.approx(ref_tau.statistic) and row["kendall_p"] == pytest.approx(ref_tau.pvalue)


def test_bootstrap_is_seeded():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.normal(size=50), "test_error": rng.normal(size=50)})
    a = correlations(df, predictors=["x"], n_boot=100, seed=1, axes={})
    b = correlations(df, predictors=["x"], n_boot=100, seed=1, axes={})
    c = correlations(df, predictors=["x"], n_boot=100, seed=2, axes={})
    assert a.equals(b)
    assert a["kendall_lo"].iloc[0] != c["kendall_lo"].iloc[0]


# -- granulated Kendall --------------------------------------------------------------------------------------------


def test_granulated_psi_matches_a_hand_computation_of_jiangs_equations():
    """Jiang et al., *Fantastic Generalization Measures and Where to Find Them* (2020), section 6.1 (tau over all
    pairs, eq. 4-5) by hand on a depth x norm grid. Depth cells (norm fixed):
    none: x (1,2,3), y (.1,.3,.2): 2 concordant, 1 discordant of 3 pairs, tau = 1/3; batch: x (1,5,4),
    y (.5,.4,.6): 1 concordant, 2 discordant, tau = -1/3; psi_depth = 0. Norm cells (depth fixed): depth 3:
    x constant (1, 1): the cell scores 0 and counts; depth 5 and 7: x and y both increase, tau = 1;
    psi_norm = (0 + 1 + 1) / 3. Psi = (0 + 2/3) / 2 = 1/3. Every other axis: one architecture per cell,
    so no cell."""
    g = grid({"norm": ["none", "batch"], "depth": [3, 5, 7]})
    g["x"] = [1, 2, 3, 1, 5, 4]
    g["test_error"] = [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]
    t = psi_table(g, ["x"]).set_index("axis")
    assert t.loc["depth", "psi"] == pytest.approx(0.0) and t.loc["depth", "cells"] == 2
    assert t.loc["norm", "psi"] == pytest.approx(2 / 3) and t.loc["norm", "cells"] == 3
    assert t.loc["norm", "constant_cells"] == 1 and t.loc["depth", "constant_cells"] == 0
    assert (t.drop(["depth", "norm"])["cells"] == 0).all() and t.drop(["depth", "norm"])["psi"].isna().all()
    assert granulated_kendall(g, "x") == pytest.approx(1 / 3)
    two = {"depth": ("depth",), "norm": ("norm",)}  # the same numbers with only the two axes declared
    assert granulated_kendall(g, "x", axes=two) == pytest.approx(1 / 3)
    # Jiang's tau is not tau-b: a tie in the target inside the depth/none cell, x (1,2,3), y (.1,.3,.3): pairs
    # (1,2) +1, (1,3) +1, (2,3) 0: tau = 2/3 (tau-b would be 2 / sqrt(3 * 2) = 0.816)
    g2 = g.copy()
    g2.loc[2, "test_error"] = 0.3
    assert psi_table(g2, ["x"]).set_index("axis").loc["depth", "psi"] == pytest.approx((2 / 3 - 1 / 3) / 2)
    # a non-finite measure leaves its row out of its cells: depth 3 / batch gone, so the norm cell of depth 3
    # has one architecture and no longer counts
    g3 = g.copy()
    g3.loc[3, "x"] = np.nan
    t3 = psi_table(g3, ["x"]).set_index("axis")
    assert t3.loc["norm", "cells"] == 2 and t3.loc["norm", "psi"] == pytest.approx(1.0)
    # depth cells: none (1,2,3) keeps tau = 1/3; batch is left with x (5, 4), y (.4, .6): tau = -1
    assert t3.loc["depth", "psi"] == pytest.approx((1 / 3 - 1) / 2)


def test_the_tau_b_variant_skips_cells_where_the_measure_is_constant():
    """The same grid with the variant averaging tau-b over defined cells: the norm cell of depth 3 (x
    constant) is skipped, psi_norm = 1 and Psi = (0 + 1) / 2 = 0.5; a tie in the target gives scipy's tau-b."""
    g = grid({"norm": ["none", "batch"], "depth": [3, 5, 7]})
    g["x"] = [1, 2, 3, 1, 5, 4]
    g["test_error"] = [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]
    t = psi_table_tau_b(g, ["x"]).set_index("axis")
    assert t.loc["depth", "psi"] == pytest.approx(0.0) and t.loc["depth", "cells"] == 2
    assert t.loc["norm", "psi"] == pytest.approx(1.0) and t.loc["norm", "cells"] == 2
    assert (t.drop(["depth", "norm"])["cells"] == 0).all()
    assert granulated_kendall_tau_b(g, "x") == pytest.approx(0.5)
    g2 = g.copy()
    g2.loc[2, "test_error"] = 0.3
    want = (sps.kendalltau([1, 2, 3], [0.1, 0.3, 0.3]).statistic + (-1 / 3)) / 2
    assert psi_table_tau_b(g2, ["x"]).set_index("axis").loc["depth", "psi"] == pytest.approx(want)
    c = correlations(g, predictors=["x"], n_boot=50).iloc[0]
    assert c["psi"] == pytest.approx(1 / 3) and c["psi_tau_b"] == pytest.approx(0.5)
    assert (c["psi_cells"], c["psi_constant_cells"], c["psi_tau_b_cells"]) == (5, 1, 4)


def test_a_baseline_constant_in_most_cells_separates_the_two_definitions():
    """``depth`` as a predictor on a depth x norm grid: constant in every norm cell. Jiang's Psi counts those
    cells as 0; the tau-b variant skips them and averages the depth axis alone."""
    g = grid({"norm": ["none", "batch", "layer"], "depth": [3, 5, 7, 9]})
    g["test_error"] = 0.01 * g["depth"] + np.where(g["norm"] == "none", 0.0, 0.1) + [0.001 * k for k in range(12)]
    # depth axis: within each norm, error increases with depth: tau = 1 in its 3 cells; norm axis: 4 cells, 0 each
    assert granulated_kendall(g, "depth") == pytest.approx((1.0 + 0.0) / 2)
    assert granulated_kendall_tau_b(g, "depth") == pytest.approx(1.0)


def test_the_interval_of_psi_resamples_base_draws_shared_by_the_axes():
    """Two axes with cell taus known: depth cells all +1 (psi_depth = 1 whenever a resample draws one), norm
    cells +1 and -1 in equal numbers. The unit resampled is the base draw (``index``; here each row), the same
    draw for both axes, each cell weighted by how often the draw of its first row was drawn: checked against
    the same draws made by hand."""
    depths = [3, 5, 7, 9, 11, 13, 15, 17, 19, 21]
    g = grid({"norm": ["none", "batch"], "depth": depths})
    # norm cells (one per depth): y increases with x in 5 depths, decreases in 5
    up = [3, 7, 11, 15, 19]
    sign = np.where(g["depth"].isin(up), 1.0, -1.0)
    g["x"] = np.where(g["norm"] == "none", 0.0, 1.0) + 0.01 * g["depth"]
    g["test_error"] = sign * np.where(g["norm"] == "none", 0.0, 0.01) + 0.1 * g["depth"]
    # depth cells (one per norm): both increase with depth: tau = 1
    t = psi_table(g, ["x"]).set_index("axis")
    assert t.loc["depth", "psi"] == pytest.approx(1.0) and t.loc["norm", "psi"] == pytest.approx(0.0)
    lo, hi = granulated_kendall_interval(g, "x", n_boot=4000, seed=3)
    # by hand: rows 0-9 are norm "none" at the 10 depths, rows 10-19 "batch"; the depth cells' first rows are 0
    # and 10, the norm cell of the k-th depth starts at row k: 11 base draws hold a cell, and are drawn
    c = np.zeros((4000, 11))
    draws = np.random.default_rng(3).integers(0, 11, size=(4000, 11))
    for b in range(4000):
        np.add.at(c[b], draws[b], 1.0)
    norm_taus = np.array([1.0 if d in up else -1.0 for d in depths])
    depth_psi = np.where(c[:, 0] + c[:, 10] > 0, 1.0, np.nan)
    norm_psi = (c[:, :10] @ norm_taus) / c[:, :10].sum(axis=1)
    psi = np.where(np.isnan(depth_psi), norm_psi, (depth_psi + norm_psi) / 2)
    want = np.quantile(psi[np.isfinite(psi)], [0.025, 0.975])
    assert (lo, hi) == pytest.approx(tuple(want))
    assert -1.0 <= lo < 0.5 < hi <= 1.0
    # with fewer than MIN_PSI_CLUSTERS base draws holding a cell (here 9), no interval
    few = g[g["depth"] <= 17]
    assert all(math.isnan(v) for v in granulated_kendall_interval(few, "x", n_boot=100, seed=3))


def test_psi_cells_are_per_dataset_and_skip_axis_groups_its_fields():
    g = grid({"skip": ["none", "after_linear"], "depth": [3, 5]})
    g["x"] = [1.0, 2.0, 3.0, 4.0]
    g["test_error"] = [0.1, 0.2, 0.3, 0.4]
    # skip_strength changes together with skip (part of the skip axis): still one cell per depth
    g.loc[g["skip"] != "none", "skip_strength"] = 0.5
    assert psi_table(g, ["x"]).set_index("axis").loc["skip", "cells"] == 2
    assert psi_table_tau_b(g, ["x"]).set_index("axis").loc["skip", "cells"] == 2
    other = g.assign(dataset="other", test_error=-g["test_error"])
    both = pd.concat([g, other], ignore_index=True)
    t = psi_table(both, ["x"]).set_index("axis")
    assert t.loc["skip", "cells"] == 4 and t.loc["skip", "psi"] == pytest.approx(0.0)  # +1 and -1 per dataset


# -- lift over the best trivial baseline -----------------------------------------------------------------------------


def test_lift_is_over_the_best_baseline_by_abs_tau():
    rng = np.random.default_rng(9)
    n = 120
    err = rng.uniform(size=n)
    df = pd.DataFrame(
        {
            "test_error": err,
            "nlc": 10 ** (err * 3),  # perfect predictor
            "depth": np.round(err * 10 + rng.normal(0, 3, n)),  # decent baseline, positive
            "width": 10 ** (-err + rng.normal(0, 1, n)),  # weaker baseline, negative
            "num_params": rng.uniform(size=n),  # useless
        }
    )
    c = correlations(df, n_boot=200, axes={}).set_index("predictor")
    taus = {k: sps.kendalltau(df[k], err).statistic for k in ("depth", "width", "num_params")}
    best = max(taus, key=lambda k: abs(taus[k]))
    assert best == "depth"
    assert (c["best_baseline"] == best).all()
    assert c.loc["nlc", "lift"] == pytest.approx(1.0 - abs(taus["depth"]))
    assert c.loc["width", "lift"] == pytest.approx(abs(taus["width"]) - abs(taus["depth"]))
    assert c.loc["depth", "lift"] == 0 and c.loc["depth", "lift_lo"] == c.loc["depth", "lift_hi"] == 0
    assert c.loc["nlc", "lift_lo"] > 0  # significantly better than the best baseline
    assert c.loc["nlc", "rank"] == 1 and c.loc["num_params", "rank"] == 4
    rows = correlations(df, n_boot=0, axes={})  # the rows come best first, by |tau|
    assert list(rows["rank"]) == sorted(rows["rank"]) and rows["predictor"].iloc[0] == "nlc"
    assert list(rows["predictor"]) == sorted(taus | {"nlc": 1.0}, key=lambda k: -abs(1.0 if k == "nlc" else taus[k]))


def test_correlation_inputs_are_checked():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "test_error": [0.1, 0.2, 0.3], "s": ["a", "b", "c"]})
    with pytest.raises(SpecError, match=r"correlations.target = 'nope': must be a column"):
        correlations(df, target="nope")
    with pytest.raises(SpecError, match=r"correlations.predictors = 's': must name numeric columns"):
        correlations(df, predictors=["s"])
    with pytest.raises(SpecError, match=r"correlations.n_boot = -1: must be an integer >= 0"):
        correlations(df, predictors=["x"], n_boot=-1)
    with pytest.raises(SpecError, match=r"correlations.confidence = 1.5"):
        correlations(df, predictors=["x"], confidence=1.5)


def test_siblings_are_left_out_of_the_pooled_sample_but_not_of_psi():
    g = grid({"norm": ["none", "batch", "layer"], "depth": [3, 5, 7, 9]})
    g["variant"] = np.where(g["norm"] == "none", "base", "norm")
    g["index"] = g["depth"]  # siblings share the index of their base draw
    rng = np.random.default_rng(2)
    g["x"] = rng.normal(size=len(g))
    g["test_error"] = rng.normal(size=len(g))
    c = correlations(g, predictors=["x"], n_boot=10).iloc[0]
    base = g[g["variant"] == "base"]
    assert c["n"] == 4 and c["kendall"] == pytest.approx(sps.kendalltau(base["x"], base["test_error"]).statistic)
    assert c["psi"] == pytest.approx(granulated_kendall(g, "x"))
    assert c["psi_cells"] == 4 + 3  # norm cells (one per depth) and depth cells (one per norm)
    assert set(AXES) >= {"norm", "depth"}
