"""Variability of a network function (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3; the
variability paper, *Variability of Neural Networks and Han-Layer*, eq. 4 and appendix A.2).

    V = |f|^-2 * integral over Omega of sum_i |d^3 f / dx_i^3|^2 dx,     f = |F(x)|_2^2

f is the least-squares function of the output (the variability paper, A.2: "f(.) := |.|^2"), Omega a 2-D
square.
On a ``grid`` x ``grid`` lattice with spacing h the integrals become means (the area cancels):

    V = [mean (Delta_1^3 f / h^3)^2 + mean (Delta_2^3 f / h^3)^2] / mean f^2,

Delta_a^3 f the third forward difference along axis a (f[i+3] - 3 f[i+2] + 3 f[i+1] - f[i]). V does not
change when F is scaled, converges as the grid refines, and vanishes when F is affine (f is then
quadratic): "once F_L(x; W, b) becomes a constant (or linear for that matter) on Omega, variability as
measured by V3 vanishes" (the variability paper, A.2).

The domain (decisions where the Han papers, which study 2-D inputs only, are silent):

* 2-D inputs: Omega is the data's bounding box (for Checkerboard, the Han papers' own [-1, 1]^2).
* more dimensions: ``planes`` random 2-D planes through the data. Each passes through a random training
  point p, spanned by the orthonormal pair that Gram-Schmidt makes of the directions to two other random
  training points; Omega is the bounding box of the projections of ALL training points onto the plane,
  so it spans the data's extent in those directions. The result is the geometric mean over planes, which
  vanishes when one plane is flat, as the Han papers' geometric mean over parameter samples does.
* derivatives are taken in coordinates that map each side of Omega to [-1, 1] (the Han papers' Omega), so V
  describes the function relative to the data's extent, independently of the data's units.
* batch statistics: a grid is not a sample of the data, so a network with batchnorm (or GmP's input
  mean normalization) is evaluated pointwise, in evaluation mode, on a copy whose running statistics are
  measured exactly on the training data (``study.metrics.calibration``).

The Han papers' expectation over parameter samples E_(W, b) is the study's own: one value per architecture
and initialization seed.

Resolution: for a smooth network V converges as the grid refines (O(h)). For a piecewise-linear one
(relu, abs; any kinked activation) f is piecewise quadratic, its third derivative a sum of Dirac masses
on the kinks, and the lattice value grows like 1 / h^2 ~ grid^2: V then compares architectures at one
fixed grid only (the study's default 65, i.e. 4225 points a plane), as the Han papers' fixed grid does.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from archstudy.sampling.constraints import Integer, check

from ..nn.network import Network
from .calibration import calibrated, has_batch_statistics
from .registry import Measuring, measures

EVAL_CHUNK = 1024  # grid points per forward pass (the grid may be large, a Householder net very wide)


def third_difference_variability(f: torch.Tensor, h: float = 1.0) -> float:
    """V of samples ``f`` [n1, n2] of a scalar function on a lattice of spacing ``h`` (module docstring)."""
    d1 = torch.diff(f, n=3, dim=0) / h**3
    d2 = torch.diff(f, n=3, dim=1) / h**3
    return float(((d1 * d1).mean() + (d2 * d2).mean()) / (f * f).mean())


def _plane_domain(x: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(origin p, axes [2, d_in], box [2, 2] = per-axis (lo, hi) in plane coordinates) of a random plane."""
    n = x.shape[0]
    scale = float(x.abs().max())
    for _ in range(100):
        a, b, c = rng.choice(n, size=3, replace=False)
        p = x[a]
        e1 = x[b] - p
        if float(torch.linalg.vector_norm(e1)) <= 1e-12 * scale:
            continue
        e1 = e1 / torch.linalg.vector_norm(e1)
        e2 = x[c] - p
        e2 = e2 - (e2 @ e1) * e1
        if float(torch.linalg.vector_norm(e2)) <= 1e-12 * scale:
            continue
        e2 = e2 / torch.linalg.vector_norm(e2)
        axes = torch.stack([e1, e2])
        coords = (x - p) @ axes.T  # [n, 2]
        box = torch.stack([coords.min(dim=0).values, coords.max(dim=0).values], dim=1)
        return p, axes, box
    raise ValueError("variability: the training points span no plane (fewer than 3 affinely independent points)")


def _lattice(origin, axes, box, grid: int) -> torch.Tensor:
    """The grid x grid points of a box in a plane, [grid, grid, d_in]; axis 0 runs along ``axes[0]``."""
    t = torch.linspace(-1.0, 1.0, grid, dtype=origin.dtype, device=origin.device)
    u = (box[:, 0:1] + box[:, 1:2]) / 2 + (box[:, 1:2] - box[:, 0:1]) / 2 * t  # [2, grid]
    return origin + u[0][:, None, None] * axes[0] + u[1][None, :, None] * axes[1]


@torch.no_grad()
def _evaluate(f: Callable, points: torch.Tensor) -> torch.Tensor:
    """|F(x)|^2 at ``points`` [..., d_in], in chunks."""
    flat = points.reshape(-1, points.shape[-1])
    out = []
    for i in range(0, flat.shape[0], EVAL_CHUNK):
        y = f(flat[i : i + EVAL_CHUNK])
        if y.dim() != 2:
            raise ValueError(
                f"variability takes one network's [B, d_out] output, got {tuple(y.shape)} "
                "(for a stack, measure net.select(k))"
            )
        out.append((y * y).sum(dim=1))
    return torch.cat(out).reshape(points.shape[:-1])


def variability(
    f: Callable, x: torch.Tensor, grid: int = 65, planes: int = 4, seed: int = 0, batch_size: int = 250
) -> float:
    """V of ``f`` (a module or a batch -> output callable) on the data ``x`` [N, d_in]; see the module docstring.

    ``planes`` is ignored for 2-D inputs; ``batch_size`` is the minibatch of the batchnorm calibration."""
    grid = check("variability", "grid", Integer(4), grid)  # a third difference needs 4 points
    planes = check("variability", "planes", Integer(1), planes)
    d_in = x.shape[-1]
    check("variability", "d_in", Integer(2), d_in)
    g = calibrated(f, x, batch_size) if isinstance(f, nn.Module) and has_batch_statistics(f) else f
    h = 2.0 / (grid - 1)
    if d_in == 2:
        box = torch.stack([x.min(dim=0).values, x.max(dim=0).values], dim=1)
        domains = [(torch.zeros(2, dtype=x.dtype, device=x.device), torch.eye(2, dtype=x.dtype, device=x.device), box)]
    else:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed])))
        domains = [_plane_domain(x, rng) for _ in range(planes)]
    values = []
    for origin, axes, box in domains:
        if not bool((box[:, 1] > box[:, 0]).all()):
            return math.nan  # the data has no extent along a side of the box
        values.append(third_difference_variability(_evaluate(g, _lattice(origin, axes, box, grid)), h))
    return geometric_mean(values)


def geometric_mean(values) -> float:
    """exp(mean log v): 0 if one value is 0 (a flat plane), NaN if one is not a finite non-negative number."""
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all() or (v < 0).any():
        return math.nan
    if (v == 0).any():
        return 0.0
    return float(np.exp(np.log(v).mean()))


@measures("variability", stream=3)
def measure_variability(m: Measuring, seed: int) -> dict:
    """V on planes through the training data; NaN for 1-D inputs (no plane)."""
    o = m.options
    return {
        "variability": variability(m.net, m.x, o.variability_grid, o.variability_planes, seed, m.batch_size)
        if m.spec.d_in >= 2
        else math.nan
    }


# -- the variability of many networks at once (a stack, one network per parameter sample) ---------------------


@torch.no_grad()
def box_variability(net: nn.Module, box, grid: int = 65) -> np.ndarray:
    """V of every run of a stacked network (``build_network(spec, seeds=[...])``: one parameter sample per run)
    on the 2-D box ``box`` = ((lo_1, hi_1), (lo_2, hi_2)) (the Han papers' Omega, [-1, 1]^2): one value per run,
    each exactly what ``variability(net.select(r), corners of the box, grid)`` gives, from one forward pass of
    the stack. The Han papers' E_(W, b) over parameter samples is then ``geometric_mean`` of these (their
    figures: the geometric mean of 3000 samples, which vanishes when one sample is constant)."""
    grid = check("variability", "grid", Integer(4), grid)
    if has_batch_statistics(net):
        raise ValueError(
            "box_variability takes networks without batch statistics (use variability, which calibrates them)"
        )
    b = torch.as_tensor(box, dtype=torch.float64)
    if tuple(b.shape) != (2, 2) or not bool((b[:, 1] > b[:, 0]).all()):
        raise ValueError(f"box must be ((lo1, hi1), (lo2, hi2)) with lo < hi, got {box!r}")
    eye = torch.eye(2, dtype=torch.float64)
    points = _lattice(torch.zeros(2, dtype=torch.float64), eye, b, grid).reshape(-1, 2)
    device = next(net.parameters()).device
    y = net(points.to(device))  # [R, grid^2, d_out] for a stack ([grid^2, d_out] for one network)
    if y.dim() == 2:
        y = y.unsqueeze(0)
    f = (y * y).sum(dim=-1).reshape(-1, grid, grid).cpu()
    h = 2.0 / (grid - 1)
    return np.array([third_difference_variability(f_r, h) for f_r in f])


# -- Collapse to Constants: the C- and G-matrices (the variability paper, appendix A.4) --------------------------
#
# For a plain network s_0 = x, z_k = W_k s_{k-1} + b_k, s_k = phi(z_k), k = 1 .. L (the paper's recursion (3)):
#
#     G_L(x)        = prod_{k=1..L} W_k^T Nabla phi(z_k)            (eq. 12; Yu and Zhang, eq. 6)
#     C_L(x, x~)    = prod_{k=1..L} W_k^T D phi(z_k, z~_k)          (eq. 13)
#     [D phi(u, v)]_ii = [phi(u) - phi(v)]_i / [u - v]_i,  0/0 = 1  (eq. 14)
#
# the products taken left to right (W_1^T D_1 W_2^T D_2 ... W_L^T D_L), z~_k the recursion started from x~.
# Proposition 2: F_L(x) - F_L(x~) = C_L(x, x~)^T (x - x~) with F_L = s_L, so C_L -> 0 makes the network collapse
# to a constant ("C2C"); G-matrices are the limits of C-matrices (x~ -> x), the dominant part of the gradient.


def secant_slopes(phi: Callable, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The diagonal of D phi(u, v) (eq. 14): (phi(u) - phi(v)) / (u - v) componentwise, 1 where u = v (the
    paper's convention 0/0 = 1)."""
    same = u == v
    diff = torch.where(same, torch.ones_like(u), u - v)
    return torch.where(same, torch.ones_like(u), (phi(u) - phi(v)) / diff)


def activation_slopes(phi: Callable, z: torch.Tensor) -> torch.Tensor:
    """The diagonal of Nabla phi(z): phi'(z) componentwise (autograd; torch's one-sided choice at a kink, e.g.
    relu'(0) = 0, |.|'(0) = 0)."""
    with torch.enable_grad():
        zz = z.detach().clone().requires_grad_(True)
        (g,) = torch.autograd.grad(phi(zz).sum(), zz)
    return g


def plain_layers(net: Network) -> tuple[list[torch.Tensor], list[torch.Tensor], Callable]:
    """(W_k, b_k, phi) of the hidden layers k = 1 .. L-1 of a plain ``study.nn.network.Network`` of one run (no
    normalization, no skips; dense or Householder layers, whose W_k is H(u_k)): the paper's F_L is the network
    up to its last hidden activation (the output layer has no activation and is left out)."""
    spec = net.spec
    if spec.norm != "none" or spec.skip != "none" or spec.param != "sp" or net.runs != 1:
        raise ValueError(
            "C- and G-matrices are defined for plain networks of one run: no normalization, no skips, "
            "standard parameterization"
        )
    weights, biases = [], []
    linear: Any  # a dense or Householder layer: its ``matrix()`` or ``weight``, and ``bias``
    for linear in list(net.linears)[:-1]:
        w = linear.matrix()[0] if hasattr(linear, "matrix") else linear.weight[0]
        weights.append(w.detach())
        biases.append(linear.bias[0].detach())
    constants = net.act.constants
    return weights, biases, lambda s: net.act(s, constants)


@torch.no_grad()
def collapse_norms(weights, biases, phi: Callable, x: torch.Tensor, x_tilde: torch.Tensor, at=None) -> dict:
    """Spectral norms of C_k(x, x~), G_k(x) and G_k(x~) at the depths ``at`` (default: every k = 1 .. L), in one
    pass over the layers (the curves of the variability paper's figure 6): {"depth", "c", "g_x", "g_x_tilde"},
    each a list. ``weights[k-1]`` is W_k [n_k, n_{k-1}], ``biases[k-1]`` is b_k, ``x`` and ``x_tilde`` [n_0]."""
    L = len(weights)
    keep = set(range(1, L + 1) if at is None else at)
    s, st = x, x_tilde
    n0 = x.shape[-1]
    c = torch.eye(n0, dtype=x.dtype, device=x.device)
    gx, gt = c.clone(), c.clone()
    out: dict[str, list[float]] = {"depth": [], "c": [], "g_x": [], "g_x_tilde": []}
    for k, (w, b) in enumerate(zip(weights, biases), start=1):
        z, zt = w @ s + b, w @ st + b
        wt = w.T
        c = (c @ wt) * secant_slopes(phi, z, zt)  # C_{k-1} W_k^T D_k: D_k scales the columns
        gx = (gx @ wt) * activation_slopes(phi, z)
        gt = (gt @ wt) * activation_slopes(phi, zt)
        s, st = phi(z), phi(zt)
        if k in keep:
            out["depth"].append(k)
            for key, m in (("c", c), ("g_x", gx), ("g_x_tilde", gt)):
                out[key].append(float(torch.linalg.matrix_norm(m, ord=2)))
    return out


def c_matrix(weights, biases, phi: Callable, x: torch.Tensor, x_tilde: torch.Tensor) -> torch.Tensor:
    """C_L(x, x~) (eq. 13) of the plain network (``weights``, ``biases``, ``phi``): [n_0, n_L]."""
    s, st = x, x_tilde
    c = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    for w, b in zip(weights, biases):
        z, zt = w @ s + b, w @ st + b
        c = (c @ w.T) * secant_slopes(phi, z, zt)
        s, st = phi(z), phi(zt)
    return c


def g_matrix(weights, biases, phi: Callable, x: torch.Tensor) -> torch.Tensor:
    """G_L(x) (eq. 12) of the plain network (``weights``, ``biases``, ``phi``): [n_0, n_L]."""
    s = x
    g = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    for w, b in zip(weights, biases):
        z = w @ s + b
        g = (g @ w.T) * activation_slopes(phi, z)
        s = phi(z)
    return g
