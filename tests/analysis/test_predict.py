"""The joint predictor of test error (analysis.predict): on a population whose test error is a known function of
two metrics it beats every single metric held out and its permutation importance names the two; GroupKFold never
splits siblings; a fitted predictor saved as data predicts exactly what scikit-learn's fitted model predicts, and a
changed file is refused in one line; the NLC's partial dependence has the paper's window; the lift of a ranking."""

from __future__ import annotations

import inspect
import json
import os
import pickle
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import load_results
from archstudy.analysis import predict as P
from archstudy.analysis.predict import evaluation, explanation, learners, persistence
from archstudy.sampling import SpecError, UserError


def population(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Architectures whose test error is a window in log10 NLC (lowest at NLC 2, inside the NLC paper's [1, 3]) plus
    a slope in log10 variability, plus noise; every other metric is independent noise."""
    rng = np.random.default_rng(seed)
    log_nlc, log_v = rng.normal(0.3, 0.8, n), rng.normal(0.0, 1.0, n)
    error = 0.2 + 0.12 * (log_nlc - 0.3) ** 2 + 0.1 * log_v + rng.normal(0, 0.03, n)
    d = {
        "index": np.arange(n),
        "arch_id": [f"{i:016x}" for i in range(n)],
        "variant": "base",
        "study_seed": 0,
        "dataset": "waveform-noise",
        "trained": True,
        "test_error": error,
        "nlc": 10**log_nlc,
        "variability": 10**log_v,
        "lar_diameter": np.nan,
    }
    for f in P.METRIC_FEATURES:
        if f.column not in d:
            d[f.column] = 10 ** rng.normal(0, 1, n) if f.log else rng.normal(0, 1, n)
    return pd.DataFrame(d)


@pytest.fixture(scope="module")
def known():
    arch = population(200)
    return arch, P.predict_study(arch, repeats=2, seed=0)


def test_the_joint_model_beats_every_single_metric_held_out_and_names_the_two_metrics(known):
    arch, p = known
    s = p.scores.set_index("learner")
    joint = s.at["joint", "spearman"]
    assert "lar_diameter" not in {f.column for f in p.features}  # off (NaN throughout): not a feature
    # each metric alone, raw (sign from the training folds), on the same folds: far below the joint model
    raw = [name for name in s.index if name.startswith("raw:")]
    assert len(raw) == len(p.features)
    for name in raw:
        assert joint > s.at[name, "spearman"] + 0.05, (name, joint, s.at[name, "spearman"])
    assert joint > 0.85 and s.at["nlc", "spearman"] < joint and s.at["baseline", "metric"] == "raw:variability"
    assert {p.importance["feature"].iloc[0], p.importance["feature"].iloc[1]} == {"nlc", "variability"}
    assert p.importance["mean"].iloc[1] > 5 * max(p.importance["mean"].iloc[2], 0.01)
    v = p.versus.set_index("versus")
    assert v.at["baseline", "lo"] > 0 and v.at["nlc", "lo"] > 0
    assert p.calls == {"joint_above_zero": 1, "beats_baseline": 1, "beats_nlc": 1} and p.level == "done"
    assert "it beats the best baseline by" in p.verdict and "it beats NLC alone by" in p.verdict
    # the ranking measures: the joint model's top 10% holds more of the truly best than chance, regret small
    r = p.ranking.set_index(["learner", "k"])
    assert r.at[("joint", 20), "precision"] > 3 * r.at[("joint", 20), "chance"]
    assert r.at[("joint", 20), "regret"] <= r.at[("nlc", 20), "regret"]


def test_the_nlc_partial_dependence_is_the_papers_window(known):
    _, p = known
    curve = p.dependence[p.dependence["feature"] == "nlc"].sort_values("value")
    low = curve["value"].iloc[int(np.argmin(curve["error"].to_numpy()))]
    assert 1.0 <= low <= 3.0  # the valley lies in the NLC paper's window
    valley = curve["error"].min()
    assert curve["error"].iloc[0] > valley + 0.05 and curve["error"].iloc[-1] > valley + 0.05


def test_group_kfold_never_splits_siblings(real_study_dir, tiny_study_dir):
    for study in (real_study_dir, tiny_study_dir):  # both have siblings: several architectures per draw
        arch = P.fit_rows(load_results(study, runs=False))
        groups = evaluation.base_groups(arch)
        assert len(groups) > groups.max() + 1  # some draw has siblings
        for train, test in evaluation.group_folds(groups, learners.FOLDS, 0):
            assert not set(arch["index"].iloc[train]) & set(arch["index"].iloc[test])
    for study, draws in ((real_study_dir, 3), (tiny_study_dir, 8)):  # the README's example has eight draws
        arch = P.fit_rows(load_results(study, runs=False))
        p = P.predict_study(arch, importance=False, dependence=False)
        assert (p.held_out.groupby("index")["fold"].nunique() == 1).all()
        assert p.folds == evaluation.fold_count(draws, learners.FOLDS) == 2 and p.groups == draws
        # four draws or fewer to train on in a fold: nothing can be told, and the section says so plainly
        assert p.calls["joint_above_zero"] == 0 and p.level == "partial"
        assert "othing can be told" in p.verdict


def test_a_study_path_is_evaluated_as_its_results(tiny_study_dir):
    by_path = P.predict_study(str(tiny_study_dir), importance=False, dependence=False, repeats=1)
    results = load_results(tiny_study_dir, runs=False)
    by_results = P.predict_study(results, importance=False, dependence=False, repeats=1)
    pd.testing.assert_frame_equal(by_path.scores, by_results.scores)


def test_a_learner_that_cannot_fit_is_reported_as_such_not_as_a_rho():
    """Boosted trees with leaves of 8 architectures cannot split 9 training rows: their predictions are one
    constant, so any rho of theirs would come from the folds' offsets alone."""
    p = P.predict_study(population(12, seed=5), importance=False, dependence=False, repeats=1, folds=3)
    s = p.scores.set_index("learner")
    assert s.at["boosted", "status"] == P.CANNOT_FIT and np.isnan(s.at["boosted", "spearman"])
    assert s.at["linear", "status"] == "" and np.isfinite(s.at["linear", "spearman"])


def test_the_choice_is_made_on_the_training_rows_alone():
    arch = population(60, seed=2)
    features = learners.choose_features(arch)
    X, y = learners.feature_table(arch, features), arch["test_error"].to_numpy()
    groups = evaluation.base_groups(arch)
    pool = [c for c in evaluation.candidates(arch, features) if c.name != "boosted"]  # the trees' fits: the time
    rows = np.arange(40)
    chosen = evaluation.choose(pool, X, y, groups, rows, 0)
    shuffled = y.copy()
    shuffled[40:] = np.random.default_rng(0).permutation(y[40:])[::-1] * 7  # the held-out rows: anything
    assert evaluation.choose(pool, X, shuffled, groups, rows, 0).name == chosen.name
    again = evaluation.choose([c for c in pool if c.kind == "baseline"], X, shuffled, groups, rows, 0)
    assert again.name == evaluation.choose([c for c in pool if c.kind == "baseline"], X, y, groups, rows, 0).name


def test_the_corrected_resampled_t_interval_is_nadeau_and_bengios():
    x = np.array([0.1, 0.3, -0.2, 0.4, 0.0, 0.25, np.nan])
    m, lo, hi = evaluation.corrected_interval(x, 0.25, 0.95)
    v = x[:-1]
    half = sps.t.ppf(0.975, 5) * np.sqrt((1 / 6 + 0.25) * v.var(ddof=1))
    assert m == pytest.approx(v.mean())
    assert (lo, hi) == (pytest.approx(v.mean() - half), pytest.approx(v.mean() + half))
    assert np.isnan(evaluation.corrected_interval(np.array([0.2]), 0.25)[1])


def test_fast_rank_correlations_are_scipys():
    rng = np.random.default_rng(1)
    for _ in range(50):
        a, b = rng.integers(0, 4, 25).astype(float), rng.normal(size=25)
        assert evaluation.spearman(a, b) == pytest.approx(sps.spearmanr(a, b).statistic, abs=1e-12)
        assert evaluation.kendall(a, b) == pytest.approx(sps.kendalltau(a, b).statistic, abs=1e-12)


def test_ranking_measures_by_hand():
    y = np.array([0.5, 0.1, 0.3, 0.2, 0.4])
    score = np.array([1.0, 3.0, 2.0, 5.0, 4.0])  # predicted order: rows 0, 2, 1, ...
    m = evaluation.ranking_measures(y, score, 2)
    assert m["precision"] == 0.0  # top 2 by prediction {0, 2}, truly best {1, 3}: none shared
    assert m["regret"] == pytest.approx(0.3 - 0.1)
    gain = y.max() - y
    dcg = gain[0] / np.log2(2) + gain[2] / np.log2(3)
    idcg = gain[1] / np.log2(2) + gain[3] / np.log2(3)
    assert m["ndcg"] == pytest.approx(dcg / idcg)
    assert evaluation.ranking_measures(y, y, 3) == {"precision": 1.0, "ndcg": 1.0, "regret": 0.0, "kendall_top": 1.0}
    assert np.isnan(m["kendall_top"])  # two architectures: no pair to order beyond one
    assert evaluation.ranking_measures(y, score, 3)["kendall_top"] == pytest.approx(-1.0)  # rows 0, 2, 1: errors fall
    assert evaluation.top_k_sizes(120) == [5, 12] and evaluation.top_k_sizes(8) == [1, 5]


def test_the_nlc_papers_window_rule_is_the_distance_from_one_to_three():
    arch = pd.DataFrame({"nlc": [0.1, 1.0, 2.0, 3.0, 30.0, np.nan, -1.0]})
    d = P.NLC_RULE.values(arch)
    np.testing.assert_allclose(d[:5], [1.0, 0.0, 0.0, 0.0, 1.0], atol=1e-12)
    assert np.isnan(d[5]) and np.isnan(d[6])


@pytest.mark.parametrize("learner", P.LEARNERS)
def test_a_saved_predictor_predicts_what_scikit_learn_fitted_and_round_trips(learner, tiny_study_dir, tmp_path):
    results = load_results(tiny_study_dir, runs=False)
    arch = P.fit_rows(results)
    fitted = P.fit_predictor(results, learner, descriptors=True)
    assert {f.column for f in fitted.features} >= {"nlc", "depth", "norm", "activation"}
    loaded = P.load_predictor(fitted.save(tmp_path / "predictor.json"))
    assert loaded.to_dict() == fitted.to_dict()
    assert loaded.source["rows"] == len(arch) and loaded.source["science_fingerprint"]
    X, y = learners.feature_table(arch, fitted.features), arch["test_error"].to_numpy()
    with evaluation.one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rows: fewer quantiles than asked
        groups = evaluation.base_groups(arch)  # the ridge's penalty is chosen by base architecture, as fitted
        reference = learners.make_learner(learner, fitted.features, groups=groups).fit(X, y).predict(X)
    np.testing.assert_allclose(loaded.predict(arch), reference, rtol=0, atol=1e-12)
    other = load_results(tiny_study_dir, runs=False).architectures.iloc[::-1]  # any table, any order
    np.testing.assert_allclose(loaded.predict(other), fitted.predict(other), rtol=0, atol=0)


def test_a_changed_or_foreign_predictor_file_is_refused_in_one_line(tiny_study_dir, tmp_path):
    fitted = P.fit_predictor(load_results(tiny_study_dir, runs=False), "boosted", descriptors=True)
    d = fitted.to_dict()
    cases = {}
    edited = json.loads(json.dumps(d))
    edited["model"]["target"][0] += 0.5  # one training row changed by hand
    cases["edited"] = (json.dumps(edited), "sha256 does not match")
    short = json.loads(json.dumps(d))
    short["model"]["fitted"].pop()  # one prediction fewer than rows, even with the digest redone
    short["sha256"] = persistence._digest({k: v for k, v in short.items() if k != "sha256"})
    cases["short"] = (json.dumps(short), "model.fitted must have")
    other = json.loads(json.dumps(d))
    other["model"]["params"]["max_iter"] = 10**9  # other trees than archstudy fits
    other["sha256"] = persistence._digest({k: v for k, v in other.items() if k != "sha256"})
    cases["params"] = (json.dumps(other), "model.params must be")
    cases["pickle"] = (pickle.dumps(fitted), "not JSON")
    cases["list"] = ("[1, 2]", "not a JSON object")
    foreign = json.loads(json.dumps(d))
    foreign["features"][0]["column"] = "__import__('os').system('x')"
    foreign["sha256"] = persistence._digest({k: v for k, v in foreign.items() if k != "sha256"})
    cases["foreign feature"] = (json.dumps(foreign), "is not an init metric or descriptor")
    for name, (content, why) in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        with pytest.raises(UserError) as e:
            P.load_predictor(path)
        assert why in str(e.value) and "\n" not in str(e.value) and str(path) in str(e.value), (name, str(e.value))


def _resigned(d: dict) -> dict:
    return {**d, "sha256": persistence._digest({k: v for k, v in d.items() if k != "sha256"})}


def test_the_boosted_trees_are_stored_without_scikit_learns_private_fields(tiny_study_dir, tmp_path, monkeypatch):
    """The trees are saved as their recipe (rows, target, seed, scikit-learn's version) and refitted on loading
    through the public API: a file from another scikit-learn whose refit predicts the same loads and predicts
    exactly; one whose refit differs is refused in one line naming both versions."""
    import sklearn
    from sklearn.ensemble import HistGradientBoostingRegressor

    def private(self, name):  # a private field read from outside scikit-learn fails the test
        if name in ("_predictors", "_baseline_prediction"):
            caller = sys._getframe(1).f_code.co_filename
            assert f"{os.sep}sklearn{os.sep}" in caller, f"{name} read from {caller}"
        return object.__getattribute__(self, name)

    monkeypatch.setattr(HistGradientBoostingRegressor, "__getattribute__", private)
    results = load_results(tiny_study_dir, runs=False)
    arch = P.fit_rows(results)
    fitted = P.fit_predictor(results, "boosted", descriptors=True)
    d = fitted.to_dict()
    assert d["model"]["scikit_learn"] == sklearn.__version__ and len(d["model"]["fitted"]) == len(arch)
    np.testing.assert_array_equal(d["model"]["fitted"], fitted.predict(arch))
    saved_elsewhere = json.loads(json.dumps(d))
    saved_elsewhere["model"]["scikit_learn"] = "1.0.0"  # another version whose trees come out the same
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps(_resigned(saved_elsewhere)))
    np.testing.assert_array_equal(P.load_predictor(path).predict(arch), fitted.predict(arch))
    grown_otherwise = json.loads(json.dumps(saved_elsewhere))
    grown_otherwise["model"]["fitted"][3] += 1e-9  # what that version's trees predicted: not what they refit to here
    path.write_text(json.dumps(_resigned(grown_otherwise)))
    with pytest.raises(UserError) as e:
        P.load_predictor(path)
    message = str(e.value)
    assert "\n" not in message and str(path) in message, message
    assert "scikit-learn 1.0.0" in message and f"scikit-learn {sklearn.__version__} here" in message, message


def test_transfer_scores_a_predictor_fitted_on_another_study(real_study_dir, tiny_study_dir):
    fitted = P.fit_predictor(load_results(tiny_study_dir, runs=False), "linear")
    row = P.score_predictor(fitted, load_results(real_study_dir, runs=False), n_boot=50).iloc[0]
    arch = P.fit_rows(load_results(real_study_dir, runs=False))
    expected = sps.spearmanr(fitted.predict(arch), arch["test_error"]).statistic
    assert row["n"] == len(arch) and row["spearman"] == pytest.approx(expected, abs=1e-12)
    assert row["spearman_lo"] <= row["spearman"] <= row["spearman_hi"] and row["source"].endswith("study")


def test_transfer_leaves_out_the_designs_the_predictor_was_trained_on(tiny_study_dir):
    """Two studies of one seed on two datasets share every design (only the width is solved anew): transfer rho
    0.70 with them, 0.42 without. The designs the source held are now detected and left out of the second score."""
    results = load_results(tiny_study_dir, runs=False)
    fitted = P.fit_predictor(results, "linear")
    arch = P.fit_rows(results)
    other = arch.assign(width=arch["width"] * 2, d_in=arch["d_in"] + 3)  # the same designs, another budget and data
    row = P.score_predictor(fitted, other, n_boot=20).iloc[0]
    assert (row["shared"], row["n_new"]) == (len(arch), 0) and np.isnan(row["spearman_new"])
    changed = np.arange(len(arch)) < 9
    other.loc[changed, "depth"] = other.loc[changed, "depth"] + 10  # nine rows: designs the source never held
    row = P.score_predictor(fitted, other, n_boot=20).iloc[0]
    assert (row["shared"], row["n_new"]) == (len(arch) - 9, 9)
    expected = sps.spearmanr(fitted.predict(other)[changed], other["test_error"][changed]).statistic
    assert row["spearman_new"] == pytest.approx(expected, abs=1e-12)


def test_the_report_section_says_the_verdict_and_the_transfer(tiny_study_dir, real_study_dir, tmp_path):
    from archstudy.study.cli import main

    saved = P.fit_predictor(load_results(real_study_dir, runs=False), "nlc").save(tmp_path / "p.json")
    out = tmp_path / "r.html"
    assert main(["report", str(tiny_study_dir), "--out", str(out), "--n-boot", "20", "--predict-from", str(saved)]) == 0
    html = out.read_text()
    assert "Predicting test error from everything measured at initialization" in html
    assert "On held-out architectures" in html and "Transfer: a predictor fitted on another study" in html
    assert all(f'data-figure="{k}"' in html for k in ("predict-held-out", "predict-importance", "predict-dependence"))


def test_the_lift_of_a_ranking_is_the_difference_of_medians_with_intervals():
    top, drawn = [0.10, 0.12, 0.11, 0.14, 0.13], [0.3, 0.4, 0.6, 0.2, 0.5, np.nan]  # every drawn one worse
    lift = P.median_lift(top, drawn, n_boot=2000)
    assert lift["top"] == 0.12 and lift["drawn"] == 0.4 and lift["lift"] == pytest.approx(0.28)
    assert lift["n_drawn"] == 5 and lift["top_lo"] <= 0.12 <= lift["top_hi"] and lift["lift_lo"] > 0
    assert lift["drawn_lo"] >= 0.2 and lift["drawn_hi"] <= 0.6  # medians of resamples of the drawn values


def test_the_paired_lift_resamples_both_sets_together():
    errors = {1: 0.10, 2: 0.12, 3: 0.11, 4: 0.30, 5: 0.40, 6: 0.50, 7: float("nan")}
    lift = P.paired_lift(errors, [1, 2, 3, 7], [4, 5, 6], n_boot=2000)
    assert (lift["n_top"], lift["n_other"], lift["shared"]) == (3, 3, 0)
    assert lift["lift"] == pytest.approx(0.40 - 0.11) and lift["lift_lo"] > 0
    same = P.paired_lift(errors, [1, 4, 5], [1, 4, 5], n_boot=500)  # one set twice: every resample's lift is 0
    assert same["lift"] == same["lift_lo"] == same["lift_hi"] == 0 and same["shared"] == 3
    with pytest.raises(SpecError):
        P.paired_lift(errors, [7], [4])


@pytest.mark.parametrize("learner", ["boosted", "linear"])
def test_batched_predictions_give_scikit_learns_own_numbers(learner):
    """``BatchedPredictions`` answers permutation importance's and partial dependence's many predict calls with
    one (boosted trees) or one per table (the ridge, whose BLAS product may round differently in a larger
    matrix): the importances and the curve are bit for bit those of scikit-learn called on the model itself."""
    from sklearn.inspection import partial_dependence, permutation_importance

    arch = population(80, seed=3)
    features = learners.choose_features(arch)
    X, y = learners.feature_table(arch, features), arch["test_error"].to_numpy()
    with (
        warnings.catch_warnings(),
        evaluation.one_thread(),
    ):  # as predict_study: OpenMP threads on tiny tables only wait
        warnings.simplefilter("ignore")
        model = learners.make_learner(learner, features, 0).fit(X.iloc[:50], y[:50])
        assert explanation.row_wise(model) == (learner == "boosted")
        held, y_held = X.iloc[50:], y[50:]

        def importance(m):
            return permutation_importance(
                m, held, y_held, scoring=explanation._spearman_scorer, n_repeats=3, random_state=0
            )

        np.testing.assert_array_equal(
            explanation.BatchedPredictions(model).run(importance).importances, importance(model).importances
        )
        grid = np.unique(np.percentile(X["nlc"], np.linspace(2, 98, 10)))

        def dependence(m):
            if "custom_values" in inspect.signature(partial_dependence).parameters:  # scikit-learn 1.7 on
                return partial_dependence(m, X, ["nlc"], custom_values={"nlc": grid}, kind="average", method="brute")
            return partial_dependence(m, X, ["nlc"], grid_resolution=len(grid), kind="average", method="brute")

        batched, direct = explanation.BatchedPredictions(model).run(dependence), dependence(model)
    np.testing.assert_array_equal(batched["average"], direct["average"])
    np.testing.assert_array_equal(batched["grid_values"][0], direct["grid_values"][0])


@pytest.mark.parametrize("learner", ["linear", "boosted"])
def test_a_feature_with_no_value_on_the_training_rows_is_left_out_of_that_fit(learner):
    """A metric measured on a few architectures only, all of them held out: the fit on the training rows uses the
    other features (scikit-learn's binning refused the empty column) and predicts as a fit without it."""
    rng = np.random.default_rng(0)
    n = 40
    X = pd.DataFrame({"nlc": rng.normal(size=n), "bias": rng.normal(size=n), "lar": np.nan})
    X.loc[30:, "lar"] = rng.normal(size=n - 30)  # only the held-out rows have it
    y = X["nlc"].to_numpy() + 0.1 * rng.normal(size=n)
    train, test = np.arange(30), np.arange(30, n)
    features = [
        learners.Feature("nlc", False, "metric"),
        learners.Feature("bias", False, "metric"),
        learners.Feature("lar", False, "metric"),
    ]
    got, _ = evaluation._Candidate(learner, learner, "joint", model=learner, features=features).fit_predict(
        X, y, train, test, 0
    )
    want = learners.make_learner(learner, features[:2], 0).fit(X.iloc[train], y[train]).predict(X.iloc[test])
    np.testing.assert_allclose(got, want, rtol=0, atol=0)
