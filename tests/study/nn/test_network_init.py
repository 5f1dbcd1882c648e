"""Initialization schemes besides appendix C (kaiming, xavier, zero residual branches) and stacks of several
initialization seeds, against their formulas and against networks built one seed at a time."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from archstudy.sampling import ArchSpec, SpecError
from archstudy.study import build_network
from archstudy.study.nn.network import init_rng

WIDE = dict(depth=3, width=300, d_in=200, d_out=10)


def _weights(spec, seed=4):
    net = build_network(spec, seed=seed)
    return [m.weight.detach()[0].numpy() for m in net.linears]


@pytest.mark.parametrize(
    "init, variance",
    [
        ("kaiming", lambda fan_in, fan_out: 2.0 / fan_in),  # He et al. 2015: normal, fan_in, gain sqrt(2)
        ("xavier", lambda fan_in, fan_out: 2.0 / (fan_in + fan_out)),  # Glorot and Bengio 2010: normal
    ],
)
def test_gaussian_schemes_have_their_variance_and_are_the_seeded_normal_draws(init, variance):
    spec = ArchSpec(**WIDE, init=init)
    for layer, w in zip(spec.layers(), _weights(spec)):
        v = variance(layer.fan_in, layer.fan_out)
        n = w.size
        assert abs(w.mean()) < 5 * math.sqrt(v / n)
        assert abs(w.var() / v - 1) < 5 * math.sqrt(2 / n)  # the sample variance's relative spread
        # the same numbers: the layer's weight generator's standard normals times the scheme's deviation
        z = init_rng(4, layer.index, 0).standard_normal((layer.fan_out, layer.fan_in))
        np.testing.assert_array_equal(w, z * math.sqrt(v))
    net = build_network(spec, seed=4)
    assert all(not m.bias.any() for m in net.linears)  # biases zero (bias_init "zero")


def test_init_composes_with_bias_init_and_scales():
    base = ArchSpec(**WIDE, init="xavier")
    scaled = base.replace(bias_init="gaussian", init_scale=1.1)
    for w, ws in zip(_weights(base), _weights(scaled)):
        np.testing.assert_allclose(ws, w * math.sqrt(0.95) * 1.1, rtol=1e-15, atol=0)


def test_zero_init_zeroes_exactly_the_residual_branches():
    spec = ArchSpec(
        depth=5, width=20, d_in=4, d_out=3, norm="layer", skip="after_linear", bias_init="gaussian", init="zero"
    )
    ref = build_network(spec.replace(init="orthogonal"), seed=9)
    net = build_network(spec, seed=9)
    for layer, m, r in zip(spec.layers(), net.linears, ref.linears):
        if layer.in_branch:  # every layer after the first is inside a residual branch
            assert not m.weight.any() and not m.bias.any()
        else:
            assert torch.equal(m.weight, r.weight) and torch.equal(m.bias, r.bias) and m.bias.abs().sum() > 0
    assert torch.equal(net.projection, ref.projection)
    # at the zero initial point the output is the first layer's signal carried through the skips
    x = torch.randn(7, 4, dtype=torch.float64)
    with torch.no_grad():
        h1 = net.linears[0](x)[0]
        assert torch.allclose(net(x), h1 @ net.projection.T, atol=1e-15, rtol=0)


def test_a_stack_of_seeds_is_the_networks_of_each_seed():
    # GmP (running input means), batchnorm (running statistics), skips with the output projection
    spec = ArchSpec(
        depth=5,
        width=12,
        d_in=4,
        d_out=3,
        activation="tanh",
        norm="batch",
        param="gmp",
        skip="after_linear",
        bias_init="gaussian",
        init="kaiming",
    )
    seeds = [5, 2, 5, 7]
    stack = build_network(spec, seeds=seeds)
    assert stack.runs == 4 and stack.projection.shape == (4, 3, 12)
    x = torch.randn(9, 4, dtype=torch.float64)
    stack.eval()
    out = stack(x)
    for r, s in enumerate(seeds):
        one = build_network(spec, seed=s)
        for (name, a), (_, b) in zip(stack.stacked_tensors(), one.stacked_tensors()):
            assert torch.equal(a[r], b[0]), name
        assert torch.equal(stack.select(r).projection, one.projection)
        one.eval()
        torch.testing.assert_close(out[r], one(x), rtol=1e-13, atol=1e-14)
    assert torch.equal(stack.take([0, 2]).projection[0], stack.take([0, 2]).projection[1])
    same = build_network(spec, seeds=[3, 3])  # one seed: the projection is shared, as with runs=2
    assert same.projection.shape == (3, 12) and torch.equal(same.projection, build_network(spec, 3).projection)


def test_seeds_are_checked_in_one_line():
    spec = ArchSpec(depth=3, width=5, d_in=2, d_out=2)
    for bad in ([], [-1], [1.5], "12", 3):
        with pytest.raises(SpecError, match=r"^build_network\.seeds = "):
            build_network(spec, seeds=bad)
    with pytest.raises(SpecError, match=r"^build_network\.runs = 3: must be 1 or len\(seeds\) = 2"):
        build_network(spec, runs=3, seeds=[1, 2])


# -- bias initializations (ArchSpec.bias_init, householder_bias) ---------------------------------------------


@pytest.mark.parametrize(
    "bias_init, law",
    [
        ("gaussian", lambda fan_in: stats.norm(0.0, math.sqrt(0.05))),  # appendix C
        ("normal", lambda fan_in: stats.norm(0.0, 1.0)),  # the variability paper, B.1
        ("uniform_fan_in", lambda fan_in: stats.uniform(-1 / math.sqrt(fan_in), 2 / math.sqrt(fan_in))),  # nn.Linear
    ],
)
def test_biases_follow_their_stated_distribution(bias_init, law):
    """A Kolmogorov-Smirnov test of each layer's 2,000 or 1,000 biases (seeded: the same p-values every time)
    against the stated law, which accepts them, and against the other laws, which reject them."""
    spec = ArchSpec(depth=2, width=2000, d_in=10, d_out=1000, bias_init=bias_init, init="kaiming")
    net = build_network(spec, seed=1)
    others = {"gaussian": stats.norm(0.0, math.sqrt(0.05)), "normal": stats.norm(0.0, 1.0)}
    for layer, m in zip(spec.layers(), net.linears):
        b = m.bias.detach()[0].numpy()
        assert stats.kstest(b, law(layer.fan_in).cdf).pvalue > 0.01
        for name, other in others.items():
            if name != bias_init:
                assert stats.kstest(b, other.cdf).pvalue < 1e-6, name
        assert (
            stats.kstest(b, stats.uniform(-2 / math.sqrt(layer.fan_in), 4 / math.sqrt(layer.fan_in)).cdf).pvalue < 1e-6
        )
    # the weights: Kaiming's, untouched by the bias init unless appendix C's sqrt(0.95) applies ("gaussian")
    factor = math.sqrt(0.95) if bias_init == "gaussian" else 1.0
    for w, ref in zip(_weights(spec, seed=1), _weights(spec.replace(bias_init="zero"), seed=1)):
        np.testing.assert_allclose(w, ref * factor, rtol=1e-15, atol=0)


def test_bias_draws_share_the_layers_generator_and_scale_with_the_net():
    spec = ArchSpec(depth=4, width=20, d_in=5, d_out=3, bias_init="normal", init_scale=1.1)
    for layer, b_normal, b_gauss, b_uniform in zip(
        spec.layers(),
        build_network(spec, seed=2).linears,
        build_network(spec.replace(bias_init="gaussian"), seed=2).linears,
        build_network(spec.replace(bias_init="uniform_fan_in", init_scale=1.0), seed=2).linears,
    ):
        z = init_rng(2, layer.index, 1)  # the layer's bias generator
        np.testing.assert_allclose(
            b_normal.bias[0].detach().numpy(), z.standard_normal(layer.fan_out) * 1.1, rtol=1e-15
        )
        np.testing.assert_allclose(
            b_gauss.bias[0].detach().numpy(), b_normal.bias[0].detach().numpy() * math.sqrt(0.05), rtol=1e-14
        )
        bound = 1 / math.sqrt(layer.fan_in)
        np.testing.assert_array_equal(
            b_uniform.bias[0].detach().numpy(), init_rng(2, layer.index, 1).uniform(-bound, bound, layer.fan_out)
        )


def test_householder_layers_take_the_bias_init_or_zero():
    spec = ArchSpec(
        depth=6,
        width=30,
        d_in=2,
        d_out=1,
        activation="abs",
        weights="householder",
        dense_ends=1,
        bias_init="uniform_fan_in",
        scale_activation=False,
    )
    same = build_network(spec, seed=3)
    zero = build_network(spec.replace(householder_bias="zero"), seed=3)
    for layer, a, b in zip(spec.layers(), same.linears, zero.linears):
        if layer.kind == "householder":
            assert 0 < a.bias.abs().max() <= 1 / math.sqrt(30) and not b.bias.any()
            assert torch.equal(a.u, b.u)
        else:  # the dense layers: PyTorch's default bias either way
            assert torch.equal(a.bias, b.bias) and 0 < a.bias.abs().max() <= 1 / math.sqrt(layer.fan_in)
