"""Householder (Han) layers: Yu and Zhang, *Householder-Absolute Neural Layers*, Algorithm 1.

    z = x - 2 (u^T x / |u|^2) u + b        (Algorithm 1, line 2; H(u) = I - 2 u u^T / |u|^2, eq. 5)

``H(u)`` is symmetric and orthogonal and is never formed: the layer costs two matrix-vector products per
example and holds 2n trainable numbers (``u`` and ``b``), which is why a Householder net is much wider than
a dense one at the same parameter budget. The weight-scale factors of the sampling scheme (sqrt(0.95),
0.9 / 1.1, near-zero branches) cannot apply to a reflector; they apply to its bias only.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from archstudy.sampling import ArchSpec, Layer

from .families import layer_family
from .family import Family
from .initialization import WEIGHT, init_rng, sp_bias
from .layers import DTYPE


def reflect(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``H(u_r) x`` for each run r: ``x`` [R, B, n] or shared [B, n], ``u`` [R, n] -> [R, B, n].

    Computed on the transposed stack X^T [R, n, B] (free on the feature-major memory the dense layers
    leave, ``study.nn.layers``): c = u^T X^T [R, 1, B], then X^T - (2 u / |u|^2) c, both batched GEMMs whose
    results are feature-major again, so the batchnorm that follows needs no copy."""
    if x.dim() == 2:
        x = x.unsqueeze(0).expand(u.shape[0], *x.shape)
    xt = x.transpose(1, 2)  # [R, n, B]
    c = torch.bmm(u.unsqueeze(1), xt)  # [R, 1, B]
    v = u * (2.0 / (u * u).sum(-1, keepdim=True))  # [R, n]
    return torch.baddbmm(xt, v.unsqueeze(-1), c, alpha=-1.0).transpose(1, 2)


def initial_bias(spec: ArchSpec, layer: Layer, seed: int) -> np.ndarray:
    """A Householder layer's bias [fan_out]: ``sp_bias`` (``householder_bias = "bias_init"``), or zero. Yu and
    Zhang's Algorithm 1 adds a trainable b after the reflection; neither paper says how it starts."""
    if spec.householder_bias == "zero":
        return np.zeros(layer.fan_out)
    return sp_bias(spec, layer, seed)


@layer_family
class Householder(Family):
    """``x -> H(u) x + b`` on width-to-width layers; initially u ~ N(0, I) (from the layer's weight generator)
    and the bias ``initial_bias`` says (the spec's ``bias_init``, or zero)."""

    kind = "householder"
    roles = {"u": "weight", "bias": "bias"}
    bias_name = "bias"
    # A Householder layer launches more kernels than a dense one: compiling pays from far fewer layer-steps
    # (``archstudy bench --device cuda`` on an H100, docs/performance.md).
    cuda_compile_min_layer_steps = 400

    def __init__(self, width: int, runs: int = 1):
        super().__init__()
        self.fan_in = self.fan_out = width
        self.u = nn.Parameter(torch.empty(runs, width, dtype=DTYPE))
        self.bias = nn.Parameter(torch.empty(runs, width, dtype=DTYPE))

    @classmethod
    def build(cls, layer: Layer, runs: int) -> "Householder":
        return cls(layer.fan_in, runs)

    @classmethod
    def initial(cls, spec: ArchSpec, layer: Layer, seed: int) -> dict[str, torch.Tensor]:
        return {
            "u": torch.from_numpy(init_rng(seed, layer.index, WEIGHT).standard_normal(layer.fan_in)),
            "bias": torch.from_numpy(initial_bias(spec, layer, seed)),
        }

    @staticmethod
    def products(layer: Layer) -> tuple[tuple[int, int], ...]:
        # c = u^T x (1 x n) and the rank-one update x - (2 u / |u|^2) c (n x 1): 2n multiply-adds per example
        return ((1, layer.fan_in), (layer.fan_in, 1))

    def transform(self, x, with_bias: bool = True):
        s = reflect(x, self.u)
        return s + self.bias.unsqueeze(1) if with_bias else s

    def matrix(self) -> torch.Tensor:
        """``H(u)`` as a dense [R, n, n] matrix (for tests and reports; the forward never forms it)."""
        R, n = self.u.shape
        eye = torch.eye(n, dtype=self.u.dtype, device=self.u.device).expand(R, n, n)
        return reflect(eye.transpose(1, 2), self.u).transpose(1, 2)
