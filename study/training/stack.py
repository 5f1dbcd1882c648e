"""The live stack: the runs still training, as one stacked network plus per-run state, and its step.

All runs of an architecture train as ONE model: parameters [R, ...], one shared minibatch per step,
per-run learning rates. The per-run bookkeeping of the schedule is done on the
stacked tensors with index_select / index_copy_:

* ``save_best``: the best state of the improved runs <- their current state;
* ``rewind``: the current state of the rewound runs <- their best state;
* ``keep``: the finished runs leave the stack (``Network.take``), so they cost nothing afterwards (a step's
  cost falls with the live runs, while masking finished runs with lr = 0 gives nothing back: measured in
  docs/performance.md).

"State" is everything a rewind must restore: the parameters, the per-run buffers (batchnorm running
statistics, GmP running input means: ``Network.stacked_tensors``) and the optimizer state (the slots and
scalars its declaration names, ``study.training.optim``: Adam moments and step counts, or SGD's momentum
buffers; plain SGD has none).

A step (``train_step``): the folded forward (``folded_forward``, below), each run's mean loss, the
gradient of their sum (each run's gradient is its own), the in-place update at each run's rate; each run's
loss is added to ``loss_sum`` on the device (no host synchronization per step: the trainer reads the sum
once per epoch for the training curves, ``study.training.curves``). A run
whose loss is not finite is marked in ``nonfinite`` (per run, from its own loss, never from the sum,
which is NaN as soon as one run's is); the trainer ends that run's patience window at the end of the
epoch. Meanwhile its NaNs stay in its own slices: every op of the stack is per run (batched products,
batchnorm channels, per-run losses), so the other runs are unaffected (a test checks this).

A step may run the stack in chunks of runs (``chunk``): the runs are independent, so a chunk's forward,
backward and update touch only its slice of every stacked tensor. Each chunk is a ``Network`` whose
parameters and buffers are views of the stack's tensors (built once per stack, ``parts``), so updates,
rewinds and running statistics go straight to the stack. The result is the same up to round-off; what
changes is that a chunk's intermediate activations are small enough to stay in the CPU caches and to be
recycled by malloc (each new tensor of a large stack is fresh memory that page-faults in; measured in
docs/performance.md).

The folded forward (``folded_forward``: ``Network.propagate(fold=True)``) computes the function of
``Network.forward`` with fewer passes over [R, B, n]; the step's time goes to the matrix products and to
element-wise passes over the activations, and around a normalization three of those passes fold away
without changing the function (only the rounding):

* the bias of a linear op followed by batchnorm (each family declares whether its bias folds,
  ``Family.bias_folds``: Dense b, GmP lambda, Householder b) cancels in the normalized output,
  ``BN(s + b) = BN(s)``, and only shifts the running mean. In training mode it is left out of the product
  and added to the running mean instead, ``(1 - m) mu + m (mean(s) + b) = [(1 - m) mu + m mean(s)] + m b``,
  for all such layers in one ``torch._foreach_add_`` before the first (``BatchNorm.fold_biases``). Its
  gradient is exactly zero (the reference forward gives round-off of about 1e-17), so ``train_step`` leaves
  it out of the update;
* the activation's dilation and shift, and for a positively homogeneous tau (``Base.homogeneous``: relu,
  abs, linear: ``c tau(u) = tau(c u)`` for c > 0) also its scale, become the affine weight and bias of
  ``F.batch_norm`` / ``F.layer_norm``: ``c tau(d y + t) = tau(c d y + c t)``, computed inside the
  normalization kernel (``Activation.norm_affine``; the norm makes them once and keeps them,
  ``study.nn.layers``);
* what is left is tau itself (and ``* c`` for the other activations, ``+ b`` when debiased:
  ``Activation.after_affine``).

Nothing is folded where a skip connection starts after the linear op (the start value includes the bias)
or after the norm (it is the unscaled norm output), nor in evaluation mode (where the bias does not
cancel). Forward hooks, intermediate values and every caller outside the training step see the reference
computation (``fold=False``); tests compare the two on sampled architectures (outputs, gradients, running
statistics). Per hidden dense layer with batchnorm and relu, the passes over the activations go from 10 per
step to 6, and with the foreach update (``study.training.optim``) the layer costs a step 7 operators where it
cost 11-12 (``study.perf.operators`` counts them; docs/performance.md measures both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn

from ..nn.network import Network
from ..experiment.protocol import Protocol
from .loss import run_losses
from .optim import Optimizer, Slots, optimizer_of


@dataclass
class Stack:
    net: Network  # the live runs, in increasing run index
    runs: np.ndarray  # run index (learning-rate index) of each stack position
    lr: torch.Tensor  # float64 [R] current learning rates
    optimizer: Optimizer  # the declaration that makes, reads and updates ``opt``
    opt: dict[str, torch.Tensor]  # optimizer state, stacked (empty for SGD without momentum)
    best: dict[str, torch.Tensor]  # best state of every stacked tensor (net and optimizer)
    nonfinite: torch.Tensor  # bool [R]: the run's loss turned non-finite during the current epoch
    loss_sum: torch.Tensor  # float64 [R]: the sum of the run's minibatch losses in the current epoch
    _parts: dict = field(default_factory=dict, repr=False)  # chunk size -> [Chunk], views of this stack

    @property
    def size(self) -> int:
        return len(self.runs)

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every stacked tensor a rewind restores, by name: ``net.<name>`` and ``opt.<name>``."""
        out = {f"net.{name}": t for name, t in self.net.stacked_tensors()}
        out.update({f"opt.{name}": t for name, t in self.opt.items()})
        return out


def new_stack(net: Network, lrs, protocol: Protocol) -> Stack:
    """The stack of all runs at their starting rates; the initial state is every run's best."""
    device = net.device
    optimizer = optimizer_of(protocol)
    stack = Stack(
        net=net,
        runs=np.arange(net.runs),
        lr=torch.tensor(lrs, dtype=torch.float64, device=device),
        optimizer=optimizer,
        opt=optimizer.init(dict(net.named_parameters())),
        best={},
        nonfinite=torch.zeros(net.runs, dtype=torch.bool, device=device),
        loss_sum=torch.zeros(net.runs, dtype=torch.float64, device=device),
    )
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
    return Stack(
        net=net,
        runs=runs,
        lr=stack.lr.index_select(0, pos),
        optimizer=stack.optimizer,
        opt=opt,
        best=best,
        nonfinite=stack.nonfinite.index_select(0, pos),
        loss_sum=stack.loss_sum.index_select(0, pos),
    )


def chunks(size: int, chunk: int | None) -> list[slice]:
    """Stack positions in consecutive, balanced chunks of at most ``chunk`` runs (one when None)."""
    if chunk is None or chunk >= size:
        return [slice(0, size)]
    n = -(-size // chunk)
    bounds = [size * i // n for i in range(n + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


@dataclass
class Chunk:
    """A chunk of the stack: a network on views of its runs' tensors, and views of their state."""

    net: Network
    params: list[torch.Tensor]
    lr: torch.Tensor
    nonfinite: torch.Tensor
    loss_sum: torch.Tensor
    slots: Slots  # views of the optimizer state of ``params``
    positions: slice  # the chunk's stack positions
    ones: torch.Tensor  # float64 [runs of the chunk], all 1: the gradient of the summed loss by each run's loss


def view_network(net: Network, sl: slice) -> Network:
    """A network of runs ``sl`` of ``net`` whose parameters and per-run buffers are views of ``net``'s."""
    part = Network(net.spec, runs=sl.stop - sl.start)
    with torch.no_grad():
        for name, t in net.stacked_tensors():
            prefix, _, leaf = name.rpartition(".")
            module = part.get_submodule(prefix)
            view = t.detach()[sl]
            setattr(module, leaf, nn.Parameter(view) if isinstance(t, nn.Parameter) else view)
        if net.projection is not None:  # one per run, or shared by all
            part.projection = net.projection[sl] if net.projection.dim() == 3 else net.projection
    part.train(net.training)
    return part


def parts(stack: Stack, chunk: int | None) -> list[Chunk]:
    """The stack in chunks of at most ``chunk`` runs (built once per stack and chunk size)."""
    if chunk not in stack._parts:
        out = []
        for sl in chunks(stack.size, chunk):
            net = stack.net if sl.stop - sl.start == stack.size else view_network(stack.net, sl)
            names = [name for name, _ in net.named_parameters()]
            out.append(
                Chunk(
                    net=net,
                    params=[p for _, p in net.named_parameters()],
                    lr=stack.lr[sl],
                    nonfinite=stack.nonfinite[sl],
                    loss_sum=stack.loss_sum[sl],
                    slots=stack.optimizer.view(stack.opt, names, sl),
                    positions=sl,
                    ones=torch.ones(sl.stop - sl.start, dtype=torch.float64, device=stack.lr.device),
                )
            )
        stack._parts[chunk] = out
    return stack._parts[chunk]


def folded_forward(net: Network, x: torch.Tensor, constants: tuple[float, float] | None = None) -> torch.Tensor:
    """``net(x)`` as [R, B, d_out] (also for R = 1) with the folds of the module docstring:
    ``Network.propagate(fold=True)``. ``constants``: the activation's (c, b) when the caller has them (a forward
    traced by ``torch.compile`` cannot run the quadrature behind ``Activation.constants``)."""
    return net.propagate(x, fold=True, constants=constants)


FUSE_BACKEND = "inductor"  # the compiler of the fused epilogue (study.nn.epilogue)


def fused_forward(net: Network, x: torch.Tensor, constants: tuple[float, float] | None = None) -> torch.Tensor:
    """``folded_forward`` with each folded normalization and the rest of its activation computed as one compiled
    function (``study.nn.epilogue``): the same function, fewer passes over the activations."""
    return net.propagate(x, fold=True, constants=constants, fuse=FUSE_BACKEND)


fused_forward.kind = "fused"  # type: ignore[attr-defined]


def train_step(
    stack: Stack,
    x: torch.Tensor,
    y: torch.Tensor,
    c_out,
    protocol: Protocol,
    chunk: int | None = None,
    forward=folded_forward,
) -> None:
    """One step of every run on the shared minibatch (x, y): forward, per-run losses (``protocol.loss``;
    ``c_out`` a number, or one per stack position), backward, the update of the stack's optimizer
    (``study.training.optim``); ``stack.nonfinite`` marks the runs
    whose loss was not finite and ``stack.loss_sum`` adds every run's loss. ``forward(net, x)`` is the
    training forward: ``folded_forward`` eagerly, or the same through ``torch.compile``
    (``study.training.compiled``)."""
    for part in parts(stack, chunk):
        scale = c_out[part.positions] if isinstance(c_out, torch.Tensor) else c_out
        losses = run_losses(forward(part.net, x), y, scale, protocol.loss)
        # The gradient of sum_r loss_r: its gradient by each loss_r is 1 (``part.ones``, made once, rather than a
        # sum and the ones that autograd would make every step).
        grads: Sequence[torch.Tensor] = torch.autograd.grad(losses, part.params, part.ones, allow_unused=True)
        # A bias folded into batchnorm has no gradient (exactly zero): its SGD update and, with its Adam
        # moments staying zero, its Adam update are nothing.
        used = [i for i, g in enumerate(grads) if g is not None]
        params, grads = [part.params[i] for i in used], [grads[i] for i in used]
        stack.optimizer.update(params, grads, part.slots.take(used), part.lr)
        with torch.no_grad():
            # not finite <=> loss * 0 is NaN (not 0): what ~torch.isfinite(losses) says, in 2 operators (not 4)
            part.nonfinite |= losses * 0.0 != 0.0
            part.loss_sum += losses


@torch.no_grad()
def nonfinite_parameters(stack: Stack) -> torch.Tensor:
    """bool [R]: the run has a non-finite parameter (an update can overflow after a finite loss)."""
    bad = torch.zeros(stack.size, dtype=torch.bool, device=stack.lr.device)
    for _, p in stack.net.named_parameters():
        bad |= ~torch.isfinite(p).flatten(1).all(dim=1)
    return bad
