"""The E.2 schedule (study.training.schedule) on scripted error curves: rewinds, divisions and stopping
epochs as appendix E.2 describes them, counted by hand, and against a plain per-run transcription."""

import numpy as np
import pytest

from archstudy.study.experiment.protocol import SCHEDULES, Protocol
from archstudy.study.training.schedule import SCHEDULERS, Scheduler, after_epoch, scheduler_of, start

PAPER = Protocol.of("paper")


def drive(curves, protocol=PAPER, initial=0.9, nonfinite=None, lrs=None):
    """Feed per-run error curves (a list per run, errors of epochs 1, 2, ...) until every run is done.
    Returns the final state and, per run, the epochs at which it improved / was rewound / finished."""
    n = len(curves)
    state = start(lrs if lrs is not None else [1.0] * n, initial)
    events = {k: {"improved": [], "rewind": [], "finished": []} for k in range(n)}
    epoch = 0
    while len(state.live):
        epoch += 1
        live = state.live
        errs = [curves[k][epoch - 1] for k in live]
        bad = [bool(nonfinite and epoch in nonfinite.get(k, ())) for k in live]
        state, d = after_epoch(state, protocol, live, errs, bad)
        for kind in ("improved", "rewind", "finished"):
            for k in getattr(d, kind):
                events[int(k)][kind].append(epoch)
    return state, events


def test_plateau_after_three_improvements_counts_out_the_paper_schedule():
    # VCE improves at epochs 1, 2, 3 and never again. E.2: the first window ends after 10 epochs without
    # improvement (epoch 13) and rewinds to epoch 3; each of the 10 later windows lasts 5 epochs; after the
    # 10th division the last window ends at 13 + 10 * 5 = 63 with the final rewind.
    curve = [0.5, 0.4, 0.3] + [0.35] * 100
    state, ev = drive([curve])
    assert ev[0]["improved"] == [1, 2, 3]
    assert ev[0]["rewind"] == [13 + 5 * k for k in range(11)]
    assert ev[0]["finished"] == [63]
    assert state.epochs[0] == 63 and state.divisions[0] == 10 and state.best_epoch[0] == 3
    assert state.best[0] == 0.3
    assert state.lr[0] == pytest.approx(3.0**-10, rel=1e-15)
    assert not state.diverged[0]


def test_improvement_must_be_strict_and_restarts_the_window():
    # A tie with the best does not count; an improvement in the middle of a window restarts the count.
    curve = [0.5] + [0.5] * 9 + [0.4] + [0.45] * 200
    state, ev = drive([curve])
    assert ev[0]["improved"] == [1, 11]  # epoch 1 beats the initial 0.9; epochs 2-10 tie at 0.5
    assert ev[0]["rewind"][0] == 21  # 10 epochs after epoch 11
    assert ev[0]["finished"] == [21 + 50]


def test_later_improvement_after_a_division_moves_the_best_state():
    curve = [0.5] * 1 + [0.6] * 10 + [0.45, 0.6, 0.6, 0.6, 0.6, 0.6] + [0.6] * 200
    # improved at 1; window 1 ends at 11 (rewind to 1); epoch 12 = 0.45 improves (after division 1);
    # the window restarts and ends 5 epochs later at 17, then 9 windows of 5: finished at 17 + 45 = 62
    state, ev = drive([curve])
    assert ev[0]["improved"] == [1, 12]
    assert ev[0]["rewind"] == [11, 17] + [17 + 5 * k for k in range(1, 10)]
    assert ev[0]["finished"] == [62] and state.best_epoch[0] == 12 and state.divisions[0] == 10


def test_a_run_that_never_improves_rewinds_to_its_initialization():
    state, ev = drive([[0.95] * 200], initial=0.9)
    assert ev[0]["improved"] == [] and state.best_epoch[0] == 0 and state.best[0] == 0.9
    assert ev[0]["finished"] == [10 + 50]


def test_nonfinite_loss_ends_the_window_at_once():
    # Run 1 diverges at epochs 4 and 5 (right after its first rewind): each ends its window at once.
    curve = [0.5, 0.4, 0.3] + [0.35] * 100
    state, ev = drive([curve, curve], nonfinite={1: {4, 5}})
    assert ev[0]["rewind"][0] == 13
    # after two divisions the patience is 5: windows end at 10, 15, ..., the 10th division at 45
    assert ev[1]["rewind"] == [4, 5] + [5 + 5 * k for k in range(1, 10)]
    assert ev[1]["finished"] == [50]
    assert state.diverged.tolist() == [False, True]
    assert state.lr[1] == pytest.approx(3.0**-10)


def test_divergence_at_every_window_is_recorded_and_ends_after_all_divisions():
    state, ev = drive([[0.5] * 20], nonfinite={0: set(range(1, 20))})
    assert ev[0]["rewind"] == list(range(1, 12)) and ev[0]["finished"] == [11]
    assert state.best_epoch[0] == 0 and state.diverged[0] and state.divisions[0] == 10


def test_epoch_cap_finishes_with_a_rewind_wherever_the_run_is():
    p = Protocol(max_epochs=7)
    state, ev = drive([[0.5, 0.4, 0.45, 0.3, 0.5, 0.5, 0.5, 0.5]], protocol=p)
    assert ev[0]["finished"] == [7] and ev[0]["rewind"] == [7]
    assert state.best_epoch[0] == 4 and state.divisions[0] == 0


def test_zero_divisions_stop_after_the_first_window():
    p = Protocol(divisions=0, patience_first=3)
    state, ev = drive([[0.5, 0.6, 0.6, 0.6, 0.6]], protocol=p)
    assert ev[0]["finished"] == [4] and state.divisions[0] == 0 and state.lr[0] == 1.0


def reference(curve, bad_epochs, p: Protocol, initial):
    """E.2 transcribed for one run, as plainly as possible: returns (epochs, divisions, best, best_epoch,
    rate factor, diverged, the list of rewind epochs)."""
    best, best_epoch, divisions, rate, diverged = initial, 0, 0, 1.0, False
    epoch, since, rewinds = 0, 0, []
    while True:
        epoch += 1
        window_over = False
        if epoch in bad_epochs:
            diverged, window_over = True, True
        elif curve[epoch - 1] < best:
            best, best_epoch, since = curve[epoch - 1], epoch, 0
        else:
            since += 1
            window_over = since >= (p.patience_first if divisions == 0 else p.patience)
        if p.max_epochs is not None and epoch >= p.max_epochs:
            rewinds.append(epoch)
            return epoch, divisions, best, best_epoch, rate, diverged, rewinds
        if window_over:
            rewinds.append(epoch)
            if divisions == p.divisions:
                return epoch, divisions, best, best_epoch, rate, diverged, rewinds
            divisions += 1
            rate /= p.division_factor
            since = 0


@pytest.mark.parametrize(
    "protocol",
    [
        PAPER,
        Protocol(patience_first=3, patience=2, divisions=4),
        Protocol(patience_first=2, patience=1, divisions=2, max_epochs=9),
    ],
)
def test_vectorized_schedule_equals_the_plain_transcription_on_random_curves(protocol):
    rng = np.random.default_rng(5)
    n, length = 30, 400
    # quantized curves (ties happen, as with classification errors) that drift down with noise
    curves = [
        np.round(0.7 * np.exp(-np.arange(length) / rng.uniform(3, 40)) + rng.uniform(0, 0.2, length), 2)
        for _ in range(n)
    ]
    bad = {k: set(np.flatnonzero(rng.random(length) < 0.03) + 1) for k in range(n)}
    state, ev = drive(
        [list(c) for c in curves], protocol=protocol, initial=0.66, nonfinite=bad, lrs=np.geomspace(1e-3, 1.0, n)
    )
    for k in range(n):
        epochs, divisions, best, best_epoch, rate, diverged, rewinds = reference(curves[k], bad[k], protocol, 0.66)
        assert state.epochs[k] == epochs and state.divisions[k] == divisions
        assert state.best[k] == best and state.best_epoch[k] == best_epoch
        assert state.lr[k] == pytest.approx(np.geomspace(1e-3, 1.0, n)[k] * rate, rel=1e-14)
        assert state.diverged[k] == diverged and ev[k]["rewind"] == rewinds
        assert ev[k]["finished"] == [epochs]


def test_state_round_trips_through_a_dict_and_refuses_finished_runs():
    from archstudy.study.training.schedule import Schedule

    state = start([0.1, 0.3], 0.5)
    state, _ = after_epoch(state, Protocol(max_epochs=1), [0, 1], [0.4, 0.6], [False, False])
    again = Schedule.from_dict(state.to_dict())
    for name in ("lr", "divisions", "wait", "best", "best_epoch", "epochs", "done", "diverged"):
        np.testing.assert_array_equal(getattr(again, name), getattr(state, name))
        assert getattr(again, name).dtype == getattr(state, name).dtype
    with pytest.raises(ValueError):
        after_epoch(state, PAPER, [0], [0.1], [False])


# -- the schedules as the trainer calls them (Scheduler) -----------------------------------------------------------
def run_scheduler(scheduler, steps_per_epoch, curves, nonfinite=None, lrs=None, initial=0.9):
    """Drive ``scheduler`` as the trainer does: per epoch its steps (dividing where it says), then its end of epoch
    with the runs' scripted errors (only if it monitors). Returns the final state, per step the rates of the live
    runs, and per epoch (steps, decision)."""
    n = len(curves)
    state = scheduler.start(lrs if lrs is not None else [1.0] * n, initial if scheduler.monitors else np.nan)
    rates, epochs = [], []
    done_steps, epoch = 0, 0
    while len(state.live):
        live = state.live
        steps = scheduler.epoch_steps(epoch, steps_per_epoch)
        for i in range(steps):
            times = scheduler.divisions_at(epoch * steps_per_epoch + i)
            if times:
                state = scheduler.divide(state, live, times)
            rates.append(state.lr[live].copy())
        done_steps += steps
        errs = [curves[k][epoch] for k in live] if scheduler.monitors else None
        bad = [bool(nonfinite and epoch + 1 in nonfinite.get(k, ())) for k in live]
        state, decision = scheduler.end_epoch(state, live, errs, bad, done_steps)
        epochs.append((steps, decision))
        epoch += 1
    return state, rates, epochs


def test_every_schedule_the_protocol_allows_has_a_scheduler():
    assert set(SCHEDULERS) == set(SCHEDULES)
    for name, cls in SCHEDULERS.items():
        p = Protocol(schedule=name, iterations=10) if name == "steps" else Protocol(schedule=name)
        s = scheduler_of(p)
        assert isinstance(s, Scheduler) and type(s) is cls and s.name == name and s.protocol is p
    assert scheduler_of(PAPER).monitors and not scheduler_of(Protocol(schedule="steps", iterations=5)).monitors


def test_plateau_scheduler_is_the_e2_schedule_on_scripted_errors():
    """Through the interface: full epochs, no division at any step, and E.2's windows from the errors (the
    first scripted curve of this file: rewinds at 13, 18, ..., 63, finished at 63)."""
    curve = [0.5, 0.4, 0.3] + [0.35] * 100
    scheduler = scheduler_of(PAPER)
    state, rates, epochs = run_scheduler(scheduler, 4, [curve, [0.95] * 200])
    assert all(steps == 4 for steps, _ in epochs) and len(epochs) == 63
    assert [k + 1 for k, (_, d) in enumerate(epochs) if 0 in d.rewind] == [13 + 5 * k for k in range(11)]
    assert [k + 1 for k, (_, d) in enumerate(epochs) if 0 in d.improved] == [1, 2, 3]
    assert [k + 1 for k, (_, d) in enumerate(epochs) if 1 in d.finished] == [60]
    assert state.divisions.tolist() == [10, 10] and state.best.tolist() == [0.3, 0.9]
    # the rates change only between epochs (never at a step inside one)
    assert all(np.array_equal(rates[i], rates[i - 1]) for i in range(1, len(rates)) if i % 4)


def test_steps_scheduler_divides_at_its_boundaries_and_finishes_after_its_iterations():
    """10 iterations in epochs of 4 steps (the last cut to 2), divisions by 5 at 1/2 and 7/10 (steps 5 and 7),
    nothing evaluated; a run whose loss turns non-finite leaves at the end of that epoch, diverged."""
    p = Protocol(schedule="steps", iterations=10, step_at=(0.5, 0.7), division_factor=5.0)
    scheduler = scheduler_of(p)
    assert [scheduler.divisions_at(i) for i in range(10)] == [0, 0, 0, 0, 0, 1, 0, 1, 0, 0]
    state, rates, epochs = run_scheduler(scheduler, 4, [[], [], []], nonfinite={2: {2}}, lrs=[1.0, 2.0, 4.0])
    assert [steps for steps, _ in epochs] == [4, 4, 2]
    assert [r.tolist() for r in rates] == [[1.0, 2.0, 4.0]] * 5 + [[0.2, 0.4, 0.8]] * 2 + [[0.04, 0.08, 0.16]] + [
        [0.04, 0.08]
    ] * 2
    assert epochs[1][1].finished.tolist() == [2] and epochs[1][1].rewind.tolist() == [2]  # to its initial state
    assert epochs[2][1].finished.tolist() == [0, 1] and epochs[2][1].rewind.tolist() == []
    assert all(len(d.improved) == 0 for _, d in epochs)
    assert state.diverged.tolist() == [False, False, True] and state.divisions.tolist() == [2, 2, 2]
    assert state.epochs.tolist() == [3, 3, 2]


def test_a_step_may_carry_several_divisions():
    p = Protocol(schedule="steps", iterations=10, step_at=(0.45, 0.5), division_factor=2.0)  # both at step 5
    scheduler = scheduler_of(p)
    assert p.step_boundaries() == [5, 5] and [scheduler.divisions_at(i) for i in range(10)] == [0] * 5 + [2] + [0] * 4
    state, rates, _ = run_scheduler(scheduler, 8, [[]])
    assert [r.tolist() for r in rates] == [[1.0]] * 5 + [[0.25]] * 5 and state.divisions.tolist() == [2]
