"""The best learning rate (``analysis.learning_rates``): the best index and its band against a hand-built runs
table, the rate window against a brute-force selection, the cross-fitting's held-out groups, the refusal of a
predictor no better than the median rule, rate transfer between siblings, the section and its figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis.figures import FIGURES
from archstudy.analysis.figures.base import FigureData, NothingToDraw
from archstudy.analysis.learning_rates import (
    MIN_ARCHITECTURES,
    _boot_quantiles,
    best_rates,
    cross_fitted_centres,
    rate_sweep,
    rate_transfer,
    rate_windows,
    window_choice,
    window_refusal,
    window_regret,
    with_best_rates,
)
from archstudy.analysis.report.learning_rates import learning_rates_html
from archstudy.analysis.report.page import STUDY_SECTIONS
from archstudy.analysis.results import load_results
from archstudy.analysis.study_analysis import StudyAnalysis

LR_MIN, FACTOR = 1e-3, 3.0


def runs_of(arch_id: str, index: int, val, test=None, diverged=None, selected=None, variant="base") -> pd.DataFrame:
    """One architecture's runs: rate k = LR_MIN * FACTOR^k, the given errors, the trainer's selection (lowest
    validation error, ties to the lower index) unless ``selected`` says otherwise."""
    val = np.asarray(val, dtype=np.float64)
    n = len(val)
    test = val + 0.01 if test is None else np.asarray(test, dtype=np.float64)
    chosen = int(np.argmin(val)) if selected is None else selected
    return pd.DataFrame(
        {
            "arch_id": arch_id,
            "index": index,
            "variant": variant,
            "lr_index": np.arange(n),
            "lr": LR_MIN * FACTOR ** np.arange(n),
            "val_error": val,
            "train_error": val,
            "test_error": test,
            "diverged": np.zeros(n, bool) if diverged is None else np.asarray(diverged, bool),
            "selected": np.arange(n) == chosen,
        }
    )


def test_best_index_and_band_against_a_hand_built_runs_table():
    chance = 2 / 3
    runs = pd.concat(
        [
            # band {1, 2, 3}: 0.31 is exactly 0.30 + 0.01; a diverged run that recovered counts like any other
            runs_of("a", 0, [0.5, 0.30, 0.305, 0.31, 0.32, 0.6], diverged=[0, 0, 1, 0, 0, 1]),
            # best at the lowest rate, band {0, 2} not contiguous
            runs_of("b", 1, [0.2, 0.25, 0.205, 0.4, 0.4, 0.4]),
            # every run diverged: the trainer marks one, at chance; no best rate
            runs_of("c", 2, [chance] * 6, diverged=[1] * 6),
            # a tie at the best: the lower index, the band holds both and the rate between
            runs_of("d", 3, [0.4, 0.3, 0.305, 0.3, 0.5, 0.5]),
        ],
        ignore_index=True,
    )
    # "e" has no runs (its runs file left out as corrupt): no best rate, and not counted as diverged
    arch = pd.DataFrame({"arch_id": ["a", "b", "c", "d", "e"], "index": [0, 1, 2, 3, 4], "variant": "base"})
    b = best_rates(arch, runs).set_index("arch_id")
    expect = {  # best, width, lo, hi, edge, band_edge
        "a": (1, 3, 1, 3, False, False),
        "b": (0, 2, 0, 2, True, True),
        "d": (1, 3, 1, 3, False, False),
    }
    for a, (k, width, lo, hi, edge, band_edge) in expect.items():
        r = b.loc[a]
        assert (r["best_index"], r["band_width"], r["band_lo"], r["band_hi"]) == (k, width, lo, hi)
        assert (bool(r["edge"]), bool(r["band_edge"]), bool(r["all_diverged"])) == (edge, band_edge, False)
        assert r["best_log10_lr"] == pytest.approx(math.log10(LR_MIN * FACTOR**k), abs=1e-12)
        assert r["best_test"] == pytest.approx(runs[(runs.arch_id == a) & runs.selected]["test_error"].item())
    c = b.loc["c"]
    assert bool(c["all_diverged"]) and c["n_diverged"] == 6
    assert all(math.isnan(c[k]) for k in ("best_index", "best_log10_lr", "band_width", "band_lo", "band_hi"))
    assert b.loc["a", "n_diverged"] == 2
    assert math.isnan(b.loc["e", "best_index"]) and not b.loc["e", "all_diverged"] and not b.loc["e", "band_edge"]
    # without the trainer's mark the selection is recomputed: lowest validation error, ties to the lower index
    unmarked = best_rates(arch, runs.drop(columns="selected")).set_index("arch_id")
    assert unmarked.loc[["a", "b", "d"], "best_index"].tolist() == [1, 0, 1]
    # a wider tolerance widens the band by the definition
    assert best_rates(arch, runs, tolerance=0.2).set_index("arch_id").loc["a", "band_width"] == 5


def random_runs(units: int, n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Architectures with random errors rounded to 0.01 (many ties), their selection by the trainer's rule."""
    rng = np.random.default_rng(seed)
    arch = pd.DataFrame({"arch_id": [f"u{i}" for i in range(units)], "index": np.arange(units), "variant": "base"})
    runs = pd.concat(
        [runs_of(f"u{i}", i, np.round(rng.uniform(0.1, 0.3, n), 2), rng.uniform(0.1, 0.3, n)) for i in range(units)],
        ignore_index=True,
    )
    return arch, runs.sample(frac=1.0, random_state=seed)  # rows in any order


def test_the_window_selects_what_a_brute_force_selection_over_the_full_runs_selects():
    n = 12
    arch, runs = random_runs(40, n, seed=3)
    sweep = rate_sweep(arch, runs)
    rng = np.random.default_rng(4)
    centres = rng.integers(0, n, len(arch))
    for m in range(1, n + 1):
        chosen = window_choice(sweep.val, centres, m)
        regret = window_regret(sweep, centres, m)
        for u, row in arch.iterrows():
            mine = runs[runs.arch_id == row["arch_id"]].sort_values("lr_index")
            start = min(max(int(centres[u]) - m // 2, 0), n - m)
            window = mine[(mine.lr_index >= start) & (mine.lr_index < start + m)]
            j = int(window.sort_values(["val_error", "lr_index"]).iloc[0]["lr_index"])
            assert chosen[u] == j
            full = mine[mine.selected]["test_error"].item()
            assert regret[u] == mine[mine.lr_index == j]["test_error"].item() - full
    # the whole series is the full sweep: every architecture's regret is exactly 0
    assert np.all(window_regret(sweep, centres, n) == 0.0)


def test_a_study_read_from_disk(tiny_study_dir):
    r = load_results(tiny_study_dir)
    sweep = rate_sweep(r.trained, r.runs)
    assert len(sweep.units) == len(r.trained) and sweep.n_rates == 40
    b = best_rates(r.trained, r.runs).merge(r.trained[["arch_id", "index", "lr_index"]], on=["arch_id", "index"])
    assert (b["best_index"] == b["lr_index"]).all()  # the runs' mark is the architectures table's selection
    # the synthetic writer marks its row's index even where a diverged run ties it at chance: where the mark is the
    # trainer's choice (lowest validation error, ties to the lower index), the whole series has no regret
    trainer = np.argmin(np.where(np.isfinite(sweep.val), sweep.val, np.inf), axis=1)
    agree = trainer == sweep.selected
    assert agree.sum() >= len(agree) // 2
    for c in (np.zeros(len(sweep.units)), np.full(len(sweep.units), sweep.n_rates - 1)):
        assert np.all(window_regret(sweep, c, sweep.n_rates)[agree] == 0.0)


def sibling_table(n_base: int, seed: int, signal: bool) -> pd.DataFrame:
    """A ``with_best_rates``-like table: base draws with a param sibling each (the sibling shares its draw's
    measures up to noise); best index a linear function of log10 NLC plus small noise, or independent of
    everything (``signal`` False)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_base):
        log_nlc = rng.uniform(0.0, 4.0)
        depth = int(rng.integers(2, 50))
        act = str(rng.choice(["relu", "tanh", "selu"]))
        for variant, param in (("base", "sp"), ("param", "gmp")):
            nlc = 10 ** (log_nlc + rng.normal(0, 0.05))
            best = 32 - 6 * np.log10(nlc) + rng.normal(0, 1.0) if signal else rng.integers(4, 36)
            rows.append(
                {
                    "arch_id": f"{i}-{param}",
                    "index": i,
                    "variant": variant,
                    "param": param,
                    "nlc": nlc,
                    "variability": float(rng.lognormal(0, 1)),
                    "depth": depth,
                    "activation": act,
                    "best_index": float(np.clip(np.rint(best), 0, 39)),
                }
            )
    return pd.DataFrame(rows)


def test_cross_fitting_never_predicts_an_architecture_from_its_own_base_group():
    table = sibling_table(30, seed=0, signal=True)
    first = cross_fitted_centres(table, seed=1)
    # each base architecture in exactly one held-out fold, with its siblings
    assert (first.groupby("group")["fold"].nunique() == 1).all()
    for fold in range(int(first["fold"].max()) + 1):
        held = first["fold"] == fold
        changed = table.copy()
        changed.loc[held.to_numpy(), "best_index"] = 39.0 - changed.loc[held.to_numpy(), "best_index"]
        again = cross_fitted_centres(changed, seed=1)
        # the held-out rows' predictions do not move with their own targets ...
        np.testing.assert_array_equal(again.loc[held, "ridge"], first.loc[held, "ridge"])
        np.testing.assert_array_equal(again.loc[held, "median"], first.loc[held, "median"])
        # ... while the others', fitted on them, do
        assert not np.array_equal(again.loc[~held, "ridge"], first.loc[~held, "ridge"])


def simulated_study(n_base: int, seed: int, signal: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Architectures and their 40 runs: validation error rising by 0.02 per rate away from the best index (test
    error the same plus a little noise), the best index from ``sibling_table``."""
    table = sibling_table(n_base, seed, signal)
    rng = np.random.default_rng(seed + 100)
    k = np.arange(40)
    runs = []
    for _, r in table.iterrows():
        val = np.minimum(0.1 + 0.02 * np.abs(k - r["best_index"]) + rng.uniform(0, 1e-4, 40), 2 / 3)
        runs.append(runs_of(r["arch_id"], r["index"], val, val + rng.normal(0, 0.002, 40), variant=r["variant"]))
    return table.drop(columns="best_index"), pd.concat(runs, ignore_index=True)


def windows_of(arch: pd.DataFrame, runs: pd.DataFrame, sizes=(8,)) -> pd.DataFrame:
    table = with_best_rates(arch, best_rates(arch, runs))
    return rate_windows(rate_sweep(arch, runs), cross_fitted_centres(table, seed=0), sizes=sizes, n_boot=400)


def test_the_predicted_window_is_refused_when_the_best_index_is_noise_and_used_when_it_follows_the_nlc():
    noise = windows_of(*simulated_study(40, seed=5, signal=False))
    why = window_refusal(noise, 8)
    assert why is not None and why.startswith("the predict")  # it does not order k*, or does not beat the rule
    linear = windows_of(*simulated_study(40, seed=5, signal=True))
    assert window_refusal(linear, 8) is None
    r = linear[linear["rule"] == "ridge"].iloc[0]
    assert r["diff_hi"] < 0 and r["n"] == 80 and r["groups"] == 40 and r["saved"] == pytest.approx(0.8)
    assert "not measured" in window_refusal(linear, 12) or window_refusal(linear, 12).startswith("no window")
    small = windows_of(*simulated_study(MIN_ARCHITECTURES // 2 - 1, seed=5, signal=True))
    assert "fewer than" in window_refusal(small, 8)


def test_the_regret_statistics_follow_their_definitions():
    arch, runs = simulated_study(20, seed=2, signal=True)
    w = windows_of(arch, runs, sizes=(4, 39, 40))
    assert sorted(w["size"].unique()) == [4, 39]  # a window as long as the series is the sweep, not a window
    table = with_best_rates(arch, best_rates(arch, runs))
    centres = cross_fitted_centres(table, seed=0)
    sweep = rate_sweep(arch, runs)
    x = window_regret(sweep, np.clip(np.rint(centres["median"]), 0, 39), 4)
    r = w[(w["size"] == 4) & (w["rule"] == "median")].iloc[0]
    assert r["median"] == np.quantile(x, 0.5, method="inverted_cdf")
    assert r["p90"] == np.quantile(x, 0.9, method="inverted_cdf")
    assert r["within_k"] == int((x <= 0.005).sum()) and r["within_lo"] <= r["within"] <= r["within_hi"]
    assert r["median_lo"] <= r["median"] <= r["median_hi"]
    # the weighted quantile of the bootstrap is numpy's with unit counts, and a resample's with repeated rows
    rng = np.random.default_rng(0)
    v = rng.normal(size=17)
    c = rng.integers(0, 3, size=(5, 17)).astype(np.float64)
    c[:, 0] += 1
    for q in (0.5, 0.9):
        assert _boot_quantiles(v, np.ones((1, 17)), q)[0] == np.quantile(v, q, method="inverted_cdf")
        expect = [np.quantile(np.repeat(v, row.astype(int)), q, method="inverted_cdf") for row in c]
        np.testing.assert_array_equal(_boot_quantiles(v, c, q), expect)


def test_rate_transfer_is_the_paired_difference_per_parameterization():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        k = int(rng.integers(5, 30))
        for variant, param, weights, shift in (
            ("base", "sp", "dense", 0),
            ("param", "gmp", "dense", 3),
            ("weights", "sp", "householder", -1),
            ("width", "sp", "dense", 2),  # twice as wide: the level "2x" against its base's "1x"
        ):
            rows.append(
                {
                    "arch_id": f"{i}{variant}",
                    "index": i,
                    "variant": variant,
                    "param": param,
                    "imn": "auto",
                    "weights": weights,
                    "norm": "none",
                    "skip": "none",
                    "depth": 5,
                    "width": 40 if variant == "width" else 20,
                    "nlc": 2.0,
                    "best_index": float(k + shift),
                    "best_log10_lr": -3.0 + 0.5 * (k + shift),
                }
            )
    t = rate_transfer(pd.DataFrame(rows)).set_index(["target", "axis", "param"])
    assert t.loc[("best_index", "param", "sp → gmp"), "median"] == 3
    assert t.loc[("best_log10_lr", "param", "sp → gmp"), "median"] == pytest.approx(1.5)
    assert t.loc[("best_index", "weights", "sp"), "median"] == -1
    assert t.loc[("best_index", "width", "sp"), "median"] == 2 and t.loc[("best_index", "width", "sp"), "n_pairs"] == 12
    assert (t.loc[("best_index", "width", "sp"), "a"], t.loc[("best_index", "width", "sp"), "b"]) == ("1x", "2x")
    assert t.loc[("best_index", "param", "sp → gmp"), "n_pairs"] == 12
    assert t.loc[("best_index", "param", "sp → gmp"), "p_sign"] == pytest.approx(2 * 0.5**12)
    assert not len(rate_transfer(pd.DataFrame(rows).query("variant == 'base'")))  # no siblings, no pairs
    # the figure: one panel per axis with pairs, each pair one point at (k*_A, k*_B)
    spec = next(f for f in FIGURES if f.key == "rate-transfer")
    table = pd.DataFrame(rows).assign(lr_index=lambda t: t["best_index"], test_error=0.2)
    fig = spec.draw(FigureData(dataset="d", arch=table))
    shown = [ax for ax in fig.axes if ax.get_xlabel().startswith("k*")]
    assert [ax.get_xlabel() for ax in shown] == ["k*, weights = dense", "k*, param = sp", "k*, width = 1x"]
    points = np.concatenate([c.get_offsets() for c in shown[2].collections if len(c.get_offsets())])
    assert len(points) == 12 and np.all(points[:, 1] - points[:, 0] == 2)  # the width twin's k* is 2 higher
    with pytest.raises(NothingToDraw):
        spec.draw(FigureData(dataset="d", arch=table.query("variant == 'base'")))


def test_the_section_and_its_figure(tiny_study_dir):
    keys = [p.key for p in STUDY_SECTIONS]
    assert keys.index("learning-rates") == keys.index("predict") + 1
    spec = next(f for f in FIGURES if f.key == "best-rate")
    assert spec.section == "learning-rates"
    r = load_results(tiny_study_dir)  # 8 base draws: below the section's minimum
    s = StudyAnalysis(dataset=r.dataset, arch=r.trained, results=r, anchor="t")
    text = learning_rates_html(s)
    assert "8 base architectures with a best rate" in text and f"fewer than the {MIN_ARCHITECTURES}" in text
    fig = spec.draw(FigureData(dataset=r.dataset, arch=r.trained))
    assert len(fig.axes) == 2 and sum(len(c.get_offsets()) for c in fig.axes[0].collections) == len(r.trained)


def test_the_best_rate_is_the_architectures_own_initializations_under_init_seeds():
    """A study with ``init_seeds: 2`` holds each architecture's runs twice (``init_index`` 0 and 1, one selected each):
    the best rate and its band are those of initialization 0, the architecture's row, as with one initialization."""
    own = runs_of("a", 0, [0.5, 0.30, 0.305, 0.4])
    other = runs_of("a", 0, [0.2, 0.6, 0.6, 0.6])  # another initialization, best elsewhere
    runs = pd.concat([own.assign(init_index=0), other.assign(init_index=1)], ignore_index=True)
    arch = pd.DataFrame({"arch_id": ["a"], "index": [0], "variant": "base"})
    alone = best_rates(arch, own).reset_index(drop=True)
    both = best_rates(arch, runs).reset_index(drop=True)
    pd.testing.assert_frame_equal(both, alone)
    assert int(both["best_index"].iloc[0]) == 1


def test_a_resolved_window_is_the_ridge_written_as_terms_or_a_one_line_refusal():
    """``resolve_window``: "median" centres on the study's median k*; "measures" is refused in one line where the
    best index is noise, and where it follows the NLC it is the ridge fitted on every architecture written as linear
    terms, which ``rate_window.predicted_centre`` evaluates from a row to the model's own prediction (sklearn's
    ``predict`` on the same rows, rounded and clipped), and the study key accepts."""
    from archstudy.analysis.learning_rates import _ridge, learning_rates, linear_centre, resolve_window
    from archstudy.analysis.predict.evaluation import base_groups
    from archstudy.analysis.predict.learners import choose_features, feature_table
    from archstudy.sampling import SpecError
    from archstudy.study.experiment.rate_window import WindowSpec, centre_index, predicted_centre

    arch, runs = simulated_study(40, seed=5, signal=True)
    lr = learning_rates(arch, runs)
    median = resolve_window(arch, runs, 8, "median", source="s")
    assert median == {
        "size": 8,
        "predictor": "median",
        "from": "s",
        "centre": int(np.rint(np.median(lr.table["best_index"]))),
    }
    window = resolve_window(arch, runs, 8, "measures")
    assert WindowSpec().normalize(window) == window and window["predictor"] == "measures"
    rows = lr.table[np.isfinite(lr.table["best_index"])].reset_index(drop=True)
    features = [f for f in choose_features(rows, descriptors=True) if f.column in rows.columns]
    model = _ridge(features, base_groups(rows)).fit(feature_table(rows, features), rows["best_index"].to_numpy())
    expected = centre_index(model.predict(feature_table(rows, features)), 40)
    got = [predicted_centre(window, row, 40) for row in rows.to_dict("records")]
    assert got == list(expected) and len(set(got)) > 3  # the centres follow the measures
    assert window["centre"] == linear_centre(lr.table)
    noise, noise_runs = simulated_study(40, seed=5, signal=False)
    with pytest.raises(SpecError, match=r"^lr_window\.predictor = 'measures': is refused on n: the predict") as e:
        resolve_window(noise, noise_runs, 8, "measures", source="n")
    assert "\n" not in str(e.value)
    with pytest.raises(SpecError, match=r"^lr_window\.size = 40: must be from 1 to 39"):
        resolve_window(arch, runs, 40, "median")
