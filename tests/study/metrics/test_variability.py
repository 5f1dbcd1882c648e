"""Variability (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3) and the calibrated pointwise copy of
batch-statistics networks."""

import math

import pytest
import torch

from archstudy.sampling import ArchSpec, SpecError
from archstudy.study import build_network, frozen_statistics
from archstudy.study.metrics import calibrated, variability
from archstudy.study.metrics.variability import geometric_mean, third_difference_variability


pytestmark = pytest.mark.usefixtures("one_thread")


def gaussian(n, d, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def square_data(n=500, seed=0):
    return torch.rand(n, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2 - 1


def test_third_differences_of_a_cubic_are_exact():
    # f = t1^3 + 2 t2^3 on [-1, 1]^2: d^3f/dt1^3 = 6, d^3f/dt2^3 = 12 everywhere, so V = (36 + 144) / mean f^2.
    grid = 33
    t = torch.linspace(-1, 1, grid, dtype=torch.float64)
    f = t[:, None] ** 3 + 2 * t[None, :] ** 3
    expected = (36.0 + 144.0) / float((f * f).mean())
    assert third_difference_variability(f, h=2 / (grid - 1)) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("d_in,norm", [(2, "none"), (6, "none"), (6, "layer")])
def test_linear_network_has_zero_variability(d_in, norm):
    # f = |A x + b|^2 is quadratic: its third differences vanish up to rounding.
    spec = ArchSpec(depth=4, width=10, d_in=d_in, d_out=3, activation="linear", bias_init="gaussian")
    x = square_data() if d_in == 2 else gaussian(400, d_in)
    assert 0 <= variability(build_network(spec, seed=1), x, grid=33, planes=2) < 1e-16


def test_deep_relu_network_has_positive_variability():
    spec = ArchSpec(depth=12, width=16, d_in=2, d_out=2, activation="relu")
    v = variability(build_network(spec, seed=0), square_data(), grid=33)
    assert math.isfinite(v) and v > 1.0


def test_variability_ignores_the_output_scale():
    spec = ArchSpec(depth=6, width=12, d_in=5, d_out=3, activation="tanh", bias_init="gaussian")
    net = build_network(spec, seed=2)
    x = gaussian(300, 5, seed=3)
    v1 = variability(net, x, grid=17, planes=2, seed=4)
    v2 = variability(lambda z: 1e3 * net(z), x, grid=17, planes=2, seed=4)
    assert v2 == pytest.approx(v1, rel=1e-9)
    assert variability(net, x, grid=17, planes=2, seed=5) != pytest.approx(v1, rel=1e-6)  # another plane


def test_smooth_network_variability_converges_with_the_grid():
    spec = ArchSpec(depth=4, width=12, d_in=2, d_out=2, activation="tanh", bias_init="gaussian")
    net = build_network(spec, seed=3)
    x = square_data()
    assert variability(net, x, grid=129) == pytest.approx(variability(net, x, grid=257), rel=0.01)


def test_variability_of_a_known_function_on_the_data_box():
    # F(x) = (x1^2 / 2, 0) on the data box [-1, 1]^2 (corners included): f = x1^4 / 4, f''' = 6 x1, so
    # V -> integral (6 x1)^2 / integral x1^8 / 16 = (36 / 3) / (1 / 144) = 1728 as the grid refines (the
    # lattice means converge as O(h): -2.3% at 513 points a side, -0.6% at 2049).
    x = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.3, -0.2]], dtype=torch.float64)
    F = lambda z: torch.stack([z[:, 0] ** 2 / 2, torch.zeros_like(z[:, 0])], dim=1)
    assert variability(F, x, grid=2049) == pytest.approx(1728.0, rel=0.01)


def test_calibrated_copy_reproduces_batch_mode_on_one_batch():
    # With the whole data as one minibatch, the measured running statistics are that batch's own, so the
    # evaluation-mode copy computes exactly what batch mode computes (batchnorm and GmP's input mean).
    spec = ArchSpec(depth=4, width=10, d_in=5, d_out=3, norm="batch", param="gmp", bias_init="gaussian")
    net = build_network(spec, seed=0)
    x = gaussian(300, 5, seed=1) + 0.5
    before = {k: v.clone() for k, v in net.state_dict().items()}
    twin = calibrated(net, x, batch_size=300)
    with torch.no_grad(), frozen_statistics(net):
        expected = net(x)
    with torch.no_grad():
        got = twin(x)
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert not twin.training and net.training
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_batchnorm_network_variability_is_that_of_its_calibrated_copy():
    spec = ArchSpec(depth=5, width=12, d_in=3, d_out=2, norm="batch", activation="relu")
    net = build_network(spec, seed=4)
    x = gaussian(600, 3, seed=5)
    v = variability(net, x, grid=17, planes=2)
    assert math.isfinite(v) and v > 0
    assert variability(calibrated(net, x), x, grid=17, planes=2) == pytest.approx(v, rel=1e-12)


def test_geometric_mean_vanishes_with_one_flat_plane():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([2.0, 0.0]) == 0.0
    assert math.isnan(geometric_mean([2.0, math.nan]))


def test_bad_arguments_are_one_line_errors():
    net = build_network(ArchSpec(depth=3, width=4, d_in=2, d_out=2))
    with pytest.raises(SpecError, match=r"variability.grid = 3: must be an integer >= 4"):
        variability(net, square_data(), grid=3)
    one_d = build_network(ArchSpec(depth=3, width=4, d_in=1, d_out=2))
    with pytest.raises(SpecError, match=r"variability.d_in = 1"):
        variability(one_d, gaussian(50, 1))


# -- many parameter samples at once; the C- and G-matrices of Collapse to Constants (variability paper, A.4) -----

from archstudy.study.metrics.variability import (  # noqa: E402
    activation_slopes,
    box_variability,
    c_matrix,
    collapse_norms,
    g_matrix,
    plain_layers,
    secant_slopes,
)


def test_box_variability_of_a_stack_is_each_runs_variability_on_the_box():
    spec = ArchSpec(
        depth=5,
        width=9,
        d_in=2,
        d_out=2,
        activation="abs",
        scale_activation=False,
        init="xavier",
        weights="householder",
    )
    stack = build_network(spec, seeds=[3, 4, 5])
    corners = torch.tensor([[-1.0, -1.0], [1.0, 1.0]], dtype=torch.float64)
    v = box_variability(stack, ((-1, 1), (-1, 1)), grid=17)
    assert v.shape == (3,)
    for r, seed in enumerate([3, 4, 5]):
        assert v[r] == pytest.approx(variability(build_network(spec, seed=seed), corners, grid=17), rel=1e-12)


def test_secant_slopes_follow_eq_14_with_0_over_0_one():
    u = torch.tensor([2.0, -1.0, 3.0, -2.0, 0.5], dtype=torch.float64)
    v = torch.tensor([1.0, -3.0, -1.0, -2.0, 0.5], dtype=torch.float64)
    assert secant_slopes(torch.relu, u, v).tolist() == [1.0, 0.0, 0.75, 1.0, 1.0]
    assert secant_slopes(torch.abs, u, v).tolist() == [1.0, -1.0, 0.5, 1.0, 1.0]
    assert activation_slopes(torch.abs, u).tolist() == [1.0, -1.0, 1.0, -1.0, 1.0]


def _plain(activation, depth=7, width=6, seed=0, weights="dense"):
    spec = ArchSpec(
        depth=depth,
        width=width,
        d_in=width,
        d_out=3,
        activation=activation,
        scale_activation=False,
        init="kaiming",
        bias_init="gaussian",
        weights=weights,
    )
    return build_network(spec, seed=seed)


def _hidden_output(weights, biases, phi, x):
    s = x
    for w, b in zip(weights, biases):
        s = phi(w @ s + b)
    return s


@pytest.mark.parametrize("activation", ["relu", "abs", "tanh"])
def test_proposition_2_the_c_matrix_maps_input_differences_to_output_differences(activation):
    net = _plain(activation, seed=1)
    ws, bs, phi = plain_layers(net)
    x, xt = gaussian(2, 6, seed=7)
    c = c_matrix(ws, bs, phi, x, xt)
    # F_L(x) - F_L(x~) = C_L^T (x - x~): F_L by its own forward pass, and through the network's output layer
    assert torch.allclose(
        _hidden_output(ws, bs, phi, x) - _hidden_output(ws, bs, phi, xt), c.T @ (x - xt), rtol=1e-10, atol=1e-12
    )
    w_out = net.linears[-1].weight[0].detach()
    with torch.no_grad():
        assert torch.allclose(net(x[None])[0] - net(xt[None])[0], w_out @ (c.T @ (x - xt)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("activation", ["relu", "abs", "tanh"])
def test_the_g_matrix_is_the_transposed_jacobian_and_the_limit_of_c_matrices(activation):
    net = _plain(activation, seed=2)
    ws, bs, phi = plain_layers(net)
    x = gaussian(1, 6, seed=8)[0]
    g = g_matrix(ws, bs, phi, x)
    jac = torch.autograd.functional.jacobian(lambda t: _hidden_output(ws, bs, phi, t), x)
    assert torch.allclose(g, jac.T, rtol=1e-10, atol=1e-12)
    if activation == "tanh":  # smooth: C(x, x + e) -> G(x) as e -> 0, at first order
        e = gaussian(1, 6, seed=9)[0]
        errors = [float((c_matrix(ws, bs, phi, x, x + h * e) - g).abs().max()) for h in (1e-3, 1e-4)]
        assert errors[1] < errors[0] / 5 and errors[1] < 1e-3


def test_collapse_norms_are_the_norms_of_the_partial_products_and_a_hannet_g_matrix_is_orthogonal():
    net = _plain("relu", depth=9, seed=3)
    ws, bs, phi = plain_layers(net)
    x, xt = gaussian(2, 6, seed=10)
    out = collapse_norms(ws, bs, phi, x, xt, at=[1, 4, 8])
    assert out["depth"] == [1, 4, 8]
    for i, k in enumerate(out["depth"]):
        assert out["c"][i] == pytest.approx(float(torch.linalg.matrix_norm(c_matrix(ws[:k], bs[:k], phi, x, xt), 2)))
        assert out["g_x_tilde"][i] == pytest.approx(
            float(torch.linalg.matrix_norm(g_matrix(ws[:k], bs[:k], phi, xt), 2))
        )
    # Yu and Zhang, Proposition 1: Householder weights and |.| keep G orthogonal (the input layer aside: here every
    # hidden layer after the first is a reflector, so G_L = W_1^T D_1 times an orthogonal matrix)
    han = _plain("abs", depth=12, width=8, seed=4, weights="householder")
    ws, bs, phi = plain_layers(han)
    x = gaussian(1, 8, seed=11)[0]
    z1 = ws[0] @ x + bs[0]
    tail = g_matrix(ws[1:], bs[1:], phi, phi(z1))
    assert torch.allclose(tail @ tail.T, torch.eye(8, dtype=torch.float64), atol=1e-12)
    with pytest.raises(ValueError, match="plain networks"):
        plain_layers(build_network(ArchSpec(depth=3, width=4, d_in=4, d_out=2, norm="batch"), seed=0))
