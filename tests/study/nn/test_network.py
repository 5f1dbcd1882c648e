"""The float64 builder against an independent numpy reference of the NLC paper's appendix C, the Householder
layers of Yu and Zhang, the GmP of Chen and Ge and the shortcuts of Demystifying ResNet, and its invariants."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from archstudy.sampling import ArchSpec, sample_specs
from archstudy.study import build_network, frozen_statistics, output_scale
from archstudy.study.nn.network import minibatches
from archstudy.study.nn.gmp import angles_from_direction, direction_from_angles

from references import unit_from_angles

EPS = 1e-5


# ---------------------------------------------------------------- an independent reference forward, in numpy
def reference_forward(spec: ArchSpec, net, x: np.ndarray) -> np.ndarray:
    """Appendix C read literally: layer = linear -> [norm] -> activation, skips h_{l+k} += strength * start."""
    L, k = spec.depth, spec.skip_length
    starts = list(range(1, L, k)) if spec.skip != "none" else []
    ends = {s + k: s for s in starts}
    act = net.act
    h, carried = x, None
    for layer in range(1, L + 1):
        mod = net.linears[layer - 1]
        p = {n: t.detach().numpy()[0] for n, t in mod.named_parameters()}
        if "u" in p:  # Householder: H = I - 2 u u^T / |u|^2, formed explicitly here
            u = p["u"]
            H = np.eye(len(u)) - 2 * np.outer(u, u) / (u @ u)
            z = h @ H.T + p["bias"]
        elif "theta" in p:  # GmP: u(theta)^T (x - E[x]) + lambda, the mean subtracted on intermediate layers
            U = unit_from_angles(p["theta"])
            xc = h - h.mean(axis=0, keepdims=True) if layer > 1 else h
            z = xc @ U.T + p["lam"]
        else:
            z = h @ p["weight"].T + p["bias"]
        if layer in ends:
            z = z + spec.skip_strength * (carried if layer < L else carried @ net.projection.numpy().T)
        if layer in starts and spec.skip == "after_linear":
            carried = z
        if layer < L and spec.norm == "batch":
            z = (z - z.mean(0)) / np.sqrt(z.var(0) + EPS)
        elif layer < L and spec.norm == "layer":
            z = (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True) + EPS)
        if layer in starts and spec.skip == "after_norm":
            carried = z
        if layer == L:
            return z
        h = act(torch.from_numpy(z)).numpy()
        if "theta" in p:
            h = h * p["r"]
    raise AssertionError("unreachable")


def _tame_specs():
    """Specs of every kind at small depth, with tame activations so round-off is not amplified chaotically."""
    out = []
    combos = itertools.product(
        ["none", "batch", "layer"],
        ["none", "after_linear", "after_norm"],
        ["dense", "householder"],
        ["sp", "gmp"],
        [1, 2, 3],
    )
    for norm, skip, weights, param, k in combos:
        if skip == "none" and k != 2 or skip == "after_norm" and norm == "none":
            continue
        depth = 7 if skip == "none" or 6 % k == 0 else 4
        out.append(
            ArchSpec(
                depth=depth,
                width=12,
                d_in=5,
                d_out=3,
                activation="tanh",
                dilation=1.2,
                shift=0.2,
                debias=True,
                norm=norm,
                skip=skip,
                skip_strength=0.7 if skip != "none" else 1.0,
                skip_length=k if skip != "none" else 2,
                weights=weights,
                param=param,
                bias_init="gaussian",
                init_scale=1.1,
            )
        )
    return out


@pytest.mark.parametrize("spec", _tame_specs(), ids=lambda s: f"{s.norm}-{s.skip}{s.skip_length}-{s.weights}-{s.param}")
def test_forward_matches_the_independent_reference(spec):
    net = build_network(spec, seed=3)
    x = np.random.default_rng(0).standard_normal((64, spec.d_in))
    with frozen_statistics(net):
        y = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(y, reference_forward(spec, net, x), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- counts and dtypes
@pytest.mark.parametrize("spec", sample_specs(40, 8, 20, 4, "extended", param_budget=3000), ids=lambda s: s.content_id)
def test_trainable_count_equals_spec_and_everything_is_float64(spec):
    net = build_network(spec, seed=1, runs=2)
    assert sum(p.numel() for p in net.parameters() if p.requires_grad) == 2 * spec.num_params
    assert all(t.dtype == torch.float64 for t in itertools.chain(net.parameters(), net.buffers()))
    out = net(torch.randn(10, spec.d_in, dtype=torch.float64))
    assert out.dtype == torch.float64 and out.shape == (2, 10, spec.d_out)
    single = net.select(1)
    assert single(torch.randn(10, spec.d_in, dtype=torch.float64)).shape == (10, spec.d_out)
    assert set(net.param_roles()) == {n for n, _ in net.named_parameters()}


def test_stacked_copies_equal_separate_networks_and_take_reorders():
    spec = ArchSpec(
        depth=5, width=30, d_in=6, d_out=3, activation="relu", norm="batch", skip="after_norm", bias_init="gaussian"
    )
    stack = build_network(spec, seed=5, runs=4)
    with torch.no_grad():  # make the copies differ, as training would
        for _i, p in enumerate(stack.parameters()):
            p.add_(0.01 * torch.randn_like(p))
    x = torch.randn(50, 6, dtype=torch.float64)
    with frozen_statistics(stack):
        y = stack(x)
        per_run = stack(x.expand(4, 50, 6).clone())
        for k in range(4):
            one = stack.select(k)
            assert torch.allclose(one(x), y[k], rtol=0, atol=1e-12)
        sub = stack.take([3, 1])
        assert torch.allclose(sub(x), y[[3, 1]], rtol=0, atol=1e-12)
    assert torch.allclose(per_run, y, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- initialization facts of appendix C
def _w(net, layer):
    return net.linears[layer - 1].weight.detach()[0]


def test_orthogonal_submatrices_with_the_forward_multiplier():
    spec = ArchSpec(depth=4, width=100, d_in=40, d_out=3)
    net = build_network(spec, seed=0)
    w1, w2, w4 = _w(net, 1), _w(net, 2), _w(net, 4)
    eye = lambda n: torch.eye(n, dtype=torch.float64)  # noqa: E731
    assert torch.allclose(w1.T @ w1, (100 / 40) * eye(40), atol=1e-12)  # columns orthonormal, times sqrt(100/40)
    assert torch.allclose(w2 @ w2.T, eye(100), atol=1e-12)
    assert torch.allclose(w4 @ w4.T, eye(3), atol=1e-12)  # multiplier max(1, sqrt(3/100)) = 1
    assert all(float(net.linears[i].bias.detach().abs().max()) == 0.0 for i in range(4))


def test_gaussian_bias_scales_weights_by_sqrt_095_and_has_variance_005():
    spec = ArchSpec(depth=12, width=200, d_in=40, d_out=3, bias_init="gaussian")
    net = build_network(spec, seed=2)
    w = _w(net, 3)
    assert torch.allclose(w @ w.T, 0.95 * torch.eye(200, dtype=torch.float64), atol=1e-12)
    b = torch.cat([net.linears[i].bias.detach()[0] for i in range(11)])
    assert abs(float(b.var()) - 0.05) < 0.006 and abs(float(b.mean())) < 0.02


def test_joint_scale_and_near_zero_branches_multiply_the_same_draws():
    base = ArchSpec(depth=5, width=20, d_in=4, d_out=3, norm="layer", skip="after_linear", bias_init="gaussian")
    ref = build_network(base, seed=9)
    scaled = build_network(base.replace(init_scale=1.1), seed=9)
    branch = build_network(base.replace(branch_scale=0.01), seed=9)
    for layer in range(1, 6):
        for name in ("weight", "bias"):
            r = getattr(ref.linears[layer - 1], name).detach()
            assert torch.allclose(getattr(scaled.linears[layer - 1], name).detach(), 1.1 * r, rtol=1e-15, atol=0)
            factor = 1.0 if layer == 1 else 0.01  # every layer after the first is inside a residual branch
            assert torch.allclose(getattr(branch.linears[layer - 1], name).detach(), factor * r, rtol=1e-15, atol=0)
    p = ref.projection
    assert torch.allclose(p @ p.T, torch.eye(3, dtype=torch.float64), atol=1e-12)


def test_householder_layer_is_an_orthogonal_reflector():
    spec = ArchSpec(depth=4, width=50, d_in=10, d_out=3, weights="householder", bias_init="gaussian", init_scale=0.9)
    net = build_network(spec, seed=4, runs=2)
    layer = net.linears[1]
    H = layer.matrix()
    u = layer.u.detach()
    eye = torch.eye(50, dtype=torch.float64)
    for r in range(2):
        explicit = eye - 2 * torch.outer(u[r], u[r]) / (u[r] @ u[r])
        assert torch.allclose(H[r], explicit, atol=1e-14)
        assert torch.allclose(H[r] @ H[r].T, eye, atol=1e-13) and torch.allclose(H[r], H[r].T)
    x = torch.randn(2, 7, 50, dtype=torch.float64)
    y = layer(x) - layer.bias.unsqueeze(1)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-13)
    # weight-scale factors never touch the reflector (it is orthogonal by construction), only the bias
    plain = build_network(spec.replace(bias_init="zero", init_scale=1.0), seed=4)
    assert torch.equal(plain.linears[1].u.detach()[0], u[0])


def test_gmp_twin_of_a_one_hidden_layer_relu_net_computes_the_same_function():
    sp = ArchSpec(depth=2, width=64, d_in=7, d_out=3, activation="relu", bias_init="gaussian", init_scale=1.1)
    a, b = build_network(sp, seed=11), build_network(sp.replace(param="gmp"), seed=11)
    x = torch.randn(100, 7, dtype=torch.float64)
    assert torch.allclose(a(x), b(x), rtol=1e-12, atol=1e-13)
    w = a.linears[0].weight.detach()[0]
    g = b.linears[0]
    assert torch.allclose(g.r.detach()[0], w.norm(dim=1), rtol=1e-14)
    assert torch.allclose(g.direction().detach()[0], w / w.norm(dim=1, keepdim=True), atol=1e-14)


def test_gmp_initial_directions_are_uniform_on_the_sphere():
    n = 8
    net = build_network(ArchSpec(depth=2, width=3000, d_in=n, d_out=2, param="gmp"), seed=0)
    u = net.linears[0].direction().detach()[0].numpy()
    assert np.allclose(np.linalg.norm(u, axis=1), 1.0, atol=1e-14)
    # every coordinate of a uniform unit vector has u_k^2 ~ Beta(1/2, (n-1)/2): the first and the last alike.
    # (Uniform angles would instead pile the last coordinates near 0.)
    assert stats.ks_2samp(u[:, 0], u[:, -1]).pvalue > 1e-3
    for k in (0, n // 2, n - 1):
        assert stats.kstest(u[:, k] ** 2, stats.beta(0.5, (n - 1) / 2).cdf).pvalue > 1e-3
    uniform_angles = np.random.default_rng(0).uniform(0, np.pi, (3000, n - 1))
    assert stats.kstest(unit_from_angles(uniform_angles)[:, -1] ** 2, stats.beta(0.5, (n - 1) / 2).cdf).pvalue < 1e-6


def test_angles_round_trip():
    u = torch.randn(200, 9, dtype=torch.float64)
    u = u / u.norm(dim=1, keepdim=True)
    assert torch.allclose(direction_from_angles(angles_from_direction(u)), u, atol=1e-14)
    assert torch.allclose(
        direction_from_angles(angles_from_direction(u[:, :2])),
        u[:, :2] / u[:, :2].norm(dim=1, keepdim=True),
        atol=1e-14,
    )


# ---------------------------------------------------------------- statistics and the output scale
def test_output_scale_is_the_quadratic_mean_and_leaves_statistics_alone():
    spec = ArchSpec(depth=3, width=20, d_in=5, d_out=3, norm="batch", activation="selu")
    net = build_network(spec, seed=1)
    x = torch.randn(600, 5, dtype=torch.float64)
    before = [b.clone() for b in net.buffers()]
    net.eval()
    c = output_scale(net, x)
    assert all(torch.equal(a, b) for a, b in zip(before, net.buffers())) and not net.training
    with frozen_statistics(net), torch.no_grad():
        f = torch.cat([net(x[r]) for r in minibatches(600, 250)])
    assert math.isclose(c, float(torch.sqrt((f * f).mean())), rel_tol=1e-13)
    stack = build_network(spec, seed=1, runs=3)
    cs = output_scale(stack, x)
    assert cs.shape == (3,) and torch.allclose(cs, torch.full((3,), c, dtype=torch.float64), rtol=1e-12)


def test_training_mode_updates_running_statistics_and_eval_uses_them():
    spec = ArchSpec(depth=3, width=16, d_in=4, d_out=2, norm="batch", param="gmp")
    net = build_network(spec, seed=0)
    x = 3.0 + torch.randn(200, 4, dtype=torch.float64)
    net.train()
    with torch.no_grad():
        for _ in range(200):  # momentum 0.1: the initial statistics decay as 0.9^200
            net(x)
        s1 = net.linears[0](x)[0]  # the first norm's input (parameters unchanged by forward passes)
        bn = net.norms[0]
        assert torch.allclose(bn.running_mean[0], s1.mean(0), atol=1e-8)
        assert torch.allclose(bn.running_var[0], s1.var(0, unbiased=True), rtol=1e-8)  # torch's convention
        net.eval()
        y_eval = net(x)
        with frozen_statistics(net):
            y_batch = net(x)
    assert net.training is False
    # evaluation uses the running statistics: close to the batch statistics, not equal (unbiased variance)
    assert torch.allclose(y_eval, y_batch, atol=0.05) and not torch.allclose(y_eval, y_batch, atol=1e-6)


def test_output_scale_on_a_batchnorm_net_whose_last_minibatch_would_hold_one_example():
    spec = ArchSpec(depth=3, width=8, d_in=3, d_out=2, norm="batch")
    net = build_network(spec, seed=0)
    x = torch.randn(501, 3, dtype=torch.float64)  # 250 + 250 + 1: the single row joins the batch before it
    c = output_scale(net, x)
    order = torch.cat(minibatches(501, 250))
    with frozen_statistics(net), torch.no_grad():
        f = torch.cat([net(x[order[:250]]), net(x[order[250:]])])
    assert math.isclose(c, float(torch.sqrt((f * f).mean())), rel_tol=1e-13)


def test_frozen_statistics_also_freezes_torchs_own_batchnorm():
    """The metrics take any module: torch's nn.BatchNorm1d runs on batch statistics inside and its running
    buffers (and counter) come out unchanged, its mode and flag restored."""
    net = (
        torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
        .double()
        .eval()
    )
    bn = net[1]
    before = [b.clone() for b in bn.buffers()]
    x = 5.0 + torch.randn(300, 4, dtype=torch.float64)
    with frozen_statistics(net), torch.no_grad():
        h = net[:2](x)
    assert torch.allclose(
        h.mean(0), torch.zeros(6, dtype=torch.float64), atol=1e-12
    )  # batch statistics, not the (0, 1) buffers
    assert all(torch.equal(a, b) for a, b in zip(before, bn.buffers()))
    assert bn.track_running_stats and not net.training
    c = output_scale(net, x)
    assert all(torch.equal(a, b) for a, b in zip(before, bn.buffers())) and c > 0


def test_gmp_cumulative_product_has_torchs_gradient_without_asking_the_host():
    """``study.nn.gmp._Cumprod``: torch's gradient of ``cumprod`` exactly where no factor is zero (the same
    operations), to round-off with zeros (one, several, a whole row; torch then uses another formula);
    and double-differentiable. Its backward asks the host nothing (checked on a GPU by the ``cuda`` tests:
    torch's own asks whether a factor is zero)."""
    from archstudy.study.nn.gmp import _Cumprod

    g = torch.Generator().manual_seed(0)
    for trial in range(40):
        x = torch.randn(4, 3, 9, generator=g, dtype=torch.float64)
        if trial % 2:
            x = torch.where(torch.rand(x.shape, generator=g) < 0.25, torch.zeros_like(x), x)
            x[0, 0] = 0.0
        w = torch.randn(x.shape, generator=g, dtype=torch.float64)
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        (torch.cumprod(a, -1) * w).sum().backward()
        (_Cumprod.apply(b) * w).sum().backward()
        if trial % 2:
            assert torch.allclose(a.grad, b.grad, rtol=1e-12, atol=1e-12)
        else:
            assert torch.equal(a.grad, b.grad)
    x = torch.randn(2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(_Cumprod.apply, (x,))


def test_the_folded_forwards_constants_are_made_once_and_are_no_state():
    """The affine weight a folded forward hands each batchnorm (relu's scale c, a homogeneous tau) is made on its
    first call and kept, outside the state: the state dict and the stacked tensors hold what they held."""
    spec = ArchSpec(depth=4, width=6, d_in=5, d_out=3, activation="relu", norm="batch")
    net = build_network(spec, seed=0, runs=3)
    keys, names = list(net.state_dict()), [n for n, _ in net.stacked_tensors()]
    x = torch.randn(20, spec.d_in, dtype=torch.float64)
    net.propagate(x, fold=True)
    made = [list(norm.constants.values()) for norm in net.norms[:-1]]
    c = net.act.constants[0]
    assert all(len(m) == 1 and torch.equal(m[0], torch.full((3 * 6,), c, dtype=torch.float64)) for m in made)
    net.propagate(x, fold=True)
    assert all(len(n.constants) == 1 for n in net.norms[:-1])  # the same tensors, kept
    assert all(a is b for m, n in zip(made, net.norms) for a, b in zip(m, n.constants.values()))
    assert list(net.state_dict()) == keys and [n for n, _ in net.stacked_tensors()] == names
