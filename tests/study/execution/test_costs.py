"""study.execution.costs: the line said before training, the probe's estimate of one architecture, and the ETA as the
study goes (from finished units and the live records; it never counts up while the last units run)."""

import math

import pytest

from archstudy.study import load_dataset
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.execution.costs import (
    PAST,
    PLACED_UNITS,
    Forecast,
    count_text,
    describe_protocol,
    duration,
    expected_epochs,
    launch_line,
    probe,
    relative_cost,
)
from archstudy.study.execution.unit import work_units
from archstudy.study.training.epoch_profiles import EXPECTED_STACK_EPOCHS, SCHEDULE_FLOOR

CONFIG = StudyConfig(
    dataset="waveform-noise",
    architectures=3,
    param_budget=1500,
    seed=2,
    siblings=["norm"],
    protocol={"preset": "quick", "num_lrs": 2, "max_epochs": 2},
    d_in=40,
    d_out=3,
)


def test_expected_epochs_follow_the_schedule():
    steps = Protocol(schedule="steps", iterations=1000, batch_size=250)
    assert expected_epochs(steps, 12) == math.ceil(1000 / 12)
    paper = Protocol()  # E.2's plateau schedule, no cap: the measured multiple of its floor of 10 + 10 x 5 epochs
    assert expected_epochs(paper, 12) == pytest.approx(60 * EXPECTED_STACK_EPOCHS / SCHEDULE_FLOOR)
    assert expected_epochs(Protocol(max_epochs=15), 12) == 15.0


def test_one_vocabulary_for_the_units_of_a_plan():
    assert count_text(CONFIG.replace(siblings=[]), 3) == "3 architectures"
    assert count_text(CONFIG, 9) == "9 architectures (3 drawn + 6 siblings along norm)"
    assert describe_protocol(Protocol.from_dict(CONFIG.protocol)).startswith("protocol quick: 2 learning rates")
    assert [duration(s) for s in (59.4, 61, 3 * 3600 + 120, 3 * 86400)] == ["59s", "1m01s", "3h02m", "3d00h"]


@pytest.fixture(scope="module")
def data():
    return load_dataset("waveform-noise")


def test_the_plan_line_names_what_runs(data):
    units = work_units(CONFIG)
    line = launch_line(CONFIG, data, units, units[2:], 2, "here", 2)
    assert len(units) == 9  # norm: two siblings each
    assert line.startswith("here: 7 of 9 architectures (3 drawn + 6 siblings along norm) to run (2 finished earlier): ")
    assert "1,500-parameter budget" in line and "protocol quick: 2 learning rates" in line
    assert f"({len(data.train.y):,} train / {len(data.val.y):,} val / {len(data.test.y):,} test, 40 inputs" in line
    assert line.endswith("; 2 at a time")


def test_the_probe_times_steps_without_touching_the_random_state(data, global_random_state, one_thread):
    unit = work_units(CONFIG)[0]
    protocol = Protocol.from_dict(CONFIG.protocol)
    p = probe(unit.spec, data, protocol, None)
    assert p["steps_per_epoch"] == len(data.train.y) // protocol.batch_size
    assert p["expected_epochs"] == 2.0 and p["timed_steps"] > 0
    assert 0 < p["step_1_s"] <= p["step_s"] and p["eval_s_per_example"] > 0
    # train_s is the module docstring's sum, every part of it positive
    floor = p["expected_epochs"] * p["steps_per_epoch"] * p["step_s"]
    assert floor < p["train_s"] < math.inf


def test_the_eta_comes_from_the_probes_then_from_finished_units():
    f = Forecast(todo=4, slots=2)
    assert f.eta(0, 0, 0, now=0.0) == (None, False)
    f.seen(["a", "b"], now=0.0)
    f.observe({"a": {"stage": "measuring", "probe": {"train_s": 90.0, "timed_steps": 6}, "measure_s": 10.0}})
    assert f.unit_s() == 100.0
    seconds, past = f.eta(0, 0, 2, now=0.0)
    assert seconds == pytest.approx((100 + 100 + 2 * 100) / 2) and not past
    line = f.estimate_line(now=0.0)
    assert line.startswith("estimated 3m20s for 4 architectures (2 at a time; about 1m40s each")
    assert f.estimate_line(now=0.0) is None  # said once
    f.finished("a", now=50.0)  # a unit took 50 s: the mean of what finished replaces the probe
    f.seen(["b", "c"], now=50.0)  # b in flight since 0
    assert f.unit_s() == 50.0
    seconds, _ = f.eta(1, 0, 2, now=50.0)  # b: 0 s left of 50, c: 50, one queued: 50
    # b is past its 50 s: PAST x 50 left; c has 50 left; the queued one starts when b's slot frees: PAST x 50 + 50
    assert seconds == pytest.approx(PAST * 50 + 50)


def test_a_unit_in_training_counts_its_own_epochs_left():
    f = Forecast(todo=1, slots=1)
    f.seen(["a"], now=0.0)
    f.finished("z", now=0.0)  # not in flight: ignored
    f.observe(
        {
            "a": {
                "stage": "training",
                "epoch": 5,
                "expected_epochs": 20,
                "train_elapsed_s": 10.0,
                "probe": {"train_s": 1000.0},
            }
        }
    )
    seconds, past = f.eta(0, 0, 1, now=11.0)
    assert seconds == pytest.approx(10.0 * 15 / 5) and not past
    assert f.detail({"a": "0"}) == "#0 epoch 5"


def test_the_eta_never_counts_up_while_the_last_unit_runs_past_its_estimate():
    f = Forecast(todo=2, slots=1)
    f.seen(["a"], now=0.0)
    f.finished("a", now=100.0)
    f.seen(["b"], now=100.0)
    etas = [f.eta(1, 0, 1, now=100.0 + t) for t in (0, 50, 99, 150, 500, 5000)]
    seconds = [s for s, _ in etas]
    assert all(later <= earlier for earlier, later in zip(seconds, seconds[1:]))
    assert etas[-1] == (pytest.approx(PAST * 100), True)  # past its estimate: said so, and nearly done


def _training(epoch: int, train_s: float, expected: int = 15) -> dict:
    return {"stage": "training", "epoch": epoch, "expected_epochs": expected, "train_elapsed_s": train_s}


def test_before_any_finishes_the_queued_units_take_the_running_ones_pace_not_the_probes():
    """Probed at 10 s a unit on an idle core, a unit in training does 3 of 15 epochs in 20 s, 30 s after it
    started: it projects T = 30 + 20 x 12 / 3 = 110 s, and the queued units take that, not the probe's 10 s."""
    f = Forecast(todo=4, slots=2, probes={"a": {"train_s": 10.0, "measure_s": 0.0}, "b": {"train_s": 10.0}})
    f.seen(["a", "b"], now=0.0)
    f.observe({"a": _training(3, 20.0), "b": {"stage": "measuring"}}, now=30.0)
    assert f.unit_s(now=30.0) == pytest.approx(110.0)
    # a: 80 s left; b (not yet training) 110 - 30 = 80 s left; two queued, one after each: 80 + 110 on both slots
    assert f.eta(0, 0, 2, now=30.0) == (pytest.approx(190.0), False)


def test_the_units_still_running_count_beside_the_quick_ones_that_finished_first():
    """One unit finished in 40 s; one in training for 60 s has done 5 of 15 epochs in 50 s: it projects
    60 + 50 x 10 / 5 = 160 s. A unit to start counts the mean of both, (40 + 160) / 2 = 100 s, not 40 s."""
    f = Forecast(todo=4, slots=2)
    f.seen(["a", "b"], now=0.0)
    f.finished("a", now=40.0)
    f.seen(["b", "c"], now=40.0)
    f.observe({"b": _training(5, 50.0), "c": {"stage": "measuring"}}, now=60.0)
    assert f.unit_s(now=60.0) == pytest.approx(100.0)
    # b: 100 s left; c: 100 - 20 = 80 s left; the last one starts when c frees its slot: 80 + 100 = 180 s
    assert f.eta(1, 0, 2, now=60.0)[0] == pytest.approx(180.0)


def test_the_queued_units_start_when_a_slot_frees():
    """Two slots with 10 s and 50 s left and one unit of m s queued: it starts after 10 s and the session ends
    at 10 + m s (work over slots would say (10 + 50 + m) / 2)."""
    f = Forecast(todo=4, slots=2)
    f.seen(["z"], now=-100.0)
    f.finished("z", now=0.0)  # one unit took 100 s
    f.seen(["a", "b"], now=0.0)
    f.observe({"a": _training(14, 140.0), "b": _training(10, 100.0)}, now=150.0)
    # a: 10 s left, projects 160 s; b: 50 s left, projects 200 s; a unit to start: the mean of 100, 160, 200
    m = (100.0 + 160.0 + 200.0) / 3
    assert f.eta(1, 0, 2, now=150.0)[0] == pytest.approx(10.0 + m)
    many = Forecast(todo=PLACED_UNITS + 1_000, slots=4, durations=[8.0])  # beyond the units placed one by one
    assert many.eta(0, 0, 0, now=0.0)[0] == pytest.approx((PLACED_UNITS + 1_000) * 8.0 / 4)


def test_the_timed_steps_of_the_first_units_are_not_counted_for_the_later_ones():
    """A unit that spent 20 s timing steps for the estimate and finished after 70 s: the units after it, which
    time none, take 50 s; the finishing stage seen to take 6 s is added to a unit in training's epochs left."""
    f = Forecast(todo=3, slots=1)
    f.seen(["a"], now=0.0)
    f.observe({"a": {"stage": "measuring", "probe": {"train_s": 30.0, "probe_s": 20.0}, "measure_s": 5.0}}, now=1.0)
    f.observe({"a": {"stage": "finishing"}}, now=64.0)
    f.finished("a", now=70.0)
    assert f.durations == [50.0] and f.finishes == [6.0]
    f.seen(["b"], now=70.0)
    f.observe({"b": _training(5, 10.0)}, now=80.0)  # 20 s of training left, then 6 s finishing
    assert f.eta(1, 0, 1, now=80.0)[0] == pytest.approx(26.0 + (50.0 + 10.0 + 26.0) / 2)


def test_a_unit_to_start_costs_its_depth_times_the_seconds_per_layer_measured():
    """Weights (``relative_cost``: depth): a finished unit of depth 10 took 100 s, so 10 s a layer; the queued
    units of depth 30 and 5 take 300 s and 50 s, one after the other on the one slot."""
    f = Forecast(todo=3, slots=1, weights={"a": 10.0, "b": 30.0, "c": 5.0})
    f.seen(["a"], now=0.0)
    f.finished("a", now=100.0)
    assert f.unit_s(now=100.0, key="b") == pytest.approx(300.0)
    assert f.eta(1, 0, 0, now=100.0)[0] == pytest.approx(300.0 + 50.0)
    assert relative_cost(work_units(CONFIG)[0].spec) == work_units(CONFIG)[0].spec.depth


def test_the_pace_of_a_unit_leaves_out_its_first_epoch_once_a_later_one_is_read():
    """The first epoch also finds the learning rates: read at epoch 1 after 20 s and at epoch 3 after 30 s, the
    pace is (30 - 20) / 2 = 5 s an epoch, so 12 epochs of 15 are 60 s away (30 x 12 / 3 = 120 s counting the
    first); a unit at its expected epochs has only its finishing left."""
    f = Forecast(todo=2, slots=2)
    f.seen(["a", "b"], now=0.0)
    f.observe({"a": _training(1, 20.0), "b": _training(15, 40.0)}, now=25.0)
    f.observe({"a": _training(3, 30.0), "b": _training(15, 40.0)}, now=35.0)
    assert f._remaining("a", 35.0, 1.0) == (pytest.approx(60.0), False)
    assert f._remaining("b", 35.0, 1.0) == (0.0, False)
    # both project: a 35 + 60 s, b 35 + 0 s; nothing queued: the ETA is a's 60 s
    assert f.unit_s(now=35.0) == pytest.approx((95.0 + 35.0) / 2) and f.eta(0, 0, 2, now=35.0)[0] == 60.0


def test_a_unit_read_only_at_its_first_epoch_does_not_project_yet():
    """The first epoch's pace is the rate search's too: read once, at epoch 1 after 20 s, a unit projects nothing
    (the queued take the finished unit's 40 s, not 40 + 20 x 14 = 300 s); read again at epoch 3 it does."""
    f = Forecast(todo=3, slots=2)
    f.seen(["a", "b"], now=0.0)
    f.finished("a", now=40.0)
    f.seen(["b"], now=40.0)
    f.observe({"b": _training(1, 20.0)}, now=40.0)
    assert f._projected("b", 40.0) is None and f.unit_s(now=40.0) == pytest.approx(40.0)
    f.observe({"b": _training(3, 30.0)}, now=50.0)
    assert f._projected("b", 50.0) == pytest.approx(10.0 / 2 * 12)


def test_a_retried_unit_forgets_its_first_attempts_marks():
    """The engine retries a failed unit before it leaves flight: a first attempt that reached its final evaluation,
    or read epoch 10 at 50 s, says nothing of the second, which trains again from epoch 1 (another node, no
    checkpoint): its pace is its own, 4 s an epoch from a single record, not a mix with the first's, and never
    negative."""
    f = Forecast(todo=1, slots=1)
    f.seen(["a"], now=0.0)
    f.observe({"a": {**_training(10, 50.0), "attempt": 1}}, now=50.0)
    f.observe({"a": {"stage": "finishing", "attempt": 1}}, now=60.0)
    assert "a" in f.finishing
    f.observe({"a": {**_training(2, 8.0), "attempt": 2}}, now=80.0)
    assert "a" not in f.finishing and f.first_epoch["a"] == (2, 8.0)
    assert f._remaining("a", 80.0, 1.0) == (pytest.approx(8.0 * 13 / 2), False)
