"""Stacked layers: every parameter and buffer carries a leading runs dimension R.

One implementation serves a single network (R = 1) and the trainer's stack of R copies trained at R
learning rates: activations are ``[R, B, n]``; a shared input ``[B, n]`` (the same minibatch for every
run) is multiplied in one GEMM against all R weight matrices at once.

Dense: ``s = x W^T + b`` (``W`` [R, out, in], ``b`` [R, out]), or with input mean normalization
``s = (x - E[x]) W^T + b`` (Chen and Ge, *Neural Characteristic Activation Value Analysis*, eq. 16;
``centered``). Normalizations have no trainable scale or shift (NLC paper, appendix C).

Memory layout (a speed choice, invisible in shapes and values). An activation is the tensor [R, B, n]
every caller sees, but ``stacked_linear`` returns it on *feature-major* memory, [R, n, B] transposed
(strides (n B, 1, B)), because that is what the products ``W_r X_r^T`` give without any copy:

* shared input: ``W.reshape(R out, in) @ x^T`` is one GEMM whose [R out, B] result *is* the stack;
* per-run input: ``baddbmm(b, W, X^T)`` reads X^T (a free transpose of either layout) and writes
  [R, out, B] contiguously; the backward products read and write the same layout;
* batchnorm on that memory is ``F.batch_norm`` of the [1, R n, B] view (channels = R n, statistics over
  B): one fused kernel for all runs and no copy in either direction. On R-major memory the previous
  form (a [B, R n] copy of the stack) is kept as the fallback (``F.batch_norm`` straight on [R, B, n]
  would normalize over the wrong axis);
* element-wise ops (activations, skip additions, GmP radii) keep their input's layout.

Measured (CPU time per training step of 40 stacked runs, one thread, batch 250, dense batchnorm-relu
nets, best of 3 runs alternating old and new code on the shared 2-core machine, noise about 10%): the
[B, R n] copies were 10% of the step's profile (20k parameters); without them (and with the products
above) the step went from 96.7 to 65.1 ms (depth 3, 20k parameters), 110.6 to 79.6 (depth 9, 20k),
131.5 to 105.8 (depth 25, 20k), and stayed level at 1M parameters (1898 vs 2081 ms, within the noise:
there the products dominate). With the trainer's chunking and folded forward on top
(``study.training``): 64.0, 72.9, 96.9 and 1750 ms.
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
    """``x W_r^T + b_r`` for every run r. ``x``: [R, B, in] (either memory layout) or shared [B, in];
    ``weight``: [R, out, in]. Returns [R, B, out] on feature-major memory (see the module docstring)."""
    R, out, fan_in = weight.shape
    if x.dim() == 2:
        # One GEMM [R*out, in] x [in, B] for all runs; its [R*out, B] result is the stack, feature-major.
        w = weight.reshape(R * out, fan_in)
        y = w @ x.T if bias is None else torch.addmm(bias.reshape(R * out, 1), w, x.T)
        return y.view(R, out, x.shape[0]).transpose(1, 2)
    xt = x.transpose(1, 2)  # [R, in, B]
    if bias is None:
        return torch.bmm(weight, xt).transpose(1, 2)
    return torch.baddbmm(bias.unsqueeze(-1), weight, xt).transpose(1, 2)


def feature_major(x: torch.Tensor) -> bool:
    """Whether the [R, B, n] tensor ``x`` lies on feature-major memory ([R, n, B] contiguous)."""
    return x.dim() == 3 and x.transpose(1, 2).is_contiguous()


def centered(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Input mean normalization (Chen and Ge, eq. 16) of a layer with ``imn``: ``x - E[x]``, the batch mean in
    training (updating the layer's running mean with momentum ``BN_MOMENTUM`` unless ``track`` is off) and the
    running mean in evaluation; ``x`` itself for a layer without it. ``x``: [R, B, n] or shared [B, n]."""
    if not layer.imn:
        return x
    if layer.training:
        mean = x.mean(dim=-2)
        if layer.track:
            with torch.no_grad():
                layer.running_mean.lerp_(mean.detach(), BN_MOMENTUM)  # a shared input's [n] mean broadcasts
    else:
        mean = layer.running_mean
    return x - mean.unsqueeze(-2)


class Dense(nn.Module):
    """A fully-connected layer ``s = W x + b``, or ``s = W (x - E[x]) + b`` with ``imn`` (``centered``)."""

    kind = "dense"

    def __init__(self, fan_in: int, fan_out: int, runs: int = 1, imn: bool = False):
        super().__init__()
        self.fan_in, self.fan_out, self.imn = fan_in, fan_out, imn
        self.weight = nn.Parameter(torch.empty(runs, fan_out, fan_in, dtype=DTYPE))
        self.bias = nn.Parameter(torch.empty(runs, fan_out, dtype=DTYPE))
        if imn:
            self.register_buffer("running_mean", torch.zeros(runs, fan_in, dtype=DTYPE))
        self.track = True  # update the running mean in training mode (off inside ``frozen_statistics``)

    def centered(self, x):
        return centered(self, x)

    def forward(self, x):
        return stacked_linear(self.centered(x), self.weight, self.bias)

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
        if self.training:
            rm = self.running_mean.view(-1) if self.track else None
            rv = self.running_var.view(-1) if self.track else None
            args = dict(training=True, momentum=BN_MOMENTUM, eps=NORM_EPS)
        else:
            rm, rv = self.running_mean.view(-1), self.running_var.view(-1)
            args = dict(training=False, eps=NORM_EPS)
        if feature_major(x):
            # [1, R*n, B]: channel (r, j) over the batch, no copy either way
            y = F.batch_norm(x.transpose(1, 2).view(1, R * n, B), rm, rv, **args)
            return y.view(R, n, B).transpose(1, 2)
        y = F.batch_norm(x.transpose(0, 1).reshape(B, R * n), rm, rv, **args)
        return y.view(B, R, n).transpose(0, 1)


class LayerNorm(nn.Module):
    """Layer normalization without affine parameters (per example, over the features)."""

    def __init__(self, width: int):
        super().__init__()
        self.width = width

    def forward(self, x):
        return F.layer_norm(x, (self.width,), eps=NORM_EPS)


class ActivationLayer(nn.Module):
    """``c * tau(d s + t) + b`` element-wise (``study.nn.activations.Activation``)."""

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
