"""``Protocol.test_every`` under the steps schedule: the test error of every run evaluated into the curves every N
epochs and after the last, without changing the training; ``Outcome.best_along_training`` is the lowest of
those points (the Householder papers' "best result"), the final one the run's own test error."""

import math

import numpy as np
import pytest

import trainer_standins as standins
from archstudy.sampling import SpecError
from archstudy.study import Protocol, train_architecture
from archstudy.study.training.schedule import scheduler_of

pytestmark = pytest.mark.usefixtures("one_thread")

BOARD = standins.checkerboard()
# 120 training points in minibatches of 20: 6 steps an epoch; 23 iterations = 3 epochs and 5 steps of a fourth
PLAIN = standins.STEPS.replace(step_at=(), lrs=(0.005, 0.02))


def test_the_test_split_is_tracked_every_n_epochs_and_after_the_last():
    for every, expected in ((1, [1, 2, 3, 4]), (2, [2, 4]), (3, [3, 4]), (10, [4])):
        s = scheduler_of(PLAIN.replace(test_every=every))
        assert s.tracks == "test"
        assert [e for e in range(1, 5) if s.tracked(e, min(6 * e, 23))] == expected
        assert s.tracked(2, 12) == ("test" if 2 in expected else None)
    assert scheduler_of(PLAIN).tracks == "none" and scheduler_of(PLAIN).tracked(4, 23) is None
    assert scheduler_of(Protocol(monitor="train")).tracked(7, 0) == "train"  # E.2's: every epoch, its monitor
    with pytest.raises(SpecError, match=r"^Protocol\.test_every = 2: must stay None unless schedule = 'steps'$"):
        Protocol(test_every=2)
    with pytest.raises(SpecError, match=r"^Protocol\.test_every = 0: must be an integer >= 1, or null$"):
        PLAIN.replace(test_every=0)
    assert "test_every" not in PLAIN.canonical() and PLAIN.replace(test_every=5).canonical()["test_every"] == 5


def test_tracked_points_are_the_test_errors_of_the_states_along_training():
    """The point at epoch 2 is the final test error of the same training stopped after 12 iterations (two
    epochs: same minibatches, no division); the last point is the run's own final test error; tracking changes
    nothing of the training; the best along training is the lowest point."""
    tracked = train_architecture(standins.HAN, BOARD, seed=5, protocol=PLAIN.replace(test_every=1))
    plain = train_architecture(standins.HAN, BOARD, seed=5, protocol=PLAIN)
    stopped = train_architecture(standins.HAN, BOARD, seed=5, protocol=PLAIN.replace(iterations=12))
    rows = tracked.curve_rows()
    assert tracked.monitored == "test" and {r["monitored"] for r in rows} == {"test"}
    best = tracked.best_along_training()
    for k, (run, same, short) in enumerate(zip(tracked.runs, plain.runs, stopped.runs)):
        assert (run.test_error, run.train_error, run.epochs) == (same.test_error, same.train_error, same.epochs)
        points = {r["epoch"]: r["monitored_error"] for r in rows if r["lr_index"] == k}
        assert math.isnan(points[0]) and sorted(points) == [0, 1, 2, 3, 4]
        assert points[2] == pytest.approx(short.test_error, abs=1e-12)
        assert points[4] == pytest.approx(run.test_error, abs=1e-12)
        assert best[k] == min(points[e] for e in (1, 2, 3, 4)) <= run.test_error
    assert all(math.isnan(b) for b in plain.best_along_training())  # nothing evaluated, nothing to report
    every_two = train_architecture(standins.HAN, BOARD, seed=5, protocol=PLAIN.replace(test_every=2))
    assert [
        r["epoch"] for r in every_two.curve_rows() if r["lr_index"] == 0 and not math.isnan(r["monitored_error"])
    ] == [2, 4]


def test_a_diverged_run_is_best_before_it_diverged():
    """At rate 0.1 this HanNet's loss overflows in its 4th epoch: the run stops there (rewound to its initial
    state, its test error that of the initialization); its best along training leaves out the epoch it diverged
    in (its NaN outputs count as errors) and keeps the finite points before it."""
    p = PLAIN.replace(lrs=(0.005, 0.1), test_every=1, iterations=60)
    out = train_architecture(standins.HAN, BOARD, seed=3, protocol=p)
    run = out.runs[1]
    assert run.diverged and run.epochs == 4
    points = {r["epoch"]: (r["train_loss"], r["monitored_error"]) for r in out.curve_rows() if r["lr_index"] == 1}
    assert max(points) == run.epochs and not np.isfinite(points[run.epochs][0])
    before = [e for e in range(1, run.epochs) if np.isfinite(points[e][0])]
    assert len(before) == 3 and points[run.epochs][1] == 1.0
    assert out.best_along_training()[1] == min(points[e][1] for e in before) < 0.5
