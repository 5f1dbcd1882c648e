"""study.perf.projection: the live-run profile, the cost of an architecture against a hand computation, the
interpolation of measured step times, the projected hours; the measurement functions on tiny cases."""

import json

import numpy as np
import pytest

from archstudy.sampling import ArchSpec
from archstudy.study.perf import projection
from archstudy.study.training import epoch_profiles as profiles
from archstudy.study.perf.bench import BenchCase, throughput
from archstudy.study.cli import main
from archstudy.study.perf.projection import (
    PAPER_DEPTHS,
    PAPER_STUDIES,
    PaperStudy,
    StepModel,
    architecture_seconds,
    compiled_graph_rows,
    measure_step_times,
    project,
)
from archstudy.study.training.epoch_profiles import live_runs, stack_epochs

pytestmark = pytest.mark.usefixtures("one_thread")

# one epoch profile: projections whose arithmetic a test checks, without the cost of every measured profile
FEW = [{"epochs": [70] * 30 + [11] * 10}]


def test_live_runs_count_the_runs_still_training_in_each_epoch():
    assert live_runs([3, 1, 3, 2]).tolist() == [4, 3, 2]
    assert live_runs([3, 1, 3, 2]).sum() == 9 and stack_epochs([3, 1, 3, 2]) == 9 / 4


def _rows(a=2e-3, b=1e-4, e=1e-7):
    """Synthetic step times linear in R and depth: t(d, R) = a R + b d, eval e per example and run."""
    sizes = (40, 10, 1)
    return [
        {
            "case": f"d{d}",
            "depth": d,
            "width": 1,
            "forward": "eager",
            "step_s": {r: a * r + b * d for r in sizes},
            "eval_s_per_example_run": e * d,
        }
        for d in (3, 9, 25, 49)
    ]


def test_step_model_interpolates_linearly_in_depth_and_runs():
    model = StepModel(_rows())
    assert model.step(9, 10) == pytest.approx(2e-3 * 10 + 1e-4 * 9, rel=1e-12)
    assert model.step(17, 25) == pytest.approx(2e-3 * 25 + 1e-4 * 17, rel=1e-12)  # between the measured points
    assert model.eval(37) == pytest.approx(1e-7 * 37, rel=1e-12)


def test_an_architecture_costs_its_epochs_steps_evaluations_lr_min_and_final_errors():
    a, b, e = 2e-3, 1e-4, 1e-7
    model, study, d = StepModel(_rows(a, b, e)), PaperStudy("x", 1_000, 300, 200), 9
    epochs = [5, 3, 3, 1]
    steps = 1_000 // 250
    by_hand = 0.0
    for epoch in range(1, 6):
        live = sum(1 for n in epochs if n >= epoch)
        by_hand += (a * live + b * d) * steps + e * d * 300 * live
    by_hand += (a + b * d) * steps + e * d * (1_000 + 300 + 200) * 4
    assert architecture_seconds(model, d, epochs, study) == pytest.approx(by_hand, rel=1e-12)


def test_projected_hours_average_over_depths_and_profiles_and_divide_over_devices():
    rows, profiles = _rows(), [*FEW, {"epochs": [90] * 40}]
    out = project(rows, profiles, devices=(1, 4, 10_000))
    model = StepModel(rows)
    for study, p in zip(PAPER_STUDIES, out):
        costs = [architecture_seconds(model, d, q["epochs"], study) for d in PAPER_DEPTHS for q in profiles]
        assert p["hours_one_device"] == pytest.approx(250 * np.mean(costs) / 3600, rel=1e-12)
        assert p["hours_on"][4] == pytest.approx(p["hours_one_device"] / 4, rel=1e-12)
        assert p["hours_on"][10_000] == pytest.approx(max(costs) / 3600, rel=1e-12)  # the longest architecture
        assert p["floor_hours_one_device"] < p["hours_one_device"]
    assert out[-1]["hours_one_device"] == pytest.approx(sum(p["hours_one_device"] for p in out[:3]), rel=1e-12)
    assert project(rows, profiles, gain=2.0)[0]["hours_one_device"] == pytest.approx(out[0]["hours_one_device"] / 2)


def test_measured_profiles_are_the_papers_protocol_on_the_papers_space():
    assert len(profiles.PROFILES) >= 6 and all(len(p["epochs"]) == 40 for p in profiles.PROFILES)
    means = [np.mean(p["epochs"]) for p in profiles.PROFILES]
    assert profiles.EXPECTED_STACK_EPOCHS == pytest.approx(np.mean(means), rel=1e-12)
    # E.2: a run that never diverged trained at least the 10 + 10 x 5 epochs of its windows; a non-finite
    # loss ends a window at once
    for p in profiles.PROFILES:
        for run, epochs in enumerate(p["epochs"]):
            assert epochs >= profiles.SCHEDULE_FLOOR or run in p["diverged_runs"]


TINY = BenchCase("tiny", ArchSpec(depth=3, width=6, d_in=5, d_out=3, norm="batch"), 1_000, 1, 100)


def test_step_times_are_measured_per_stack_size():
    rows = measure_step_times([TINY], sizes=(4, 1), repeats=1, steps=1, eval_examples=50)
    (row,) = rows
    assert row["case"] == "tiny" and row["forward"] == "eager" and set(row["step_s"]) == {4, 1}
    assert all(t > 0 for t in row["step_s"].values()) and row["eval_s_per_example_run"] > 0


def test_throughput_of_processes_sharing_the_device():
    row = throughput(TINY, 2, runs=3, batch=50, steps=2)
    assert row["processes"] == 2 and row["steps_per_s_alone"] > 0 and row["steps_per_s_shared"] > 0
    assert row["gain"] == pytest.approx(row["steps_per_s_shared"] / row["steps_per_s_alone"], rel=1e-12)
    assert row["architectures_per_hour_shared"] == pytest.approx(
        row["steps_per_s_shared"] * 3600 / (1_000 // 50) / profiles.EXPECTED_STACK_EPOCHS, rel=1e-12
    )


def test_the_command_projects_from_measured_step_times(monkeypatch, capsys):
    """``archstudy bench --project`` wires measure_step_times -> project -> the table (the measurement
    itself, on the paper's 1M-parameter cases, is the bench's job: a synthetic one stands in)."""
    asked = {}

    def measured(cases, device, repeats, steps, compiled, say):
        asked.update(cases=cases, repeats=repeats, steps=steps, compiled=compiled)
        say("each case's row as it ends")
        return _rows()

    monkeypatch.setattr(projection, "measure_step_times", measured)
    few = FEW
    monkeypatch.setattr(projection, "PROFILES", few)  # the default profiles, fewer (the projection's own test)
    assert main(["bench", "--project", "--devices", "1,4", "--repeats", "1", "--no-compile"]) == 0
    out, err = capsys.readouterr()
    expected = project(_rows(), few, devices=(1, 4))
    assert asked == {"cases": None, "repeats": 1, "steps": 2, "compiled": False}
    assert err == "each case's row as it ends\n"  # on standard error, as it is said: a run cut short keeps it
    line = next(s for s in out.splitlines() if s.strip().startswith("cifar10"))
    assert f"{expected[2]['hours_one_device']:.1f}" in line and f"{expected[2]['hours_on'][4]:.1f}" in line
    assert main(["bench", "--project", "--json", "--no-compile"]) == 0
    assert json.loads(capsys.readouterr().out)["projection"][3]["study"] == "all three"


def _with_compiled_graph(rows, factor=0.5):
    return [
        {
            **r,
            "compiled_graph_step_s": {k: factor * t for k, t in r["step_s"].items()},
            "compiled_graph_compile_s": 20.0,
            "compiled_graph_capture_s": 0.1,
        }
        for r in rows
    ]


def test_the_compiled_graph_projection_is_the_projection_of_its_own_measurements():
    """``compiled_graph_rows`` puts the measured graph of the compiled forward (step times, compile and capture
    seconds) where the trainer's pick was: its projection is the projection of rows made so by hand; none unless
    every case measured it."""
    rows, few = _with_compiled_graph(_rows()), FEW
    by_hand = [
        {**r, "step_s": {k: 0.5 * t for k, t in r["step_s"].items()}, "compile_s": 20.0, "capture_s": 0.1}
        for r in _rows()
    ]
    alternative = compiled_graph_rows(rows)
    assert alternative is not None and all(r["forward"] == "compiled-graph" for r in alternative)
    assert project(alternative, few) == project(by_hand, few)
    assert project(alternative, few)[0]["hours_one_device"] < project(rows, few)[0]["hours_one_device"]
    assert compiled_graph_rows(_rows()) is None and compiled_graph_rows(rows[:2] + _rows()[2:]) is None


def test_the_command_adds_the_compiled_graph_projection_where_it_was_measured(monkeypatch, capsys, malloc_settings):
    few = FEW
    monkeypatch.setattr(projection, "PROFILES", few)  # the default profiles, fewer (the projection's own test)
    monkeypatch.setattr(projection, "measure_step_times", lambda *args, **kwargs: _with_compiled_graph(_rows()))
    expected = project(compiled_graph_rows(_with_compiled_graph(_rows())), few)
    assert main(["bench", "--project", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["projection_compiled_graph"] == json.loads(json.dumps(expected, default=str))
    assert main(["bench", "--project"]) == 0
    tail = capsys.readouterr().out.split("If the trainer graphed the compiled forward")[1]
    line = next(s for s in tail.splitlines() if s.strip().startswith("cifar10"))
    assert f"{expected[2]['hours_one_device']:.1f}" in line


def test_a_windowed_study_is_projected_from_the_runs_of_the_median_rules_window(monkeypatch, capsys):
    """``project(..., window=m)``: every profile keeps the m runs of the window around the profiles' median selected
    index (``rate_window.window_start``), and the hours are the full projection's arithmetic on those epochs; the
    window of all 40 rates is the full projection. ``bench --project --lr-window M`` prints it beside the full
    sweep's and refuses the flag without --project, in one line."""
    rows = _rows()
    epochs = list(range(11, 51))  # run k trains 11 + k epochs: which runs the window keeps shows in the hours
    profiles = [
        {"epochs": epochs, "selected": 10},
        {"epochs": epochs, "selected": 20},
        {"epochs": epochs, "selected": 13},
    ]
    kept = projection.windowed(profiles, 8)
    assert all(p["epochs"] == epochs[9:17] for p in kept)  # centre 13: s = 13 - 4 = 9
    by_hand = project(rows, kept, devices=(1,))
    out = project(rows, profiles, devices=(1,), window=8)
    assert [p["hours_one_device"] for p in out] == pytest.approx([p["hours_one_device"] for p in by_hand], rel=1e-12)
    full = project(rows, profiles, devices=(1,))
    assert out[-1]["hours_one_device"] < full[-1]["hours_one_device"]
    assert project(rows, profiles, devices=(1,), window=40)[-1]["hours_one_device"] == pytest.approx(
        full[-1]["hours_one_device"], rel=1e-12
    )
    monkeypatch.setattr(projection, "measure_step_times", lambda *a, **k: rows)
    monkeypatch.setattr(projection, "PROFILES", profiles)
    assert main(["bench", "--project", "--no-compile", "--lr-window", "8"]) == 0
    text = capsys.readouterr().out
    assert f"all three studies {out[-1]['hours_one_device']:.2f} h on one device" in text
    assert main(["bench", "--lr-window", "8"]) == 2
    assert capsys.readouterr().err.strip().endswith("--lr-window projects a windowed study's hours: it needs --project")
    assert main(["bench", "--project", "--lr-window", "41"]) == 2
    assert "bench.lr_window = 41: must be an integer in [1, 40]" in capsys.readouterr().err
