"""study.train_architecture: stacked equals separate, divergence, lr_min, c_out, selection, the outcome."""

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from archstudy.sampling import ArchSpec, SpecError
from archstudy.study import Protocol, build_network, output_scale, train_architecture
from archstudy.study.metrics.measurement import nlc_seed
from archstudy.study.metrics.nlc import nlc, output_bias
from archstudy.study.training.loss import errors, run_losses
from archstudy.study.training.lr_min import measure_lr_min, relative_terms
from archstudy.study.training.splits import LR_MIN_ORDER, check_splits, epoch_order
from archstudy.study.training.stack import keep, new_stack, rewind, save_best, train_step

import trainer_standins as standins
from device_training import LAYERNORM


pytestmark = pytest.mark.usefixtures("one_thread")


DATA = standins.waveform_noise(400, 200, 200, seed=1)
SPEC = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="batch")
PLAIN = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="none")
SHORT = Protocol(batch_size=50, patience_first=3, patience=2, divisions=2, max_epochs=25)
ERRORS = ("val_error", "train_error", "test_error")


def assert_same_run(a, b, tol=1e-9):
    assert (a.lr, a.epochs, a.divisions, a.diverged) == (b.lr, b.epochs, b.divisions, b.diverged)
    for f in ERRORS:
        assert abs(getattr(a, f) - getattr(b, f)) <= tol, f


def test_stacked_equals_each_rate_trained_alone():
    lrs = [0.03, 0.3]
    both = train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=lrs))
    alone = [train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=[lr])) for lr in lrs]
    for k in range(2):
        assert_same_run(alone[k].runs[0], both.runs[k])
    assert all(r.divisions > 0 for r in both.runs)  # the schedule rewound and divided in both runs
    k = both.best.lr_index
    for (name, a), (_, b) in zip(alone[k].network.stacked_tensors(), both.network.stacked_tensors()):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12, msg=name)


def test_training_leaves_the_global_random_state_alone(global_random_state):
    """Every draw of training (initialization, data orders, lr_min's epoch, the NLC after training) comes from
    ``seed`` through its own generators; the process's global generators are neither used nor advanced."""
    before = global_random_state()
    outcome = train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=[0.03, 0.3], max_epochs=3))
    assert global_random_state() == before and outcome.best.nlc_after > 0


@pytest.mark.parametrize(
    "spec",
    [
        SPEC,
        LAYERNORM,  # GmP with input mean normalization (a per-run buffer), layernorm, skips after the norm op
        # Householder layers, batchnorm, skips after the linear op with a projection into the output
        ArchSpec(
            depth=5,
            width=12,
            d_in=40,
            d_out=3,
            activation="tanh",
            norm="batch",
            weights="householder",
            skip="after_linear",
            debias=True,
            shift=0.2,
        ),
    ],
    ids=["dense-bn", "gmp-ln-skip", "householder-bn-skip"],
)
def test_chunks_of_the_stack_train_like_the_whole_stack(spec):
    p = SHORT.replace(lrs=[0.01, 0.1, 1.0], max_epochs=12)
    whole = train_architecture(spec, DATA, seed=5, protocol=p, chunk_runs=3)
    chunked = train_architecture(spec, DATA, seed=5, protocol=p, chunk_runs=1)
    for a, b in zip(whole.runs, chunked.runs):
        assert_same_run(a, b)
    for (name, a), (_, b) in zip(whole.network.stacked_tensors(), chunked.network.stacked_tensors()):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12, msg=name)


def test_divergence_is_recorded_and_leaves_the_other_runs_alone():
    # Without normalization a huge rate overflows within a few steps (with batchnorm it would not: the
    # forward is scale-invariant up to the last layer and the loss stays finite). A linear activation, so no
    # unit can die and leave a finite, constant output instead.
    lin = PLAIN.replace(activation="linear")
    p = SHORT.replace(lrs=[0.03, 0.3, 1e8])
    three = train_architecture(lin, DATA, seed=3, protocol=p)
    two = train_architecture(lin, DATA, seed=3, protocol=p.replace(lrs=[0.03, 0.3]))
    for k in range(2):
        assert_same_run(two.runs[k], three.runs[k])
        assert not three.runs[k].diverged
    huge = three.runs[2]
    # every window ends at once: one epoch per window, 2 divisions, rewound to the initialization
    assert huge.diverged and huge.epochs == 3 and huge.divisions == 2
    splits = check_splits(DATA, lin, torch.device("cpu"))
    init = build_network(lin, seed=3)
    for f, split in zip(ERRORS, (splits.val, splits.train, splits.test)):
        assert getattr(huge, f) == float(errors(init, split.x, split.y, 40, 1)[0])
    assert three.best.lr_index != 2 and three.n_diverged == 1


def _hand_lr_min(w1, b1, w2, b2, train, c_out, batch_size, seed, scale=1e-8):
    """E.2's lr_min for f(x) = W2 (W1 x + b1) + b2 with the gradients written out by hand."""
    sq1 = sq2 = 0.0
    batches = 0
    for idx in epoch_order(len(train.y), batch_size, seed, LR_MIN_ORDER, 0, torch.device("cpu")):
        x, y = train.x[idx], train.y[idx]
        h = x @ w1.T + b1
        f = h @ w2.T + b2
        g = (torch.softmax(f / c_out, dim=1) - F.one_hot(y, f.shape[1]).double()) / (len(y) * c_out)  # dL/df
        dw2 = g.T @ h
        dw1 = (g @ w2).T @ x
        sq1 += float((dw1**2).sum())
        sq2 += float((dw2**2).sum())
        batches += 1
    total = math.sqrt(sq1 / batches) / float(w1.norm()) + math.sqrt(sq2 / batches) / float(w2.norm())
    return scale / total


def test_lr_min_equals_the_formula_with_hand_written_gradients():
    spec = ArchSpec(depth=2, width=10, d_in=40, d_out=3, activation="linear", bias_init="gaussian")
    net = build_network(spec, seed=2)
    splits = check_splits(DATA, spec, torch.device("cpu"))
    c_out = output_scale(net, splits.train.x)
    p = Protocol(batch_size=64)
    got = measure_lr_min(net, splits.train, c_out, p, seed=2)
    l1, l2 = net.linears
    want = _hand_lr_min(
        l1.weight[0].detach(),
        l1.bias[0].detach(),
        l2.weight[0].detach(),
        l2.bias[0].detach(),
        splits.train,
        c_out,
        64,
        seed=2,
    )
    assert got == pytest.approx(want, rel=1e-12)
    assert measure_lr_min(net, splits.train, c_out, p.replace(lr_min_scale=1e-16), 2) == pytest.approx(
        want * 1e-8, rel=1e-12
    )


def test_lr_min_with_adam_equals_torch_adam_steps_that_are_undone():
    spec = ArchSpec(depth=3, width=10, d_in=40, d_out=3, activation="tanh")
    net = build_network(spec, seed=4)
    splits = check_splits(DATA, spec, torch.device("cpu"))
    c_out = output_scale(net, splits.train.x)
    p = Protocol(optimizer="adam", warmup_epochs=2, batch_size=100)
    got = measure_lr_min(net, splits.train, c_out, p, seed=4)

    # torch.optim.Adam at lr 1 on a copy; every step is undone, the running averages are kept
    copy = build_network(spec, seed=4)
    weights = [copy.linears[i].weight for i in range(3)]
    initial = [w.detach().clone() for w in weights]
    opt = torch.optim.Adam(weights, lr=1.0, betas=(p.adam_beta1, p.adam_beta2), eps=p.adam_eps)
    sq = [0.0] * 3
    for epoch in range(3):
        order = epoch_order(len(splits.train), 100, 4, LR_MIN_ORDER, epoch, torch.device("cpu"))
        for idx in order:
            opt.zero_grad()
            F.cross_entropy(copy(splits.train.x[idx]) / c_out, splits.train.y[idx]).backward()
            before = [w.detach().clone() for w in weights]
            opt.step()
            with torch.no_grad():
                for i, w in enumerate(weights):
                    if epoch == 2:
                        sq[i] += float(((w - before[i]) ** 2).sum())
                    w.copy_(before[i])
        batches = len(order)
    want = 1e-8 / sum(math.sqrt(s / batches) / float(w0.norm()) for s, w0 in zip(sq, initial))
    assert got == pytest.approx(want, rel=1e-9)


def test_lr_min_counts_every_weight_tensor_of_every_layer_kind_and_leaves_the_net_untouched():
    spec = ArchSpec(
        depth=4, width=8, d_in=40, d_out=3, activation="relu", norm="batch", param="gmp", weights="householder"
    )
    net = build_network(spec, seed=1)
    before = {k: v.clone() for k, v in net.stacked_tensors()}
    splits = check_splits(DATA, spec, torch.device("cpu"))
    c_out = output_scale(net, splits.train.x)
    terms = relative_terms(net, splits.train, c_out, Protocol(batch_size=100), seed=1)
    # layer 1: GmP (angles theta and radii r), layers 2-3 Householder (u), layer 4 dense output (W)
    assert sorted(terms) == ["linears.0.r", "linears.0.theta", "linears.1.u", "linears.2.u", "linears.3.weight"]
    assert all(t > 0 and math.isfinite(t) for t in terms.values())
    lr_min = measure_lr_min(net, splits.train, c_out, Protocol(batch_size=100), seed=1)
    assert lr_min == pytest.approx(1e-8 / sum(terms.values()), rel=1e-14)
    for k, v in net.stacked_tensors():
        assert torch.equal(v, before[k]), k  # running statistics included


def test_outcome_records_selection_and_metrics_after_training():
    p = SHORT.replace(num_lrs=4, lr_factor=9.0, lr_min_scale=1e-8 * 3.0**10, edge_runs=1)
    seen = []
    out = train_architecture(SPEC, DATA, seed=7, protocol=p, progress=seen.append)
    splits = check_splits(DATA, SPEC, torch.device("cpu"))
    init = build_network(SPEC, seed=7)
    c_out = output_scale(init, splits.train.x, batch_size=50)
    assert out.c_out == c_out
    assert out.lr_min == measure_lr_min(init, splits.train, c_out, p, seed=7)
    assert [r.lr_index for r in out.runs] == [0, 1, 2, 3]
    assert [r.lr for r in out.runs] == p.rates(out.lr_min)
    best = min(out.runs, key=lambda r: (r.val_error, r.lr_index))
    assert out.best.lr_index == best.lr_index and out.best.val_error == best.val_error
    assert out.best.lr_edge == (best.lr_index in (0, 3))
    # The selected network is the run's best state, running statistics included: its errors are the record's
    net = out.network
    assert net.runs == 1 and not net.training
    for f, split in zip(ERRORS, (splits.val, splits.train, splits.test)):
        assert float(errors(net, split.x, split.y, 16, 1)[0]) == getattr(out.best, f)
    assert out.best.nlc_after == nlc(net, splits.train.x, seed=nlc_seed(7))  # measure's NLC stream
    assert out.best.bias_after == output_bias(net, splits.train.x)
    # progress after every epoch, until every run has finished
    assert [s.epoch for s in seen] == list(range(1, len(seen) + 1))
    assert seen[-1].finished_runs == 4 and seen[-1].live_runs == 0 and len(seen) == max(r.epochs for r in out.runs)
    assert sum(r.wall_s for r in out.runs) <= out.train_s
    row = out.selected_row()
    assert row["lr_index"] == best.lr_index and row["n_runs"] == 4 and row["c_out"] == c_out
    rows = out.run_rows()
    assert sum(r["selected"] for r in rows) == 1 and rows[best.lr_index]["selected"]


def test_selection_ties_go_to_the_lower_rate():
    # Two identical rates train identically: the lower index wins the tie.
    out = train_architecture(SPEC, DATA, seed=3, protocol=SHORT.replace(lrs=[0.1, 0.1 * (1 + 1e-15)], max_epochs=4))
    assert out.runs[0].val_error == out.runs[1].val_error and out.best.lr_index == 0


def test_long_protocol_monitors_and_selects_by_training_error():
    p = SHORT.replace(lrs=[0.01, 0.3], monitor="train", max_epochs=10)
    out = train_architecture(SPEC, DATA, seed=3, protocol=p)
    best = min(out.runs, key=lambda r: (r.train_error, r.lr_index))
    assert out.best.lr_index == best.lr_index
    splits = check_splits(DATA, SPEC, torch.device("cpu"))
    assert float(errors(out.network, splits.train.x, splits.train.y, 16, 1)[0]) == out.best.train_error


def test_adam_stacked_equals_separate():
    p = SHORT.replace(optimizer="adam", warmup_epochs=1, lrs=[1e-3, 3e-2], max_epochs=15)
    both = train_architecture(SPEC, DATA, seed=3, protocol=p)
    for k, lr in enumerate(p.lrs):
        alone = train_architecture(SPEC, DATA, seed=3, protocol=p.replace(lrs=[lr]))
        assert_same_run(alone.runs[0], both.runs[k])
    assert min(r.val_error for r in both.runs) < 0.3  # it learned (chance is 2/3)
    assert any(r.divisions > 0 for r in both.runs)


def test_stack_rewind_restores_parameters_running_statistics_and_adam_state():
    net = build_network(SPEC, seed=0, runs=3)
    stack = new_stack(net, [0.1, 0.2, 0.3], Protocol(optimizer="adam"))
    x, y = DATA.train.x[:50], DATA.train.y[:50]
    train_step(stack, x, y, 1.0, Protocol(optimizer="adam"))
    save_best(stack, [1])
    saved = {k: t.clone() for k, t in stack.tensors().items()}
    for _ in range(2):
        train_step(stack, x, y, 1.0, Protocol(optimizer="adam"))
    rewind(stack, [0, 1])
    initial = build_network(SPEC, seed=0, runs=3)
    init = {f"net.{k}": t for k, t in initial.stacked_tensors()}
    moved = False
    for k, t in stack.tensors().items():
        assert torch.equal(t[1], saved[k][1]), k  # run 1: its saved best, running statistics included
        if k in init:
            assert torch.equal(t[0], init[k][0]), k  # run 0: never saved, back to the initialization
        moved |= not torch.equal(t[2], saved[k][2])  # run 2: untouched, it kept training
    assert moved and "net.norms.0.running_mean" in saved and "opt.t" in saved
    small = keep(stack, [0, 2])
    assert small.net.runs == 2 and small.runs.tolist() == [0, 2]
    for k, t in small.tensors().items():
        assert torch.equal(t, stack.tensors()[k][[0, 2]]), k
        assert torch.equal(small.best[k], stack.best[k][[0, 2]]), k


def test_stack_loss_is_the_sum_of_each_runs_own_mean_loss():
    net = build_network(SPEC, seed=0, runs=2)
    x, y = DATA.train.x[:50], DATA.train.y[:50]
    with torch.no_grad():
        out = net(x)
        losses = run_losses(out, y, 2.0)
    for r in range(2):
        assert losses[r] == pytest.approx(float(F.cross_entropy(out[r] / 2.0, y)), rel=1e-14)


def test_untrainable_network_is_recorded_as_diverged_everywhere():
    # square activations without normalization at 100x scale overflow to inf: c_out is not finite
    spec = ArchSpec(depth=10, width=8, d_in=40, d_out=3, activation="square", init_scale=100.0)
    out = train_architecture(spec, DATA, seed=0, protocol=SHORT.replace(num_lrs=3))
    assert math.isnan(out.lr_min) and not math.isfinite(out.c_out)
    assert all(r.diverged and r.epochs == 0 for r in out.runs) and out.selected_row()["all_diverged"]
    assert out.best.lr_index == 0


@pytest.mark.parametrize(
    "data, field",
    [
        (SimpleNamespace(train=DATA.train, val=DATA.val), "data.test"),
        (
            SimpleNamespace(
                train=SimpleNamespace(x=DATA.train.x[:, :39], y=DATA.train.y), val=DATA.val, test=DATA.test
            ),
            "data.train.x",
        ),
        (
            SimpleNamespace(train=DATA.train, val=SimpleNamespace(x=DATA.val.x, y=DATA.val.y + 1), test=DATA.test),
            "data.val.y",
        ),
        (
            SimpleNamespace(
                train=DATA.train, val=DATA.val, test=SimpleNamespace(x=DATA.test.x, y=DATA.test.y.double())
            ),
            "data.test.y",
        ),
        (
            SimpleNamespace(
                train=SimpleNamespace(x=DATA.train.x * float("nan"), y=DATA.train.y), val=DATA.val, test=DATA.test
            ),
            "data.train.x",
        ),
    ],
)
def test_bad_data_is_a_one_line_error_naming_the_field(data, field):
    with pytest.raises(SpecError, match=rf"^{field.replace('.', chr(92) + '.')} = "):
        train_architecture(SPEC, data, protocol=SHORT.replace(lrs=[0.1]))


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(SpecError, match=r"^train_architecture\.seed = -1"):
        train_architecture(SPEC, DATA, seed=-1)
    with pytest.raises(SpecError, match=r"^Protocol\.preset = 'slow'"):
        train_architecture(SPEC, DATA, protocol="slow")
    with pytest.raises(SpecError, match=r"^train_architecture\.device = 'gpu0'"):
        train_architecture(SPEC, DATA, device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(SpecError, match=r"^train_architecture\.device = 'cuda': must be an available"):
            train_architecture(SPEC, DATA, device="cuda")
