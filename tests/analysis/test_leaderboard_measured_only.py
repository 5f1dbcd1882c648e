"""A study that measures only (``measure_only``, as `archstudy rank` makes one: metrics at initialization, nothing
trained) is said to be "measured only (no training asked)", in the one wording of analysis.leaderboard, never
"pruned at launch": by the leaderboard (its note, its text, its JSON) and by the status row it gives."""

import dataclasses

import numpy as np
import pytest

from archstudy.analysis import load_results
from archstudy.analysis.leaderboard import MEASURED_ONLY, leaderboard, untrained_row


@pytest.fixture(scope="module")
def results(tiny_study_dir):
    return load_results(tiny_study_dir, runs=False)


def _untrained(results, measure_only: bool):
    """The tiny study's architectures, measured and not trained (no errors, ``trained`` false)."""
    arch = results.architectures.assign(test_error=np.nan, val_error=np.nan, train_error=np.nan, trained=False)
    return dataclasses.replace(results, architectures=arch, config={**results.config, "measure_only": measure_only})


def test_a_measure_only_study_is_measured_only_not_pruned(results):
    measured = _untrained(results, True)
    n = len(measured.architectures)
    board = leaderboard(measured)
    assert board.measure_only and len(board.architectures) == 0 and board.trained == 0
    assert board.notes == [
        f"{n} finished architectures have no test_error: measured only (no training asked); a metric at "
        "initialization ranks them (`--by nlc`)"
    ]
    text = board.text()
    assert "no test_error: every architecture is measured only (no training asked)" in text
    assert "pruned" not in text
    assert board.to_dict()["measure_only"] is True
    # the same untrained rows in a study that prunes: pruned (or diverged), not "measured only"
    pruned = leaderboard(_untrained(results, False))
    assert not pruned.measure_only and "measured only" not in pruned.text()
    assert pruned.notes == [
        f"{n} finished architectures have no test_error (pruned at launch, or every run diverged) and are not ranked"
    ]
    # a metric at initialization ranks every one of them
    assert len(leaderboard(measured, by="nlc", k=n).architectures) == n


def test_status_says_the_same_words():
    label, words = untrained_row(True, "NLC window [1, 3]")
    assert words.startswith(f"{MEASURED_ONLY}: ") and MEASURED_ONLY == "measured only (no training asked)"
    assert "pruned" not in label + words
    assert untrained_row(False, "NLC window [1, 3]") == (
        "  pruned",
        "NLC window [1, 3]: NLC at initialization outside it, not trained",
    )
