"""Activation variants c * tau(d s + t) + b: RMS 1 and debiasing, checked by an independent integrator."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate

from archstudy.sampling import ACTIVATIONS
from archstudy.study.nn.activations import BASES, TAU, Activation
from archstudy.study.nn.gaussian import expect

VARIANTS = [
    Activation(name, d, t, debias)
    for name, d, t, debias in itertools.product(ACTIVATIONS, (0.8, 1.0, 1.2), (-0.2, 0.0, 0.2), (False, True))
]


def _quad_gauss(fn) -> float:
    """E_{s ~ N(0,1)} fn(s) with scipy's adaptive quad, split at 0 and at every variant's kink."""
    pdf = lambda s: math.exp(-0.5 * s * s) / math.sqrt(2 * math.pi)  # noqa: E731
    pts = sorted({-40.0, -1 / 6, 0.0, 1 / 6, 0.25, -0.25, 40.0})
    return sum(
        integrate.quad(lambda s: fn(s) * pdf(s), a, b, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
        for a, b in zip(pts[:-1], pts[1:])
    )


@pytest.mark.parametrize(
    "act", VARIANTS, ids=lambda a: f"{a.name}-d{a.dilation}-t{a.shift}-{'deb' if a.debias else 'raw'}"
)
def test_variant_has_unit_rms_and_zero_mean_when_debiased(act):
    f = lambda s: float(act(torch.tensor(s, dtype=torch.float64)))  # noqa: E731
    rms = math.sqrt(_quad_gauss(lambda s: f(s) ** 2))
    assert abs(rms - 1.0) < 1e-8
    if act.debias:
        assert abs(_quad_gauss(f)) < 1e-8
    else:
        assert act.constants[1] == 0.0


@pytest.mark.parametrize("name", ["relu", "abs", "tanh", "selu"])
def test_unscaled_variant_is_tau_itself_and_debiased_by_its_mean(name):
    """``scaled=False`` (``ArchSpec.scale_activation``): c = 1, so relu is relu(s), not sqrt(2) relu(s); the
    debiased one subtracts E[tau(d s + t)], checked by scipy's integrator."""
    s = torch.linspace(-3, 3, 61, dtype=torch.float64)
    assert torch.equal(Activation(name, scaled=False)(s), TAU[name](s))
    act = Activation(name, 1.2, 0.2, True, scaled=False)
    mean = _quad_gauss(lambda v: float(TAU[name](torch.tensor(1.2 * v + 0.2, dtype=torch.float64))))
    assert act.constants[0] == 1.0 and abs(act.constants[1] + mean) < 1e-8
    assert Activation("relu").constants[0] == pytest.approx(math.sqrt(2))  # appendix C's scaled relu


def test_quadrature_is_exact_for_gaussian_moments():
    for k, m in ((2, 1.0), (4, 3.0), (6, 15.0), (8, 105.0)):
        assert abs(expect(lambda x: x**k, sigma=1.0) - m) < 1e-11 * m  # noqa: B023 - called here
    assert abs(expect(lambda x: x**2, sigma=0.3) - 0.09) < 1e-14
    assert abs(expect(torch.relu, breaks=(0.0,)) - 1 / math.sqrt(2 * math.pi)) < 1e-14


def test_selu_and_gaussian_follow_the_paper_footnote_and_table_1():
    s = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=torch.float64)
    expected = [1.75814 * math.expm1(-2.0), 1.75814 * math.expm1(-0.5), 0.0, 1.0507 * 0.5, 1.0507 * 2.0]
    assert torch.allclose(TAU["selu"](s), torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-15)
    assert torch.allclose(TAU["gaussian"](s), torch.exp(-s * s / 2) / math.sqrt(2 * math.pi))
    assert torch.equal(TAU["odd_square"](s), s * s.abs())
    assert torch.equal(TAU["even_tanh"](s), torch.tanh(s.abs()))


def test_activation_keeps_float64():
    for act in VARIANTS[::7]:
        assert act(torch.randn(5, dtype=torch.float64)).dtype == torch.float64


def test_monte_carlo_agrees_with_quadrature():
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(2_000_000, generator=gen, dtype=torch.float64)
    for act in (Activation("relu", 1.2, -0.2, True), Activation("square", 0.8, 0.2, False)):
        y = act(s)
        assert abs(float((y * y).mean()) - 1.0) < 0.01
        if act.debias:
            assert abs(float(y.mean())) < 0.005
    assert np.isfinite(Activation("sigmoid").constants).all()


# -- the declarations (BASES) -------------------------------------------------------------------------------------
def test_every_activation_of_the_space_is_declared_once():
    assert list(BASES) == list(ACTIVATIONS)
    assert all(b.name == name and TAU[name] is b.tau for name, b in BASES.items())


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_declared_homogeneity_holds_exactly_where_declared(name):
    """tau(k u) = k tau(u) for k > 0 exactly for the activations declared positively homogeneous."""
    u = torch.linspace(-3, 3, 41, dtype=torch.float64)
    tau = BASES[name].tau
    holds = all(torch.allclose(tau(k * u), k * tau(u), rtol=1e-14, atol=1e-15) for k in (0.5, 2.0, 3.7))
    assert holds == BASES[name].homogeneous
    assert Activation(name).homogeneous == BASES[name].homogeneous


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_declared_kinks_are_where_tau_is_not_smooth(name):
    """At a declared kink a one-sided derivative of tau, or of tau' (odd_square is C^1), jumps; elsewhere the
    declared-smooth activations have matching one-sided derivatives up to the second."""
    tau = BASES[name].tau
    h = 1e-4

    def jumps(u0):
        u = torch.tensor([u0 - 2 * h, u0 - h, u0, u0 + h, u0 + 2 * h], dtype=torch.float64)
        y = tau(u).tolist()
        left, right = (y[2] - y[1]) / h, (y[3] - y[2]) / h
        left2, right2 = (y[2] - 2 * y[1] + y[0]) / h**2, (y[4] - 2 * y[3] + y[2]) / h**2
        return abs(left - right) > 1e-2 or abs(left2 - right2) > 0.5

    kinks = BASES[name].kinks
    assert all(jumps(u) for u in kinks)
    assert not any(jumps(u) for u in (-1.3, -0.4, 0.7, 1.9) + (() if kinks else (0.0,)))
    act = Activation(name, 1.2, -0.2)
    assert act.breaks() == tuple((u + 0.2) / 1.2 for u in kinks)  # tau(d s + t) kinks at s = (u - t) / d


@pytest.mark.parametrize("act", VARIANTS[::3], ids=lambda a: f"{a.name}-d{a.dilation}-t{a.shift}-{a.debias}")
def test_folding_into_a_normalization_affine_leaves_the_activation(act):
    """``norm_affine`` then ``after_affine`` is ``c * tau(d y + t) + b`` (the trainer's folded forward)."""
    y = torch.linspace(-2.5, 2.5, 51, dtype=torch.float64)
    c, b = act.constants
    gamma, beta = act.norm_affine(c)
    z = y * (1.0 if gamma is None else gamma) + (0.0 if beta is None else beta)
    torch.testing.assert_close(act.after_affine(z, (c, b)), act(y), rtol=1e-13, atol=1e-14)
    if not act.homogeneous:
        assert gamma == (None if act.dilation == 1.0 else act.dilation)  # the scale c stays outside
