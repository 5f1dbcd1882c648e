"""Paired sibling effects (sign test, median interval) and the NLC pruning analysis, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import load_results, nlc_pruning, paired_effects, sign_test
from archstudy.analysis.pruning import pruning_curve
from archstudy.analysis.stats import sibling_pairs
from archstudy.sampling import SpecError

import synthetic_study as synth


def test_sign_test_and_median_interval_by_hand():
    d = np.array([0.3, -0.1, 0.2, 0.5, 0.0, 0.4, 0.1, 0.6, 0.7, -0.2])
    t = sign_test(d)
    assert (t["n_pairs"], t["n_pos"], t["n_neg"], t["n_zero"]) == (10, 7, 2, 1)
    assert t["median"] == pytest.approx(0.25)
    assert t["p_sign"] == pytest.approx(sps.binomtest(7, 9, 0.5).pvalue)  # zeros dropped
    # n = 10: P(Bin(10, 1/2) <= 1) = 11/1024, so k = 2 covers 1 - 22/1024 = 97.85% >= 95%, while k = 3
    # covers 1 - 2 * 56/1024 = 89.06%: the interval is [d_(2), d_(9)] of the sorted differences.
    s = np.sort(d)
    assert (t["ci_lo"], t["ci_hi"]) == (s[1], s[8])
    assert t["ci_level"] == pytest.approx(1 - 22 / 1024)


def test_too_few_pairs_have_no_interval():
    t = sign_test(np.array([0.1, 0.2, -0.1, 0.3, 0.2]))  # n = 5: even k = 1 covers only 1 - 2/32 = 93.75%
    assert np.isnan(t["ci_lo"]) and np.isnan(t["ci_hi"]) and t["median"] == pytest.approx(0.2)
    assert sign_test(np.array([0.1, 0.2, -0.1, 0.3, 0.2, 0.4]))["ci_level"] == pytest.approx(1 - 2 / 64)
    empty = sign_test(np.array([]))
    assert empty["n_pairs"] == 0 and np.isnan(empty["median"]) and np.isnan(empty["p_sign"])


def test_paired_effects_of_a_known_householder_penalty(tmp_path):
    """Householder siblings get exactly +0.05 test error over their dense twin, GmP exactly -0.02 over SP,
    so every pair of those axes has that difference."""

    def rows(i, variant, spec, rng):
        row = synth.synthetic_row(i, variant, spec, "waveform-noise", 0, rng)
        base = 0.3 + 0.01 * i  # the same for a draw and all its siblings
        row["test_error"] = (
            base + (0.05 if spec.weights == "householder" else 0.0) + (-0.02 if spec.param == "gmp" else 0.0)
        )
        return row

    root = synth.write_study(tmp_path / "s", n=12, with_siblings=True, rows=rows)
    arch = load_results(root).architectures
    eff = paired_effects(arch).set_index(["axis", "a", "b"])
    w = eff.loc[("weights", "dense", "householder")]
    n_w = int((arch["variant"] == "weights").sum())  # every weights sibling pairs with its base draw
    assert w["n_pairs"] == n_w > 0
    assert w["median"] == pytest.approx(0.05) and w["n_pos"] == n_w and w["n_neg"] == 0
    assert w["p_sign"] == pytest.approx(sps.binomtest(n_w, n_w, 0.5).pvalue)
    assert w["ci_lo"] == pytest.approx(0.05) and w["ci_hi"] == pytest.approx(0.05)
    g = eff.loc[("param", "sp", "gmp")]
    assert g["median"] == pytest.approx(-0.02) and g["n_neg"] == g["n_pairs"] > 0
    # norm siblings differ only in norm: no effect, every difference zero
    for key in (("norm", "none", "batch"), ("norm", "batch", "layer")):
        if eff.loc[key, "n_pairs"]:
            assert eff.loc[key, "median"] == 0 and eff.loc[key, "n_zero"] == eff.loc[key, "n_pairs"]


def test_sibling_pairs_share_the_draw_and_differ_only_along_the_axis(tiny_study_dir):
    arch = load_results(tiny_study_dir).architectures
    pairs = sibling_pairs(arch, "norm", "batch", "layer")
    by_id = arch.set_index("arch_id")
    assert len(pairs) > 0
    for _, p in pairs.iterrows():
        a, b = by_id.loc[p["arch_id_a"]], by_id.loc[p["arch_id_b"]]
        assert a["index"] == b["index"] and (a["norm"], b["norm"]) == ("batch", "layer")
        for f in (
            "depth",
            "activation",
            "dilation",
            "shift",
            "debias",
            "skip",
            "weights",
            "param",
            "bias_init",
            "init_scale",
        ):
            assert a[f] == b[f], f
    # two siblings of the same axis pair with each other too: batch vs layer needs no base of either
    assert (by_id.loc[pairs["arch_id_a"], "variant"] == "norm").any()


def test_nlc_pruning_by_hand():
    df = pd.DataFrame(
        {
            "dataset": "d",
            "nlc": [0.5, 1.0, 2.0, 3.0, 5.0, np.nan],
            "test_error": [0.30, 0.20, 0.10, 0.25, 0.05, 0.60],
            "train_s": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        }
    )
    df["total_s"] = df["train_s"] + 1.0
    r = nlc_pruning(df).iloc[0]  # the paper's window [1, 3]: kept NLC 1, 2, 3 (the ends included)
    assert (r["n_kept"], r["n_skipped"]) == (3, 3)
    assert r["saved_s"] == 10 + 50 + 60 and r["total_s"] == 216
    assert r["saved_fraction"] == pytest.approx(120 / 216)
    assert (r["best_error"], r["best_error_kept"]) == (0.05, 0.10)
    assert r["regret"] == pytest.approx(0.05) and not r["best_kept"]
    wide = nlc_pruning(df, window=(0.5, 10)).iloc[0]
    assert wide["regret"] == 0 and wide["best_kept"] and wide["n_skipped"] == 1
    curve = pruning_curve(df, lo=1.0, his=[2.0, 4.0, 6.0])
    assert curve["n_kept"].tolist() == [2, 3, 4] and curve["regret"].tolist() == pytest.approx([0.05, 0.05, 0.0])


@pytest.mark.parametrize("window", [(3, 1), (1, np.inf), (1,), "x"])
def test_nlc_window_is_checked(window):
    df = pd.DataFrame({"nlc": [1.0], "test_error": [0.1], "train_s": [1.0], "total_s": [1.0]})
    with pytest.raises(SpecError, match=r"^nlc_pruning.window = .*: must be two"):
        nlc_pruning(df, window=window)
