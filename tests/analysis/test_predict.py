"""The joint predictor of test error (analysis.predict): on a population whose test error is a known function of
two metrics it beats every single metric held out and its permutation importance names the two; GroupKFold never
splits siblings; a fitted predictor saved as data predicts exactly what scikit-learn's fitted model predicts, and a
changed file is refused in one line; the NLC's partial dependence has the paper's window; the lift of a ranking."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis import load_results
from archstudy.analysis import predict as P
from archstudy.sampling import UserError


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
    arch = population()
    return arch, P.predict_study(arch, n_boot=200, seed=0)


def test_the_joint_model_beats_every_single_metric_held_out_and_names_the_two_metrics(known):
    arch, p = known
    s = p.scores.set_index("learner")
    joint = s.at[p.best, "spearman"]
    # each metric alone: its window predictor, held out on the same folds, and its raw rank correlation in-sample
    groups = P.base_groups(arch)
    features = P.choose_features(arch)
    X, y = P.feature_table(arch, features), arch["test_error"].to_numpy()
    assert "lar_diameter" not in X.columns  # off (NaN throughout): not a feature
    for f in features:
        held = np.empty(len(y))
        for train, test in P.group_folds(groups, P.FOLDS, 0):
            held[test] = P.WindowPredictor((f.column,)).fit(X.iloc[train], y[train]).predict(X.iloc[test])
        alone = max(sps.spearmanr(held, y).statistic, abs(sps.spearmanr(X[f.column], y, nan_policy="omit").statistic))
        assert joint > alone + 0.05, (f.column, joint, alone)
    assert joint > 0.85 and s.at["nlc", "spearman"] < joint and s.at["window", "spearman"] < joint
    assert {p.importance["feature"].iloc[0], p.importance["feature"].iloc[1]} == {"nlc", "variability"}
    assert p.importance["mean"].iloc[1] > 5 * max(p.importance["mean"].iloc[2], 0.01)
    v = p.versus.set_index("versus").loc["nlc"]
    assert v["lo"] > 0 and "The joint model beats NLC alone" in p.verdict


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
        groups = P.base_groups(arch)
        assert len(groups) > groups.max() + 1  # some draw has siblings
        for train, test in P.group_folds(groups, P.FOLDS, 0):
            assert not set(arch["index"].iloc[train]) & set(arch["index"].iloc[test])
        p = P.predict_study(arch, n_boot=20, importance=False, dependence=False)
        assert (p.held_out.groupby("index")["fold"].nunique() == 1).all()
        assert p.folds == min(P.FOLDS, len(set(arch["index"])))
    assert "cannot tell" in p.verdict  # eight draws cannot tell the joint model from NLC alone


@pytest.mark.parametrize("learner", P.LEARNERS)
def test_a_saved_predictor_predicts_what_scikit_learn_fitted_and_round_trips(learner, tiny_study_dir, tmp_path):
    results = load_results(tiny_study_dir, runs=False)
    arch = P.fit_rows(results)
    fitted = P.fit_predictor(results, learner, descriptors=True)
    assert {f.column for f in fitted.features} >= {"nlc", "depth", "norm", "activation"}
    loaded = P.load_predictor(fitted.save(tmp_path / "predictor.json"))
    assert loaded.to_dict() == fitted.to_dict()
    assert loaded.source["rows"] == len(arch) and loaded.source["science_fingerprint"]
    X, y = P.feature_table(arch, fitted.features), arch["test_error"].to_numpy()
    with P.one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rows: fewer quantiles than asked
        reference = P.make_learner(learner, fitted.features).fit(X, y).predict(X)
    np.testing.assert_allclose(loaded.predict(arch), reference, rtol=0, atol=1e-12)
    other = load_results(tiny_study_dir, runs=False).architectures.iloc[::-1]  # any table, any order
    np.testing.assert_allclose(loaded.predict(other), fitted.predict(other), rtol=0, atol=0)


def test_a_changed_or_foreign_predictor_file_is_refused_in_one_line(tiny_study_dir, tmp_path):
    fitted = P.fit_predictor(load_results(tiny_study_dir, runs=False), "boosted", descriptors=True)
    d = fitted.to_dict()
    cases = {}
    edited = json.loads(json.dumps(d))
    edited["model"]["trees"][0]["value"][-1] += 0.5  # one leaf changed by hand
    cases["edited"] = (json.dumps(edited), "sha256 does not match")
    looped = json.loads(json.dumps(d))
    tree = next(t for t in looped["model"]["trees"] if not all(t["leaf"]))
    tree["left"][0] = 0  # a node that is its own child: a loop, even with the digest redone
    looped["sha256"] = P._digest({k: v for k, v in looped.items() if k != "sha256"})
    cases["looped"] = (json.dumps(looped), "children must come after it")
    cases["pickle"] = (pickle.dumps(fitted), "not JSON")
    cases["list"] = ("[1, 2]", "not a JSON object")
    foreign = json.loads(json.dumps(d))
    foreign["features"][0]["column"] = "__import__('os').system('x')"
    foreign["sha256"] = P._digest({k: v for k, v in foreign.items() if k != "sha256"})
    cases["foreign feature"] = (json.dumps(foreign), "is not an init metric or descriptor")
    for name, (content, why) in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        with pytest.raises(UserError) as e:
            P.load_predictor(path)
        assert why in str(e.value) and "\n" not in str(e.value) and str(path) in str(e.value), (name, str(e.value))


def test_transfer_scores_a_predictor_fitted_on_another_study(real_study_dir, tiny_study_dir):
    fitted = P.fit_predictor(load_results(tiny_study_dir, runs=False), "linear")
    row = P.score_predictor(fitted, load_results(real_study_dir, runs=False), n_boot=50).iloc[0]
    arch = P.fit_rows(load_results(real_study_dir, runs=False))
    expected = sps.spearmanr(fitted.predict(arch), arch["test_error"]).statistic
    assert row["n"] == len(arch) and row["spearman"] == pytest.approx(expected, abs=1e-12)
    assert row["spearman_lo"] <= row["spearman"] <= row["spearman_hi"] and row["source"].endswith("study")


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


@pytest.mark.parametrize("learner", ["boosted", "linear"])
def test_batched_predictions_give_scikit_learns_own_numbers(learner):
    """``BatchedPredictions`` answers permutation importance's and partial dependence's many predict calls with
    one (boosted trees) or one per table (the ridge, whose BLAS product may round differently in a larger
    matrix): the importances and the curve are bit for bit those of scikit-learn called on the model itself."""
    from sklearn.inspection import partial_dependence, permutation_importance

    arch = population(80, seed=3)
    features = P.choose_features(arch)
    X, y = P.feature_table(arch, features), arch["test_error"].to_numpy()
    with warnings.catch_warnings(), P.one_thread():  # as predict_study: OpenMP threads on tiny tables only wait
        warnings.simplefilter("ignore")
        model = P.make_learner(learner, features, 0).fit(X.iloc[:50], y[:50])
        assert P.row_wise(model) == (learner == "boosted")
        held, y_held = X.iloc[50:], y[50:]

        def importance(m):
            return permutation_importance(m, held, y_held, scoring=P._spearman_scorer, n_repeats=3, random_state=0)

        np.testing.assert_array_equal(
            P.BatchedPredictions(model).run(importance).importances, importance(model).importances
        )
        grid = np.unique(np.percentile(X["nlc"], np.linspace(2, 98, 10)))

        def dependence(m):
            return partial_dependence(m, X, ["nlc"], custom_values={"nlc": grid}, kind="average", method="brute")

        batched, direct = P.BatchedPredictions(model).run(dependence), dependence(model)
    np.testing.assert_array_equal(batched["average"], direct["average"])
    np.testing.assert_array_equal(batched["grid_values"][0], direct["grid_values"][0])
