"""The loss the study trains with, and the gradient-size confounders of NLC paper section 6.

The loss (section 2 and appendix C): softmax + cross-entropy of the output divided by the fixed output
scale c_out = Q_{x,j} f(x, j) measured on the training set at initialization,

    l(x, y) = -log softmax(f(x) / c_out)[y].

Section 6 "Gradient vector component size" paraphrases the metric of Schoenholz, Gilmer, Ganguli and
Sohl-Dickstein, *Deep Information Propagation* (2017) as

    GVCS = Q_{i,x} dl/dx(i),

and compares it with the "gradient vector length" of He, Zhang, Ren and Sun, *Delving Deep into Rectifiers*
(2015). Which gradient the length is of, the paper does not write down; it does say that the length, unlike
GVCS, is *not* confounded by duplicating every input dimension c times (first-layer weights / sqrt(c)).
That holds for the input gradient, whose c-fold components each shrink by sqrt(c), and fails for the
parameter gradient, whose first-layer part grows by sqrt(c). So, as the paper's argument requires, both are
of the input gradient:

    grad_length = Q_x |dl/dx|_2,

which is sqrt(d_in) * GVCS on the same examples (so within one dataset the two rank architectures
identically; across datasets they differ). The parameter gradient has its own column, ``grad_norm``
(``study.metrics.proxies``).

Both are measured at initialization on ``batches`` random minibatches of the training set, with batch
statistics (section G's batch form; running statistics untouched): the batch loss is the *sum* of the
per-example losses, so that row b of its gradient with respect to the batch X is dl(x_b)/dx_b (exactly,
without batchnorm; in batchnorm's batch form otherwise).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from .nlc import batch_mode
from .registry import Measuring, measures


def scaled_cross_entropy(
    out: torch.Tensor, y: torch.Tensor, c_out: float = 1.0, reduction: str = "mean"
) -> torch.Tensor:
    """Softmax cross-entropy of ``out / c_out`` against labels ``y`` (the study's training loss)."""
    if out.dim() != 2:
        raise ValueError(
            f"output has shape {tuple(out.shape)}: the loss takes one network's [B, d_out] "
            "(for a stack, measure net.select(k))"
        )
    return F.cross_entropy(out / c_out, y, reduction=reduction)


def input_gradients(
    f: Callable,
    x: torch.Tensor,
    y: torch.Tensor,
    c_out: float = 1.0,
    batches: int = 10,
    batch_size: int = 250,
    seed: int = 0,
) -> torch.Tensor:
    """dl/dx for the examples of ``batches`` random minibatches of (x, y): a [batches * b, d_in] tensor."""
    gen = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    b = min(batch_size, n)
    rows = []
    with batch_mode(f):
        for _ in range(batches):
            idx = torch.randperm(n, generator=gen)[:b].to(x.device)
            xb = x.index_select(0, idx).requires_grad_(True)
            with torch.enable_grad():
                loss = scaled_cross_entropy(f(xb), y.index_select(0, idx), c_out, reduction="sum")
                (g,) = torch.autograd.grad(loss, xb)
            rows.append(g.detach())
    return torch.cat(rows)


def gvcs_of(g: torch.Tensor) -> float:
    """Q_{i,x} g(x, i) of per-example input gradients ``g`` [N, d_in]."""
    return float(torch.sqrt((g * g).mean()))


def grad_length_of(g: torch.Tensor) -> float:
    """Q_x |g(x)|_2 of per-example input gradients ``g`` [N, d_in]."""
    return float(torch.sqrt((g * g).sum(dim=1).mean()))


def gvcs(
    f: Callable,
    x: torch.Tensor,
    y: torch.Tensor,
    c_out: float = 1.0,
    batches: int = 10,
    batch_size: int = 250,
    seed: int = 0,
) -> float:
    """GVCS = Q_{i,x} dl/dx(i) (NLC paper section 6), see the module docstring."""
    return gvcs_of(input_gradients(f, x, y, c_out, batches, batch_size, seed))


def grad_length(
    f: Callable,
    x: torch.Tensor,
    y: torch.Tensor,
    c_out: float = 1.0,
    batches: int = 10,
    batch_size: int = 250,
    seed: int = 0,
) -> float:
    """Gradient vector length Q_x |dl/dx|_2 (NLC paper section 6), see the module docstring."""
    return grad_length_of(input_gradients(f, x, y, c_out, batches, batch_size, seed))


def finite_or_nan(value) -> float:
    """``float(value)``, or NaN where it is not finite (the store's convention for "not measurable")."""
    v = float(value)
    return v if math.isfinite(v) else math.nan


@measures("gvcs", "grad_length", stream=1)
def measure_gradients(m: Measuring, seed: int) -> dict:
    """GVCS and gradient length of the loss' input gradient over ``gradient_batches`` training minibatches."""
    g = input_gradients(m.net, m.x, m.y, m.c_out, m.options.gradient_batches, m.batch_size, seed)
    return {"gvcs": gvcs_of(g), "grad_length": grad_length_of(g)}
