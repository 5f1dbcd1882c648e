"""A hidden layer's epilogue, its normalization and activation, as one compiled function (the fused epilogue).

In the trainer's folded forward (``Network.propagate(fold=True)``, ``study.training.stack``) a hidden layer with
batch or layer normalization computes, after its linear op ``s``,

    y = c' tau( gamma (s - mu) / sqrt(sigma^2 + eps) + beta ) + b'

with mu, sigma^2 the statistics of each batchnorm channel over the minibatch (Ioffe and Szegedy, *Batch
Normalization*, Algorithm 1), or of each example over the layer's features (Ba, Kiros and Hinton, *Layer
Normalization*, eq. 4), biased as both papers write them; gamma, beta the activation's dilation and shift folded
into the normalization's affine (``Activation.norm_affine``), and c', b' what is left of the activation's
constants (``Activation.after_affine``; NLC paper, appendix C). A tracking batchnorm also moves its running
statistics, ``mu_run <- (1 - m) mu_run + m mu`` and ``var_run <- (1 - m) var_run + m sigma^2 B / (B - 1)`` (the
unbiased variance, as ``torch.nn.functional.batch_norm`` does).

Eagerly that is the normalization's kernel and one to three element-wise kernels forward, and as many backward,
each a pass over the [R, B, n] activations: at the paper's 1M-parameter nets these passes, not the products, took
most of a GPU step's time beyond its matrix products (docs/performance.md). Here the same formula is one function
compiled by inductor: forward, the statistics and the output of each row (a channel, or an example) from one read
of ``s``; backward, which AOTAutograd derives from the same trace, one more. The function is compiled per
activation base and normalization, dynamic in the rows, so one compile serves every width, depth and stack size
of a process (and inductor's on-disk caches serve later processes); the constants are tensors, so no value of a
dilation, shift or constant compiles again.

What is computed is the eager function, only with other kernels: the round-off differs (tests compare the two,
values, gradients and running statistics). ``fused`` returns None where the epilogue does not apply (no
normalization, a batchnorm in evaluation mode or with frozen statistics): the caller then runs the eager ops.
"""

from __future__ import annotations

import types
from typing import Callable

import torch

from .activations import Activation
from .layers import BN_MOMENTUM, NORM_EPS, BatchNorm, LayerNorm


def _batch_epilogue(s, running_mean, running_var, unbias, scale, shift, c, b, tau=torch.relu):
    """Batchnorm with running statistics, then the activation: ``s`` [C, B] holds one channel per row; ``unbias``
    is B / (B - 1), a float64 tensor: a factor computed from a symbolic size inside the graph would reach a Triton
    kernel as a float32 argument (seen on an H200: running variances off by 1e-8 once the batch size changed)."""
    var, mean = torch.var_mean(s, dim=1, correction=0)
    with torch.no_grad():
        running_mean.mul_(1.0 - BN_MOMENTUM).add_(mean, alpha=BN_MOMENTUM)
        running_var.mul_(1.0 - BN_MOMENTUM).add_(var * unbias, alpha=BN_MOMENTUM)
    z = (s - mean.unsqueeze(1)) * (torch.rsqrt(var + NORM_EPS).unsqueeze(1) * scale) + shift
    return c * tau(z) + b


def _batch_eval_epilogue(s, running_mean, running_var, scale, shift, c, b, tau=torch.relu):
    """Batchnorm in evaluation mode (its running statistics), then the activation: ``s`` [C, B], a channel per row."""
    z = (s - running_mean.unsqueeze(1)) * (torch.rsqrt(running_var + NORM_EPS).unsqueeze(1) * scale) + shift
    return c * tau(z) + b


def _layer_epilogue(s, scale, shift, c, b, tau=torch.relu):
    """Layer normalization, then the activation: ``s`` [R, n, B], each example's features along dim 1."""
    var, mean = torch.var_mean(s, dim=1, keepdim=True, correction=0)
    z = (s - mean) * (torch.rsqrt(var + NORM_EPS) * scale) + shift
    return c * tau(z) + b


TEMPLATES = {"batch": _batch_epilogue, "batch-eval": _batch_eval_epilogue, "layer": _layer_epilogue}


def variant(norm: str, base: str) -> Callable:
    """The epilogue of normalization ``norm`` ("batch" or "layer") with activation base ``base``'s tau bound, as a
    function with its own code object: dynamo keeps compiled graphs per code object, so each variant has its own
    cache (and recompile limit) instead of ten activations sharing one."""
    template = TEMPLATES[norm]
    name = f"{norm}_{base}_epilogue"
    code = template.__code__.replace(co_name=name)
    return types.FunctionType(code, template.__globals__, name, (Activation(base).tau,), template.__closure__)


_COMPILED: dict[tuple[str, str, str], Callable] = {}  # (normalization, activation base, backend) -> compiled


def epilogue_function(norm: str, base: str, backend: str = "inductor") -> Callable:
    """``variant(norm, base)`` through ``torch.compile`` (``backend``: inductor; tests also use a cheaper one),
    made once per process."""
    key = (norm, base, backend)
    if key not in _COMPILED:
        _COMPILED[key] = torch.compile(variant(norm, base), backend=backend)
    return _COMPILED[key]


def constants(norm, values: tuple[float, ...], like: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``values`` as 0-d tensors of ``like``'s dtype and device, made once per value and kept on the
    normalization (``norm.constants``, beside the eager affine's tensors): a step creates none."""
    cache = norm.constants
    out = []
    for v in values:
        key = ("epilogue", v, like.dtype, like.device)
        t = cache.get(key)
        if t is None:
            t = cache[key] = torch.tensor(v, dtype=like.dtype, device=like.device)
        out.append(t)
    return tuple(out)


def fused(
    norm,
    s: torch.Tensor,
    gamma: float | None,
    beta: float | None,
    act: Activation,
    act_constants: tuple[float, float],
    backend: str = "inductor",
) -> torch.Tensor | None:
    """The layer's normalization (affine ``gamma``, ``beta``; None: 1 and 0) and what is left of the activation
    (``Activation.after_affine`` with ``act_constants``) on ``s`` [R, B, n] as one compiled function; None where
    it does not apply (the caller runs ``norm.normalize`` and ``act.after_affine``). The result is [R, B, n] on
    ``s``'s feature-major memory."""
    kind = epilogue_of(norm)
    if kind is None or not (s.dim() == 3 and s.transpose(1, 2).is_contiguous()):
        return None
    R, B, n = s.shape
    c, b = act_constants
    c = 1.0 if act.homogeneous else c  # a homogeneous tau's c is in gamma and beta (``Activation.norm_affine``)
    scalars = constants(norm, (1.0 if gamma is None else gamma, 0.0 if beta is None else beta, c, b), s)
    function = epilogue_function(kind, act.name, backend)
    if kind == "layer":
        rows = s.transpose(1, 2)  # [R, n, B]: each example's features along dim 1
        for dim in range(3):
            torch._dynamo.maybe_mark_dynamic(rows, dim)
        return function(rows, *scalars).transpose(1, 2)
    rows = s.transpose(1, 2).view(R * n, B)  # a channel per row
    rm, rv = norm.running_mean.view(-1), norm.running_var.view(-1)
    for t in (rows, rm, rv):
        torch._dynamo.maybe_mark_dynamic(t, 0)
    if kind == "batch-eval":  # evaluation chunks differ in size too
        torch._dynamo.maybe_mark_dynamic(rows, 1)
        return function(rows, rm, rv, *scalars).view(R, n, B).transpose(1, 2)
    (unbias,) = constants(norm, (B / (B - 1),), s)
    return function(rows, rm, rv, unbias, *scalars).view(R, n, B).transpose(1, 2)


def epilogue_of(norm) -> str | None:
    """Which epilogue a normalization module has: "batch" (training, tracking its statistics), "batch-eval"
    (evaluation mode), "layer", or None (no normalization, or a batchnorm whose statistics are frozen)."""
    if isinstance(norm, LayerNorm):
        return "layer"
    if isinstance(norm, BatchNorm):
        return "batch" if norm.tracks else "batch-eval" if not norm.training else None
    return None
