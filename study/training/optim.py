"""Stacked optimizers: one learning rate per run, explicit state, in-place updates of [R, ...] tensors.

``torch.optim`` is not used: it keeps references to parameter tensors that go stale when finished runs
drop out of the stack, and it has no per-run learning rate. Each run r has its own rate ``lr[r]``; its
gradient is its own because the loss is the sum over runs of each run's mean loss (``study.training.loss``).

SGD (the paper):      W_r <- W_r - lr_r g_r
SGD with momentum mu (``torch.optim.SGD``'s convention: dampening 0, no Nesterov; the buffer starts at
zero, so the first step is b = g exactly as torch's clone of the first gradient):

    b_r <- mu b_r + g_r,   W_r <- W_r - lr_r b_r
Adam (Kingma & Ba 2015, Algorithm 1; figure 3F of the NLC paper), per run with its own step count t_r:

    m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,   t <- t + 1
    W <- W - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

The functions take lists of tensors (a whole stack, or views of a chunk of its runs) and update them in
place; the Adam and momentum state is a dict of stacked tensors so that best-state saving, rewinding,
dropping and checkpoints treat it like the parameters.
"""

from __future__ import annotations

import torch


def per_run(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``v`` [R] viewed as [R, 1, ..., 1] to broadcast against ``like`` [R, ...]."""
    return v.view(-1, *([1] * (like.dim() - 1)))


@torch.no_grad()
def sgd_step(params: list[torch.Tensor], grads: list[torch.Tensor], lr: torch.Tensor) -> None:
    """``p <- p - lr_r g`` for every tensor, in place."""
    for p, g in zip(params, grads):
        p.addcmul_(g, per_run(lr, p), value=-1.0)


def momentum_state(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A zero momentum buffer ``b.<name>`` for every parameter."""
    return {f"b.{name}": torch.zeros_like(p) for name, p in params.items()}


@torch.no_grad()
def momentum_step(params: list[torch.Tensor], grads: list[torch.Tensor], bufs: list[torch.Tensor],
                  lr: torch.Tensor, momentum: float) -> None:
    """``b <- mu b + g; p <- p - lr_r b`` for every tensor, in place (buffers and parameters)."""
    for p, g, b in zip(params, grads, bufs):
        b.mul_(momentum).add_(g)
        p.addcmul_(b, per_run(lr, p), value=-1.0)


def adam_state(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Zero moments for every parameter and zero step counts (one per run)."""
    state = {}
    for name, p in params.items():
        state[f"m.{name}"] = torch.zeros_like(p)
        state[f"v.{name}"] = torch.zeros_like(p)
    runs = next(iter(params.values())).shape[0]
    device = next(iter(params.values())).device
    state["t"] = torch.zeros(runs, dtype=torch.float64, device=device)
    return state


@torch.no_grad()
def adam_moments(ms: list[torch.Tensor], vs: list[torch.Tensor], t: torch.Tensor, grads: list[torch.Tensor],
                 beta1: float, beta2: float) -> None:
    """The moment updates of Adam (no parameter update), in place; ``t`` += 1."""
    for m, v, g in zip(ms, vs, grads):
        m.lerp_(g, 1.0 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
    t.add_(1.0)


@torch.no_grad()
def adam_direction(m: torch.Tensor, v: torch.Tensor, t: torch.Tensor, beta1: float, beta2: float,
                   eps: float) -> torch.Tensor:
    """Adam's update at rate 1: ``(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``."""
    bc1 = per_run(1.0 - torch.pow(beta1, t), m)
    bc2 = per_run(torch.sqrt(1.0 - torch.pow(beta2, t)), v)
    return (m / bc1) / (v.sqrt() / bc2 + eps)


@torch.no_grad()
def adam_step(params: list[torch.Tensor], grads: list[torch.Tensor], ms: list[torch.Tensor],
              vs: list[torch.Tensor], t: torch.Tensor, lr: torch.Tensor, beta1: float, beta2: float,
              eps: float) -> None:
    """One Adam step per run, in place (moments, step counts and parameters)."""
    adam_moments(ms, vs, t, grads, beta1, beta2)
    step = lr / (1.0 - torch.pow(beta1, t))  # lr_r / (1 - b1^t_r)
    root_bc2 = torch.sqrt(1.0 - torch.pow(beta2, t))
    for p, m, v in zip(params, ms, vs):
        denom = (v.sqrt() / per_run(root_bc2, v)).add_(eps)
        p.addcdiv_(m * per_run(step, m), denom, value=-1.0)
