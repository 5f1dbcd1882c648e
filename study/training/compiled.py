"""The trainer's forward through ``torch.compile`` (inductor), for every stack size with one graph.

``train_step`` (``study.training.stack``) takes the network's training forward as an argument; by default
it is ``study.training.fused.forward`` run eagerly, op by op. ``CompiledForward(spec)`` is the same
function traced once by dynamo and compiled by inductor: on a CPU into C++ loops that fuse the element-wise
passes over [R, B, n] (batchnorm, activation, skip additions) with each other and, in the backward that
AOTAutograd derives from the same trace, their gradients; on a GPU into Triton kernels, fewer launches per
step. The loss, the gradient call and the in-place update stay ``train_step``'s own: the compiled part
computes exactly what the eager one does, only with other kernels (the round-off differs; tests compare
the two on every layer kind).

What it takes to be correct and to compile once per architecture:

* functional: the compiled function takes the network's tensors as a dict (``torch.func.functional_call``
  on a template network of the spec), never a module, so one graph serves the whole stack, every chunk
  of it and every later, smaller stack of the same architecture. Batchnorm running statistics and GmP
  running means are mutated in place inside the graph; AOTAutograd writes them back to the stack's views;
* dynamic in the runs dimension: dim 0 of every stacked tensor is marked dynamic before the first call
  and parameters are not forced static, so stacks that shrink as runs finish (40, 39, ..., 2) reuse one
  graph. A stack or chunk of one run is a second graph (dynamo specializes sizes 0 and 1); the input
  minibatch [B, d_in] is static (a second graph only when the training set is smaller than a minibatch);
* the activation's constants (c, b) are passed in: the cached quadrature behind ``Activation.constants``
  runs numpy, which dynamo cannot trace;
* one architecture per process at a time: dynamo caches graphs per code object, and every
  ``CompiledForward`` shares this module's code, so a new one resets dynamo's caches (the previous
  architecture's graphs are not wanted again). Without the reset, the 9th architecture of a worker would
  hit dynamo's recompile limit and silently run eagerly.

Whether the compiled forward is used is decided per architecture by ``choose_forward`` (a measured rule,
see there); ``archstudy bench`` measures both per case and prints which one the rule picks.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn
from torch.func import functional_call

from sampling import ArchSpec

from ..network import Network
from ..protocol import Protocol
from . import fused
from .stack import Stack, train_step
from .timing import time_calls


class _Fused(nn.Module):
    """``fused.forward`` as a module of the spec's structure (what ``functional_call`` needs)."""

    def __init__(self, spec: ArchSpec):
        super().__init__()
        self.net = Network(spec, runs=2)  # structure only: functional_call supplies every tensor
        self.constants = self.net.act.constants

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # contiguous, as Network.forward returns it: the incoming gradient of the output is contiguous, and
        # the backward graph is traced for the output's strides
        return fused.forward(self.net, x, self.constants).contiguous()


def _tensors(net: Network) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of ``net`` by its name in ``_Fused`` (the projection included)."""
    out = {f"net.{name}": p for name, p in net.named_parameters()}
    out.update({f"net.{name}": b for name, b in net.named_buffers()})
    return out


@dataclass
class CompileStats:
    """What compiling cost so far: graphs compiled by dynamo for this forward, and the seconds spent in the
    calls that compiled them (tracing, AOTAutograd, inductor's code generation and the C++/Triton build)."""

    graphs: int = 0
    compile_s: float = 0.0
    calls: int = 0
    sizes: set = field(default_factory=set)  # stack sizes seen


class CompiledForward:
    """``fused.forward`` for one architecture through ``torch.compile``; a drop-in ``forward`` for
    ``train_step``. ``mode`` is ``torch.compile``'s (None: default; on a GPU "reduce-overhead" adds CUDA
    graphs, "max-autotune-no-cudagraphs" autotunes the products); ``backend`` too ("aot_eager" traces and
    differentiates the same graph but runs it with ATen's kernels: the tests' cheap check of the capture)."""

    kind = "compiled"

    def __init__(self, spec: ArchSpec, mode: str | None = None, backend: str = "inductor"):
        torch._dynamo.reset()  # see the module docstring: one architecture's graphs at a time
        self.spec, self.mode, self.backend = spec, mode, backend
        self._module = _Fused(spec)
        module = self._module

        def forward(tensors: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
            return functional_call(module, tensors, (x,))

        self._compiled = torch.compile(forward, mode=mode, backend=backend, dynamic=None)
        self._tensors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.stats = CompileStats()

    def __call__(self, net: Network, x: torch.Tensor) -> torch.Tensor:
        tensors = self._tensors.get(net)
        if tensors is None:
            tensors = self._tensors[net] = _tensors(net)
            for name, t in net.stacked_tensors():
                torch._dynamo.maybe_mark_dynamic(t, 0)
        self.stats.calls += 1
        before = _graphs()
        t0 = time.perf_counter()
        with torch._dynamo.config.patch(force_parameter_static_shapes=False):
            out = self._compiled(tensors, x)
        compiled = _graphs() - before
        if compiled:
            self.stats.graphs += compiled
            self.stats.compile_s += time.perf_counter() - t0
        self.stats.sizes.add(net.runs)
        return out


def _graphs() -> int:
    """Graphs dynamo has compiled in this process since its last reset."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


# -- which forward a training uses ---------------------------------------------------------------------
FORWARDS = ("auto", "eager", "compiled")

# On a GPU the compiled forward is tried (``trial``) only when the eager training is expected to take at
# least this many times the compile time, so that compiling costs at most 1/COMPILE_PAYBACK of it.
COMPILE_PAYBACK = 10.0
# Seconds one compile is expected to take, before it is measured. Measured on the 2-core CPU (loaded by
# other work), dense batchnorm-relu nets of 20k parameters: see ``CPU_COMPILE_S`` in the rule below.
EXPECTED_COMPILE_S = 60.0
# A trial keeps the compiled forward only when its steps take at most this fraction of the eager steps'.
TRIAL_MARGIN = 0.9
TRIAL_STEPS = 5  # timed steps of each kind in a trial (after one untimed step each), interleaved twice


@dataclass(frozen=True)
class ForwardChoice:
    """The forward a training uses and why."""

    kind: str  # "eager" or "compiled"
    reason: str
    eager_s: float = float("nan")  # seconds per step in the trial (NaN: no trial)
    compiled_s: float = float("nan")
    compile_s: float = float("nan")


def choose(device: torch.device, expected_eager_s: float) -> ForwardChoice | None:
    """The measured rule, before any trial: a ``ForwardChoice`` when it decides, None when a trial must.

    On a CPU the eager forward, always. Measured with ``archstudy bench`` on this 2-core machine (CPU time
    per step of 40 stacked runs, one thread, best of interleaved repeats, the machine shared with other
    work; see README "Speed"): the compiled step was slower in every case, because inductor's float64
    C++ code is no faster than ATen's already fused kernels (``F.batch_norm`` is one kernel, ``relu``
    another) and stores each relu's backward mask as bools through a slow vectorized conversion; the
    compile itself took about a minute per architecture.

    On a GPU a trial (``trial``) decides, when the eager training is expected to take at least
    ``COMPILE_PAYBACK`` x ``EXPECTED_COMPILE_S``; a shorter training keeps the eager forward (the
    compile could not pay for itself)."""
    if device.type == "cpu":
        return ForwardChoice("eager", "CPU: the compiled step measured slower than the eager one (study.training.compiled)")
    if expected_eager_s < COMPILE_PAYBACK * EXPECTED_COMPILE_S:
        return ForwardChoice("eager", f"expected training {expected_eager_s:.0f} s < {COMPILE_PAYBACK:g} x the "
                      f"{EXPECTED_COMPILE_S:g} s a compile is expected to take")
    return None


def decide(eager_s: float, compiled_s: float) -> str:
    """The trial's verdict from the best step times: compiled when it takes at most ``TRIAL_MARGIN``."""
    return "compiled" if compiled_s <= TRIAL_MARGIN * eager_s else "eager"


def scratch_copy(stack: Stack) -> Stack:
    """An independent copy of ``stack`` (same runs, state and rates) to time steps on."""
    with torch.no_grad():
        net = stack.net.take(list(range(stack.size)))
        return Stack(net=net, runs=stack.runs.copy(), lr=stack.lr.clone(),
                     opt={k: t.clone() for k, t in stack.opt.items()}, best={}, nonfinite=stack.nonfinite.clone())


def trial(stack: Stack, batches, c_out: float, protocol: Protocol, chunk: int | None,
          compiled: "CompiledForward") -> ForwardChoice:
    """Time eager and compiled steps on copies of ``stack`` (the training state is untouched), interleaved:
    one untimed step of each (the compile happens there), then twice ``TRIAL_STEPS`` of each; keep the
    compiled forward when its best time is at most ``TRIAL_MARGIN`` of the eager one's."""
    device = stack.lr.device
    copies = {"eager": scratch_copy(stack), "compiled": scratch_copy(stack)}
    forwards = {"eager": fused.forward, "compiled": compiled}
    times: dict[str, list[float]] = {"eager": [], "compiled": []}

    def steps(kind: str, n: int) -> float:
        def one(i: int) -> None:
            x, y = batches[i % len(batches)]
            train_step(copies[kind], x, y, c_out, protocol, chunk, forwards[kind])
        return time_calls(one, n, device)[0]

    for kind in forwards:
        steps(kind, 1)
    for _ in range(2):
        for kind in forwards:
            times[kind].append(steps(kind, TRIAL_STEPS))
    eager_s, compiled_s = min(times["eager"]), min(times["compiled"])
    kind = decide(eager_s, compiled_s)
    return ForwardChoice(kind, f"trial: compiled {compiled_s * 1e3:.3g} ms vs eager {eager_s * 1e3:.3g} ms per step",
                  eager_s, compiled_s, compiled.stats.compile_s)


def select_forward(option, stack: Stack, batches, c_out: float, protocol: Protocol, chunk: int | None,
                   steps_per_epoch: int) -> tuple[Callable, ForwardChoice]:
    """The training forward for ``option``: a callable (used as given), "eager", "compiled", or "auto"
    (``choose``, then on a GPU a ``trial`` when the rule asks for one). ``batches``: a few minibatches
    (x, y) for timing; the expected training time is the eager step's time x ``steps_per_epoch`` x
    ``EXPECTED_STACK_EPOCHS``."""
    if callable(option):
        return option, ForwardChoice(getattr(option, "kind", "given"), "given by the caller")
    if option == "eager":
        return fused.forward, ForwardChoice("eager", "asked for")
    if option == "compiled":
        return CompiledForward(stack.net.spec), ForwardChoice("compiled", "asked for")
    device = stack.lr.device
    expected = math.inf
    if device.type != "cpu":
        copy = scratch_copy(stack)

        def one(i: int) -> None:
            x, y = batches[i % len(batches)]
            train_step(copy, x, y, c_out, protocol, chunk)

        one(0)
        expected = time_calls(one, TRIAL_STEPS, device)[0] * steps_per_epoch * EXPECTED_STACK_EPOCHS
    decided = choose(device, expected)
    if decided is not None:
        return fused.forward, decided
    compiled = CompiledForward(stack.net.spec)
    chosen = trial(stack, batches, c_out, protocol, chunk, compiled)
    return (compiled if chosen.kind == "compiled" else fused.forward), chosen
