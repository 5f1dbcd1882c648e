"""The stacked optimizers (study.training.optim): every optimizer the protocol names has a declaration; each one,
stacked over runs at per-run rates, takes torch.optim's steps (and a hand-written loop's) in float64; its state
has the names checkpoints hold; its direction is the update at rate 1 that lr_min measures."""

import pytest
import torch

from archstudy.study.experiment.protocol import OPTIMIZERS as PROTOCOL_OPTIMIZERS
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.training.optim import OPTIMIZERS, SGD, Adam, Momentum, Optimizer, Slots, optimizer_of

RUNS = 3
LRS = torch.tensor([0.1, 0.03, 0.5], dtype=torch.float64)
SHAPES = {"a.weight": (RUNS, 4, 3), "a.bias": (RUNS, 4), "b.u": (RUNS, 5)}

CASES = {  # name -> (protocol, the torch.optim equivalent for one run at rate lr)
    "sgd": (Protocol(), lambda ps, lr: torch.optim.SGD(ps, lr=lr)),
    "momentum": (Protocol(momentum=0.9), lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9)),
    "adam": (
        Protocol(optimizer="adam", adam_beta1=0.8, adam_beta2=0.99, adam_eps=1e-6),
        lambda ps, lr: torch.optim.Adam(ps, lr=lr, betas=(0.8, 0.99), eps=1e-6),
    ),
}


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {n: torch.randn(s, generator=g, dtype=torch.float64) for n, s in SHAPES.items()}


def _grads(step):
    g = torch.Generator().manual_seed(100 + step)
    return {n: torch.randn(s, generator=g, dtype=torch.float64) for n, s in SHAPES.items()}


def test_every_optimizer_the_protocol_allows_has_a_declaration():
    assert set(OPTIMIZERS) == set(PROTOCOL_OPTIMIZERS)
    for name in PROTOCOL_OPTIMIZERS:
        assert isinstance(optimizer_of(Protocol(optimizer=name)), Optimizer)
    assert type(optimizer_of(Protocol())) is SGD
    momentum = optimizer_of(Protocol(momentum=0.5))
    assert type(momentum) is Momentum and momentum.momentum == 0.5
    adam = optimizer_of(Protocol(optimizer="adam"))
    assert type(adam) is Adam and (adam.beta1, adam.beta2, adam.eps) == (0.9, 0.999, 1e-8)


def test_state_has_the_names_checkpoints_hold_and_starts_at_zero():
    """The stacked state keys are those of checkpoints written before the interface: ``m.<name>``, ``v.<name>``
    and ``t`` (Adam), ``b.<name>`` (momentum), none for plain SGD."""
    params = _params()
    names = list(params)
    assert optimizer_of(Protocol()).init(params) == {}
    momentum = optimizer_of(Protocol(momentum=0.9)).init(params)
    assert list(momentum) == [f"b.{n}" for n in names]
    adam = optimizer_of(Protocol(optimizer="adam")).init(params)
    assert list(adam) == [k for n in names for k in (f"m.{n}", f"v.{n}")] + ["t"]
    for state in (momentum, adam):
        for k, t in state.items():
            want = (RUNS,) if k == "t" else params[k.split(".", 1)[1]].shape
            assert t.shape == want and t.dtype == torch.float64 and not t.any(), k


def test_views_of_a_chunk_write_through_to_the_state():
    opt = optimizer_of(Protocol(optimizer="adam"))
    params = _params()
    state = opt.init(params)
    slots = opt.view(state, ["a.bias", "b.u"], slice(1, 3))
    assert [t.shape for t in slots.tensors["m"]] == [(2, 4), (2, 5)] and slots.scalars["t"].shape == (2,)
    opt.advance([torch.ones(2, 4, dtype=torch.float64), torch.ones(2, 5, dtype=torch.float64)], slots)
    assert state["t"].tolist() == [0.0, 1.0, 1.0] and not state["m.a.weight"].any()
    assert state["m.a.bias"][0].abs().sum() == 0 and torch.all(state["m.a.bias"][1:] > 0)
    taken = slots.take([1])
    assert isinstance(taken, Slots) and taken.tensors["v"][0] is slots.tensors["v"][1]
    assert taken.scalars is slots.scalars


@pytest.mark.parametrize("case", list(CASES))
def test_stacked_steps_equal_torch_optim_run_by_run(case):
    protocol, make = CASES[case]
    opt = optimizer_of(protocol)
    params = _params()
    names = list(params)
    state = opt.init(params)
    slots = opt.view(state, names)
    alone = [{n: p[r].clone().requires_grad_(True) for n, p in params.items()} for r in range(RUNS)]
    torch_opts = [make(list(alone[r].values()), float(LRS[r])) for r in range(RUNS)]
    for step in range(6):
        grads = _grads(step)
        opt.update([params[n] for n in names], [grads[n] for n in names], slots, LRS)
        for r in range(RUNS):
            for n, p in alone[r].items():
                p.grad = grads[n][r].clone()
            torch_opts[r].step()
        for r in range(RUNS):
            for n in names:
                torch.testing.assert_close(
                    params[n][r], alone[r][n].detach(), rtol=1e-13, atol=1e-15, msg=f"{case} step {step} run {r} {n}"
                )


def _hand_written(case, params, steps):
    """The module docstring's formulas, one run and one tensor at a time, in plain float64 arithmetic."""
    protocol, _ = CASES[case]
    out = {}
    for n, p0 in params.items():
        for r in range(RUNS):
            w, lr = p0[r].clone(), float(LRS[r])
            b = m = v = torch.zeros_like(w)
            for t in range(1, steps + 1):
                g = _grads(t - 1)[n][r]
                if case == "sgd":
                    w = w - lr * g
                elif case == "momentum":
                    b = protocol.momentum * b + g
                    w = w - lr * b
                else:
                    b1, b2, eps = protocol.adam_beta1, protocol.adam_beta2, protocol.adam_eps
                    m = b1 * m + (1 - b1) * g
                    v = b2 * v + (1 - b2) * g * g
                    w = w - lr * (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + eps)
            out[(n, r)] = w
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_stacked_steps_equal_the_hand_written_formulas(case):
    opt = optimizer_of(CASES[case][0])
    params = _params(1)
    start = {n: p.clone() for n, p in params.items()}
    names = list(params)
    slots = opt.view(opt.init(params), names)
    for step in range(4):
        grads = _grads(step)
        opt.update([params[n] for n in names], [grads[n] for n in names], slots, LRS)
    for (n, r), w in _hand_written(case, start, 4).items():
        torch.testing.assert_close(params[n][r], w, rtol=1e-13, atol=1e-15, msg=f"{case} {n} run {r}")


@pytest.mark.parametrize("case", list(CASES))
def test_direction_is_the_update_at_rate_one(case):
    """``advance`` then ``direction`` gives d with ``update`` at rate lr moving p by -lr d, and ``advance`` leaves
    the parameters alone (what lr_min measures: no update applied)."""
    opt = optimizer_of(CASES[case][0])
    params = _params(2)
    names = list(params)
    measured, stepped = opt.view(opt.init(params), names), opt.view(opt.init(params), names)
    before = {n: p.clone() for n, p in params.items()}
    for step in range(3):
        grads = [_grads(step)[n] for n in names]
        opt.advance(grads, measured)
        d = opt.direction(grads, measured)
        assert all(torch.equal(params[n], before[n]) for n in names)  # advancing never updates
        if case == "sgd":
            assert all(torch.equal(a, b) for a, b in zip(d, grads))
        moved = {n: p.clone() for n, p in before.items()}
        opt.update([moved[n] for n in names], grads, stepped, LRS)
        for n, di in zip(names, d):
            want = before[n] - LRS.view(-1, *[1] * (di.dim() - 1)) * di
            torch.testing.assert_close(moved[n], want, rtol=1e-13, atol=1e-15, msg=f"{case} step {step} {n}")
        before = moved
        params = moved


@pytest.mark.parametrize("case", list(CASES))
def test_every_optimizer_keeps_float64(case):
    opt = optimizer_of(CASES[case][0])
    params = _params()
    names = list(params)
    state = opt.init(params)
    slots = opt.view(state, names)
    grads = [_grads(0)[n] for n in names]
    opt.update([params[n] for n in names], grads, slots, LRS)
    opt.advance(grads, slots)
    tensors = list(params.values()) + list(state.values()) + opt.direction(grads, slots)
    assert all(t.dtype == torch.float64 for t in tensors)


def _one_call_per_tensor(case, params, grads, state, lr):
    """The update with one in-place call per tensor, the reference the foreach operations must equal."""
    per_run = lambda v, t: v.view(-1, *[1] * (t.dim() - 1))  # noqa: E731
    if case == "sgd":
        for p, g in zip(params, grads):
            p.addcmul_(g, per_run(lr, p), value=-1.0)
    elif case == "momentum":
        for p, g, b in zip(params, grads, state["b"]):
            b.mul_(0.9).add_(g)
            p.addcmul_(b, per_run(lr, p), value=-1.0)
    else:
        b1, b2, eps = 0.8, 0.99, 1e-6
        for m, v, g in zip(state["m"], state["v"], grads):
            m.lerp_(g, 1.0 - b1)
            v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
        state["t"].add_(1.0)
        t = state["t"]
        step, root_bc2 = lr / (1.0 - torch.pow(b1, t)), torch.sqrt(1.0 - torch.pow(b2, t))
        for p, m, v in zip(params, state["m"], state["v"]):
            p.addcdiv_(m * per_run(step, m), (v.sqrt() / per_run(root_bc2, v)).add_(eps), value=-1.0)


@pytest.mark.parametrize("case", list(CASES))
def test_the_foreach_update_is_one_call_per_tensor_bit_for_bit(case):
    """The update of all tensors as ``torch._foreach_*`` operations computes exactly what one call per tensor
    computed (the same operations in the same order, on a CPU)."""
    opt = optimizer_of(CASES[case][0])
    params, ref = _params(3), _params(3)
    names = list(params)
    slots = opt.view(opt.init(params), names)
    state = {
        "b": [torch.zeros_like(ref[n]) for n in names],
        "m": [torch.zeros_like(ref[n]) for n in names],
        "v": [torch.zeros_like(ref[n]) for n in names],
        "t": torch.zeros(RUNS, dtype=torch.float64),
    }
    for step in range(4):
        grads = [_grads(step)[n] * 10.0**step for n in names]
        opt.update([params[n] for n in names], grads, slots, LRS)
        _one_call_per_tensor(case, [ref[n] for n in names], grads, state, LRS)
    assert all(torch.equal(params[n], ref[n]) for n in names)
