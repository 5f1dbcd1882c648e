"""The nonlinearity coefficient and the output bias (NLC paper, sections 2, 3 and G).

    NLC(f, D) = Q_x |J(x)|_F * Q_i S_x x(i) / (sqrt(d_out) * Q_j S_x f(x, j))          (Definition 1)
    bias(f, D) = Q_{x,j} f(x, j) / Q_j S_x f(x, j)                                     (B.2; "high" > 1000)

Q is the quadratic mean, S the standard deviation over the data. Section G's batchnorm form is used
for every network (it equals the plain form when no batchnorm is present):

* Q_x |J(x)|_F is replaced by Q_X |J(X)|_F / sqrt(b) and estimated stochastically: for each of
  ``batches`` random minibatches X of b = ``batch_size`` inputs, a unit-Gaussian matrix U is clamped at
  the output and back-propagated; |U J(X)|^2 / b, i.e. |grad_X <U, f(X)>|_F^2 / b, has expectation
  |J(X)|_F^2 / b (section G's proposition).
* S_x f(x, j) is taken over one pass through the data in minibatches of b ("dividing the dataset once
  into minibatches of size 250 and then taking the standard deviation of all output activation values
  observed during this single pass"), the rows in one fixed seeded permutation (``network.minibatches``)
  so a split stored in order still gives iid batches; S_x x(i) exactly over the data.

Networks run with batch statistics and their running statistics untouched (``frozen_statistics``).
A stacked network (outputs [R, B, d_out]) gets one value per run; every run sees the same minibatches
and the same Gaussian matrices (common random numbers).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Callable, cast

import torch
from torch import nn

from ..nn.network import frozen_statistics, minibatches, rows_of
from ..experiment.schema import HIGH_BIAS
from .registry import Measuring, measures


@dataclass(frozen=True)
class NLCParts:
    """The NLC and its factors; tensors of shape [R] for a stacked network, floats otherwise."""

    nlc: float | torch.Tensor
    jacobian_q: float | torch.Tensor  # Q_x |J(x)|_F (batch form)
    input_sd_q: float  # Q_i S_x x(i)
    output_sd_q: float | torch.Tensor  # Q_j S_x f(x, j) (batch form)
    output_q: float | torch.Tensor  # Q_{x,j} f(x, j)
    bias: float | torch.Tensor  # output_q / output_sd_q


def batch_mode(f):
    """Batch statistics for a module, its running statistics untouched (section G); a plain callable as is."""
    return frozen_statistics(f) if isinstance(f, nn.Module) else contextlib.nullcontext(f)


def _as_output(out: torch.Tensor) -> float | torch.Tensor:
    return float(out) if out.dim() == 0 else out.detach()


def input_sd_q(x: torch.Tensor) -> float:
    """Q_i S_x x(i) = sqrt(mean_i Var_x x(i)) (population variance over the rows of ``x``)."""
    return float(torch.sqrt(x.var(dim=0, unbiased=False).mean()))


@torch.no_grad()
def output_moments(f: Callable, x: torch.Tensor, batch_size: int = 250) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(Q_j S_x f(x, j), Q_{x,j} f(x, j), d_out) from one pass in minibatches (per run for a stack).

    The variance is accumulated with the pairwise update of Chan, Golub and LeVeque (*Updating Formulae and a Pairwise
    Algorithm for Computing Sample Variances*, 1979) of (count, mean, sum of squared
    deviations), never as E[f^2] - E[f]^2: that difference cancels catastrophically for the high-bias
    outputs the study flags (relative error ~1e-16 * bias^2, i.e. garbage from a bias of ~1e8 on)."""
    count, mean, m2, sq = 0, None, None, None
    with batch_mode(f):
        for rows in minibatches(x.shape[0], batch_size):
            out = f(rows_of(x, rows))
            nb = out.shape[-2]
            mb = out.mean(dim=-2)  # [.., d_out]
            m2b = ((out - mb.unsqueeze(-2)) ** 2).sum(dim=-2)
            sqb = (out * out).sum(dim=-2)
            if mean is None:
                count, mean, m2, sq = nb, mb, m2b, sqb
                continue
            delta = mb - mean
            total = count + nb
            mean = mean + delta * (nb / total)
            m2 = m2 + m2b + delta * delta * (count * nb / total)
            sq = sq + sqb
            count = total
    # x holds rows: the first minibatch set the sums
    mean, m2, sq = cast(torch.Tensor, mean), cast(torch.Tensor, m2), cast(torch.Tensor, sq)
    var, second = m2 / count, sq / count
    return torch.sqrt(var.mean(dim=-1)), torch.sqrt(second.mean(dim=-1)), mean.shape[-1]


def jacobian_q(
    f: Callable, x: torch.Tensor, batches: int = 100, batch_size: int = 250, seed: int = 0, runs: int | None = None
) -> torch.Tensor:
    """Q_X |J(X)|_F / sqrt(b) by back-propagating unit-Gaussian matrices (section G); [R] for a stack."""
    gen = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    b = min(batch_size, n)
    total = None
    with batch_mode(f):
        for _ in range(batches):
            idx = torch.randperm(n, generator=gen)[:b].to(x.device)
            xb = x.index_select(0, idx)
            if runs is not None:
                xb = xb.expand(runs, *xb.shape).clone()  # a leaf per run: an expanded input would sum runs
            xb.requires_grad_(True)
            with torch.enable_grad():
                out = f(xb)
                u = torch.randn(out.shape[-2:], generator=gen, dtype=out.dtype).to(out.device)
                (g,) = torch.autograd.grad((out * u).sum(), xb)
            sq = (g * g).sum(dim=(-2, -1)) / b
            total = sq if total is None else total + sq
    return torch.sqrt(cast(torch.Tensor, total) / batches)  # batches >= 1 were summed


def nlc_parts(f: Callable, x: torch.Tensor, batches: int = 100, batch_size: int = 250, seed: int = 0) -> NLCParts:
    """The NLC of ``f`` on inputs ``x`` with all its factors (see the module docstring)."""
    runs = getattr(f, "runs", 1)
    q_j = jacobian_q(f, x, batches, batch_size, seed, runs if runs > 1 else None)
    sd_out, q_out, d_out = output_moments(f, x, batch_size)
    sd_in = input_sd_q(x)
    value = q_j * sd_in / (math.sqrt(d_out) * sd_out)
    return NLCParts(
        _as_output(value), _as_output(q_j), sd_in, _as_output(sd_out), _as_output(q_out), _as_output(q_out / sd_out)
    )


def nlc(f: Callable, x: torch.Tensor, batches: int = 100, batch_size: int = 250, seed: int = 0):
    """NLC(f, x) (Definition 1, batch form of section G); ``nlc_parts`` gives its factors too."""
    return nlc_parts(f, x, batches, batch_size, seed).nlc


def output_bias(f: Callable, x: torch.Tensor, batch_size: int = 250):
    """Q_{x,j} f(x, j) / Q_j S_x f(x, j) (NLC paper B.2); above ``study.experiment.schema.HIGH_BIAS`` the study
    flags it."""
    sd_out, q_out, _ = output_moments(f, x, batch_size)
    return _as_output(q_out / sd_out)


@measures(
    "nlc", "nlc_jacobian_q", "nlc_input_sd_q", "nlc_output_sd_q", "bias", "output_q", "high_bias", "c_out", stream=None
)  # its draws: the NLC pass ``measure`` makes first (``Measuring.nlc``, ``nlc_seed``)
def measure_nlc(m: Measuring, seed: None) -> dict:
    """The row's NLC columns (section G's batch form on the training set), the output bias, ``high_bias``
    (above ``HIGH_BIAS``; an infinite bias, i.e. a constant output, counts as high) and ``c_out``, the
    trainer's output scale (= ``output_q``), from the NLC pass."""
    p = m.nlc
    return {
        "nlc": p.nlc,
        "nlc_jacobian_q": p.jacobian_q,
        "nlc_input_sd_q": p.input_sd_q,
        "nlc_output_sd_q": p.output_sd_q,
        "bias": p.bias,
        "output_q": p.output_q,
        "high_bias": bool(p.bias > HIGH_BIAS),
        "c_out": p.output_q,
    }
