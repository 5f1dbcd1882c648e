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
