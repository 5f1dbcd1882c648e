"""Training curves (study.training.curves): a run's curve is the same alone and inside the stack, resumes from a
checkpoint to the uninterrupted one, and holds what the definitions say (the epoch's mean minibatch loss, the
monitored error whose minimum is the run's best, the rates of the schedule, the NLC trajectory's draws)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import trainer_standins as standins
from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, build_network, train_architecture
from archstudy.study.metrics.nlc import nlc
from archstudy.study.metrics.measurement import nlc_seed
from archstudy.study.training.curves import Trajectory
from archstudy.study.training.splits import TRAIN_ORDER, epoch_order

pytestmark = pytest.mark.usefixtures("one_thread")

DATA = standins.waveform_noise(400, 200, 200, seed=1)
SPEC = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="batch")
SHORT = Protocol(batch_size=50, patience_first=3, patience=2, divisions=2, max_epochs=12)
TRAJECTORY = Trajectory((0, 1, 4), batches=3, batch_size=50)


def comparable(rows) -> list[dict]:
    """Rows with NaN as None, so that equal rows compare equal (NaN != NaN), bit for bit otherwise."""
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]


def by_run(outcome) -> dict[int, list[dict]]:
    out = {}
    for row in outcome.curve_rows():
        out.setdefault(row["lr_index"], []).append(row)
    return out


def test_the_curves_of_a_run_trained_alone_equal_its_curves_inside_the_stack():
    lrs = [0.03, 0.3, 3.0]
    both = by_run(train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=lrs), trajectory=TRAJECTORY))
    for k, lr in enumerate(lrs):
        alone = by_run(train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=[lr]), trajectory=TRAJECTORY))[
            0
        ]
        stacked = both[k]
        assert [r["epoch"] for r in alone] == [r["epoch"] for r in stacked] == list(range(len(alone)))
        # errors and rates exactly; the loss and the NLC to rounding (other GEMM shapes in a stack)
        assert [(r["lr"], r["monitored_error"]) for r in alone] == [(r["lr"], r["monitored_error"]) for r in stacked]
        for a, b in zip(alone, stacked):
            for f in ("train_loss", "nlc"):
                assert (math.isnan(a[f]) and math.isnan(b[f])) or abs(a[f] - b[f]) <= 1e-9 * abs(a[f]), (k, f, a, b)
        assert [math.isfinite(r["nlc"]) for r in alone] == [r["epoch"] in (0, 1, 4) for r in alone]


def test_the_curves_hold_what_they_define():
    lrs = [0.03, 0.3]
    out = train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=lrs), trajectory=TRAJECTORY)
    curves = by_run(out)
    for k, run in enumerate(out.runs):
        c = curves[k]
        assert len(c) == run.epochs + 1 and all(r["monitored"] == "val" for r in c)
        # the best state's validation error is the lowest monitored error of the curve (epoch 0 included)
        assert min(r["monitored_error"] for r in c) == run.val_error
        # the rates: the starting one, divided by 3 at each of the run's divisions
        assert sorted({r["lr"] for r in c}, reverse=True) == [lrs[k] / 3**d for d in range(run.divisions + 1)]
        assert math.isnan(c[0]["train_loss"]) and all(math.isfinite(r["train_loss"]) for r in c[1:])
    # epoch 0: the initialization's NLC with measure's draws (the unit's nlc column), the same for every run
    base = build_network(SPEC, 3)
    want = nlc(base, DATA.train.x, 3, 50, seed=nlc_seed(3))
    assert curves[0][0]["nlc"] == curves[1][0]["nlc"] == want


def test_the_training_loss_is_the_mean_of_the_epochs_minibatch_losses():
    """With a rate so small that no update changes a parameter (1e-300 times a gradient is below half an ulp of
    every weight), each step's loss is the initial network's on its minibatch: epoch 1's mean is the mean of
    F.cross_entropy(f(X_b) / c_out, y_b) over the epoch's minibatches, computed here with the reference forward."""
    out = train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=[1e-300], max_epochs=1))
    net = build_network(SPEC, 3)
    net.train()
    order = epoch_order(len(DATA.train.x), 50, 3, TRAIN_ORDER, 1, torch.device("cpu"))
    with torch.no_grad():
        losses = [F.cross_entropy(net(DATA.train.x[i]) / out.c_out, DATA.train.y[i]).item() for i in order]
    got = by_run(out)[0][1]
    assert got["epoch"] == 1 and abs(got["train_loss"] - np.mean(losses)) <= 1e-12 * np.mean(losses)


def test_a_steps_schedule_records_loss_and_rate_and_no_error():
    board = standins.checkerboard()
    out = train_architecture(standins.HAN, board, seed=5, protocol=standins.STEPS.replace(lrs=(0.005, 0.02)))
    rows = out.curve_rows()
    assert {r["monitored"] for r in rows} == {"none"} and all(math.isnan(r["monitored_error"]) for r in rows)
    # 23 iterations of 6 steps per epoch: 4 epochs, the last cut short; the divisions show from their epoch on
    for k, run in enumerate(out.runs):
        c = [r for r in rows if r["lr_index"] == k]
        assert [r["epoch"] for r in c] == list(range(run.epochs + 1)) and run.epochs == 4
        bounds = standins.STEPS.step_boundaries()
        lr0 = (0.005, 0.02)[k]
        for r in c[1:]:
            last_step = min(6 * r["epoch"], 23) - 1
            assert r["lr"] == lr0 / 5.0 ** sum(b <= last_step for b in bounds)


@pytest.mark.parametrize("kill", [6, 15])
def test_a_resumed_training_gives_the_curves_of_an_uninterrupted_one(kill, tmp_path, monkeypatch):
    """Killed after the kill-th checkpoint (one after every step and every epoch: 9 per epoch of 8 steps),
    in the middle of an epoch whose loss sums are in the file."""
    protocol = SHORT.replace(lrs=[0.03, 0.3], max_epochs=4)
    train = dict(spec=SPEC, data=DATA, seed=3, protocol=protocol, trajectory=TRAJECTORY)
    uninterrupted = train_architecture(**train)
    path = tmp_path / "state.pt"
    standins.interrupted(monkeypatch, path, kill, **train)
    saved = torch.load(path, weights_only=False)
    assert saved["step"] > 0 and saved["curves"]["epoch"] and torch.any(saved["loss_sum"] != 0)
    assert saved["key"]["nlc_trajectory"] == [[0, 1, 4], 3, 50]
    resumed = train_architecture(**train, checkpoint_path=path)
    assert comparable(resumed.curve_rows()) == comparable(uninterrupted.curve_rows())
