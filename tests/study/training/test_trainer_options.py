"""The trainer's options beyond E.2 (study.experiment.protocol): the mse loss, SGD momentum, the steps schedule,
selection by test error and several initializations in one stack, each against an independent computation."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

import trainer_standins as standins
from archstudy.sampling import ArchSpec, SpecError
from archstudy.study import Protocol, build_network, train_architecture
from archstudy.study.training import trainer as trainer_module
from archstudy.study.training.loss import errors, predictions, run_losses, targets
from archstudy.study.training.splits import TRAIN_ORDER, check_splits, epoch_order
from archstudy.study.training.stack import keep, new_stack, rewind, save_best, train_step


pytestmark = pytest.mark.usefixtures("one_thread")

BOARD = standins.checkerboard()
HAN, STEPS = standins.HAN, standins.STEPS
SEEDS = [3, 8]
DATA_SEED = 5


# -- reference loops (plain nn.Module, float64) -----------------------------------------------------------


class Reflect(nn.Module):
    """x -> x - 2 u (u^T x) / |u|^2 + b (the Householder paper's Algorithm 1, line 2)."""

    def __init__(self, u, b):
        super().__init__()
        self.u, self.b = nn.Parameter(u.clone()), nn.Parameter(b.clone())

    def forward(self, x):
        return x - 2 * (x @ self.u)[:, None] * self.u / (self.u @ self.u) + self.b


class Scaled(nn.Module):
    """c |s| + b: the spec's activation (abs, scaled to quadratic mean 1: c = 1, b = 0)."""

    def __init__(self, c, b):
        super().__init__()
        self.c, self.b = c, b

    def forward(self, s):
        return self.c * torch.abs(s) + self.b


def reference_module(spec: ArchSpec, seed: int) -> nn.Sequential:
    """``spec`` as a plain nn.Sequential with the initial values of ``build_network(spec, seed)``."""
    stacked = build_network(spec, seed)
    c, b = stacked.act.constants
    layers = []
    for layer, mod in enumerate(stacked.linears, start=1):
        if mod.kind == "householder":
            layers.append(Reflect(mod.u.detach()[0], mod.bias.detach()[0]))
        else:
            lin = nn.Linear(mod.fan_in, mod.fan_out, dtype=torch.float64)
            with torch.no_grad():
                lin.weight.copy_(mod.weight[0])
                lin.bias.copy_(mod.bias[0])
            layers.append(lin)
        if layer < spec.depth:
            layers.append(Scaled(c, b))
    return nn.Sequential(*layers)


def minibatches(protocol: Protocol, n: int):
    """The indices of every step: epoch e (from 1) in the trainer's seeded order, cut at ``iterations``."""
    steps = n // protocol.batch_size
    out = []
    for epoch in range(1, math.ceil(protocol.iterations / steps) + 1):
        out += list(epoch_order(n, protocol.batch_size, DATA_SEED, TRAIN_ORDER, epoch, torch.device("cpu")))
    return out[: protocol.iterations]


def boundaries(protocol: Protocol) -> list[int]:
    return [int(f * protocol.iterations + 0.5) for f in protocol.step_at]


def with_torch_sgd(net: nn.Module, lr: float, protocol: Protocol, data) -> nn.Module:
    """torch.optim.SGD(momentum) with nn.MSELoss on the label (one output), the rate divided at the bounds."""
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=protocol.momentum)
    cuts = boundaries(protocol)
    for step, idx in enumerate(minibatches(protocol, len(data.train.y))):
        for _ in range(cuts.count(step)):
            opt.param_groups[0]["lr"] /= protocol.division_factor
        opt.zero_grad()
        nn.MSELoss()(net(data.train.x[idx]), data.train.y[idx].double()[:, None]).backward()
        opt.step()
    return net


def by_hand(net: nn.Module, lr: float, protocol: Protocol, data) -> nn.Module:
    """The same written out: loss mean((f - y)^2), b <- mu b + g, p <- p - lr b, lr / factor at the bounds."""
    params = list(net.parameters())
    bufs = [torch.zeros_like(p) for p in params]
    cuts = boundaries(protocol)
    for step, idx in enumerate(minibatches(protocol, len(data.train.y))):
        lr = lr / protocol.division_factor ** cuts.count(step)
        f = net(data.train.x[idx])[:, 0]
        grads = torch.autograd.grad(((f - data.train.y[idx].double()) ** 2).mean(), params)
        with torch.no_grad():
            for p, b, g in zip(params, bufs, grads):
                b.mul_(protocol.momentum).add_(g)
                p.sub_(lr * b)
    return net


def final_states(monkeypatch) -> dict:
    """Spy on the trainer: every run's stacked tensors at the moment it finishes (its final state)."""
    seen = {}
    record = trainer_module._Trainer._record

    def spy(self, stack, finished):
        pos = np.searchsorted(stack.runs, finished)
        for p, run in zip(pos, finished):
            seen[int(run)] = {name: t[p].detach().clone() for name, t in stack.net.stacked_tensors()}
        return record(self, stack, finished)

    monkeypatch.setattr(trainer_module._Trainer, "_record", spy)
    return seen


def reference_parameters(net: nn.Sequential) -> list[torch.Tensor]:
    return [p.detach() for p in net.parameters()]


def stacked_parameters(state: dict, spec: ArchSpec) -> list[torch.Tensor]:
    """A finished run's parameters in the order of ``reference_module``'s."""
    out = []
    for i, layer in enumerate(spec.layers()):
        names = ("u", "bias") if layer.kind == "householder" else ("weight", "bias")
        out += [state[f"linears.{i}.{n}"] for n in names]
    return out


# -- mse, momentum, steps: the same trajectories -----------------------------------------------------------


def test_mse_momentum_and_steps_follow_torch_sgd_and_a_hand_written_loop_for_every_stacked_rate_and_seed(monkeypatch):
    seen = final_states(monkeypatch)
    out = train_architecture(HAN, BOARD, seed=DATA_SEED, protocol=STEPS, init_seeds=SEEDS)
    assert out.init_seeds == tuple(SEEDS) and len(out.runs) == 6 and out.n_rates == 3
    for j, s in enumerate(SEEDS):
        for k, lr in enumerate(STEPS.lrs):
            run = j * 3 + k  # seed-major
            rec = out.runs[run]
            assert (rec.lr, rec.lr_index, rec.divisions, rec.diverged) == (lr, k, 3, False)
            assert rec.epochs == 4  # three whole epochs and a part of the fourth
            got = stacked_parameters(seen[run], HAN)
            for ref in (
                with_torch_sgd(reference_module(HAN, s), lr, STEPS, BOARD),
                by_hand(reference_module(HAN, s), lr, STEPS, BOARD),
            ):
                for a, b in zip(got, reference_parameters(ref)):
                    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
                # errors of the final state: the class of the nearest target, 0 or 1 (f > 1/2)
                with torch.no_grad():
                    for split in ("val", "train", "test"):
                        d = getattr(BOARD, split)
                        wrong = ((ref(d.x)[:, 0] > 0.5).long() != d.y).double().mean()
                        assert getattr(rec, f"{split}_error") == pytest.approx(float(wrong), abs=1e-12)
            assert not torch.equal(got[0], seen[(1 - j) * 3 + k]["linears.0.weight"])  # the seeds differ


def test_selection_by_test_names_itself_and_selects_per_seed(monkeypatch):
    out = train_architecture(HAN, BOARD, seed=DATA_SEED, protocol=STEPS, init_seeds=SEEDS)
    assert out.best.selected_by == "test" and out.selected_row()["selected_by"] == "test"
    tests = [r.test_error for r in out.runs]
    assert out.selected == min(range(6), key=lambda i: (tests[i], i))
    assert out.best.test_error == min(tests) and out.best.lr_index == out.runs[out.selected].lr_index
    per_seed = out.best_per_seed()
    for j in range(2):
        mine = out.runs[3 * j : 3 * j + 3]
        assert per_seed[j] == min(mine, key=lambda r: (r.test_error, r.lr_index))
    # the selected network is the selected run's final state, with its record's errors
    splits = check_splits(BOARD, HAN, torch.device("cpu"), classes=2)
    assert float(errors(out.network, splits.test.x, splits.test.y, 6, 1, "mse")[0]) == out.best.test_error
    assert out.to_dict()["best"]["selected_by"] == "test"
    rows = out.run_rows()  # each initialization's runs, its own selected run marked
    assert [r["init_index"] for r in rows] == [0, 0, 0, 1, 1, 1]
    assert [k for k, r in enumerate(rows) if r["selected"]] == [3 * j + per_seed[j].lr_index for j in range(2)]
    spread = out.selected_row()
    assert spread["inits"] == 2 and spread["n_runs"] == 6
    assert spread["test_error_mean"] == pytest.approx(np.mean([r.test_error for r in per_seed]), abs=1e-15)
    assert spread["test_error_sd"] == pytest.approx(np.std([r.test_error for r in per_seed], ddof=1), abs=1e-15)
    assert all(p["lr_index"] < 3 for p in out.curve_rows())  # the first initialization's curves
    # the default selection is by the monitored split, and says so
    val = train_architecture(HAN, BOARD, seed=DATA_SEED, protocol=STEPS.replace(selection="monitor", lrs=(0.01, 0.05)))
    assert val.best.selected_by == "val" and val.selected_row()["selected_by"] == "val"
    assert val.best.val_error == min(r.val_error for r in val.runs)
    assert [r["selected"] for r in val.run_rows()] == [k == val.selected for k in range(2)]


def test_a_run_that_diverges_under_steps_leaves_at_the_end_of_that_epoch_at_its_initial_state():
    p = STEPS.replace(lrs=(0.01, 1e6), step_at=())
    out = train_architecture(HAN, BOARD, seed=DATA_SEED, protocol=p)
    ok, huge = out.runs
    assert not ok.diverged and ok.epochs == 4 and ok.divisions == 0
    assert huge.diverged and huge.epochs == 1
    init = build_network(HAN, DATA_SEED)
    splits = check_splits(BOARD, HAN, torch.device("cpu"), classes=2)
    assert huge.test_error == float(errors(init, splits.test.x, splits.test.y, 6, 1, "mse")[0])


# -- several initializations in one stack ---------------------------------------------------------------


def assert_same_run(a, b, tol=1e-9):
    assert (a.lr, a.epochs, a.divisions, a.diverged) == (b.lr, b.epochs, b.divisions, b.diverged)
    for f in ("val_error", "train_error", "test_error"):
        assert abs(getattr(a, f) - getattr(b, f)) <= tol, f


def test_a_stack_of_initializations_equals_the_same_runs_trained_one_by_one():
    # E.2's schedule, cross-entropy (each initialization divides by its own c_out), batchnorm, skips with the
    # fixed projection into the output (one per run), and chunks that cut across the initializations.
    spec = ArchSpec(
        depth=5, width=12, d_in=40, d_out=3, activation="relu", norm="batch", skip="after_linear", bias_init="gaussian"
    )
    data = standins.waveform_noise(400, 200, 200, seed=1)
    p = Protocol(batch_size=50, patience_first=3, patience=2, divisions=2, max_epochs=12, lrs=(0.03, 0.3))
    seeds = [11, 4]
    stacked = train_architecture(spec, data, seed=2, protocol=p, init_seeds=seeds, chunk_runs=3)
    alone = [
        [train_architecture(spec, data, seed=2, protocol=p.replace(lrs=(lr,)), init_seeds=[s]) for lr in p.lrs]
        for s in seeds
    ]
    assert [r.lr for r in stacked.runs] == list(p.lrs) * 2
    for j in range(2):
        for k in range(2):
            assert_same_run(alone[j][k].runs[0], stacked.runs[2 * j + k])
            assert stacked.runs[2 * j + k].lr_index == k
    assert any(r.divisions > 0 for r in stacked.runs)
    # the selected run's network, lr_min and c_out are those of its own initialization
    j, k = divmod(stacked.selected, 2)
    one = alone[j][k]
    assert stacked.c_out == one.c_out and stacked.lr_min == one.lr_min
    assert stacked.c_out != alone[1 - j][k].c_out
    for (name, a), (_, b) in zip(one.network.stacked_tensors(), stacked.network.stacked_tensors()):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12, msg=name)
    assert torch.equal(one.network.projection, stacked.network.projection)
    assert [r.lr_index for r in stacked.best_per_seed()] == [
        min(range(2), key=lambda kk: (alone[jj][kk].runs[0].val_error, kk)) for jj in range(2)
    ]


def test_init_seeds_are_checked_in_one_line():
    data = standins.waveform_noise(100, 50, 50)
    spec = ArchSpec(depth=3, width=8, d_in=40, d_out=3)
    for bad in ([], [-1], "3", [1.5]):
        with pytest.raises(SpecError, match=r"^train_architecture\.init_seeds = "):
            train_architecture(spec, data, protocol=Protocol(lrs=[0.1], max_epochs=1), init_seeds=bad)
    with pytest.raises(SpecError, match=r"^train_architecture\.selected_from = 2: "):
        train_architecture(spec, data, protocol=Protocol(lrs=[0.1], max_epochs=1), init_seeds=[1, 2], selected_from=2)


def test_a_study_of_several_initializations_keeps_the_first_ones_protocol_and_the_others_alone():
    """``init_seeds: k`` of a study: the rates of the first initialization's lr_min for all, the selection over the
    first's runs (``selected_from=0``). Initialization 0 is then the paper's protocol trained alone (its runs, its
    selected run, the selected network's NLC after training), and initialization 1 is itself trained alone at the
    same rates, to 1e-9."""
    spec = ArchSpec(depth=4, width=10, d_in=40, d_out=3, activation="tanh", norm="layer", bias_init="gaussian")
    data = standins.waveform_noise(300, 150, 150, seed=3)
    p = Protocol(num_lrs=3, batch_size=50, patience_first=2, patience=1, divisions=1, max_epochs=6)
    stacked = train_architecture(spec, data, seed=5, protocol=p, init_seeds=[5, 9], selected_from=0)
    alone = train_architecture(spec, data, seed=5, protocol=p)
    assert len(stacked.runs) == 6 and stacked.n_rates == 3
    for a, b in zip(alone.runs, stacked.seed_runs(0)):
        assert_same_run(a, b)
    assert stacked.selected == alone.selected and stacked.lr_min == alone.lr_min
    assert abs(stacked.best.nlc_after - alone.best.nlc_after) <= 1e-9 * abs(alone.best.nlc_after)
    rates = tuple(r.lr for r in alone.runs)
    second = train_architecture(spec, data, seed=5, protocol=p.replace(lrs=rates), init_seeds=[9])
    for a, b in zip(second.runs, stacked.seed_runs(1)):
        assert_same_run(a, b)
    assert [r.lr for r in stacked.seed_runs(1)] == list(rates)


# -- the pieces -----------------------------------------------------------------------------------------


def test_mse_losses_targets_and_predictions():
    g = torch.Generator().manual_seed(0)
    out = torch.randn(3, 7, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 3, 1, 1, 2, 0, 3])
    want = torch.stack([nn.functional.mse_loss(out[r], nn.functional.one_hot(y, 4).double()) for r in range(3)])
    torch.testing.assert_close(run_losses(out, y, 123.0, "mse"), want, rtol=1e-14, atol=0)
    one = out[..., :1]
    b = y % 2
    want1 = torch.stack([nn.functional.mse_loss(one[r, :, 0], b.double()) for r in range(3)])
    torch.testing.assert_close(run_losses(one, b, 1.0, "mse"), want1, rtol=1e-14, atol=0)
    assert torch.equal(targets(b, 1)[:, 0], b.double())
    # the nearest target: arg-max for one-hot targets, f > 1/2 for one output (1/2 itself rounds to 0)
    assert torch.equal(predictions(out, "mse"), out.argmax(-1))
    f = torch.tensor([[[-3.0], [0.49], [0.5], [0.51], [7.0]]], dtype=torch.float64)
    assert predictions(f, "mse").tolist() == [[0, 0, 0, 1, 1]]
    # cross-entropy with one c_out per run is each run's own cross-entropy of out_r / c_r
    c = torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64)
    want_ce = torch.stack([nn.functional.cross_entropy(out[r] / c[r], y) for r in range(3)])
    torch.testing.assert_close(run_losses(out, y, c), want_ce, rtol=1e-14, atol=0)


def test_a_one_output_mse_net_takes_labels_0_and_1_and_nothing_else():
    y = BOARD.test.y.clone()
    y[0] = 2  # one label out of range (the board's first test points may all be 0: its frame)
    assert y.min() == 0
    bad = SimpleNamespace(train=BOARD.train, val=BOARD.val, test=SimpleNamespace(x=BOARD.test.x, y=y))
    with pytest.raises(SpecError, match=r"^data\.test\.y = 'labels in \[0, 2\]': must be in \[0, 2\)"):
        train_architecture(HAN, bad, protocol=STEPS)
    with pytest.raises(SpecError, match=r"^data\.train\.y = .*d_out = 1"):  # cross-entropy: one class only
        train_architecture(HAN, BOARD, protocol=Protocol(lrs=[0.1], max_epochs=1))


def test_momentum_buffers_are_state_that_rewinds_restore_and_keep_drops():
    spec = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="batch")
    data = standins.waveform_noise(100, 50, 50)
    p = Protocol(momentum=0.5)
    stack = new_stack(build_network(spec, seed=0, runs=3), [0.1, 0.2, 0.3], p)
    assert sorted(k for k in stack.tensors() if k.startswith("opt.")) == sorted(
        f"opt.b.{n}" for n, _ in stack.net.named_parameters()
    )
    x, y = data.train.x[:50], data.train.y[:50]
    train_step(stack, x, y, 1.0, p)
    save_best(stack, [1])
    saved = {k: t.clone() for k, t in stack.tensors().items()}
    for _ in range(2):
        train_step(stack, x, y, 1.0, p)
    rewind(stack, [0, 1])
    for k, t in stack.tensors().items():
        assert torch.equal(t[1], saved[k][1]), k
        if k.startswith("opt.b."):
            assert not t[0].any(), k  # run 0 was never saved: back to the zero buffer of the start
            # run 2 kept its buffers (a bias folded into batchnorm has no gradient: its buffer stays 0)
            assert t[2].abs().sum() > 0 or k in ("opt.b.linears.0.bias", "opt.b.linears.1.bias"), k
    small = keep(stack, [0, 2])
    for k, t in small.tensors().items():
        assert torch.equal(t, stack.tensors()[k][[0, 2]]), k
    assert new_stack(build_network(spec, seed=0, runs=2), [0.1, 0.2], Protocol()).opt == {}  # no momentum: none


def test_a_rate_window_trains_exactly_the_full_sweeps_runs_at_its_rates():
    """``rate_window=(s, m)`` (a study's ``lr_window``): the runs are those of the full sweep at rates s .. s + m - 1,
    to 1e-9, with their indices in the whole series; the selected run is the window's lowest validation error; the
    curves carry the series' indices; a window outside the series is refused in one line."""
    spec = ArchSpec(depth=4, width=10, d_in=40, d_out=3, activation="tanh", norm="layer", bias_init="gaussian")
    data = standins.waveform_noise(300, 150, 150, seed=3)
    p = Protocol(num_lrs=6, batch_size=50, patience_first=2, patience=1, divisions=1, max_epochs=6)
    full = train_architecture(spec, data, seed=5, protocol=p, chunk_runs=1)
    window = train_architecture(spec, data, seed=5, protocol=p, chunk_runs=1, rate_window=(2, 3))
    assert [r.lr_index for r in window.runs] == [2, 3, 4] and window.lr_min == full.lr_min
    for a, b in zip(full.runs[2:5], window.runs):
        assert_same_run(a, b)
        assert a.lr_index == b.lr_index
    best = min(range(2, 5), key=lambda k: (full.runs[k].val_error, k))
    assert window.best.lr_index == best and window.selected == best - 2
    assert sorted({row["lr_index"] for row in window.curve_rows()}) == [2, 3, 4]
    rows = window.run_rows()
    assert [r["lr_index"] for r in rows] == [2, 3, 4] and sum(r["selected"] for r in rows) == 1
    for bad in ((5, 2), (-1, 2), (0, 0), "2", (1.5, 2)):
        with pytest.raises(SpecError, match=r"^train_architecture\.rate_window = .*must be \(s, m\)"):
            train_architecture(spec, data, protocol=p, rate_window=bad)
