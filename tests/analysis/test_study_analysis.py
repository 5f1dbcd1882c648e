"""analysis.study_analysis: the numbers of a study's report section, computed apart from the page: the status table's
health counts, the provenance, what pruning at launch cost and saved, and the window it used."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import synthetic_study as synth
from archstudy.analysis import Results, load_results
from archstudy.analysis.study_analysis import (
    analyse,
    best_architectures,
    health,
    launch_savings,
    launch_window,
    provenance,
    study_labels,
)


def test_health_counts_read_missing_flags_as_false():
    arch = pd.DataFrame(
        {
            "all_diverged": [True, False, None, False],
            "lr_edge": [False, True, True, None],
            "nonfinite_init": [False, True, None, True],
            "high_bias": [True, None, True, False],
        },
        dtype="object",
    )
    assert health(arch) == {"all_diverged": 1, "lr_edge": 2, "nonfinite_init": 2, "flagged": 3, "high_bias": 2}


def test_provenance_counts_values_most_frequent_first():
    t = pd.to_datetime(["2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z", None], utc=True)
    arch = pd.DataFrame(
        {
            "package_version": ["1", "2", "2"],
            "host": ["a", "b", "b"],
            "device": [None] * 3,
            "finished_at": t,
            "total_s": [3600.0, 1800.0, 1800.0],
        }
    )
    p = provenance(arch)
    assert p["package_version"] == [("2", 2), ("1", 1)] and p["host"] == [("b", 2), ("a", 1)]
    assert p["device"] is None and p["finished"] == (t[1], t[0]) and p["compute_h"] == 2.0
    empty = provenance(arch.iloc[:0])
    assert empty["finished"] is None and empty["compute_h"] is None and empty["host"] is None


def _results(arch: pd.DataFrame, config: dict) -> Results:
    return Results(
        study_dir="s",
        config={"dataset": "waveform-noise", **config},
        architectures=arch,
        runs=pd.DataFrame(),
        failed=[],
        in_progress=0,
        planned=len(arch),
    )


def test_launch_savings_estimate_the_pruned_training_time_at_the_trained_seconds_per_flop():
    arch = pd.DataFrame(
        {
            "trained": [True, True, False, False],
            "flops": [1e6, 3e6, 2e6, 6e6],
            "train_s": [10.0, 30.0, 0.0, 0.0],
            "total_s": [11.0, 31.0, 1800.0, 1800.0],
            "test_error": [0.1, 0.2, math.nan, math.nan],
        }
    )
    c = launch_savings(_results(arch, {}))
    assert c["s_per_flop"] == pytest.approx(40.0 / 4e6) and c["measure_h"] == pytest.approx(1.0)
    assert c["saved_h"] == pytest.approx(8e6 * 1e-5 / 3600)
    none = launch_savings(_results(arch.assign(trained=True), {}))
    assert none["measure_h"] == 0.0 and none["saved_h"] == 0.0


def test_launch_window_given_auto_and_none():
    arch = synth.window_population(30, seed=0).assign(index=np.arange(30))
    assert launch_window(_results(arch, {})) is None
    assert launch_window(_results(arch, {"nlc_window": [0.5, 4]})) == {"lo": 0.5, "hi": 4.0, "given": True}
    w = launch_window(_results(arch, {"nlc_window": "auto", "nlc_pilot": 20, "seed": 1}))
    assert (w["given"], w["pilot"], w["pilot_indices"], w["source"], (w["lo"], w["hi"])) == (
        False,
        20,
        20,
        "paper",
        (1.0, 3.0),
    ) and "not stable" in w["reason"]


def test_analyse_fills_every_number_of_the_section(tiny_study_dir):
    r = load_results(tiny_study_dir)
    s = analyse(r, "tiny", n_boot=10, seed=0, window=None)
    assert s.arch.equals(r.trained) and len(s.corr) and len(s.psi) and len(s.pruning) and s.edf is not None
    assert s.health == health(r.trained) and s.provenance["compute_h"] == pytest.approx(
        r.trained["total_s"].sum() / 3600
    )
    assert s.launch is None and s.savings == {} and not s.pruning_window_given
    assert s.dataset == r.dataset and s.name == r.study_dir  # no label: named by its directory
    assert s.pruning_window == tuple(s.pruning[["lo", "hi"]].iloc[0])  # the first window compared is the one used


def test_studies_are_named_by_their_directories_with_as_many_parents_as_tell_them_apart():
    assert study_labels(["studies/wave", "studies/mnist/"]) == ["wave", "mnist"]
    assert study_labels(["/a/x/wave", "/b/x/wave", "/c/mnist"]) == ["a/x/wave", "b/x/wave", "c/mnist"]
    assert study_labels(["s3://bucket/runs/wave", "/home/me/wave"]) == ["runs/wave", "me/wave"]
    assert study_labels(["wave", "wave"]) == ["wave", "wave (2)"]


def test_the_best_architectures_are_the_lowest_finite_test_errors_every_variant_ties_by_id():
    arch = pd.DataFrame(
        {
            "arch_id": ["d", "c", "b", "a", "e"],
            "variant": ["base", "skip", "base", "base", "base"],
            "test_error": [0.3, 0.1, np.nan, 0.3, 0.2],
            "depth": [2, 3, 4, 5, 6],
            "nlc": 1.5,
        }
    )
    best = best_architectures(arch, k=3)
    assert list(best["arch_id"]) == ["c", "e", "a"] and list(best["rank"]) == [1, 2, 3]
    assert list(best["depth"]) == [3, 6, 5] and best["variant"].iloc[0] == "skip"


def test_a_prediction_left_computing_settles_to_the_one_analyse_waits_for(tmp_path):
    """``analyse(wait=False)`` (the report draws the other figures meanwhile) gives the same held-out prediction
    once settled as ``analyse`` waiting for it; ``cancel`` ends one still computing."""
    synth.write_study(tmp_path / "s", n=60)
    r = load_results(tmp_path / "s", runs=False)
    waited = analyse(r, "s", n_boot=10, seed=0, window=None)
    pending = analyse(r, "s", n_boot=10, seed=0, window=None, wait=False)
    pd.testing.assert_frame_equal(pending.settle().predict.scores, waited.predict.scores)
    assert pending.settle() is pending and pending.predict.verdict == waited.predict.verdict
    left = analyse(r, "s", n_boot=10, seed=0, window=None, wait=False)
    left.cancel()
    assert left.predict is None and left.settle().predict is None
