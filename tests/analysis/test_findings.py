"""The report's findings as one family (``analysis.findings``): the weighted Holm procedure against its formula,
the sequential permutation p-values against Besag and Clifford's, the good range's test at the bootstrap's limit
against the bootstrap, Psi's permutation test against Jiang et al.'s Psi; and "some finding" in null studies at
most at its level (CI-sized; the full measurement is ``archstudy calibrate findings``, docs/analysis.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis.columns import PREDICTORS
from archstudy.analysis.findings import FAMILIES, control, findings, summary, weighted_holm
from archstudy.analysis.good_ranges import best_weights, range_test
from archstudy.analysis.permutation import sequential_p
from archstudy.analysis.stats import granulated_kendall, holm, psi_test
from archstudy.analysis.verdict_calibration import FINDINGS_NULL, null_measures, plan_table, signal_study
from archstudy.study.experiment.good_range import best_of_subsamples, subsample_size


def bound(nominal: float, trials: int, z: float = 2.5) -> float:
    return nominal + z * math.sqrt(nominal * (1 - nominal) / trials)


def test_weighted_holm_is_holm_with_equal_weights_and_the_step_down_formula_with_others():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    assert np.allclose(weighted_holm(p, np.ones(5)), holm(p), equal_nan=True)
    # weights 0.5, 0.25, 0.25: order by p / w: 0.02 (p=0.01, w=0.5), 0.12 (0.03), 0.16 (0.04); remaining weights
    # 1, 0.5, 0.25: adjusted 0.01 * 1 / 0.5 = 0.02, 0.03 * 0.5 / 0.25 = 0.06, max(0.06, 0.04 * 0.25 / 0.25) = 0.06
    got = weighted_holm([0.01, 0.03, 0.04], [0.5, 0.25, 0.25])
    assert got == pytest.approx([0.02, 0.06, 0.06])


def test_each_family_gets_an_equal_share_split_among_its_tests():
    tests = pd.DataFrame(
        {
            "family": ["predictor"] * 4 + ["paired"] + ["edf"] * 2,
            "p": [0.001, 0.2, 0.5, np.nan, 0.004, 0.3, 0.0001],
            "eligible": [True] * 7,
        }
    )
    t = control(tests)
    w = dict(zip(t.index, t["weight"]))
    assert w[3] == 0 and sum(w.values()) == pytest.approx(1.0)
    assert w[0] == pytest.approx(1 / 9) and w[4] == pytest.approx(1 / 3) and w[5] == pytest.approx(1 / 6)
    # by p / w: 0.0006 (edf), 0.009 (predictor), 0.012 (paired): 0.0006 * 1 / (1/6) = 0.0006 * 6
    assert t.loc[6, "p_adjusted"] == pytest.approx(0.0001 * 6) and t.loc[6, "finding"]
    assert t["finding"].tolist() == [True, False, False, False, True, False, True]


def test_sequential_p_values_are_besag_and_cliffords():
    """A test whose permuted statistic exceeds the observed one with probability q: stops at the h-th exceedance
    (p = h / L), or after N draws with (g + 1) / (N + 1); valid: P(p <= a) <= a under the null."""
    rng = np.random.default_rng(0)

    def draw(m: int, active: np.ndarray) -> np.ndarray:
        return rng.random((m, len(active)))

    observed = rng.random(2000)
    p, used = sequential_p(observed, draw, hits=10, max_draws=999, first=50)
    assert np.all((p > 0) & (p <= 1))
    assert np.mean(p <= 0.05) <= bound(0.05, 2000) and np.mean(p <= 0.2) <= bound(0.2, 2000)
    assert np.all(used[p == 10 / used] <= 999)
    never = sequential_p(np.array([2.0, math.nan]), draw, max_draws=999)
    assert never[0][0] == pytest.approx(1 / 1000) and math.isnan(never[0][1])


def test_the_good_ranges_test_reads_the_bootstraps_limit():
    """``best_weights``: the probability of each rank being the best of a k-subsample drawn with replacement, the
    frequencies of ``best_of_subsamples`` (the report's bootstrap) as its draws grow; tied values share theirs."""
    y = np.array([0.3, 0.1, 0.2, 0.2, 0.5, 0.4, 0.9, 0.7, 0.6, 0.8, 0.25, 0.35])
    w = best_weights(y)
    assert w.sum() == pytest.approx(1.0) and w[1] == pytest.approx(w[2])  # the tied 0.2s (ranks 1 and 2)
    k = subsample_size(len(y))
    assert w[0] == pytest.approx(1 - (11 / 12) ** k)
    idx = best_of_subsamples(y, 200_000, 0.25, np.random.default_rng(1))
    freq = np.bincount(np.argsort(np.argsort(y, kind="stable"), kind="stable")[idx], minlength=len(y)) / len(idx)
    assert freq[[0, 3, 4]] == pytest.approx(w[[0, 3, 4]], abs=0.005)
    assert freq[1] + freq[2] == pytest.approx(w[1] + w[2], abs=0.005)


def test_a_window_is_u_shaped_and_a_noise_factor_is_not():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, 200)
    y = np.where((x > 4) & (x < 6), 0.1, 0.6) + rng.normal(0, 0.05, 200)
    u, p = range_test(x, y, "u_shape")
    assert u > 0.3 and p < 0.001
    ps = [range_test(rng.uniform(0, 10, 60), rng.random(60), "u_shape", seed=s)[1] for s in range(60)]
    assert np.mean(np.array(ps) <= 0.1) <= bound(0.1, 60)


def _null(n: int, seed: int, siblings: bool) -> pd.DataFrame:
    return null_measures(plan_table(n, 5, siblings=siblings), seed, **FINDINGS_NULL)


def test_psi_is_jiangs_and_its_permutation_test_holds_a_lone_cell():
    """Psi of the test equals ``granulated_kendall``; the plan of seed 6 with 24 base draws has an axis of one cell,
    which made the interval vanish (and before that, fire in half the studies): now every predictor has one, and
    under the null it excludes 0 at most at its level."""
    design = plan_table(24, 6, siblings=True)
    names = [p.column for p in PREDICTORS if p.kind != "baseline"]
    fired = trials = 0
    for r in range(6):
        df = null_measures(design, r, **FINDINGS_NULL)
        t = psi_test(df, names, seed=r).set_index("predictor")
        if r == 0:
            assert t.loc["nlc", "psi"] == pytest.approx(granulated_kendall(df, "nlc"))
            assert np.isfinite(t["psi_lo"]).all() and np.isfinite(t["psi_p"]).all()
        fired += int((t["psi_p"] <= 0.05).sum())
        trials += len(t)
    assert fired / trials <= bound(0.05, trials)


@pytest.mark.parametrize("siblings", [False, True])
def test_a_report_of_pure_noise_states_no_finding(siblings):
    """Null studies of 48 and 120 base draws (metrics correlated through depth, activation and a latent of the
    draw; test error a random effect of the draw; 8% diverged rows tied at chance): some finding in at most 5% of
    them within binomial error (CI-sized; docs/analysis.md has the full run)."""
    studies = some = 0
    for n in (48, 120):
        for r in range(3):
            found = findings(_null(n, r, siblings), seed=r, predict=False)
            some += bool(found["finding"].any())
            studies += 1
    assert some / studies <= bound(0.05, studies)


def _independent_null(n: int, seed: int, siblings: bool) -> pd.DataFrame:
    """A null written apart from ``verdict_calibration``'s: designs drawn by hand (depth, activation, norm, skip,
    weights), siblings that change one factor, metrics from depth, activation and a latent of the draw, test
    error a random effect of the draw plus noise, 8% of the rows diverged at chance."""
    rng = np.random.default_rng([seed, 99])
    acts = np.array(["relu", "tanh", "selu", "gaussian"])
    rows = []
    for i in range(n):
        base = {
            "index": i,
            "variant": "base",
            "depth": int(rng.choice([3, 5, 7, 9, 11])),
            "width": int(rng.integers(20, 80)),
            "activation": str(rng.choice(acts)),
            "norm": str(rng.choice(["none", "batch", "layer"])),
            "skip": str(rng.choice(["none", "after_linear"])),
            "weights": "dense",
            "param": "sp",
            "imn": "auto",
            "latent": rng.normal(),
            "effect": rng.beta(3, 6),
        }
        rows.append(base)
        if siblings:
            for axis, other in (("weights", "householder"), ("norm", "layer" if base["norm"] != "layer" else "none")):
                rows.append({**base, "variant": axis, axis: other})
    df = pd.DataFrame(rows)
    df["dataset"], df["arch_id"], df["trained"] = "independent", [f"{k:016x}" for k in range(len(df))], True
    z = (df["depth"] - 7) / 3 + df["activation"].map(dict(zip(acts, [0.0, 0.5, -0.5, 1.0])))
    for k, p in enumerate(q for q in PREDICTORS if q.kind != "baseline"):
        v = (0.3 + 0.1 * (k % 5)) * z + 0.7 * df["latent"] + rng.normal(size=len(df))
        df[p.column] = 10.0**v if p.log else v
    df["num_params"] = df["width"] ** 2 * df["depth"]
    df["flops"] = 2.0 * df["num_params"]
    df["test_error"] = np.clip(df["effect"] + rng.normal(0, 0.03, len(df)), 0, 1)
    gone = rng.random(len(df)) < 0.08
    df.loc[gone, "test_error"] = 2 / 3
    return df.drop(columns=["latent", "effect"])


def test_a_null_written_apart_states_no_finding_either():
    studies = some = 0
    for n, siblings in ((48, False), (48, True), (120, False), (120, True)):
        for r in range(2):
            found = findings(_independent_null(n, r, siblings), seed=r, predict=False)
            some += bool(found["finding"].any())
            studies += 1
    assert some / studies <= bound(0.05, studies)


def test_a_u_shaped_nlc_is_found_and_the_page_says_how_many_tests_it_made():
    found = findings(signal_study(120, 0), seed=0, predict=False)
    hit = found[found["finding"]]
    assert ("u_shape", "nlc") in set(zip(hit["family"], hit["subject"]))
    assert set(found["family"]) <= {f.key for f in FAMILIES}
    tested = int(np.isfinite(found["p"]).sum())
    assert summary(found).startswith(f"{tested} tests in ") and f"{len(hit)} finding" in summary(found)
