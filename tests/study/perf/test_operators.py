"""study.perf.operators: what the counter counts, and the operators of a training step per layer."""

import dataclasses

import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import Protocol
from archstudy.study import build_network
from archstudy.study.perf.operators import MATRIX_PRODUCTS, added_layer_operators, count_operators, step_operators

pytestmark = pytest.mark.usefixtures("one_thread")


def test_views_are_counted_apart_and_a_foreach_operation_once():
    a, b = torch.ones(4, 3, dtype=torch.float64), torch.ones(5, dtype=torch.float64)

    def fn():
        a.view(12).t()  # two views, no compute
        a.transpose(0, 1).detach()  # two more
        torch._foreach_add_([a, b], 1.0)  # one operator for both tensors
        (a * 2).sum()

    ops = count_operators(fn)
    assert dict(ops.compute) == {"_foreach_add_": 1, "mul": 1, "sum": 1} and ops.views == 4 and ops.total == 3


def _bn_relu(depth: int) -> ArchSpec:
    return ArchSpec(depth=depth, width=12, d_in=7, d_out=3, activation="relu", norm="batch")


def test_a_dense_batchnorm_relu_layer_costs_seven_operators_per_step():
    """A hidden layer adds its forward product, batchnorm and relu, their two backward operators and its two
    gradient products: 7 (the target is at most 8); nothing is made per step that is the same every step (no
    ``full``, no ``empty``), and the update of all parameters and the folded biases are one operator each."""
    counts = {d: step_operators(_bn_relu(d), runs=3, batch=20) for d in (3, 5, 9)}
    assert counts[5].total - counts[3].total == 2 * 7 and counts[9].total - counts[5].total == 4 * 7
    for ops in counts.values():
        assert not {"full", "empty", "ones_like", "addcmul_"} & set(ops.compute)
        assert ops.compute["_foreach_addcmul_"] == 1 and ops.compute["_foreach_add_"] == 1
        assert ops.compute["native_batch_norm"] == ops.compute["relu"] == ops.compute["threshold_backward"]
    # what a step of the paper's depth-9 20k net dispatched before (113) and now
    assert counts[9].total == 76 and counts[9].per_layer(9) == pytest.approx(76 / 9)


def test_the_count_does_not_depend_on_the_runs_and_every_optimizer_updates_in_few_operators():
    spec = _bn_relu(5)
    assert step_operators(spec, runs=2, batch=20).compute == step_operators(spec, runs=5, batch=20).compute
    sgd = step_operators(spec, runs=2, batch=20).total
    # momentum: b <- mu b + g adds 2 foreach operators; Adam: 3 for the moments and 5 for the step instead of
    # SGD's 1, and 7 small [R] operators (the bias corrections and the step count)
    assert step_operators(spec, runs=2, batch=20, protocol=Protocol(momentum=0.9)).total == sgd + 2
    assert step_operators(spec, runs=2, batch=20, protocol=Protocol(optimizer="adam")).total == sgd + 14


@pytest.mark.parametrize("skip", ["none", "after_norm"])
def test_an_added_layer_costs_what_the_difference_of_two_depths_says_whatever_the_fixed_operators(skip):
    """The count grows by the same number per hidden layer (a step's count is affine in the depth); the added
    layer's figure is that slope, while the total over the depth also shares out the loss, head and update."""
    spec = ArchSpec(depth=5, width=12, d_in=7, d_out=3, activation="relu", norm="batch", skip=skip)
    s = spec.skip_length if skip != "none" else 1
    totals = [step_operators(dataclasses.replace(spec, depth=5 + k * s), runs=2, batch=20).total for k in range(3)]
    assert totals[2] - totals[1] == totals[1] - totals[0]  # affine in the depth
    slope = (totals[1] - totals[0]) / s
    assert added_layer_operators(spec, runs=2, batch=20) == slope
    assert slope != totals[0] / 5  # the total over the depth is another number: the fixed operators in it
    if skip == "none":
        assert slope == 7  # a dense batchnorm-relu layer (the test above)


def test_the_bytes_of_an_operator_are_its_operands_and_results_once_each():
    """An in-place operator reads and writes its operand (twice its bytes), also when it returns nothing (a
    ``torch._foreach_*_``); an ``out=`` argument is written, not read; a broadcast operand counts its stored
    elements, a Python number nothing, and a view moves nothing."""
    a, b = torch.ones(4, 3, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    row = torch.ones(1, 3, dtype=torch.float64)
    idx, buf = torch.tensor([0, 2]), torch.empty(2, 3, dtype=torch.float64)

    def fn():
        a.view(12).t()
        torch._foreach_add_([a, b], 1.0)  # reads and writes 12 + 5 doubles
        a * 2  # reads 12, writes 12
        row.expand(4, 3) + a  # reads 3 + 12, writes 12
        a.sum()  # reads 12, writes 1
        torch.index_select(a, 0, idx, out=buf)  # reads 12 and the 2 indices, writes 6 (not reads: out=)
        buf.copy_(a[:2])  # reads 6, writes 6 (the destination is overwritten, not read)
        buf.zero_()  # writes 6
        torch.empty(100, dtype=torch.float64)  # an allocation: no kernel, no bytes

    ops = count_operators(fn)
    assert dict(ops.bytes) == {
        "_foreach_add_": 2 * 17 * 8,
        "mul": 24 * 8,
        "add": 27 * 8,
        "sum": 13 * 8,
        "index_select": (12 + 6) * 8 + 2 * 8,
        "copy_": 12 * 8,
        "zero_": 6 * 8,
        "empty": 0,
    }
    assert ops.traffic() == sum(ops.bytes.values())  # no matrix product among them


def test_a_steps_matrix_products_move_what_their_shapes_say_and_the_rest_is_the_traffic():
    """The bytes of a dense batchnorm-relu step's batched products, from the layer shapes by hand: per hidden
    layer (n -> n) the forward W x, the weight gradient g x^T and the input gradient W^T g, each reading its two
    operands and writing its result; the output layer (n -> k) its two gradient products (its forward is a
    ``baddbmm``, the first layer's are ``mm``: the shared input)."""
    depth, n, k, d_in, runs, batch = 5, 12, 3, 7, 4, 20
    spec = ArchSpec(depth=depth, width=n, d_in=d_in, d_out=k, activation="relu", norm="batch")
    ops = step_operators(spec, runs=runs, batch=batch)
    hidden = 3 * (depth - 2) * runs * (n * n + 2 * n * batch)
    out = runs * (k * batch + batch * n + k * n) + runs * (n * k + k * batch + n * batch)
    assert ops.bytes["bmm"] == 8 * (hidden + out)
    # the SGD update of every parameter with a gradient (not the biases batchnorm cancels): read p and g, write p,
    # and each tensor's per-run rate
    updated = [p for name, p in build_network(spec, 0, runs=runs).named_parameters() if not name.endswith("bias")]
    updated.append(build_network(spec, 0, runs=runs).linears[-1].bias)
    assert ops.bytes["_foreach_addcmul_"] == 8 * sum(3 * p.numel() + runs for p in updated)
    products = sum(v for name, v in ops.bytes.items() if name in MATRIX_PRODUCTS)
    assert ops.traffic() == sum(ops.bytes.values()) - products > 0
