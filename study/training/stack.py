"""The live stack: the runs still training, as one stacked network plus per-run state, and its step.

All runs of an architecture train as ONE model (DESIGN.md section 3): parameters [R, ...], one shared
minibatch per step, per-run learning rates. The per-run bookkeeping of the schedule is done on the
stacked tensors with index_select / index_copy_:

* ``save_best``: the best state of the improved runs <- their current state;
* ``rewind``: the current state of the rewound runs <- their best state;
* ``keep``: the finished runs leave the stack (``Network.take``), so they cost nothing afterwards
  (notes: 20 of 40 live runs cost 0.585 of a full step; masking them with lr = 0 gives nothing back).

"State" is everything a rewind must restore: the parameters, the per-run buffers (batchnorm running
statistics, GmP running input means: ``Network.stacked_tensors``) and the optimizer state (Adam moments
and step counts).

A step may run the stack in chunks of runs (``chunk``): the runs are independent, so a chunk's forward,
backward and update touch only its slice of every stacked tensor (through ``torch.func.functional_call``
on views). The result is the same up to round-off; what changes is that a chunk's intermediate
activations can stay in the CPU caches (notes: on wide nets stacks of 4-10 runs beat one of 40).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call

from ..network import Network
from ..protocol import Protocol
from .loss import run_losses, stack_output
from .optim import adam_state, adam_step, sgd_step


@dataclass
class Stack:
    net: Network  # the live runs, in increasing run index
    runs: np.ndarray  # run index (learning-rate index) of each stack position
    lr: torch.Tensor  # float64 [R] current learning rates
    opt: dict[str, torch.Tensor]  # optimizer state, stacked (empty for SGD)
    best: dict[str, torch.Tensor]  # best state of every stacked tensor (net and optimizer)
    nonfinite: torch.Tensor  # bool [R]: the run's loss turned non-finite during the current epoch

    @property
    def size(self) -> int:
        return len(self.runs)

    def params(self) -> dict[str, torch.Tensor]:
        return dict(self.net.named_parameters())

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every stacked tensor a rewind restores, by name: ``net.<name>`` and ``opt.<name>``."""
        out = {f"net.{name}": t for name, t in self.net.stacked_tensors()}
        out.update({f"opt.{name}": t for name, t in self.opt.items()})
        return out


def new_stack(net: Network, lrs, protocol: Protocol) -> Stack:
    """The stack of all runs at their starting rates; the initial state is every run's best."""
    device = net.device
    opt = adam_state(dict(net.named_parameters())) if protocol.optimizer == "adam" else {}
    stack = Stack(net=net, runs=np.arange(net.runs), lr=torch.tensor(lrs, dtype=torch.float64, device=device),
                  opt=opt, best={}, nonfinite=torch.zeros(net.runs, dtype=torch.bool, device=device))
    stack.best = {k: t.detach().clone() for k, t in stack.tensors().items()}
    return stack


def _positions(stack: Stack, runs) -> torch.Tensor:
    pos = np.searchsorted(stack.runs, np.asarray(runs, dtype=np.int64))
    return torch.as_tensor(pos, dtype=torch.long, device=stack.lr.device)


@torch.no_grad()
def save_best(stack: Stack, runs) -> None:
    """Best state <- current state, for runs ``runs`` (run indices)."""
    if len(runs) == 0:
        return
    pos = _positions(stack, runs)
    for k, t in stack.tensors().items():
        stack.best[k].index_copy_(0, pos, t.index_select(0, pos))


@torch.no_grad()
def rewind(stack: Stack, runs) -> None:
    """Current state <- best state, for runs ``runs``."""
    if len(runs) == 0:
        return
    pos = _positions(stack, runs)
    for k, t in stack.tensors().items():
        t.index_copy_(0, pos, stack.best[k].index_select(0, pos))


@torch.no_grad()
def set_rates(stack: Stack, lr_of_run: np.ndarray) -> None:
    """The stack's learning rates from the schedule's per-run array."""
    stack.lr.copy_(torch.as_tensor(lr_of_run[stack.runs], dtype=torch.float64))


def keep(stack: Stack, runs) -> Stack:
    """A stack of only runs ``runs`` (a subset, increasing): the others leave it."""
    runs = np.asarray(runs, dtype=np.int64)
    if len(runs) == stack.size:
        return stack
    pos = _positions(stack, runs)
    with torch.no_grad():
        net = stack.net.take(pos)
        opt = {k: t.index_select(0, pos) for k, t in stack.opt.items()}
        best = {k: t.index_select(0, pos) for k, t in stack.best.items()}
    return Stack(net=net, runs=runs, lr=stack.lr.index_select(0, pos), opt=opt, best=best,
                 nonfinite=stack.nonfinite.index_select(0, pos))


def chunks(size: int, chunk: int | None) -> list[slice]:
    """Stack positions in consecutive chunks of at most ``chunk`` runs (one chunk when None)."""
    if chunk is None or chunk >= size:
        return [slice(0, size)]
    return [slice(a, min(a + chunk, size)) for a in range(0, size, chunk)]


def train_step(stack: Stack, x: torch.Tensor, y: torch.Tensor, c_out: float, protocol: Protocol,
               chunk: int | None = None) -> None:
    """One step of every run on the shared minibatch (x, y): forward, per-run losses, backward, update;
    ``stack.nonfinite`` marks the runs whose loss was not finite."""
    adam = protocol.optimizer == "adam"
    names = [name for name, _ in stack.net.named_parameters()]
    full = chunks(stack.size, chunk)
    if len(full) == 1:
        params = [p for _, p in stack.net.named_parameters()]
        losses = run_losses(stack_output(stack.net, x), y, c_out)
        grads = torch.autograd.grad(losses.sum(), params)
        _update(stack, slice(0, stack.size), names, params, grads, adam, protocol)
        stack.nonfinite |= ~torch.isfinite(losses.detach())
        return
    buffers = {name: b for name, b in stack.net.stacked_tensors() if name not in set(names)}
    for sl in full:
        with torch.no_grad():
            leaves = [p.detach()[sl].requires_grad_(True) for _, p in stack.net.named_parameters()]
        views = dict(zip(names, leaves))
        views.update({name: b[sl] for name, b in buffers.items()})
        out = functional_call(stack.net, views, (x,))
        losses = run_losses(out.unsqueeze(0) if out.dim() == 2 else out, y, c_out)
        grads = torch.autograd.grad(losses.sum(), leaves)
        _update(stack, sl, names, leaves, grads, adam, protocol)
        stack.nonfinite[sl] |= ~torch.isfinite(losses.detach())


def _update(stack, sl, names, params, grads, adam, protocol) -> None:
    lr = stack.lr[sl]
    if not adam:
        sgd_step(params, grads, lr)
        return
    ms = [stack.opt[f"m.{n}"][sl] for n in names]
    vs = [stack.opt[f"v.{n}"][sl] for n in names]
    adam_step(params, grads, ms, vs, stack.opt["t"][sl], lr, protocol.adam_beta1, protocol.adam_beta2,
              protocol.adam_eps)


@torch.no_grad()
def nonfinite_parameters(stack: Stack) -> torch.Tensor:
    """bool [R]: the run has a non-finite parameter (an update can overflow after a finite loss)."""
    bad = torch.zeros(stack.size, dtype=torch.bool, device=stack.lr.device)
    for _, p in stack.net.named_parameters():
        bad |= ~torch.isfinite(p).flatten(1).all(dim=1)
    return bad
