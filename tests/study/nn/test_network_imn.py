"""Input mean normalization apart from the parameterization, and the GmP initialization of Chen and Ge's section
4.3: a GmP net without IMN is its SP twin's function at init, specs from before compute what they computed, an
SP layer with IMN is the formula, the trainer's folded forward agrees, uniform angles are uniform."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from archstudy.sampling import ArchSpec, siblings
from archstudy.study import build_network
from archstudy.study.nn.gmp import direction_from_angles
from archstudy.study.training.stack import folded_forward

X = torch.linspace(-2, 2, 40, dtype=torch.float64).reshape(10, 4)

# Outputs of the code before ``imn`` and ``gmp_init`` existed (seed 5, the inputs X): the sum of a training-mode
# forward, then of an evaluation-mode forward with the running statistics that forward left, recorded bit for bit.
# They are compared to 1e-12 relative: the orthogonal init is a QR factorization whose last bits depend on the
# LAPACK that numpy ships (numpy 2.4's gives other round-off than the one these were recorded with), while a
# change of function moves the sums by far more.
OLD_OUTPUTS = [
    (
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="relu", param="gmp", bias_init="gaussian"),
        "-0x1.915c4db52d64ep+2",
        "-0x1.9c99f58b05a09p+4",
    ),
    (
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="tanh", param="gmp", norm="batch", skip="after_linear"),
        "0x1.f736d73139a4cp-2",
        "0x1.642165cc409bdp-1",
    ),
    (
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="selu", param="sp", norm="layer"),
        "-0x1.2d5c3cc3ee7abp+2",
        "-0x1.2d5c3cc3ee7abp+2",
    ),
]


@pytest.mark.parametrize("spec, train_sum, eval_sum", OLD_OUTPUTS, ids=[s.content_id for s, _, _ in OLD_OUTPUTS])
@torch.no_grad()
def test_specs_from_before_compute_what_they_computed(spec, train_sum, eval_sum):
    net = build_network(spec, seed=5)
    net.train()
    assert float(net(X).sum()) == pytest.approx(float.fromhex(train_sum), rel=1e-12, abs=0)
    net.eval()
    assert float(net(X).sum()) == pytest.approx(float.fromhex(eval_sum), rel=1e-12, abs=0)


SHAPES = [
    dict(depth=6, width=9, d_in=5, d_out=3),
    dict(depth=3, width=20, d_in=7, d_out=2),
    dict(depth=9, width=6, d_in=3, d_out=4),
]


@pytest.mark.parametrize("activation", ["relu", "abs"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"d{s['depth']}w{s['width']}")
@pytest.mark.parametrize(
    "other",
    [
        dict(),
        dict(bias_init="gaussian", init_scale=1.1, dilation=1.2),
        dict(init="kaiming"),
        dict(init="xavier", bias_init="gaussian"),
    ],
    ids=["plain", "gaussian-bias", "kaiming", "xavier"],
)
@torch.no_grad()
def test_a_gmp_sibling_without_imn_is_its_sp_twin_at_init(activation, shape, other):
    """r tau(u^T x + lambda) = tau(w^T x + b) for w = r u, b = r lambda and a positively homogeneous tau
    (Chen and Ge, section 4.3's invariance): the same outputs, in training and in evaluation mode."""
    sp = ArchSpec(activation=activation, imn="off", **shape, **other)
    (gmp,) = siblings(sp, "param")
    assert (gmp.param, gmp.imn, gmp.gmp_init) == ("gmp", "off", "from_sp")
    x = torch.randn(60, shape["d_in"], dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    a, b = build_network(sp, 11), build_network(gmp, 11)
    for mode in (True, False):
        a.train(mode), b.train(mode)
        fa, fb = a(x), b(x)
        assert torch.allclose(fa, fb, rtol=1e-12, atol=1e-12 * float(fa.abs().max()))
    # with IMN (auto: as the GmP of every earlier study) the function differs
    assert not torch.allclose(build_network(gmp.replace(imn="auto"), 11)(x), a(x), atol=1e-6)


@torch.no_grad()
def test_an_sp_layer_with_imn_subtracts_the_batch_mean_and_then_the_running_mean():
    spec = ArchSpec(depth=4, width=6, d_in=3, d_out=2, activation="tanh", imn="on", bias_init="gaussian")
    net = build_network(spec, 2)
    x = torch.randn(30, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    act = net.activation

    def reference(means):
        h = x
        for k, layer in enumerate(net.linears, start=1):
            inp = h - means[k] if k in means else h
            s = inp @ layer.weight[0].T + layer.bias[0]
            h = s if k == spec.depth else act(s)
        return h

    seen = {}
    hooks = [
        net.linears[k - 1].register_forward_pre_hook(lambda m, a, k=k: seen.__setitem__(k, a[0][0].mean(0)))
        for k in (2, 3)
    ]
    net.train()
    out = net(x)
    for h in hooks:
        h.remove()
    assert (
        set(seen) == {2, 3}
        and not hasattr(net.linears[0], "running_mean")
        and not hasattr(net.linears[3], "running_mean")
    )
    assert torch.allclose(out, reference(seen), rtol=1e-13, atol=1e-13)
    running = {k: 0.1 * seen[k] for k in (2, 3)}  # momentum 0.1 from zero
    for k in (2, 3):
        assert torch.allclose(net.linears[k - 1].running_mean[0], running[k], rtol=1e-14, atol=1e-15)
    net.eval()
    assert torch.allclose(net(x), reference(running), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "spec",
    [
        ArchSpec(depth=5, width=7, d_in=4, d_out=3, activation="relu", norm="batch", imn="on"),
        ArchSpec(depth=5, width=7, d_in=4, d_out=3, activation="selu", norm="layer", imn="on", bias_init="gaussian"),
        ArchSpec(depth=5, width=7, d_in=4, d_out=3, activation="abs", norm="batch", imn="on", skip="after_norm"),
        ArchSpec(depth=5, width=7, d_in=4, d_out=3, activation="relu", norm="batch", param="gmp", imn="off"),
    ],
    ids=lambda s: s.content_id,
)
def test_the_trainers_folded_forward_equals_the_reference_with_imn(spec):
    x = torch.randn(3, 25, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    a, b = build_network(spec, 1, runs=3), build_network(spec, 1, runs=3)
    a.train(), b.train()
    ref, got = a(x), folded_forward(b, x)
    assert torch.allclose(ref, got, rtol=1e-11, atol=1e-12)
    for (name, ta), (_, tb) in zip(a.named_buffers(), b.named_buffers()):
        assert torch.allclose(ta, tb, rtol=1e-12, atol=1e-14), name


def test_uniform_gmp_init_is_chen_and_ges_section_4_3():
    spec = ArchSpec(
        depth=4,
        width=120,
        d_in=60,
        d_out=3,
        param="gmp",
        gmp_init="uniform",
        init_scale=0.9,
        skip="after_linear",
        skip_length=1,
        branch_scale=0.5,
        bias_init="gaussian",
    )
    net = build_network(spec, 3)
    again = build_network(spec, 3)
    for layer, module, other in zip(spec.layers(), net.linears, again.linears):
        if layer.kind != "gmp":
            continue
        theta, lam, r = module.theta.detach()[0], module.lam.detach()[0], module.r.detach()[0]
        assert torch.equal(theta, other.theta.detach()[0])  # seeded
        assert torch.all(lam == 0)
        assert torch.all(r == 0.9 * (0.5 if layer.in_branch else 1.0))
        head, last = theta[:, :-1].flatten().numpy(), theta[:, -1].numpy()
        assert head.min() >= 0 and head.max() <= math.pi and last.min() >= -math.pi and last.max() <= math.pi
        assert stats.kstest(head / math.pi, "uniform").pvalue > 1e-3
        assert stats.kstest((last + math.pi) / (2 * math.pi), "uniform").pvalue > 1e-3
        # uniform angles are not a uniform direction: |u_1| averages 2/pi, not about sqrt(2 / (pi n))
        u1 = direction_from_angles(theta)[:, 0].abs().mean().item()
        assert abs(u1 - 2 / math.pi) < 0.1 and 2 / math.pi > 5 * math.sqrt(2 / (math.pi * layer.fan_in))
    from_sp = build_network(spec.replace(gmp_init="from_sp"), 3)
    u1_sp = direction_from_angles(from_sp.linears[1].theta.detach()[0])[:, 0].abs().mean().item()
    assert u1_sp < 0.25  # a Haar-random frame's rows: |u_1| about sqrt(2 / (pi 120)) = 0.073
    assert np.isclose(float(from_sp.linears[1].r.detach()[0].mean()), 0.9 * 0.5 * math.sqrt(0.95), rtol=0.05)
