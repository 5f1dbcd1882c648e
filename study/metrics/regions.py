"""Linearly approximable regions (NLC paper E.1) and error-preserving perturbations (E.3). Slow: off by default.

Both walk a ladder of step sizes k = 1e-9, 1e-9 * 10^(1/10), 1e-9 * 10^(2/10), ... ("starting with
k = 10^-9 and then checking the condition for increasing k until it fails"; spacing factor 10^(1/10))
and report the largest k before the first failure; the median over minibatches x directions is the value.

The displacement (E.1, minibatch form). A batch X [b, d_in] of random data points moves to
X' = X + k D with a unit-Gaussian direction matrix U and

    D = U * diam(D) * sqrt(b) / |U|_F,    diam(D) = Q_{x,x'} |x - x'|_2 = sqrt(2 d_in) Q_i(S_x x(i)),

so that each input moves by k diameters of the input space (in quadratic mean over the batch). The
paper states this meaning ("traversing the input space k times in the direction of u"); its printed
formula divides by the diameter and, in the batch form, drops sqrt(b), under which neither a linear
scaling of the data nor the batch size would leave k meaningful, so the stated meaning is followed.
The diameter is section 3's proxy, the quadratic expectation of the distance of two random data points
(exact: Q|x - x'|^2 = 2 sum_i S_x x(i)^2). E.1 calls 2 Q_i(S_x x(i)) the proxy "as in the definition of
the NLC"; the two agree for d_in = 2 and differ by sqrt(d_in / 2) beyond, and only section 3's makes the
relative diameter ~1/NLC (section 3's derivation) for every d_in: measured here on batchnorm nets of
width 64 at d_in = 2, 10, 40, 160, lar_diameter * NLC stayed within 0.23-0.46 (tanh, depth 4) with
section 3's diameter and grew like sqrt(d_in) (0.23 to 4.1) with 2 Q_i(S_x x(i)).

E.1 "close": with an output direction matrix V [b, d_out], the change predicted by the Jacobian at X
and the actual change must agree within a factor of two,

    1/2 <= (J(X)(X' - X)) . V / (f(X') - f(X)) . V <= 2.

The printed form 1/2 a <= l <= 2 a can only hold for a >= 0, i.e. for half of all Gaussian V; the
ratio form is that condition for a > 0 and its mirror image for a < 0. J(X)(X' - X) = k J(X) D is one
Jacobian-vector product per (X, U); f(X + k D) serves all V at once. Networks with
batchnorm propagate X, X' jointly in batch mode (E.1: "applied jointly to all inputs in X if f does
contain batchnorm"), running statistics untouched.

E.3: the largest k such that the error "over the path" from X to X' is at most ``tolerance`` = 5% (an
absolute 0.05: so that a 90%-error network's value stays finite, as the paper intends) higher than
the error at X, the error over the path being the fraction of inputs not classified correctly
everywhere on it. The path is checked at the ladder's points up to k (steps of 26%).

Bounds: a configuration that fails at the first k = 1e-9 gets 0 ("below what can be checked"); one that
never fails up to ``k_max`` (default 1e3, a thousand diameters of the data) gets k_max. A linear network
has an unbounded linearly approximable region: its E.1 value is k_max.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from ..experiment.metric_options import K_MAX, K_MIN, PERTURBATION_TOLERANCE  # declared with the options they default
from .nlc import batch_mode, input_sd_q
from .registry import Measuring, measures

K_PER_DECADE = 10  # spacing factor 10^(1/10)


def k_ladder(k_min: float = K_MIN, k_max: float = K_MAX) -> np.ndarray:
    """k_min * 10^(j/10) for j = 0, 1, ... while <= k_max."""
    steps = int(math.floor(K_PER_DECADE * math.log10(k_max / k_min) + 1e-9))
    return k_min * 10.0 ** (np.arange(steps + 1) / K_PER_DECADE)


def input_diameter(x: torch.Tensor) -> float:
    """diam(D) = Q_{x,x'} |x - x'|_2 = sqrt(2 d_in) Q_i(S_x x(i)) (section 3's proxy), exactly over ``x``."""
    return math.sqrt(2 * x.shape[-1]) * input_sd_q(x)


def displacement(u: torch.Tensor, diameter: float) -> torch.Tensor:
    """D = U * diam(D) * sqrt(b) / |U|_F: k D moves each input by k diameters of the input space (in
    quadratic mean over the batch)."""
    return u * (diameter * math.sqrt(u.shape[0]) / torch.linalg.vector_norm(u))


def jacobian_vector_product(f: Callable, x: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """J(x) d by reverse mode twice: w -> (dL/dx)(w) = w J is linear in w, and its gradient along d is J d.

    (Forward mode would do it in one pass but makes torch load its jit-scripted decompositions; this
    costs one extra backward per (X, U), nothing next to the ladder of forward passes.)"""
    xl = x.detach().requires_grad_(True)
    with torch.enable_grad():
        out = f(xl)
        w = torch.zeros_like(out, requires_grad=True)
        (g,) = torch.autograd.grad(out, xl, grad_outputs=w, create_graph=True)
        (jd,) = torch.autograd.grad(g, w, grad_outputs=d)
    return jd.detach()


def linear_region_k(
    f: Callable, x: torch.Tensor, f0: torch.Tensor, d: torch.Tensor, v: torch.Tensor, ks: np.ndarray
) -> np.ndarray:
    """For each output direction v[m] ([M, b, d_out]): the largest k of ``ks`` up to which the Jacobian at
    ``x`` predicts (f(x + k d) - f(x)) . v[m] within a factor of 2 (0 if ``ks[0]`` fails, ``ks[-1]`` if none
    does). ``f0`` = f(x); call inside ``batch_mode(f)`` for a module."""
    jd = jacobian_vector_product(f, x, d)
    lin_unit = (jd.unsqueeze(0) * v).sum(dim=(-2, -1))  # [M]: (J d) . v
    result = np.full(v.shape[0], ks[-1])
    alive = torch.ones(v.shape[0], dtype=torch.bool, device=v.device)
    with torch.no_grad():
        for j, k in enumerate(ks):
            actual = ((f(x + k * d) - f0).unsqueeze(0) * v).sum(dim=(-2, -1))
            lin = k * lin_unit
            ok = (lin * actual > 0) & (lin.abs() >= 0.5 * actual.abs()) & (lin.abs() <= 2.0 * actual.abs())
            failed = (alive & ~ok).cpu().numpy()
            result[failed] = ks[j - 1] if j else 0.0
            alive &= ok
            if not bool(alive.any()):
                break
    return result


def error_path_k(
    f: Callable,
    x: torch.Tensor,
    y: torch.Tensor,
    d: torch.Tensor,
    ks: np.ndarray,
    tolerance: float = PERTURBATION_TOLERANCE,
) -> float:
    """The largest k of ``ks`` whose path x -> x + k d keeps the error within ``tolerance`` of the error at x
    (0 if ``ks[0]`` fails, ``ks[-1]`` if none does). Call inside ``batch_mode(f)`` for a module."""
    with torch.no_grad():
        correct = f(x).argmax(dim=-1) == y
        limit = 1.0 - float(correct.double().mean()) + tolerance
        for j, k in enumerate(ks):
            correct &= f(x + k * d).argmax(dim=-1) == y
            if 1.0 - float(correct.double().mean()) > limit + 1e-12:
                return float(ks[j - 1]) if j else 0.0
    return float(ks[-1])


def _finite_output(f: Callable, x: torch.Tensor) -> torch.Tensor | None:
    with torch.no_grad():
        out = f(x)
    if out.dim() != 2:
        raise ValueError(
            f"takes one network's [B, d_out] output, got {tuple(out.shape)} (for a stack, measure net.select(k))"
        )
    return out if bool(torch.isfinite(out).all()) else None


def _displaced_batches(x: torch.Tensor, batches: int, directions: int, batch_size: int, gen: torch.Generator):
    """For each of ``batches`` random minibatches: its row indices and the ``directions`` displacement
    matrices D of unit-Gaussian U (module docstring), drawn from ``gen`` in that order."""
    n, d_in = x.shape
    b = min(batch_size, n)
    diameter = input_diameter(x)
    for _ in range(batches):
        idx = torch.randperm(n, generator=gen)[:b].to(x.device)
        us = torch.randn(directions, b, d_in, generator=gen, dtype=x.dtype).to(x.device)
        yield idx, [displacement(u, diameter) for u in us]


def lar_diameter(
    f: Callable,
    x: torch.Tensor,
    batches: int = 10,
    directions: int = 10,
    batch_size: int = 250,
    k_max: float = K_MAX,
    seed: int = 0,
) -> float:
    """Relative diameter of linearly approximable regions (E.1): the median over ``batches`` minibatches x
    ``directions`` U x ``directions`` V of the largest k (module docstring). NaN if f(X) is not finite."""
    gen = torch.Generator().manual_seed(seed)
    ks = k_ladder(K_MIN, k_max)
    values: list[float] = []
    with batch_mode(f):
        for idx, ds in _displaced_batches(x, batches, directions, batch_size, gen):
            xb = x.index_select(0, idx)
            f0 = _finite_output(f, xb)
            if f0 is None:
                return math.nan
            vs = torch.randn(directions, len(idx), f0.shape[-1], generator=gen, dtype=x.dtype).to(x.device)
            for d in ds:
                values.extend(linear_region_k(f, xb, f0, d, vs, ks))
    return float(np.median(values))


def error_perturbation(
    f: Callable,
    x: torch.Tensor,
    y: torch.Tensor,
    batches: int = 10,
    directions: int = 10,
    batch_size: int = 250,
    tolerance: float = PERTURBATION_TOLERANCE,
    k_max: float = K_MAX,
    seed: int = 0,
) -> float:
    """Maximal error-preserving perturbation (E.3): the median over ``batches`` minibatches of (x, y) (the
    test set in the paper) x ``directions`` U of the largest k (module docstring). NaN if f(X) is not
    finite."""
    gen = torch.Generator().manual_seed(seed)
    ks = k_ladder(K_MIN, k_max)
    values = []
    with batch_mode(f):
        for idx, ds in _displaced_batches(x, batches, directions, batch_size, gen):
            xb, yb = x.index_select(0, idx), y.index_select(0, idx)
            if _finite_output(f, xb) is None:
                return math.nan
            for d in ds:
                values.append(error_path_k(f, xb, yb, d, ks, tolerance))
    return float(np.median(values))


@measures("lar_diameter", stream=4)
def measure_lar(m: Measuring, seed: int) -> dict:
    """E.1 at initialization when ``lar`` is on (``region_batches`` training minibatches), else NaN."""
    o = m.options
    return {
        "lar_diameter": lar_diameter(
            m.net, m.x, o.region_batches, o.region_directions, m.batch_size, o.region_k_max, seed
        )
        if o.lar
        else math.nan
    }


@measures("error_perturbation", stream=None)
def perturbation_at_init(m: Measuring, seed: None) -> dict:
    """E.3 is a property of the trained network (figure 3E; at initialization the error is chance): NaN in
    the row at initialization, computed after training by ``measure_trained``."""
    return {"error_perturbation": math.nan}
