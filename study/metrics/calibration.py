"""A pointwise function from a network with batch statistics.

A batchnorm network (and a network with input mean normalization, Chen and Ge eq. 16) computes f(X)
jointly for a minibatch: in batch mode it has no value at a single point x. Metrics that need one (the
variability, evaluated on a grid that is not a sample of the data) use an evaluation-mode copy whose
running statistics are the data's own, measured exactly rather than as a momentum average:

    running_mean = mean over minibatches of the batch mean of the layer input,
    running_var  = mean over minibatches of the (biased) batch variance of the layer input,

each minibatch propagated in batch mode (section G's batch form), in the same minibatches of 250 (one
fixed seeded permutation of the rows) as the NLC's output statistics. The biased variance is the one
batch mode divides by, so each layer of the copy normalizes as the batch-mode network does on a typical
minibatch ("precise batchnorm" statistics). The network itself is never touched.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from ..nn.network import frozen_statistics, minibatches, rows_of


def has_batch_statistics(net: nn.Module) -> bool:
    """Whether some layer of ``net`` normalizes with statistics of the batch (batchnorm, IMN)."""
    return any(_batch_statistics(m) for m in net.modules())


def _batch_statistics(m: nn.Module) -> tuple[str, ...]:
    """The running statistics of its input a layer keeps, as it declares them (``input_statistics``): ("mean",
    "var") for batchnorm, ("mean",) for a layer with input mean normalization, () for any other module."""
    return getattr(m, "input_statistics", ())


@torch.no_grad()
def calibrated(net: nn.Module, x: torch.Tensor, batch_size: int = 250) -> nn.Module:
    """An evaluation-mode deep copy of ``net`` whose running statistics are measured on ``x`` (see above)."""
    twin = copy.deepcopy(net)
    layers = [m for m in twin.modules() if _batch_statistics(m)]
    # layer (a module with running statistics, ``_batch_statistics``) -> examples, sum of b*mean, sum of b*var
    sums: dict[Any, list[Any]] = {m: [0, 0.0, 0.0] for m in layers}

    def hook(module, args):
        h = args[0]  # [R, B, n]
        b = h.shape[-2]
        acc = sums[module]
        acc[0] += b
        acc[1] = acc[1] + b * h.mean(dim=-2)
        if "var" in module.input_statistics:
            acc[2] = acc[2] + b * h.var(dim=-2, unbiased=False)

    handles = [m.register_forward_pre_hook(hook) for m in layers]
    try:
        with frozen_statistics(twin):
            for rows in minibatches(x.shape[0], batch_size):
                twin(rows_of(x, rows))
    finally:
        for h in handles:
            h.remove()
    for m, (count, s_mean, s_var) in sums.items():
        if count:
            m.running_mean.copy_(s_mean / count)
            if "var" in m.input_statistics:
                m.running_var.copy_(s_var / count)
    return twin.eval()
