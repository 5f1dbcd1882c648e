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
from typing import Callable

import numpy as np
import torch
from torch import nn

from archstudy.sampling.constraints import Integer, check

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
        y = f(flat[i:i + EVAL_CHUNK])
        if y.dim() != 2:
            raise ValueError(f"variability takes one network's [B, d_out] output, got {tuple(y.shape)} "
                             "(for a stack, measure net.select(k))")
        out.append((y * y).sum(dim=1))
    return torch.cat(out).reshape(points.shape[:-1])


def variability(f: Callable, x: torch.Tensor, grid: int = 65, planes: int = 4, seed: int = 0,
                batch_size: int = 250) -> float:
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


@measures(stream=3)
def measure_variability(m: Measuring, seed: int) -> dict:
    """V on planes through the training data; NaN for 1-D inputs (no plane)."""
    o = m.options
    return {"variability": variability(m.net, m.x, o.variability_grid, o.variability_planes, seed, m.batch_size)
            if m.spec.d_in >= 2 else math.nan}
