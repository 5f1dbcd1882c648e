"""The training loss of a stack and the classification errors that drive the schedule.

Loss (NLC paper appendix C's output-scale normalization): run r's loss on a minibatch is the mean
cross-entropy of softmax(f_r(x) / c_out), with c_out = Q_{x,j} f(x, j) of the initial network on
the training set, fixed for the whole training. The stack minimizes

    L = sum_r mean_b CE(f_r(x_b) / c_out, y_b)

so that dL/dW_r = d(loss_r)/dW_r: each run's gradient is its own, at its own learning rate (a mean over
runs would divide every rate by R). L is NaN as soon as one run's loss is; nothing is ever decided on
it, only on the per-run losses.

Errors: the fraction of examples whose arg-max output is not the label, with the network in evaluation
mode (batchnorm's running statistics, GmP's running input means). An example whose output is not
finite counts as an error, whatever arg-max would say.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

EVAL_ELEMENTS = 1 << 22  # rows per evaluation chunk: about this many activations of the widest layer


def stack_output(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The stack's output as [R, B, d_out] (a network with one run returns [B, d_out])."""
    out = net(x)
    return out.unsqueeze(0) if out.dim() == 2 else out


def run_losses(out: torch.Tensor, y: torch.Tensor, c_out: float) -> torch.Tensor:
    """Each run's mean cross-entropy of softmax(out / c_out): [R] from ``out`` [R, B, C], ``y`` [B]."""
    R, B, C = out.shape
    logp = F.log_softmax(out / c_out, dim=-1)
    return -logp.gather(-1, y.expand(R, B).unsqueeze(-1)).squeeze(-1).mean(dim=1)


@torch.no_grad()
def errors(net: nn.Module, x: torch.Tensor, y: torch.Tensor, width: int, runs: int) -> torch.Tensor:
    """Classification error of every run of ``net`` on (x, y), evaluation mode: float64 [R] on x's device.

    ``width`` is the widest layer (for the chunk size); the mode of ``net`` is restored."""
    was_training = net.training
    net.eval()
    try:
        rows = max(1, EVAL_ELEMENTS // (runs * max(width, 1)))
        wrong = torch.zeros(runs, dtype=torch.float64, device=x.device)
        for i in range(0, x.shape[0], rows):
            out = stack_output(net, x[i:i + rows])
            bad = (out.argmax(dim=-1) != y[i:i + rows]) | ~torch.isfinite(out).all(dim=-1)
            wrong += bad.sum(dim=1)
        return wrong / x.shape[0]
    finally:
        net.train(was_training)
