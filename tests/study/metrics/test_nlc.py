"""The NLC (Definition 1, section G's batch form) and the output bias against exact computations."""

import math

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import build_network, frozen_statistics, output_scale
from archstudy.study.metrics import jacobian_q, nlc, nlc_parts, output_bias, output_moments
from archstudy.study.metrics.nlc import minibatches
from archstudy.study.nn.network import orthogonal_submatrix


pytestmark = pytest.mark.usefixtures("one_thread")


def gaussian(n, d, seed=0, scale=1.0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale


def exact_nlc(net, x):
    """Definition 1 by brute force: every per-example Jacobian (torch.func), exact standard deviations."""
    with torch.no_grad():
        out = net(x)  # also computes the activation's constants outside the functorch transform
    jac = torch.func.vmap(torch.func.jacrev(lambda xi: net(xi.unsqueeze(0)).squeeze(0)))(x)  # [N, d_out, d_in]
    q_j = torch.sqrt((jac.detach() ** 2).sum(dim=(1, 2)).mean())
    sd_in = torch.sqrt(x.var(dim=0, unbiased=False).mean())
    sd_out = torch.sqrt(out.var(dim=0, unbiased=False).mean())
    return float(q_j * sd_in / (math.sqrt(out.shape[1]) * sd_out))


def test_orthogonal_linear_map_on_isotropic_gaussian_has_nlc_one():
    q = torch.from_numpy(orthogonal_submatrix(np.random.default_rng(0), 30, 30))
    x = gaussian(5000, 30, seed=1)
    assert nlc(lambda v: v @ q.T + 3.0, x, seed=2) == pytest.approx(1.0, rel=0.02)


def test_jacobian_estimate_of_a_linear_map_is_its_frobenius_norm():
    # Section G: Q_u |u A|_2 = |A|_F for unit-Gaussian u; the Jacobian of x -> A x is A everywhere.
    a = gaussian(4, 12, seed=3)
    x = gaussian(1000, 12, seed=4)
    assert float(jacobian_q(lambda v: v @ a.T, x, seed=5)) == pytest.approx(float(torch.linalg.norm(a)), rel=0.02)


@pytest.mark.parametrize(
    "kw",
    [
        dict(activation="relu"),
        dict(activation="tanh", bias_init="gaussian", dilation=1.2, shift=0.2, debias=True),
        dict(activation="even_tanh", init_scale=1.1),
        dict(activation="abs", weights="householder", bias_init="gaussian"),
        dict(activation="selu", skip="after_linear", skip_strength=0.5),
        dict(activation="relu", param="gmp", depth=2, bias_init="gaussian"),  # GmP without IMN: pointwise
    ],
)
def test_nlc_agrees_with_per_example_jacobians(kw):
    spec = ArchSpec(**{**dict(depth=5, width=12, d_in=6, d_out=3), **kw})
    net = build_network(spec, seed=0)
    x = gaussian(1000, 6, seed=1)
    assert nlc(net, x, seed=2) == pytest.approx(exact_nlc(net, x), rel=0.05)


def test_parts_compose_the_nlc_and_the_bias():
    spec = ArchSpec(depth=4, width=10, d_in=5, d_out=3, bias_init="gaussian")
    net = build_network(spec, seed=1)
    x = gaussian(700, 5, seed=2, scale=2.0)
    p = nlc_parts(net, x, batches=10)
    with torch.no_grad():
        out = net(x).numpy()
    xs = x.numpy()
    assert p.input_sd_q == pytest.approx(math.sqrt(xs.var(axis=0).mean()), rel=1e-12)
    assert p.output_sd_q == pytest.approx(math.sqrt(out.var(axis=0).mean()), rel=1e-12)
    assert p.output_q == pytest.approx(math.sqrt((out**2).mean()), rel=1e-12)
    assert p.bias == pytest.approx(p.output_q / p.output_sd_q, rel=1e-12)
    assert p.nlc == pytest.approx(p.jacobian_q * p.input_sd_q / (math.sqrt(3) * p.output_sd_q), rel=1e-12)


def test_linear_then_batchnorm_net_is_invariant_to_input_scale():
    # Section 6: a net that begins with linear + batchnorm computes the same function of x and 7 x.
    spec = ArchSpec(depth=4, width=20, d_in=8, d_out=3, activation="tanh", norm="batch")
    net = build_network(spec, seed=0)
    x = gaussian(1000, 8, seed=1)
    with frozen_statistics(net), torch.no_grad():
        out1, out7 = net(x[:250]), net(7.0 * x[:250])
    # equal up to batchnorm's eps = 1e-5 added to variances of ~1 and ~49
    assert float((out1 - out7).abs().max()) < 1e-4 * float(out1.abs().max())
    assert nlc(net, 7.0 * x, batches=20) == pytest.approx(nlc(net, x, batches=20), rel=1e-4)


@pytest.mark.parametrize("depth,lo,hi", [(2, 1.17, 1.27), (10, 3.5, 9.0)])
def test_batchnorm_relu_nlc_grows_like_nlc_tau_to_the_depth(depth, lo, hi):
    # Section 5 / Table 2: NLC ~ 1.211^(depth - 1); depth 2: 1.22, depth 10: 5.97 in the paper.
    spec = ArchSpec(depth=depth, width=100, d_in=50, d_out=10, activation="relu", norm="batch")
    x = gaussian(2000, 50, seed=depth)
    value = nlc(build_network(spec, seed=depth), x, batches=20)
    assert lo <= value <= hi


def test_output_bias_of_a_shift_by_1000():
    x = gaussian(5000, 10, seed=0)
    assert output_bias(lambda v: v + 1000.0, x) == pytest.approx(1000.0, rel=0.02)


def test_output_bias_stays_exact_for_huge_offsets():
    # E[f^2] - E[f]^2 would cancel to garbage here (relative error 1e-16 * bias^2 = 1e2).
    x = gaussian(3000, 4, seed=1)
    assert output_bias(lambda v: v + 1e9, x) == pytest.approx(1e9, rel=0.02)
    sd, q, d_out = output_moments(lambda v: v + 1e9, x)
    assert float(sd) == pytest.approx(math.sqrt(x.numpy().var(axis=0).mean()), rel=1e-6)


def test_output_moments_are_single_pass_batch_statistics_and_match_output_scale():
    spec = ArchSpec(depth=3, width=16, d_in=4, d_out=3, norm="batch", bias_init="gaussian")
    net = build_network(spec, seed=2)
    x = gaussian(730, 4, seed=3)
    sd, q, _ = output_moments(net, x, batch_size=250)
    with frozen_statistics(net), torch.no_grad():
        out = torch.cat([net(x[r]) for r in minibatches(730, 250)]).numpy()
    assert float(sd) == pytest.approx(math.sqrt(out.var(axis=0).mean()), rel=1e-12)
    assert float(q) == pytest.approx(output_scale(net, x), rel=1e-12)


def test_minibatches_never_leave_a_single_row():
    sizes = lambda n: [len(r) for r in minibatches(n, 250)]  # noqa: E731
    assert sizes(500) == [250, 250] and sizes(501) == [250, 251] and sizes(502) == [250, 250, 2]
    assert sizes(1) == [1]


def test_minibatches_partition_the_rows_in_one_fixed_shuffled_order():
    """Every row exactly once; the same batches on every call; not file order, so a split stored sorted
    (the checkerboard's raster order) still gives batches that look like the whole data."""
    batches = minibatches(1640, 250)
    rows = torch.cat(batches)
    assert torch.equal(rows.sort().values, torch.arange(1640))
    assert all(torch.equal(a, b) for a, b in zip(batches, minibatches(1640, 250)))
    assert not torch.equal(rows, torch.arange(1640))
    # sorted labels (820 zeros then 820 ones): every batch holds both classes near half and half
    y = (torch.arange(1640) >= 820).double()
    assert all(abs(float(y[r].mean()) - 0.5) < 0.12 for r in batches)


def test_stack_gets_the_nlc_of_each_copy():
    spec = ArchSpec(depth=4, width=10, d_in=5, d_out=3, norm="batch", activation="selu")
    stack = build_network(spec, seed=0, runs=3)
    x = gaussian(600, 5, seed=1)
    values = nlc(stack, x, batches=10)
    assert values.shape == (3,)
    assert float(values[1]) == pytest.approx(nlc(stack.select(1), x, batches=10), rel=1e-10)


def test_running_statistics_are_untouched():
    spec = ArchSpec(depth=4, width=10, d_in=5, d_out=3, norm="batch", param="gmp")
    net = build_network(spec, seed=0)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    nlc_parts(net, gaussian(600, 5, seed=1) + 2.0, batches=5)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert net.training
