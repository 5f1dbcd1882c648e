"""The smallest starting learning rate (NLC paper, appendix E.2).

"We ran the SGD optimizer for 1 epoch with a learning rate of 1 without actually applying the updates
computed. For the weight matrix in each layer, we thus obtained one update per minibatch. Let dW_lb
denote the update obtained for layer l and minibatch b and W_l the initial value of the weight matrix in
layer l." The smallest rate is then

    lr_min = scale / sum_l ( Q_b |dW_lb|_F / |W_l|_F ),     scale = 1e-8 (paper), 1e-16 (long protocol)

so that no update at lr_min moves any weight tensor by more than about ``scale`` relative. (The printed
formula multiplies by the sum; the stated rationale, "no individual weight matrix update obtained with
the smallest starting learning rate would perturb any weight matrix [...] by more than approximately
1e-8", needs the division.) Q_b is the quadratic mean over the minibatches of the epoch.

"Weight tensors" are every tensor ``Network.param_roles`` calls a weight: dense W, Householder u, GmP
angles theta and radii r. The loss is the training loss (output divided by c_out). Batch statistics are
used, and no running statistic is touched: the measurement leaves the network exactly as it was.

Adam (figure 3F): "before obtaining our measurements for dW_lb, we first ran Adam for 4 epochs, again
without applying updates, in order to warm-start the running averages. Only then did we run it for
another epoch where we actually gathered values for dW_lb": dW_lb is then Adam's step at rate 1,
(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). The warmed averages serve the measurement only;
training starts Adam from zero moments, as Algorithm 1 of Kingma & Ba does.

SGD with momentum mu (``Protocol.momentum``): dW_lb is the step SGD with momentum would take at rate 1,
the buffer b_b = mu b_{b-1} + g_b accumulated over the measuring epoch from b_0 = 0 (updates not applied);
with mu = 0 it is the gradient, as above. The loss is the protocol's (``Protocol.loss``). Each optimizer
declares its update at rate 1 (``study.training.optim``: ``advance`` and ``direction``).
"""

from __future__ import annotations

import math

import torch

from ..nn.network import Network, frozen_statistics
from ..experiment.protocol import Protocol
from .loss import run_losses, stack_output
from .optim import optimizer_of
from .splits import LR_MIN_ORDER, Split, epoch_order


def weight_tensors(net: Network) -> dict[str, torch.Tensor]:
    """The trainable tensors with role "weight", by name."""
    roles = net.param_roles()
    params = dict(net.named_parameters())
    return {name: params[name] for name, role in roles.items() if role == "weight"}


def relative_terms(net: Network, train: Split, c_out: float, protocol: Protocol, seed: int) -> dict[str, float]:
    """Q_b |dW_lb|_F / |W_l|_F for every weight tensor l of the (single-run) network ``net``, by name;
    updates not applied. dW_lb is the protocol's optimizer's update at rate 1 (``Optimizer.direction``), its
    state advanced by every minibatch of the warm-up epochs and of the measuring one (``Optimizer.advance``)."""
    weights = weight_tensors(net)
    names = list(weights)
    tensors = [weights[n] for n in names]
    optimizer = optimizer_of(protocol)
    slots = optimizer.view(optimizer.init(weights), names)
    sq = [torch.zeros((), dtype=torch.float64, device=w.device) for w in tensors]
    batches = 0
    with frozen_statistics(net):
        for epoch in range(protocol.warmup_epochs + 1):
            measuring = epoch == protocol.warmup_epochs
            for idx in epoch_order(len(train), protocol.batch_size, seed, LR_MIN_ORDER, epoch, train.x.device):
                loss = run_losses(stack_output(net, train.x[idx]), train.y[idx], c_out, protocol.loss).sum()
                grads = torch.autograd.grad(loss, tensors)
                optimizer.advance(grads, slots)
                if not measuring:
                    continue
                for i, d in enumerate(optimizer.direction(grads, slots)):
                    sq[i] += (d * d).sum()
                batches += 1
    terms = {}
    for name, w, s in zip(names, tensors, sq):
        norm = float(torch.linalg.vector_norm(w.detach()))
        terms[name] = math.sqrt(float(s) / batches) / norm if norm > 0 else math.inf
    return terms


def measure_lr_min(net: Network, train: Split, c_out: float, protocol: Protocol, seed: int) -> float:
    """``protocol.lr_min_scale / sum_l (Q_b |dW_lb|_F / |W_l|_F)`` (``relative_terms``); NaN when the sum
    is not finite and positive (a network whose loss or gradients are not finite at initialization)."""
    total = sum(relative_terms(net, train, c_out, protocol, seed).values())
    if not (math.isfinite(total) and total > 0):
        return math.nan
    return protocol.lr_min_scale / total
