"""study.execution.costs: the line said before training, the probe's estimate of one architecture, and the ETA as the
study goes (from finished units and the live records; it never counts up while the last units run)."""

import math

import pytest

from archstudy.study import load_dataset
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.execution.costs import (
    PAST,
    Forecast,
    count_text,
    describe_protocol,
    duration,
    expected_epochs,
    plan_line,
    probe,
)
from archstudy.study.execution.unit import plan_units
from archstudy.study.perf.profiles import EXPECTED_STACK_EPOCHS
from archstudy.study.perf.projection import SCHEDULE_FLOOR

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
    units = plan_units(CONFIG)
    line = plan_line(CONFIG, data, units, units[2:], 2, "here", 2)
    assert len(units) == 9  # norm: two siblings each
    assert line.startswith("here: 7 of 9 architectures (3 drawn + 6 siblings along norm) to run (2 finished earlier): ")
    assert "1,500-parameter budget" in line and "protocol quick: 2 learning rates" in line
    assert f"({len(data.train.y):,} train / {len(data.val.y):,} val / {len(data.test.y):,} test, 40 inputs" in line
    assert line.endswith("; 2 at a time")


def test_the_probe_times_steps_without_touching_the_random_state(data, global_random_state, one_thread):
    unit = plan_units(CONFIG)[0]
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
    # b is past its 50 s: PAST x 50 left; c has 50 left; one queued: 50 more, over 2 slots
    assert seconds == pytest.approx((PAST * 50 + 50 + 50) / 2)


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
