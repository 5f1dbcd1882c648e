"""The analysis of what this version adds to a study: pruning at launch (the pilot's window, the report on a pruned
study), training curves read through load_results, and paired effects labelled by exactly the factors that
differ (input mean normalization apart from the parameterization)."""

import math
import re

import numpy as np
import pandas as pd

import synthetic_study as synth
from archstudy.analysis import load_results, nlc_good_range, paired_effects, write_report
from archstudy.analysis.pruning import pilot_window
from archstudy.analysis.stats import UNIFORM_GMP
from archstudy.sampling import ArchSpec, siblings


def test_the_pilot_window_is_the_pilots_own_band_when_it_is_stable_else_the_papers():
    big = synth.window_population(120, seed=0)
    own = nlc_good_range(big, variants=None, seed=4).iloc[0]
    w = pilot_window(big, seed=4)
    assert own["large_enough"] and (w["lo"], w["hi"], w["source"], w["n"]) == (own["low"], own["high"], "study", 120)
    assert pilot_window(big, seed=4) == w  # deterministic in the rows and the seed
    small = pilot_window(synth.window_population(20, seed=0), seed=4)
    assert (small["lo"], small["hi"], small["source"]) == (1.0, 3.0, "paper") and "not stable" in small["reason"]


def pruned_study(root, window=(1.0, 3.0)):
    """The synthetic study with its architectures outside ``window`` stored as a runner pruning at launch
    stores them (``trained`` false, nothing trained), and the window in its study.yaml."""

    def rows(i, variant, spec, rng):
        row = synth.synthetic_row(i, variant, spec, "waveform-noise", 0, rng)
        inside = window[0] <= row["nlc"] <= window[1]
        row["trained"] = inside
        if not inside:
            row.update(
                lr_min=np.nan,
                lr=np.nan,
                lr_index=-1,
                epochs=0,
                divisions=0,
                val_error=np.nan,
                train_error=np.nan,
                test_error=np.nan,
                nlc_after=np.nan,
                bias_after=np.nan,
                lr_edge=False,
                n_runs=0,
                n_diverged=0,
                all_diverged=False,
                train_s=0.0,
                total_s=1.1,
            )
        return row

    return synth.write_study(root, n=30, rows=rows, extra={"nlc_window": list(window)})


def test_the_report_on_a_pruned_study_says_what_was_pruned_and_covers_the_trained(tmp_path):
    root = pruned_study(tmp_path / "s")
    r = load_results(root)
    assert len(r.pruned) + len(r.trained) == r.n_finished == 30 and 0 < len(r.pruned) < 30
    html = write_report(root, tmp_path / "r.html", n_boot=20).read_text(encoding="utf-8")
    k = len(r.pruned)
    assert f"pruned at launch (measured, not trained)</td><td>{k}</td>" in html
    assert (
        f"<b>Pruned at launch</b> with the NLC window [1, 3], given (<code>nlc_window</code>, "
        f"<code>--nlc-window</code>): {k} of 30 finished architectures"
    ) in html
    for arch_id in r.pruned["arch_id"]:
        assert f'<td class="l">{arch_id}</td>' in html
    # the estimate of the training time saved: the pruned FLOPs at the trained ones' seconds per FLOP
    per_flop = r.trained["train_s"].sum() / r.trained["flops"].sum()
    saved = r.pruned["flops"].sum() * per_flop / 3600
    assert re.search(r"Training time saved, estimated: ([0-9.,e+-]+) h", html)[1] in (f"{saved:.3f}", f"{saved:.2e}")
    # every statistic covers the trained architectures: the correlation table's n
    n = re.search(r'<td class="l">NLC</td><td class="l">metric</td><td class="l">log</td><td>(\d+)</td>', html)
    assert n and int(n[1]) == int((r.trained["variant"] == "base").sum())


def test_curves_are_read_through_load_results(real_study_dir):
    r = load_results(real_study_dir, curves=True)
    c, arch = r.curves, r.architectures
    assert len(c) and set(c["arch_id"]) == set(arch.loc[arch["trained"], "arch_id"])
    runs = r.runs.set_index(["arch_id", "lr_index"])["epochs"]
    per_run = c.groupby(["arch_id", "lr_index"])["epoch"].agg(["min", "max", "count"])
    assert (per_run["min"] == 0).all() and (per_run["max"] == runs.loc[per_run.index]).all()
    assert (per_run["count"] == per_run["max"] + 1).all()
    # the trajectory's epoch 0 is the initialization: the nlc column's value, with its draws, bit for bit
    first = c[c["epoch"] == 0].groupby("arch_id")["nlc"].agg(["min", "max"])
    nlc = arch.set_index("arch_id")["nlc"]
    assert (first["min"] == first["max"]).all() and (first["min"] == nlc.loc[first.index]).all()
    assert c.loc[~c["epoch"].isin([0, 2]), "nlc"].isna().all()
    first_id = arch["arch_id"].iloc[0]
    one = load_results(real_study_dir, runs=False, curves=[first_id]).curves
    assert set(one["arch_id"]) == {first_id} and len(one) == (c["arch_id"] == first_id).sum()


def _row(spec: ArchSpec, index: int, variant: str, error: float) -> dict:
    return {
        **spec.to_dict(),
        "arch_id": spec.content_id,
        "index": index,
        "variant": variant,
        "dataset": "d",
        "test_error": error,
        "nlc": 1.0,
    }


def test_paired_effects_are_labelled_by_exactly_the_factors_that_differ():
    rows = []
    bases = [
        ArchSpec(depth=5, width=8, d_in=4, d_out=3),  # imn auto: GmP switches IMN on
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, imn="off", activation="tanh"),
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, imn="off", param="gmp", gmp_init="uniform", activation="abs"),
    ]
    for i, base in enumerate(bases):
        (twin,) = siblings(base, "param")
        rows += [_row(base, i, "base", 0.3), _row(twin, i, "param", 0.2 + 0.01 * i)]
    base = ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="selu")
    (twin,) = siblings(base, "imn")
    rows += [_row(base, 7, "base", 0.4), _row(twin, 7, "imn", 0.45)]
    p = paired_effects(pd.DataFrame(rows))
    param = p[(p["axis"] == "param") & (p["n_pairs"] > 0)].set_index("context")
    assert set(param.index) == {
        "IMN off → on, as the parameterization implies",
        "IMN unchanged: off",
        f"IMN unchanged: off; {UNIFORM_GMP}",
    }
    assert param["n_pairs"].tolist() == [1, 1, 1] and math.isclose(param.loc["IMN unchanged: off", "median"], -0.09)
    imn = p[(p["axis"] == "imn") & (p["n_pairs"] > 0)]
    assert imn[["a", "b", "context", "n_pairs"]].values.tolist() == [["off", "on", "param: SP", 1]]
    assert math.isclose(imn["median"].iloc[0], 0.05)
