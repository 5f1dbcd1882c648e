"""Linearly approximable regions (NLC paper E.1) and error-preserving perturbations (E.3) on tiny cases."""

import math

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import build_network, frozen_statistics
from archstudy.study.metrics import error_perturbation, lar_diameter, nlc
from archstudy.study.metrics.regions import (
    K_MAX,
    displacement,
    input_diameter,
    error_path_k,
    jacobian_vector_product,
    k_ladder,
    linear_region_k,
)


pytestmark = pytest.mark.usefixtures("one_thread")


def test_k_ladder_is_the_papers_geometric_series():
    ks = k_ladder()
    assert ks[0] == 1e-9
    assert np.allclose(ks[1:] / ks[:-1], 10**0.1, rtol=1e-12)
    assert ks[-1] == pytest.approx(K_MAX, rel=1e-12) and len(ks) == 121


def test_displacement_moves_each_input_by_k_diameters_in_quadratic_mean():
    u = torch.randn(250, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    d = displacement(u, diameter=1.5)
    assert float(torch.sqrt((d * d).sum(dim=1).mean())) == pytest.approx(1.5, rel=1e-12)


def test_input_diameter_is_the_quadratic_mean_distance_of_two_data_points():
    """Section 3's proxy Q_{x,x'}|x - x'|, against all pairs of a small anisotropic sample."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(300, 5, generator=g, dtype=torch.float64) * torch.tensor([1.0, 2, 3, 0.5, 7], dtype=torch.float64)
    pairs = torch.cdist(x, x) ** 2  # i = j pairs are 0, as in the biased variance
    assert input_diameter(x) == pytest.approx(float(pairs.mean().sqrt()), rel=1e-12)


def test_relative_diameter_times_nlc_does_not_grow_with_the_input_dimension():
    """Section 3: relative diameter ~ 1/NLC whatever d_in. With E.1's printed 2 Q_i S x(i) as the diameter
    the product grows like sqrt(d_in) (measured 0.23 at d_in = 2, 4.1 at 160)."""
    products = []
    for d_in in (2, 32):
        spec = ArchSpec(depth=4, width=32, d_in=d_in, d_out=4, norm="batch", activation="tanh")
        net = build_network(spec, seed=0)
        x = torch.randn(500, d_in, generator=torch.Generator().manual_seed(d_in), dtype=torch.float64)
        products.append(lar_diameter(net, x, batches=2, directions=2) * nlc(net, x, batches=10))
    assert 0.1 < products[0] < 1.0 and 0.1 < products[1] < 1.0
    assert 0.5 < products[1] / products[0] < 2.0  # measured 0.72; x sqrt(32 / 2) = 2.9 with 2 Q_i S x(i)


@pytest.mark.parametrize(
    "kw",
    [
        dict(norm="batch", activation="tanh"),
        dict(param="gmp", norm="layer"),
        dict(weights="householder", activation="abs"),
    ],
)
def test_jacobian_vector_product_matches_central_differences(kw):
    net = build_network(ArchSpec(**{**dict(depth=4, width=8, d_in=3, d_out=2, bias_init="gaussian"), **kw}), seed=1)
    g = torch.Generator().manual_seed(0)
    x, d = (torch.randn(12, 3, generator=g, dtype=torch.float64) for _ in range(2))
    with frozen_statistics(net):
        jd = jacobian_vector_product(net, x, d)
        with torch.no_grad():
            fd = (net(x + 1e-6 * d) - net(x - 1e-6 * d)) / 2e-6
    assert torch.allclose(jd, fd, rtol=1e-6, atol=1e-8)


def test_linear_region_of_a_parabola_by_hand():
    # f(x) = x^2 at x0 = 0.5, moving by k: Jacobian change 2 x0 k, actual 2 x0 k + k^2; their ratio
    # 2 x0 / (2 x0 + k) >= 1/2 while k <= 2 x0 = 1 (and <= 2 always for k > 0). For the opposite output
    # direction v = -1 the ratio is the same. So the answer is the largest ladder k <= 1, i.e. k = 1.
    f = lambda x: x * x
    x = torch.tensor([[0.5]], dtype=torch.float64)
    d = torch.tensor([[1.0]], dtype=torch.float64)
    v = torch.tensor([[[1.0]], [[-1.0]]], dtype=torch.float64)
    ks = k_ladder(1e-3, 1e2)
    got = linear_region_k(f, x, f(x), d, v, ks)
    expected = ks[ks <= 1.0 + 1e-12].max()
    assert got.tolist() == pytest.approx([expected, expected], rel=1e-12)
    # moving towards the vertex: ratio 2 x0 / (2 x0 - k) <= 2 while k <= x0 = 0.5
    got = linear_region_k(f, x, f(x), -d, v, ks)
    assert got[0] == pytest.approx(ks[ks <= 0.5].max(), rel=1e-12)


def test_linear_network_has_maximal_linear_region():
    spec = ArchSpec(depth=3, width=8, d_in=4, d_out=3, activation="linear", bias_init="gaussian")
    x = torch.randn(300, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert lar_diameter(build_network(spec, seed=0), x, batches=2, directions=2, k_max=10.0) == pytest.approx(10.0)


def test_linear_region_is_about_the_inverse_nlc():
    # Section 3 / figure 1: the relative diameter of the linearly approximable region ~ 1 / NLC.
    spec = ArchSpec(depth=6, width=20, d_in=5, d_out=3, activation="tanh", norm="batch")
    net = build_network(spec, seed=0)
    x = torch.randn(500, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    value = lar_diameter(net, x, batches=2, directions=3)
    inverse_nlc = 1 / nlc(net, x, batches=10)
    assert inverse_nlc / 10 < value < inverse_nlc * 10


def test_error_path_of_a_threshold_classifier_by_hand():
    # Two classes by the sign of x: f(x) = (x, -x); class 0 wins for x > 0. Points at 1, 2, 3, 4 (class 0)
    # move left by k: a point at p is misclassified once k > p. Error at X is 0; the path error
    # exceeds 0 + 0.05 as soon as one point flips, i.e. at the first ladder k > 1.
    f = lambda x: torch.cat([x, -x], dim=1)
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.int64)
    d = -torch.ones(4, 1, dtype=torch.float64)
    ks = k_ladder(1e-3, 1e2)
    assert error_path_k(f, x, y, d, ks) == pytest.approx(ks[ks <= 1.0 + 1e-12].max(), rel=1e-12)
    # with 30% tolerated, the first flip (25%) is allowed and the second (50%) is not: k = 2
    assert error_path_k(f, x, y, d, ks, tolerance=0.3) == pytest.approx(ks[ks <= 2.0 + 1e-12].max(), rel=1e-12)


def test_error_on_the_path_counts_a_point_wrong_anywhere_on_it():
    # f(x) = (cos x, 0.5): class 0 while cos x > 0.5, i.e. |x| < pi/3. A point at 0 moved by k stays
    # class 0 until k > pi/3; class 1 on (pi/3, 5 pi/3) and class 0 again after: once wrong, it stays wrong.
    f = lambda x: torch.cat([torch.cos(x), torch.full_like(x, 0.5)], dim=1)
    x = torch.zeros(1, 1, dtype=torch.float64)
    y = torch.zeros(1, dtype=torch.int64)
    ks = k_ladder(1e-3, 1e2)
    assert error_path_k(f, x, y, torch.ones(1, 1, dtype=torch.float64), ks) == pytest.approx(
        ks[ks <= math.pi / 3].max(), rel=1e-12
    )


def test_error_perturbation_is_finite_and_positive_for_a_small_net():
    spec = ArchSpec(depth=3, width=10, d_in=4, d_out=3, activation="relu")
    g = torch.Generator().manual_seed(3)
    x = torch.randn(300, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (300,), generator=g)
    value = error_perturbation(build_network(spec, seed=0), x, y, batches=2, directions=2)
    assert 0 < value < K_MAX


def test_non_finite_network_gives_nan():
    f = lambda x: x * math.inf
    x = torch.randn(20, 2, dtype=torch.float64)
    assert math.isnan(lar_diameter(f, x, batches=1, directions=1))
    assert math.isnan(error_perturbation(f, x, torch.zeros(20, dtype=torch.int64), batches=1, directions=1))
