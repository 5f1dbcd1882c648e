"""``report --predict-from`` on a study too small for its own held-out evaluation: the transfer's score is still
given (it was dropped without a word), or why it cannot be."""

from __future__ import annotations

from scipy import stats as sps

from archstudy.analysis import load_results
from archstudy.analysis import predict as P
from archstudy.analysis.predict.page import report_prediction


def test_a_small_study_still_gets_the_transfers_score(tiny_study_dir):
    results = load_results(tiny_study_dir, runs=False)
    fitted = P.fit_predictor(results, "linear")
    arch = P.fit_rows(results).iloc[:5]
    line = report_prediction(arch, n_boot=20, seed=0, predictor=fitted)
    assert isinstance(line, str) and line.startswith("No held-out evaluation: ")
    rho = sps.spearmanr(fitted.predict(arch), arch["test_error"]).statistic
    assert f"ranks this study's 5 trained architectures with Spearman ρ {rho:.2f} [" in line
    assert report_prediction(arch, n_boot=20, seed=0).count("Transfer") == 0  # no predictor, no transfer


def test_a_transfer_that_cannot_be_scored_says_why(tiny_study_dir):
    results = load_results(tiny_study_dir, runs=False)
    line = report_prediction(
        P.fit_rows(results).iloc[:2], n_boot=20, seed=0, predictor=P.fit_predictor(results, "linear")
    )
    assert "Transfer: the predictor fitted on another study cannot be scored here: " in line
    assert "at least 3 trained architectures" in line and "\n" not in line
