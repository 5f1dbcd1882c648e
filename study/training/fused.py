"""The training forward: the function ``Network.forward`` computes, with fewer passes over [R, B, n].

The trainer's time goes to the matrix products and to element-wise passes over the activations of the
stack (as measured when the trainer was prototyped). Around a normalization, three of those passes are
foldable without changing the function (only the rounding):

* the bias of a linear op followed by batchnorm (Dense b, GmP lambda, Householder b) cancels in the
  normalized output, ``BN(s + b) = BN(s)``; it only shifts the running mean. In training mode it is left
  out of the product and added to the running mean instead:
  ``(1 - m) mu + m (mean(s) + b) = [(1 - m) mu + m mean(s)] + m b``. Its gradient is exactly zero (the
  reference forward gives round-off noise of about 1e-17), so the optimizer leaves it unchanged;
* the activation's dilation and shift, and for positively homogeneous tau (relu, abs, linear:
  ``c tau(u) = tau(c u)``, c > 0) also its scale, become the affine weight and bias of ``F.batch_norm`` /
  ``F.layer_norm``: ``c tau(d y + t) = tau(c d y + c t)``, computed inside the normalization kernel;
* what is left is tau itself (and ``* c`` for the other activations, ``+ b`` when debiased).

Not folded where a skip connection starts after the linear op (the start value includes the bias) or
after the norm op (it is the unscaled norm output), nor in evaluation mode (where the bias does not
cancel). Everything else is ``Network.forward`` step by step. ``Network.forward`` itself is untouched:
forward hooks, intermediate values and any caller outside the trainer see the reference computation.
Tests compare the two on sampled architectures (outputs, gradients, running statistics).

Per hidden layer with batchnorm and relu, the passes over the activations go from 10 per step (bias
broadcast, norm 2, relu, * c; backward: * c, relu mask, norm 2, bias gradient) to 6. Measured (CPU time
per step of 40 stacked runs, one thread, batch 250, chunked, best of 3 alternating runs; noise ~10%):
depth 9, 20k parameters 80.2 -> 72.9 ms; depth 25, 20k: 130.0 -> 96.9 ms; 1M parameters 2024 -> 1750 ms.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..nn.gmp import GmP
from ..nn.householder import Householder, reflect
from ..nn.layers import BN_MOMENTUM, NORM_EPS, BatchNorm, LayerNorm, feature_major, stacked_linear
from ..nn.network import Network

HOMOGENEOUS = frozenset({"relu", "abs", "linear"})  # tau(k u) = k tau(u) for k > 0


def _linear(linear, h: torch.Tensor, with_bias: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The linear op, with or without its bias; returns (s, bias)."""
    if isinstance(linear, GmP):
        return stacked_linear(linear.centered(h), linear.direction(), linear.lam if with_bias else None), linear.lam
    if isinstance(linear, Householder):
        s = reflect(h, linear.u)
        return (s + linear.bias.unsqueeze(1) if with_bias else s), linear.bias
    return stacked_linear(linear.centered(h), linear.weight, linear.bias if with_bias else None), linear.bias


def _affine(value: float, size: int, like: torch.Tensor) -> torch.Tensor | None:
    return None if value is None else torch.full((size,), value, dtype=like.dtype, device=like.device)


def _batch_norm(norm: BatchNorm, s: torch.Tensor, folded_bias: torch.Tensor | None, gamma, beta) -> torch.Tensor:
    R, B, n = s.shape
    weight, bias = _affine(gamma, R * n, s), _affine(beta, R * n, s)
    track = norm.training and norm.track
    if track and folded_bias is not None:
        # The update below makes mu (1 - m) mu + m mean(s); with mu + m b / (1 - m) first, the result is
        # (1 - m) mu + m (mean(s) + b). (Not after: batch_norm's backward reads the buffer's version.)
        with torch.no_grad():
            norm.running_mean.add_(folded_bias.detach(), alpha=BN_MOMENTUM / (1.0 - BN_MOMENTUM))
    rm = norm.running_mean.view(-1) if track or not norm.training else None
    rv = norm.running_var.view(-1) if track or not norm.training else None
    if feature_major(s):
        y = F.batch_norm(s.transpose(1, 2).view(1, R * n, B), rm, rv, weight, bias, norm.training, BN_MOMENTUM,
                         NORM_EPS).view(R, n, B).transpose(1, 2)
    else:
        y = F.batch_norm(s.transpose(0, 1).reshape(B, R * n), rm, rv, weight, bias, norm.training, BN_MOMENTUM,
                         NORM_EPS).view(B, R, n).transpose(0, 1)
    return y


def forward(net: Network, x: torch.Tensor, constants: tuple[float, float] | None = None) -> torch.Tensor:
    """``net(x)`` as [R, B, d_out] (also for R = 1), computed with the folds of the module docstring.

    ``constants``: the activation's (c, b) when the caller has them (``study.training.compiled`` passes
    them: ``torch.compile`` cannot trace the cached quadrature that ``Activation.constants`` runs)."""
    spec = net.spec
    act = net.act
    c, b_act = act.constants if constants is None else constants
    d, t = act.dilation, act.shift
    homogeneous = act.name in HOMOGENEOUS
    skip_from = {s.start: s for s in spec.skips()}
    skip_to = {s.end: s for s in spec.skips()}
    strength = spec.skip_strength
    h, start = x, None
    for l, (linear, norm) in enumerate(zip(net.linears, net.norms), start=1):
        last = l == spec.depth
        skip = skip_from.get(l)
        bn, ln = isinstance(norm, BatchNorm), isinstance(norm, LayerNorm)
        fold_bias = bn and net.training and not (skip is not None and skip.at == "linear")
        s, bias = _linear(linear, h, with_bias=not fold_bias)
        if l in skip_to:
            carried = net._project(start) if skip_to[l].project else start
            s = s + carried if strength == 1.0 else s + strength * carried
        if skip is not None and skip.at == "linear":
            start = s
        fold_act = (bn or ln) and not last and not (skip is not None and skip.at == "norm")
        k = c if (fold_act and homogeneous) else 1.0
        gamma = None if not fold_act or k * d == 1.0 else k * d
        beta = None if not fold_act or t == 0.0 else k * t
        if bn:
            s = _batch_norm(norm, s, bias if fold_bias else None, gamma, beta)
        elif ln:
            n = s.shape[-1]
            s = F.layer_norm(s, (n,), _affine(gamma, n, s), _affine(beta, n, s), NORM_EPS)
        if skip is not None and skip.at == "norm":
            start = s
        if last:
            h = s
            break
        if fold_act:
            y = act.tau(s)
            if not homogeneous and c != 1.0:
                y = y * c
            if b_act != 0.0:
                y = y + b_act
        else:  # net.activation(s), with the constants at hand (Activation.__call__ step by step)
            y = act.inner(s)
            if c != 1.0:
                y = y * c
            if b_act != 0.0:
                y = y + b_act
        h = linear.scale(y) if isinstance(linear, GmP) else y
    return h
