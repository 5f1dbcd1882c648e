"""The held-out evaluation's intervals and choices (``analysis.predict``): the variance of a cross-validated score
by its formula, the ridge's penalty chosen leaving out whole base architectures against refitting, the ranking
measures' intervals, the predictor a ranking uses (never one NLC alone beats in studies where the NLC window is the
whole truth), a rule as a saved predictor, and what a ``rank --check`` of too few architectures can tell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis.predict import CANNOT_FIT, JOINT, fit_predictor, load_predictor, predict_study
from archstudy.analysis.predict.evaluation import NLC_RULE, ranking_measures, ranking_table
from archstudy.analysis.predict.folds import boot_counts, cv_interval, cv_p, cv_variance
from archstudy.analysis.predict.learners import ALPHAS, GroupRidgeCV, leave_group_out_errors
from archstudy.analysis.predict.lift import paired_lift, smallest_rank_sum_p, smallest_useful_k
from archstudy.analysis.predict_simulation import window_architectures


def test_the_variance_of_a_cross_validated_score_is_the_bootstraps_plus_the_repeats():
    scores = np.array([[0.1, 0.3, 0.2, 0.4, 0.5], [0.2, 0.2, 0.3, 0.3, 0.6], [0.0, 0.4, 0.3, 0.2, 0.4]])
    boot = np.random.default_rng(0).normal(0.3, 0.05, 200)
    m, var = cv_variance(scores, boot)
    assert m == pytest.approx(scores.mean())
    assert var == pytest.approx(np.var(boot, ddof=1) + np.var(scores.mean(axis=1), ddof=1))
    _, lo, hi = cv_interval(scores, boot, 0.95)
    assert hi - m == pytest.approx(sps.norm.ppf(0.975) * math.sqrt(var))
    assert (lo > 0) == (cv_p(scores, boot) < 0.05)
    assert cv_p(scores, boot, "greater") == pytest.approx(sps.norm.sf(m / math.sqrt(var)))


def test_the_ridges_penalty_leaves_out_whole_base_architectures():
    """The closed form of ``leave_group_out_errors`` against refitting scikit-learn's Ridge without each group;
    with one row per group, ``GroupRidgeCV`` is RidgeCV's own leave-one-out."""
    from sklearn.linear_model import Ridge, RidgeCV

    rng = np.random.default_rng(4)
    X, groups = rng.normal(size=(30, 4)), np.repeat(np.arange(10), 3)
    y = X @ np.array([1.0, -0.5, 0.0, 0.2]) + rng.normal(0, 0.3, 10)[groups] + rng.normal(0, 0.1, 30)
    alphas = np.array([0.01, 1.0, 30.0])
    want = []
    for a in alphas:
        total = 0.0
        for g in range(10):
            out = groups == g
            fit = Ridge(alpha=a).fit(X[~out], y[~out])
            total += float(((fit.predict(X[out]) - y[out]) ** 2).sum())
        want.append(total)
    assert leave_group_out_errors(X, y, groups, alphas) == pytest.approx(want)
    chosen = GroupRidgeCV(alphas=alphas, groups=groups).fit(X, y)
    assert chosen.alpha_ == alphas[int(np.argmin(want))]
    assert GroupRidgeCV(alphas=ALPHAS, groups=np.arange(30)).fit(X, y).alpha_ == RidgeCV(alphas=ALPHAS).fit(X, y).alpha_


def test_the_ranking_measures_have_intervals_and_kendall_within_the_top_k():
    y = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    score = np.array([0.2, 0.1, 0.35, 0.9, 0.5, 0.6, 0.65, 0.8])
    m = ranking_measures(y, score, 3)
    # the top 3 by score: rows 1, 0, 2 (errors 0.2, 0.1, 0.3): all of the 3 best, ordered 0.2, 0.1, 0.3
    assert m["precision"] == 1.0 and m["regret"] == 0.0
    assert m["kendall_top"] == pytest.approx(sps.kendalltau(score[[1, 0, 2]], y[[1, 0, 2]]).statistic)
    preds = {"joint": score[None, :]}
    t = ranking_table(y, preds, np.zeros((1, 8), dtype=int), ["joint"], seed=1).set_index("k")
    assert list(t.index) == [1, 5] and np.isnan(t.at[1, "kendall_top"])  # one architecture has no order
    for measure in ("precision", "ndcg", "regret", "kendall_top"):
        r = t.loc[5]
        assert r[f"{measure}_lo"] <= r[measure] + 1e-12 and r[measure] <= r[f"{measure}_hi"] + 1e-12


def test_rank_never_ranks_with_a_model_that_nlc_alone_beats():
    """Where the NLC window is the whole truth (``window_architectures``), NLC alone often beats the joint model;
    the ranker is then never the joint model: it is the candidate of highest held-out rho among those that beat
    chance, and one that another candidate beats has a lower rho."""
    for seed in (0, 1):
        p = predict_study(window_architectures(48, seed), importance=False, dependence=False, curve=False)
        s = p.scores.set_index("learner")
        beaten = p.calls.get("beats_nlc") == -1
        assert not (beaten and p.ranker in JOINT)
        assert p.ranker is not None and p.ranker_why
        top = max(("joint", "baseline", "nlc"), key=lambda m: s.at[m, "spearman"])
        picked = p.cv.most_picked("baseline")
        want = {
            "joint": p.cv.most_picked("joint"),
            "baseline": picked if picked == "descriptors" else f"rule:{picked}",
            "nlc": "rule:nlc",
        }
        assert p.ranker == want[top]


def test_a_rule_is_a_predictor_saved_as_data(tmp_path):
    arch = window_architectures(40, 3)
    fitted = fit_predictor(arch, "rule:nlc")
    again = load_predictor(fitted.save(tmp_path / "p.json"))
    assert again.learner == "rule:nlc" and np.allclose(again.predict(arch), fitted.predict(arch))
    d = NLC_RULE.values(arch)
    order = np.argsort(fitted.predict(arch), kind="stable")
    assert np.all(np.diff(d[order]) >= -1e-12)  # predicted error grows with the distance from [1, 3]


def test_a_check_of_three_per_set_cannot_tell_anything():
    assert smallest_rank_sum_p(3, 3) == pytest.approx(2 / 20) and smallest_useful_k() == 4
    errors = {i: 0.1 * i for i in range(8)}
    r = paired_lift(errors, [0, 1, 2], [5, 6, 7], n_boot=200)
    assert r["too_small"] and r["lift_lo"] > 0  # the bootstrap excludes 0; the rank-sum test cannot
    assert r["p_rank_sum"] == pytest.approx(sps.mannwhitneyu([0.5, 0.6, 0.7], [0, 0.1, 0.2]).pvalue)
    assert not paired_lift(errors, [0, 1, 2, 3], [4, 5, 6, 7], n_boot=200)["too_small"]


def test_the_bootstrap_resamples_whole_base_architectures():
    groups = np.array([0, 0, 1, 2, 2, 2])
    c = boot_counts(groups, seed=5, n_boot=50)
    assert c.shape == (50, 6) and np.all(c[:, 0] == c[:, 1]) and np.all(c[:, 3] == c[:, 5])
    assert np.all(c.sum(axis=1) == c[:, [0, 2, 3]] @ np.array([2, 1, 3]))


def test_the_coverage_of_paired_differences_against_its_formula():
    """``interval_coverage``: the truth is the mean difference over the replicates, the coverage counts the
    intervals holding it, the ratio is the mean half-width over z times the difference's spread."""
    from archstudy.analysis.predict_simulation import interval_coverage

    d = np.array([0.02, 0.06, 0.04, 0.08])
    t = pd.DataFrame({"replicate": range(4), "versus": "nlc", "diff": d, "lo": d - 0.025, "hi": d + 0.025})
    r = interval_coverage(t).iloc[0]
    assert r["truth"] == pytest.approx(0.05) and r["covers"] == 2  # 0.04 and 0.06 lie within 0.025 of 0.05
    assert r["ratio"] == pytest.approx(0.025 / (sps.norm.ppf(0.975) * np.std(d, ddof=1)))
    assert r["lo"] == pytest.approx(sps.beta.ppf(0.025, 2, 3)) and r["hi"] == pytest.approx(sps.beta.ppf(0.975, 3, 2))


def test_the_ranker_is_never_a_joint_model_another_candidate_beats():
    """``choose_ranker`` on scores where only the joint model beats chance but NLC alone beats it held out (its
    paired interval lies below 0): no ranker, and the reason says so; without that comparison, the joint model."""
    from types import SimpleNamespace

    from archstudy.analysis.predict.evaluation import choose_ranker

    scores = pd.DataFrame(
        {
            "learner": ["joint", "baseline", "nlc"],
            "status": "ok",
            "spearman": [0.4, 0.3, 0.35],
            "p": [0.001, 0.2, 0.03],
        }
    )
    # Holm over the three one-sided p-values: 0.003, 0.2, 0.06: only the joint model beats chance at 2.5%
    versus = pd.DataFrame(
        {"versus": ["baseline", "nlc"], "diff": [0.1, -0.05], "lo": [-0.1, -0.09], "hi": [0.3, -0.01]}
    )
    cv = SimpleNamespace(picked={"joint": ["boosted"]}, most_picked=lambda m: "boosted")
    ranker, why = choose_ranker(SimpleNamespace(scores=scores, versus=versus, cv=cv))
    assert ranker is None and "another candidate beats it held out" in why
    versus["hi"] = [0.3, 0.02]
    assert choose_ranker(SimpleNamespace(scores=scores, versus=versus, cv=cv))[0] == "boosted"
    scores.loc[0, "status"] = CANNOT_FIT  # a candidate that cannot fit is named as such
    ranker, why = choose_ranker(SimpleNamespace(scores=scores, versus=versus, cv=cv))
    assert ranker is None and "the joint model cannot fit" in why and "NLC alone ρ = 0.35" in why
