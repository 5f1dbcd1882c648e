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

Each optimizer is one declaration (an ``Optimizer``, in the manner of optax: the state is explicit, the
optimizer holds only its hyperparameters):

* ``slots`` and ``scalars``: its state, per parameter (stored as ``"<slot>.<parameter name>"``, shaped like the
  parameter: Adam's ``m`` and ``v``, momentum's ``b``) and per run ([R], stored by name: Adam's step count
  ``t``). Every tensor carries the runs in dim 0, so best-state saving, rewinding, dropping finished runs and
  checkpoints treat it like the parameters (``study.training.stack``), and the names are the ones checkpoints
  have always held;
* ``init(params) -> state``: the zero state of a dict of stacked parameters;
* ``view(state, names, runs)``: ``Slots``, views of that state for the parameters ``names`` (in order) and the
  stack positions ``runs`` (a chunk of the stack, ``study.training.stack.parts``);
* ``update(params, grads, slots, lr)``: one step of every run in place, at the per-run rates ``lr`` [R];
* ``advance(grads, slots)`` and ``direction(grads, slots)``: the state's update without touching the parameters,
  and the update at rate 1 it then gives (-direction is the step): what lr_min measures (NLC paper E.2; Adam's
  warm-up of figure 3F advances without measuring, ``study.training.lr_min``).

Every update is a few ``torch._foreach_*`` operations over all the tensors of a chunk (one ``_foreach_addcmul_``
for SGD), not one call per tensor: one operator each to dispatch, however deep the net. On a CPU torch runs them
as the per-tensor kernels one call per tensor ran (the same numbers, bit for bit; a test compares them); on a
GPU the operations whose operands have equal shapes are fused kernels over many tensors, while those with a
per-run rate [R, 1, ...] as an operand run per tensor.

``OPTIMIZERS`` maps ``Protocol.optimizer`` to the declaration (``optimizer_of``): "sgd" is SGD, or SGD with
momentum when ``Protocol.momentum`` > 0; "adam" is Adam with the protocol's betas and epsilon.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

import torch

from ..experiment.protocol import Protocol


def per_run(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``v`` [R] viewed as [R, 1, ..., 1] to broadcast against ``like`` [R, ...]."""
    return v.view(-1, *([1] * (like.dim() - 1)))


def per_runs(v: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """``per_run(v, t)`` for every tensor ``t`` of ``like`` (one view per number of dimensions), for the
    ``torch._foreach_*`` operations, which take one operand per tensor."""
    views: dict[int, torch.Tensor] = {}  # number of dimensions -> view
    return [views[t.dim()] if t.dim() in views else views.setdefault(t.dim(), per_run(v, t)) for t in like]


@dataclass(frozen=True)
class Slots:
    """An optimizer's state for a list of parameters: per slot one tensor per parameter (in the list's order), and
    the per-run scalars."""

    tensors: dict[str, list[torch.Tensor]]
    scalars: dict[str, torch.Tensor]

    def take(self, indices: list[int]) -> "Slots":
        """The state of the parameters at ``indices`` of the list (the scalars are per run: all of them)."""
        return Slots({k: [v[i] for i in indices] for k, v in self.tensors.items()}, self.scalars)


class Optimizer:
    """One stacked optimizer; see the module docstring. Subclasses declare ``name``, ``slots``, ``scalars`` and
    implement ``update``, ``advance`` and ``direction``."""

    name: ClassVar[str]
    slots: ClassVar[tuple[str, ...]] = ()
    scalars: ClassVar[tuple[str, ...]] = ()

    def init(self, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The zero state of the stacked parameters ``params`` (name -> [R, ...])."""
        state = {f"{slot}.{name}": torch.zeros_like(p) for name, p in params.items() for slot in self.slots}
        if self.scalars:
            first = next(iter(params.values()))
            for k in self.scalars:
                state[k] = torch.zeros(first.shape[0], dtype=torch.float64, device=first.device)
        return state

    def view(self, state: dict[str, torch.Tensor], names: list[str], runs: slice = slice(None)) -> Slots:
        """Views of ``state`` for the parameters ``names`` and the stack positions ``runs``."""
        return Slots(
            {slot: [state[f"{slot}.{n}"][runs] for n in names] for slot in self.slots},
            {k: state[k][runs] for k in self.scalars},
        )

    def update(self, params: list[torch.Tensor], grads: Sequence[torch.Tensor], slots: Slots, lr: torch.Tensor) -> None:
        raise NotImplementedError

    def advance(self, grads: Sequence[torch.Tensor], slots: Slots) -> None:
        raise NotImplementedError

    def direction(self, grads: Sequence[torch.Tensor], slots: Slots) -> list[torch.Tensor]:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class SGD(Optimizer):
    """Plain SGD (NLC paper, E.2): no state."""

    name = "sgd"

    @torch.no_grad()
    def update(self, params, grads, slots, lr):
        """``p <- p - lr_r g`` for every tensor, in place (one foreach operation for all of them)."""
        if params:
            torch._foreach_addcmul_(params, grads, per_runs(lr, params), value=-1.0)

    def advance(self, grads, slots):
        pass  # nothing to accumulate

    def direction(self, grads, slots):
        return list(grads)


class Momentum(Optimizer):
    """SGD with momentum ``mu``, ``torch.optim.SGD``'s convention (module docstring): one buffer ``b`` per
    parameter."""

    name = "momentum"
    slots = ("b",)

    def __init__(self, momentum: float):
        self.momentum = momentum

    @torch.no_grad()
    def update(self, params, grads, slots, lr):
        """``b <- mu b + g; p <- p - lr_r b`` for every tensor, in place (buffers and parameters)."""
        if params:
            self.advance(grads, slots)
            torch._foreach_addcmul_(params, slots.tensors["b"], per_runs(lr, params), value=-1.0)

    @torch.no_grad()
    def advance(self, grads, slots):
        if grads:
            b = slots.tensors["b"]
            torch._foreach_mul_(b, self.momentum)
            torch._foreach_add_(b, grads)

    def direction(self, grads, slots):
        return list(slots.tensors["b"])  # the step at rate 1 is the buffer


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, Algorithm 1; module docstring): moments ``m`` and ``v`` per parameter, the step
    count ``t`` per run."""

    name = "adam"
    slots = ("m", "v")
    scalars = ("t",)

    def __init__(self, beta1: float, beta2: float, eps: float):
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    @torch.no_grad()
    def update(self, params, grads, slots, lr):
        """One Adam step per run, in place (moments, step counts and parameters)."""
        self.advance(grads, slots)
        if params:
            numerators, denominators = self._step_parts(slots, lr)
            torch._foreach_addcdiv_(params, numerators, denominators, value=-1.0)

    @torch.no_grad()
    def advance(self, grads, slots):
        """The moment updates (no parameter update), in place; ``t`` += 1."""
        if grads:
            m, v = slots.tensors["m"], slots.tensors["v"]
            torch._foreach_lerp_(m, grads, 1.0 - self.beta1)
            torch._foreach_mul_(v, self.beta2)
            torch._foreach_addcmul_(v, grads, grads, value=1.0 - self.beta2)
        slots.scalars["t"].add_(1.0)

    @torch.no_grad()
    def direction(self, grads, slots):
        """Adam's update at rate 1: the step of ``update`` with every ``lr_r`` = 1."""
        if not slots.tensors["m"]:
            return []
        numerators, denominators = self._step_parts(slots, torch.ones_like(slots.scalars["t"]))
        return list(torch._foreach_div(numerators, denominators))

    def _step_parts(self, slots: Slots, lr: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The step of every tensor at the per-run rates ``lr`` [R] as a quotient (module docstring), from the moments
        ``advance`` left: (lr_r / (1 - b1^t_r)) m over sqrt(v) / sqrt(1 - b2^t_r) + eps."""
        t = slots.scalars["t"]
        step = lr / (1.0 - torch.pow(self.beta1, t))  # lr_r / (1 - b1^t_r)
        root_bc2 = torch.sqrt(1.0 - torch.pow(self.beta2, t))
        m, v = slots.tensors["m"], slots.tensors["v"]
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, per_runs(root_bc2, v))
        torch._foreach_add_(denom, self.eps)
        return list(torch._foreach_mul(m, per_runs(step, m))), list(denom)


# The optimizer of ``Protocol.optimizer`` (study.experiment.protocol.OPTIMIZERS), made from the protocol.
OPTIMIZERS: dict[str, Callable[[Protocol], Optimizer]] = {
    "sgd": lambda p: Momentum(p.momentum) if p.momentum else SGD(),
    "adam": lambda p: Adam(p.adam_beta1, p.adam_beta2, p.adam_eps),
}


def optimizer_of(protocol: Protocol) -> Optimizer:
    """The stacked optimizer ``protocol`` trains with."""
    return OPTIMIZERS[protocol.optimizer](protocol)
