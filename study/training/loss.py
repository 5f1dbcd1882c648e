"""The training loss of a stack and the classification errors that drive the schedule.

Loss (``Protocol.loss``). ``cross_entropy`` (NLC paper appendix C's output-scale
normalization): run r's loss on a minibatch is the mean cross-entropy of softmax(f_r(x) / c_out), with c_out =
Q_{x,j} f(x, j) of the initial network on the training set, fixed for the whole training (one per run
when the runs start from different initializations). ``mse``: the mean over the minibatch and the d_out
outputs of (f_rj(x) - t_j)^2, t the one-hot label (d_out >= 2) or the label itself, 0 or 1, for one
output (Yu and Zhang, *Householder-Absolute Neural Layers*, section 3.1; ``study.experiment.protocol``). The stack
minimizes

    L = sum_r loss_r

so that dL/dW_r = d(loss_r)/dW_r: each run's gradient is its own, at its own learning rate (a mean over
runs would divide every rate by R). L is NaN as soon as one run's loss is; nothing is ever decided on
it, only on the per-run losses.

Errors: the fraction of examples whose predicted class is not the label, with the network in evaluation
mode (batchnorm's running statistics, GmP's running input means). The predicted class is the one whose
target is nearest to the output: the arg-max (for cross-entropy, and for one-hot mse targets, since
|f - e_j|^2 = |f|^2 - 2 f_j + 1), or f > 1/2 for one mse output. An example whose output is not finite
counts as an error, whatever the rule would say.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# Rows per evaluation chunk: about this many activations of the widest layer, by device type (a speed knob only:
# the errors are the same whatever the chunk). Measured with ``archstudy bench --kernels`` (docs/performance.md):
# on a CPU 2^22 keeps a chunk's activations near the caches; on a GPU 2^24 fills the device (2^22 left it idle).
EVAL_ELEMENTS = 1 << 22
CUDA_EVAL_ELEMENTS = 1 << 24


def eval_elements(device_type: str) -> int:
    """The evaluation's chunk, in activations, on a device of ``device_type`` ("cpu", "cuda", ...)."""
    return CUDA_EVAL_ELEMENTS if device_type == "cuda" else EVAL_ELEMENTS


def stack_output(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The stack's output as [R, B, d_out] (a network with one run returns [B, d_out])."""
    out = net(x)
    return out.unsqueeze(0) if out.dim() == 2 else out


def targets(y: torch.Tensor, d_out: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The mse targets of labels ``y`` [B]: one-hot [B, d_out], or the label itself [B, 1] for one output."""
    if d_out == 1:
        return y.to(dtype).unsqueeze(-1)
    return F.one_hot(y, d_out).to(dtype)


def run_losses(out: torch.Tensor, y: torch.Tensor, c_out, loss: str = "cross_entropy") -> torch.Tensor:
    """Each run's loss on the minibatch: [R] from ``out`` [R, B, C] and ``y`` [B]. Cross-entropy of
    softmax(out / c_out), ``c_out`` a number or one per run ([R]); mse against ``targets`` (c_out unused)."""
    R, B, C = out.shape
    if loss == "mse":
        d = out - targets(y, C, out.dtype)
        return (d * d).mean(dim=(1, 2))
    scale = c_out.view(R, 1, 1) if isinstance(c_out, torch.Tensor) else c_out
    logp = F.log_softmax(out / scale, dim=-1)
    return -logp.gather(-1, y.expand(R, B).unsqueeze(-1)).squeeze(-1).mean(dim=1)


def predictions(out: torch.Tensor, loss: str = "cross_entropy") -> torch.Tensor:
    """The predicted class of every output row [..., C]: the class of the nearest target (module docstring)."""
    if loss == "mse" and out.shape[-1] == 1:
        return (out[..., 0] > 0.5).long()
    return out.argmax(dim=-1)


@torch.no_grad()
def errors(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    width: int,
    runs: int,
    loss: str = "cross_entropy",
    elements: int | None = None,
    forward=None,
) -> torch.Tensor:
    """Classification error of every run of ``net`` on (x, y), evaluation mode: float64 [R] on x's device.

    ``width`` is the widest layer (for the chunk size: chunks of about ``elements`` activations of it, default
    ``eval_elements`` of the device; the bench measures other sizes, ``study.perf.projection.eval_times``);
    ``loss`` decides the predicted class (``predictions``); the mode of ``net`` is restored. ``forward(net, x)``:
    the evaluation's forward, [R, B, d_out] (default ``net``'s own)."""
    was_training = net.training
    net.eval()
    try:
        elements = eval_elements(x.device.type) if elements is None else elements
        rows = max(1, elements // (runs * max(width, 1)))
        wrong = torch.zeros(runs, dtype=torch.float64, device=x.device)
        for i in range(0, x.shape[0], rows):
            out = stack_output(net, x[i : i + rows]) if forward is None else forward(net, x[i : i + rows])
            bad = (predictions(out, loss) != y[i : i + rows]) | ~torch.isfinite(out).all(dim=-1)
            wrong += bad.sum(dim=1)
        return wrong / x.shape[0]
    finally:
        net.train(was_training)
