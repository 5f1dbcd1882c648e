"""Stacked layers: every parameter and buffer carries a leading runs dimension R.

One implementation serves a single network (R = 1) and the trainer's stack of R copies trained at R
learning rates: activations are ``[R, B, n]``; a shared input ``[B, n]`` (the same minibatch for every
run) is multiplied in one GEMM against all R weight matrices at once.

Dense: ``s = x W^T + b`` (``W`` [R, out, in], ``b`` [R, out]). Normalizations have no trainable scale or
shift (NLC paper, appendix C). Batchnorm runs ``F.batch_norm`` on the ``[B, R * n]`` view of the stack:
one fused kernel for all runs (``notes/stacked-training.md``: 1.1-1.5x faster than hand-written
statistics; ``F.batch_norm`` straight on ``[R, B, n]`` would normalize over the wrong axis).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .activations import Activation

BN_MOMENTUM = 0.1
NORM_EPS = 1e-5
DTYPE = torch.float64


def stacked_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x W_r^T + b_r`` for every run r. ``x``: [R, B, in] or shared [B, in]; ``weight``: [R, out, in]."""
    R, out, fan_in = weight.shape
    if x.dim() == 2:
        # One GEMM [B, in] x [in, R*out] for all runs, then view as [R, B, out].
        y = (x @ weight.reshape(R * out, fan_in).T).view(x.shape[0], R, out).transpose(0, 1)
        return y if bias is None else y + bias.unsqueeze(1)
    if bias is None:
        return torch.bmm(x, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


class Dense(nn.Module):
    """A fully-connected layer ``s = W x + b``."""

    kind = "dense"

    def __init__(self, fan_in: int, fan_out: int, runs: int = 1):
        super().__init__()
        self.fan_in, self.fan_out = fan_in, fan_out
        self.weight = nn.Parameter(torch.empty(runs, fan_out, fan_in, dtype=DTYPE))
        self.bias = nn.Parameter(torch.empty(runs, fan_out, dtype=DTYPE))

    def forward(self, x):
        return stacked_linear(x, self.weight, self.bias)

    def roles(self) -> dict[str, str]:
        return {"weight": "weight", "bias": "bias"}


class BatchNorm(nn.Module):
    """Batch normalization without affine parameters; running statistics for evaluation."""

    def __init__(self, width: int, runs: int = 1):
        super().__init__()
        self.width = width
        self.register_buffer("running_mean", torch.zeros(runs, width, dtype=DTYPE))
        self.register_buffer("running_var", torch.ones(runs, width, dtype=DTYPE))
        self.track = True  # update running statistics in training mode (off inside ``frozen_statistics``)

    def forward(self, x):
        R, B, n = x.shape
        flat = x.transpose(0, 1).reshape(B, R * n)
        if self.training:
            rm = self.running_mean.view(-1) if self.track else None
            rv = self.running_var.view(-1) if self.track else None
            y = F.batch_norm(flat, rm, rv, training=True, momentum=BN_MOMENTUM, eps=NORM_EPS)
        else:
            y = F.batch_norm(flat, self.running_mean.view(-1), self.running_var.view(-1),
                             training=False, eps=NORM_EPS)
        return y.view(B, R, n).transpose(0, 1)


class LayerNorm(nn.Module):
    """Layer normalization without affine parameters (per example, over the features)."""

    def __init__(self, width: int):
        super().__init__()
        self.width = width

    def forward(self, x):
        return F.layer_norm(x, (self.width,), eps=NORM_EPS)


class ActivationLayer(nn.Module):
    """``c * tau(d s + t) + b`` element-wise (``study.activations.Activation``)."""

    def __init__(self, act: Activation):
        super().__init__()
        self.act = act
        act.constants  # computed (and cached) once per variant, at build time rather than in the first forward

    def forward(self, s):
        return self.act(s)

    def extra_repr(self):
        a = self.act
        c, b = a.constants
        return f"{a.name}, d={a.dilation}, t={a.shift}, c={c:.6g}, b={b:.6g}"
