"""The operators one training step dispatches, counted.

Every operator a step dispatches costs host time whatever its size (Python, the dispatcher, autograd's
bookkeeping, and on a GPU a kernel launch): on a GPU the step of the paper's nets waits for the host
(docs/performance.md), so the number of operators per step is what bounds it there, as the flops bound it on a
CPU. ``count_operators(fn)`` calls ``fn()`` under a ``TorchDispatchMode`` that sees every ATen operator reaching
the dispatcher, forward and backward (autograd's engine carries the mode into the backward), and counts

* compute operators: every operator that is not a view (products, normalizations, element-wise ops,
  reductions, the ``torch._foreach_*`` updates (one each, however many tensors they update), and tensors made
  with ``empty`` / ``full`` / ``zeros``), by name;
* views apart (``view``, ``transpose``, ``expand``, ``detach``, ...: they alias their input, no kernel and no
  memory; ``OpOverload.is_view``);
* the bytes each compute operator moves, by name: every tensor it takes and every tensor it returns, once each
  (an in-place operator reads and writes its operand: twice). No kernel moves less (it reads each operand and
  writes each result at least once); a kernel may move more (batchnorm reads its input once for the statistics
  and once to normalize), so it is the floor of the step's memory traffic with its operators as they are.
  ``Operators.traffic()`` sums it outside the matrix products (``MATRIX_PRODUCTS``), whose time the bare GEMMs
  of ``archstudy bench`` measure: on a GPU, where those operators are bound by memory bandwidth, that traffic
  over the memory's peak bandwidth is the least time they can take (``study.perf.bench``'s
  ``memory_floor_fraction``).

Composite operators (``F.batch_norm``, ``F.layer_norm``) are counted as the operators they dispatch on the
way (the dispatcher decomposes them above the mode); operators that a kernel calls inside itself are not seen
(they cost no dispatch from Python).

``step_operators(spec)`` counts one training step of a stack in one chunk (what a GPU runs; on a CPU the
trainer's chunks each dispatch the same operators, ``study.training.trainer.auto_chunk``), after one step that is
not counted (constants made once, as in training). ``archstudy bench`` reports it per case, in total, per layer
(the total over the depth) and per added layer (``added_layer_operators``: the difference one more hidden layer
makes, which does not depend on the operators a step has once) (``study.perf.bench``).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from archstudy.sampling import ArchSpec

from ..experiment.protocol import Protocol
from ..nn.network import build_network
from ..training.stack import new_stack, train_step

# The ATen operators that are matrix products (their time is the bare GEMMs' of ``archstudy bench``).
MATRIX_PRODUCTS = frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul"})


@dataclass
class Operators:
    """What ``count_operators`` saw: compute operators by name (views excluded), the bytes they moved by name, and
    the views."""

    compute: Counter = field(default_factory=Counter)
    views: int = 0
    bytes: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """Compute operators, views excluded."""
        return sum(self.compute.values())

    def per_layer(self, depth: int) -> float:
        return self.total / depth

    def traffic(self) -> int:
        """Bytes the operators other than the matrix products (``MATRIX_PRODUCTS``) moved (module docstring)."""
        return sum(n for name, n in self.bytes.items() if name not in MATRIX_PRODUCTS)


def _nbytes(tree) -> int:
    """Bytes of the tensors in ``tree``, each counted where it appears; a broadcast dimension (stride 0,
    ``expand``) holds one element."""
    total = 0
    for t in tree_flatten(tree)[0]:
        if isinstance(t, torch.Tensor):
            total += math.prod(n for n, s in zip(t.shape, t.stride()) if s != 0) * t.element_size()
    return total


# Operators that overwrite their first argument without reading it, and operators that only allocate (no kernel).
OVERWRITES = frozenset({"copy_", "fill_", "zero_"})
ALLOCATES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


def moved_bytes(func, args, kwargs, out) -> int:
    """The bytes operator ``func`` moves, from its schema: every tensor argument read once, except an ``out=``
    argument and the first argument of an operator that overwrites it (``OVERWRITES``), which are only written;
    an argument it writes (in place, ``out=``) written once; every result that is not an argument written once
    (an in-place operator returns its argument, or nothing); an allocation (``ALLOCATES``) nothing. An optional
    argument written in place (batchnorm's running statistics, ``Tensor(a!)?``) is not seen as written: a few
    bytes per channel fewer, so the count stays a floor."""
    name = func.overloadpacket.__name__
    if name in ALLOCATES:
        return 0
    total = 0
    for i, a in enumerate(func._schema.arguments):
        value = args[i] if i < len(args) else (kwargs or {}).get(a.name)
        n = _nbytes(value)
        written = a.alias_info is not None and a.alias_info.is_write
        read = not a.is_out and not (i == 0 and name in OVERWRITES)
        total += (n if read else 0) + (n if written else 0)
    results = out if isinstance(out, tuple) else (out,)
    for r, value in zip(func._schema.returns, results):
        if r.alias_info is None:
            total += _nbytes(value)
    return total


class _Counting(TorchDispatchMode):
    def __init__(self, into: Operators):
        super().__init__()
        self.into = into

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.is_view:
            self.into.views += 1
        else:
            name = func.overloadpacket.__name__
            self.into.compute[name] += 1
            self.into.bytes[name] += moved_bytes(func, args, kwargs, out)
        return out


def count_operators(fn: Callable[[], object]) -> Operators:
    """The operators ``fn()`` dispatches (module docstring)."""
    ops = Operators()
    with _Counting(ops):
        fn()
    return ops


def step_operators(
    spec: ArchSpec,
    runs: int = 40,
    batch: int = 250,
    device: str | torch.device = "cpu",
    protocol: Protocol | None = None,
    forward=None,
) -> Operators:
    """The operators of one training step (``study.training.stack.train_step``) of ``runs`` runs of ``spec`` on a
    minibatch of ``batch``, the whole stack in one chunk, after one step that is not counted."""
    device = torch.device(device)
    protocol = protocol or Protocol()
    stack = new_stack(build_network(spec, 0, runs=runs, device=device), [1e-4] * runs, protocol)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, spec.d_in, generator=g, dtype=torch.float64).to(device)
    y = torch.randint(0, spec.d_out, (batch,), generator=g).to(device)
    kwargs = {} if forward is None else {"forward": forward}

    def step() -> None:
        train_step(stack, x, y, 1.0, protocol, None, **kwargs)

    step()
    return count_operators(step)


def added_layer_operators(
    spec: ArchSpec, runs: int = 40, batch: int = 250, device: str | torch.device = "cpu", base: Operators | None = None
) -> float:
    """The operators one more hidden layer adds to a step: (ops(L + s) - ops(L)) / s for ``spec`` at its depth L and
    at L + s (s: ``skip_length`` with skips, the least step that keeps the skips' layout, else 1), the width and
    everything else the same. Unlike ``Operators.per_layer`` (the total over the depth), it leaves out what a step
    costs once whatever the depth: the loss, the output layer, the update. ``base``: ``spec``'s count, if made."""
    s = spec.skip_length if spec.skip != "none" else 1
    deeper = dataclasses.replace(spec, depth=spec.depth + s)
    base = base or step_operators(spec, runs, batch, device)
    return (step_operators(deeper, runs, batch, device).total - base.total) / s
