"""The live stack (study.training.stack) with every optimizer: its state is what the optimizer's declaration makes,
and the chunked step (views of the stack's tensors and of that state) takes the whole stack's step."""

import math

import pytest
import torch

import trainer_standins as standins
from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, build_network
from archstudy.study.training.loss import run_losses
from archstudy.study.training.optim import optimizer_of
from archstudy.study.training.stack import folded_forward, new_stack, parts, train_step
from archstudy.study.training.trainer import CHUNK_ELEMENTS, chunk_size

pytestmark = pytest.mark.usefixtures("one_thread")

DATA = standins.waveform_noise(100, 50, 50, seed=2)
SPEC = ArchSpec(depth=4, width=10, d_in=40, d_out=3, activation="tanh", norm="batch", param="gmp", bias_init="gaussian")
PROTOCOLS = {"sgd": Protocol(), "momentum": Protocol(momentum=0.9), "adam": Protocol(optimizer="adam")}


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_the_stack_state_is_the_optimizers_and_chunks_step_as_the_whole(name):
    p = PROTOCOLS[name]
    lrs = [1e-3, 1e-2, 3e-2, 1e-1]
    whole = new_stack(build_network(SPEC, seed=4, runs=4), lrs, p)
    chunked = new_stack(build_network(SPEC, seed=4, runs=4), lrs, p)
    assert type(whole.optimizer) is type(optimizer_of(p))
    assert list(whole.opt) == list(optimizer_of(p).init(dict(whole.net.named_parameters())))
    for part in parts(chunked, 3):  # chunks of 2 runs: views, so the stack's own tensors move
        assert all(t._base is not None for ts in part.slots.tensors.values() for t in ts)
    x, y = DATA.train.x[:50], DATA.train.y[:50]
    for _ in range(3):
        train_step(whole, x, y, 1.0, p)
        train_step(chunked, x, y, 1.0, p, chunk=3)
    assert len(parts(chunked, 3)) == 2
    for (k, a), (_, b) in zip(whole.tensors().items(), chunked.tensors().items()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13, msg=k)
    moved = [k for k, t in whole.tensors().items() if k.startswith("opt.") and t.any()]
    assert bool(moved) == (name != "sgd")  # the optimizer's state moved (plain SGD has none)


def test_a_step_marks_exactly_the_runs_whose_loss_is_not_finite_and_adds_every_loss():
    """``nonfinite`` is ``~torch.isfinite`` of each run's loss (an infinite, a NaN and a huge finite output here),
    ``loss_sum`` adds each run's loss."""
    p = Protocol()
    stack = new_stack(build_network(SPEC, seed=4, runs=4), [1e-3] * 4, p)
    factor = torch.tensor([1.0, math.inf, math.nan, 1e300], dtype=torch.float64).view(4, 1, 1)
    outputs = []

    def forward(net, x):
        outputs.append(folded_forward(net, x) * factor)
        return outputs[-1]

    x, y = DATA.train.x[:50], DATA.train.y[:50]
    train_step(stack, x, y, 1.0, p, forward=forward)
    losses = run_losses(outputs[0].detach(), y, 1.0)
    assert stack.nonfinite.tolist() == (~torch.isfinite(losses)).tolist() == [False, True, True, False]
    assert torch.equal(stack.loss_sum.nan_to_num(), losses.nan_to_num())


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("width", [28, 50, 121, 156, 300, 354, 2000])
def test_a_cpu_chunk_is_one_run_all_of_them_or_a_multiple_of_the_threads(threads, width):
    """``chunk_size``: about CHUNK_ELEMENTS x threads activations, then on several threads the nearest multiple of
    them (a batched product shares its batch out over the threads), never more than the runs; the 1M-parameter net
    of the bench (width 354, minibatch 250) gets 1 run on one thread and 2 on two (3 by the elements alone)."""
    spec = ArchSpec(depth=9, width=width, d_in=40, d_out=3)
    by_elements = max(1, min(40, round(CHUNK_ELEMENTS * threads / (250 * width))))
    c = chunk_size(spec, 40, 250, threads)
    assert c in (1, 40) or c % threads == 0
    assert abs(c - by_elements) <= threads / 2 or c == 40  # the nearest multiple (a tie: the smaller)
    if width == 354:
        assert by_elements == {1: 1, 2: 3, 3: 4, 4: 6}[threads] and c == {1: 1, 2: 2, 3: 3, 4: 4}[threads]
