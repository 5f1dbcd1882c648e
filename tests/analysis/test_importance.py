"""The importance ranking (``analysis.importance``: fANOVA through Optuna): a target that is a function of one design
axis alone ranks that axis first with most of the variance; the shares are fractions with their replicate range; the
section states no verdict."""

from __future__ import annotations

import re

import numpy as np
import pytest

from archstudy.analysis import load_results
from archstudy.analysis.importance import importance, targets
from archstudy.study.perf.synthetic_store import write_synthetic_study

pytest.importorskip("optuna", reason="the importance ranking needs optuna (the optional extra export)")


@pytest.fixture(scope="module")
def arch(tmp_path_factory):
    root = tmp_path_factory.mktemp("importance") / "study"
    write_synthetic_study(str(root), 40, num_lrs=2, curve_epochs=1)
    return load_results(root).architectures.reset_index(drop=True)


def test_a_target_of_depth_alone_ranks_depth_first(arch):
    table = arch.assign(test_error=np.log(arch["depth"].to_numpy(np.float64)))
    imp = importance(table, replicates=3, seed=0)
    assert imp is not None and imp.rows == len(arch) and imp.replicates == 3
    first = imp.table.iloc[0]
    assert first["feature"] == "depth" and first["median"] > 0.5
    assert (imp.table["low"] <= imp.table["median"]).all() and (imp.table["median"] <= imp.table["high"]).all()
    assert ((imp.table["low"] >= 0) & (imp.table["high"] <= 1 + 1e-9)).all()
    assert set(imp.table["kind"]) <= {"axis", "measure"}


def test_too_few_architectures_give_no_ranking_and_targets_follow_the_rates(arch):
    assert importance(arch.head(10), replicates=1) is None
    assert targets(arch.assign(lr=0.1)) == ["test_error"]
    assert targets(arch.assign(lr=np.where(arch.index % 2, 0.1, 0.01))) == ["test_error", "log10_lr"]


def test_the_section_ranks_every_varying_axis_and_claims_no_significance(tmp_path_factory):
    from archstudy.analysis.report.importance import importance_html
    from archstudy.analysis.study_analysis import analyse

    root = tmp_path_factory.mktemp("section") / "study"
    write_synthetic_study(str(root), 24, num_lrs=2, curve_epochs=1)
    s = analyse(load_results(root), "study", n_boot=0, seed=0, window=None, label="study")
    html = importance_html(s)
    assert "<h4>For test error</h4>" in html and "range over 10 replicates" in html
    assert "no significance is claimed" in html
    assert not re.search(r"\b(significant|beats|p ?=|p-value)\b", html.replace("no significance", ""))
