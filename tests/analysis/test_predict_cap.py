"""The held-out evaluation of a large study is bounded (analysis.predict.capped_rows, MAX_ROWS): above the cap it
evaluates a seeded random subsample of whole base architectures, and that evaluation is exactly the evaluation of
the subsample as a study of its own (so the null calibration of test_predict_calibration, measured on studies of
that size, is the capped verdict's); below the cap nothing changes; the report's section says so with both
numbers; ``predict_study`` tells its progress per held-out fold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis import predict as P
from archstudy.analysis.predict import evaluation
from archstudy.analysis.predict_simulation import null_architectures
from archstudy.sampling import SpecError

FAST = dict(joint=("linear",), repeats=1, importance=False, dependence=False, curve=False)


def _with_siblings(arch: pd.DataFrame) -> pd.DataFrame:
    """Every two rows one base architecture (the same ``index``): a draw and its sibling."""
    a = arch.copy()
    a["index"] = np.arange(len(a)) // 2
    a["variant"] = np.where(np.arange(len(a)) % 2, "sibling", "base")
    return a


def test_capped_rows_keeps_whole_base_architectures_seeded_and_at_most_the_cap():
    groups = np.repeat(np.arange(50), np.arange(50) % 3 + 1)  # groups of 1, 2 and 3 rows: 99 rows
    assert P.capped_rows(groups, len(groups), seed=0) is None
    rows = P.capped_rows(groups, 40, seed=3)
    assert rows is not None and 37 <= len(rows) <= 40  # short of 40 by less than the largest group
    assert (np.diff(rows) > 0).all()
    kept = np.unique(groups[rows])
    assert np.array_equal(np.sort(rows), np.flatnonzero(np.isin(groups, kept)))  # whole groups only
    assert np.array_equal(rows, P.capped_rows(groups, 40, seed=3))
    assert not np.array_equal(rows, P.capped_rows(groups, 40, seed=4))
    # every group equally likely to be kept: the share of draws keeping group 0 (1 row) and 2 (3 rows) over
    # seeds is about kept groups / 50 (~ 0.4 +- 0.07 at 200 seeds)
    share = np.mean([np.isin([0, 2], groups[P.capped_rows(groups, 40, seed=s)]) for s in range(200)], axis=0)
    assert np.all(np.abs(share - 20 / 50) < 0.15), share
    assert P.capped_rows(np.zeros(10, dtype=int), 5, seed=0).tolist() == list(range(10))  # one group: kept whole


def test_a_capped_evaluation_is_the_evaluation_of_its_subsample_and_below_the_cap_nothing_changes():
    arch = _with_siblings(null_architectures(60, seed=1))
    told: list[tuple[str, int | None, int | None]] = []
    capped = P.predict_study(arch, max_rows=40, seed=2, progress=lambda *a: told.append(a), **FAST)
    # progress: a count per held-out fold (and the final choice of the joint learner), from 0 to the total
    total = capped.repeats * capped.folds + 1
    assert told == [("held-out evaluation of 40 architectures (of 60)", k, total) for k in range(total + 1)]
    rows = P.capped_rows(evaluation.base_groups(arch), 40, seed=2)
    assert rows is not None and len(rows) == 40
    alone = P.predict_study(arch.iloc[rows].reset_index(drop=True), seed=2, **FAST)
    pd.testing.assert_frame_equal(capped.scores, alone.scores)
    assert capped.verdict == alone.verdict and capped.calls == alone.calls
    assert (capped.of, int(capped.scores["n"].iloc[0]), alone.of) == (60, 40, 40)
    assert set(capped.held_out["arch_id"]) == set(arch["arch_id"].iloc[rows])
    assert P.capped_rows(evaluation.base_groups(arch), 60, seed=2) is None  # at the cap and below: every row, as before
    whole = P.predict_study(arch, seed=2, **FAST)
    assert whole.of == 60 and int(whole.scores["n"].iloc[0]) == 60
    with pytest.raises(SpecError, match=r"predict_study.max_rows = 3"):
        P.predict_study(arch, max_rows=3, **FAST)

    # the report's section says how many of how many were evaluated, and only where it sampled
    class Section:
        predict = capped

    html = P.predict_html(Section())
    assert "Held out on a random 40 of the 60 trained architectures" in html
    assert "at most 40 are evaluated" in html  # the cap it ran under
    Section.predict = whole
    assert "Held out on a random" not in P.predict_html(Section())
    assert P.MAX_ROWS >= 1000  # the calibration of a study of this size is the simulated one's
