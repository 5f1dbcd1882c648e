"""Geometric parameterization (GmP) with input mean normalization (IMN): Chen and Ge, *Neural Characteristic
Activation Value Analysis*, section 4.

A GmP neuron computes (eq. 15, 16)

    z = r * tau(u(theta)^T (x - E[x]) + lambda)

with ``u(theta)`` the unit vector of hyperspherical angles theta_1..theta_{n-1} (eq. 10):

    u = [cos t1, sin t1 cos t2, sin t1 sin t2 cos t3, ..., sin t1 ... sin t_{n-2} cos t_{n-1},
         sin t1 ... sin t_{n-1}]

``E[x]`` is the batch mean of the layer input in training and its running mean in evaluation
(``study.nn.layers.centered``, which dense SP layers share); it is subtracted on intermediate layers only ("for
ReLU units in the intermediate layers", sec. 4.2) and only where the spec asks for it
(``ArchSpec.imn``; ``"auto"``, every spec from before that field, means on for GmP).
Parameters per neuron: n - 1 angles, lambda and r: n + 1, the same as SP.

Initialization (``ArchSpec.gmp_init``; ``GmP.initial``):

* ``"from_sp"`` (the default): section 4.3's invariance applied to the spec's SP weights: u = w / |w|,
  lambda = b / |w|, r = |w|, so a GmP net and its SP twin differ only in the geometry of their parameters;
  with a positively homogeneous tau (relu, abs), no IMN, no norms and no skips they compute the same
  function at init. The angles come from the sampled vector (``angles_from_direction``): they follow the
  distribution of a random direction's angles, which is not uniform.
* ``"uniform"``: section 4.3 as written: "initialize the angular parameter theta uniformly at random",
  lambda = 0, r = 1; theta_k ~ U[0, pi] for k < n-1 and theta_{n-1} ~ U(-pi, pi] (``uniform_angles``). The
  paper argues from the uniform direction of a Gaussian w, but uniform angles are not that: a uniform
  direction's theta_k has density proportional to sin^(n-1-k) theta_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from archstudy.sampling import ArchSpec, Layer

from .families import layer_family
from .family import Family
from .initialization import ANGLES, init_rng, scales, sp_bias, sp_weight
from .layers import DTYPE, centered, stacked_linear


def _reversed_cumsum(t: torch.Tensor) -> torch.Tensor:
    """sum_{j >= k} t_j along the last dimension."""
    return torch.flip(torch.cumsum(torch.flip(t, [-1]), -1), [-1])


class _Cumprod(torch.autograd.Function):
    """``torch.cumprod`` along the last dimension, with a backward that never waits for the device.

    torch's own backward asks the host whether the input holds a zero (a ``.item()``: on a GPU the host
    then waits for every queued kernel, once per GmP layer and step). This one computes both of torch's
    cases and picks per element, on the device. With y_j = prod_{i <= j} x_i and z the first zero of a
    row: dL/dx_k = (sum_{j >= k} g_j y_j) / x_k before z (torch's formula, the same operations, so the
    same numbers); at z, sum_{j >= z} g_j y'_j with y' the cumulative product of x with x_z set to 1;
    after z, 0 (every product through x_k also holds x_z)."""

    generate_vmap_rule = True  # torch.func transforms (vmap, jacrev) of a GmP net: every op below is batchable

    @staticmethod
    def forward(x):
        return torch.cumprod(x, dim=-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        zero = x == 0
        zeros_so_far = torch.cumsum(zero.to(torch.int32), -1)
        first_zero = zero & (zeros_so_far == 1)
        before = _reversed_cumsum(g * y) / torch.where(zero, torch.ones_like(x), x)
        at_zero = _reversed_cumsum(g * torch.cumprod(torch.where(first_zero, torch.ones_like(x), x), -1))
        return torch.where(zeros_so_far == 0, before, torch.where(first_zero, at_zero, torch.zeros_like(x)))


def direction_from_angles(theta: torch.Tensor) -> torch.Tensor:
    """Eq. 10: angles [..., n-1] -> unit vectors [..., n]."""
    sin, cos = torch.sin(theta), torch.cos(theta)
    prod = _Cumprod.apply(sin)  # prod[k] = sin t1 ... sin t_{k+1}
    return torch.cat([cos[..., :1], prod[..., :-1] * cos[..., 1:], prod[..., -1:]], dim=-1)


def uniform_angles(rng, fan_out: int, fan_in: int) -> torch.Tensor:
    """Chen and Ge, section 4.3: angles [fan_out, fan_in - 1] uniform on their ranges, theta_k ~ U[0, pi] for
    k < n-1 and the last ~ U(-pi, pi] (drawn as U[-pi, pi), which differs only on a null set), from the
    numpy generator ``rng``."""
    theta = rng.uniform(0.0, math.pi, (fan_out, fan_in - 1))
    theta[:, -1] = rng.uniform(-math.pi, math.pi, fan_out)
    return torch.from_numpy(theta)


def angles_from_direction(u: torch.Tensor) -> torch.Tensor:
    """Inverse of eq. 10 for unit (or any nonzero) vectors [..., n] -> angles [..., n-1].

    theta_k = atan2(|u_{k+1..n}|, u_k) in [0, pi] for k < n-1 and theta_{n-1} = atan2(u_n, u_{n-1}) in
    (-pi, pi]; the tail norms come from a reversed cumulative sum of squares."""
    sq = u * u
    tail = torch.flip(torch.cumsum(torch.flip(sq, [-1]), -1), [-1])  # tail[k] = sum_{j >= k} u_j^2
    head = torch.atan2(torch.sqrt(tail[..., 1:-1]), u[..., :-2])
    last = torch.atan2(u[..., -1:], u[..., -2:-1])
    return torch.cat([head, last], dim=-1)


@layer_family
class GmP(Family):
    """The linear part ``s = u(theta)^T (x - E[x]) + lambda`` of a layer of GmP neurons; ``post`` applies r
    after the norm and the activation. Initial tensors: the module docstring."""

    kind = "gmp"
    roles = {"theta": "weight", "lam": "bias", "r": "weight"}
    bias_name = "lam"
    cuda_graph = True  # measured on an H200 (``study.nn.family``, docs/performance.md)

    def __init__(self, fan_in: int, fan_out: int, runs: int = 1, imn: bool = False):
        super().__init__()
        self.fan_in, self.fan_out, self.imn = fan_in, fan_out, imn
        self.theta = nn.Parameter(torch.empty(runs, fan_out, fan_in - 1, dtype=DTYPE))
        self.lam = nn.Parameter(torch.empty(runs, fan_out, dtype=DTYPE))
        self.r = nn.Parameter(torch.empty(runs, fan_out, dtype=DTYPE))
        if imn:
            self.register_buffer("running_mean", torch.zeros(runs, fan_in, dtype=DTYPE))
        self.track = True

    @classmethod
    def build(cls, layer: Layer, runs: int) -> "GmP":
        return cls(layer.fan_in, layer.fan_out, runs, imn=layer.imn)

    @classmethod
    def initial(cls, spec: ArchSpec, layer: Layer, seed: int) -> dict[str, torch.Tensor]:
        if spec.gmp_init == "uniform":  # Chen and Ge, section 4.3
            scale, branch = scales(spec, layer)
            r = np.full(layer.fan_out, 1.0) * scale * branch
            return {
                "theta": uniform_angles(init_rng(seed, layer.index, ANGLES), layer.fan_out, layer.fan_in),
                "lam": torch.zeros(layer.fan_out, dtype=torch.float64),
                "r": torch.from_numpy(r),
            }
        # "from_sp": the SP twin's weights, u = w / |w|, lambda = b / |w|, r = |w|
        b, w = sp_bias(spec, layer, seed), sp_weight(spec, layer, seed)
        norm = np.linalg.norm(w, axis=1)
        return {
            "theta": angles_from_direction(torch.from_numpy(w / norm[:, None])),
            "lam": torch.from_numpy(b / norm),
            "r": torch.from_numpy(norm),
        }

    @staticmethod
    def products(layer: Layer) -> tuple[tuple[int, int], ...]:
        return ((layer.fan_out, layer.fan_in),)  # u(theta) as a matrix; the angles' cost does not scale with B

    def direction(self) -> torch.Tensor:
        return direction_from_angles(self.theta)

    def centered(self, x):
        """``x - E[x]`` with IMN (``study.nn.layers.centered``), ``x`` otherwise."""
        return centered(self, x)

    def transform(self, x, with_bias: bool = True):
        return stacked_linear(self.centered(x), self.direction(), self.lam if with_bias else None)

    def post(self, a: torch.Tensor) -> torch.Tensor:
        """``r * a``: the radius of each neuron, after its norm and activation (eq. 15)."""
        return a * self.r.unsqueeze(1)
