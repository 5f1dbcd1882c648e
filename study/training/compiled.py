"""The trainer's forward through ``torch.compile`` (inductor), for every stack size with one graph.

``train_step`` (``study.training.stack``) takes the network's training forward as an argument; by default
it is ``study.training.stack.folded_forward`` run eagerly, op by op. ``CompiledForward(spec)`` is the same
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

Whether the compiled forward is used is decided per architecture by ``choose`` (a measured rule, see
there); ``archstudy bench`` measures both per case and prints which one the rule picks.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn
from torch.func import functional_call

from archstudy.sampling import ArchSpec

from ..nn.families import family
from ..nn.network import Network
from ..experiment.protocol import Protocol
from . import graphed
from .stack import Stack, folded_forward, fused_forward, train_step


class _Folded(nn.Module):
    """``folded_forward`` as a module of the spec's structure (what ``functional_call`` needs)."""

    def __init__(self, spec: ArchSpec):
        super().__init__()
        self.net = Network(spec, runs=2)  # structure only: functional_call supplies every tensor
        self.constants = self.net.act.constants

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # contiguous, as Network.forward returns it: the incoming gradient of the output is contiguous, and
        # the backward graph is traced for the output's strides
        return folded_forward(self.net, x, self.constants).contiguous()


def _tensors(net: Network) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of ``net`` by its name in ``_Folded`` (the projection included)."""
    out: dict[str, torch.Tensor] = {f"net.{name}": p for name, p in net.named_parameters()}
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
    """``folded_forward`` for one architecture through ``torch.compile``; a drop-in ``forward`` for
    ``train_step``. ``mode`` is ``torch.compile``'s (None: default; on a GPU "reduce-overhead" adds CUDA
    graphs, "max-autotune-no-cudagraphs" autotunes the products); ``backend`` too
    ("aot_eager_decomp_partition" traces, decomposes and differentiates the graph as inductor does but runs
    it with ATen's kernels: the tests' cheap check of the capture; plain "aot_eager" fails on layernorm,
    whose backward kernel returns other strides than its meta function says)."""

    kind = "compiled"

    def __init__(self, spec: ArchSpec, mode: str | None = None, backend: str = "inductor"):
        torch._dynamo.reset()  # see the module docstring: one architecture's graphs at a time
        self.spec, self.mode, self.backend = spec, mode, backend
        self._module = _Folded(spec)
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
            for _name, t in net.stacked_tensors():
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
# The ways a training step can run (kept in the checkpoint): the eager folded forward, the compiled one, the eager
# one with its normalizations and activations as fused epilogues (``study.nn.epilogue``: "fused"), or the step with
# one of them captured as a CUDA graph and replayed (``study.training.graphed``; CUDA only): "graph" (the eager
# forward's step), "compiled-graph" (the compiled forward's) and "fused-graph" (the fused one's).
KINDS = ("eager", "compiled", "graph", "compiled-graph", "fused", "fused-graph")
FORWARDS = ("auto", *KINDS)
# A graph kind -> the kind of its step without the graph: the same forward, launched kernel by kernel (what a
# training chosen as a graph goes on with where it cannot be one).
WITHOUT_GRAPH = {"graph": "eager", "compiled-graph": "compiled", "fused-graph": "fused"}
# The kinds whose forward is ``study.training.stack.fused_forward``; their evaluation fuses its epilogues too.
FUSED = ("fused", "fused-graph")

# The bench's verdict: the compiled step is "faster" when it takes at most this fraction of the eager
# step's time (a margin over the timing noise of interleaved repeats on a shared machine).
FASTER = 0.9


@dataclass(frozen=True)
class ForwardChoice:
    """The forward a training uses and why."""

    kind: str  # one of KINDS
    reason: str


def layer_steps(spec: ArchSpec, train_examples: int, batch_size: int) -> int:
    """Depth x minibatches per epoch: the launches of one epoch's steps, up to a factor per layer."""
    return spec.depth * max(1, train_examples // batch_size)


def cuda_compile_min_layer_steps(spec: ArchSpec) -> int:
    """On a GPU, the layer-steps per epoch from which ``spec`` trains through the compiled forward: the least
    threshold its layers' families declare (``Family.cuda_compile_min_layer_steps``, measured on an H100: 6,000
    for dense and GmP layers, 400 for Householder layers, so a Householder net compiles from 400). Every
    family declares one (a default on ``Family``), so every architecture has one."""
    return min(family(layer.kind).cuda_compile_min_layer_steps for layer in spec.layers())


def cuda_graph(spec: ArchSpec) -> bool:
    """On a GPU, whether ``spec`` trains with its step as a CUDA graph: every family of its layers declares it
    (``Family.cuda_graph``)."""
    return all(family(layer.kind).cuda_graph for layer in spec.layers())


def fuses(spec: ArchSpec) -> bool:
    """Whether ``spec``'s folded forward has an epilogue to fuse (``study.nn.epilogue``): a hidden layer with batch
    or layer normalization."""
    return any(layer.norm in ("batch", "layer") for layer in spec.layers()[:-1])


def choose(spec: ArchSpec, device: torch.device, train_examples: int, batch_size: int) -> ForwardChoice:
    """The measured rule: which forward trains ``spec`` on ``device``. A function of the architecture, the
    device and the data size only, never of a timing taken at run time, so that training the same
    architecture again computes the same numbers (the two forwards agree only to round-off, which a long
    training can amplify into a different selected run).

    On a CPU the eager forward, always: the compiled step measured slower in every case tried, with
    ``archstudy bench`` and by training (docs/performance.md), because inductor's float64 C++ code is no
    faster than ATen's kernels, which the eager step already fuses where it matters (``F.batch_norm`` with
    the folded activation), and it stores each relu's backward mask as bools through a slow vectorized
    conversion; the compile itself costs CPU minutes per architecture (gcc included), on top.

    On a CUDA GPU, the step as a CUDA graph where every family of the net's layers declares it (``cuda_graph``:
    measured faster than the eager step at every stack size, launch-bound, and than the compiled one), with its
    normalizations and activations as fused epilogues where it has any (``fuses``: measured faster than the graph
    of the eager forward at every stack size and depth of the paper's 1M-parameter nets, and its compile is paid
    once per process, not per architecture: ``study.nn.epilogue``); else the compiled forward from
    ``cuda_compile_min_layer_steps`` layer-steps per epoch on (see there: measured on an H100, where it pays for
    its compile)."""
    if device.type == "cpu":
        return ForwardChoice(
            "eager", "CPU: the compiled step measured slower than the eager one (study.training.compiled.choose)"
        )
    if graphed.supported(device) and cuda_graph(spec):
        kinds = ", ".join(sorted({layer.kind for layer in spec.layers()}))
        if fuses(spec):
            return ForwardChoice(
                "fused-graph",
                f"GPU: the step as a CUDA graph with fused epilogues (measured faster for {kinds} layers)",
            )
        return ForwardChoice("graph", f"GPU: the step as a CUDA graph (measured faster for {kinds} layers)")
    n = layer_steps(spec, train_examples, batch_size)
    least = cuda_compile_min_layer_steps(spec)
    if n >= least:
        return ForwardChoice("compiled", f"GPU: {n:,} layer-steps per epoch >= {least:,} ({spec.weights})")
    return ForwardChoice(
        "eager", f"GPU: {n:,} layer-steps per epoch < {least:,} ({spec.weights}): the compile would not pay for itself"
    )


def decide(eager_s: float, compiled_s: float) -> str:
    """Which step a measurement shows faster: "compiled" when it takes at most ``FASTER`` of the eager
    step's time, else "eager"."""
    return "compiled" if compiled_s <= FASTER * eager_s else "eager"


def scratch_copy(stack: Stack, size: int | None = None) -> Stack:
    """An independent copy of the first ``size`` runs (default all) of ``stack``, state and rates, to
    compile steps on; the training state is untouched."""
    n = stack.size if size is None else size
    with torch.no_grad():
        return Stack(
            net=stack.net.take(list(range(n))),
            runs=stack.runs[:n].copy(),
            lr=stack.lr[:n].clone(),
            optimizer=stack.optimizer,
            opt={k: t[:n].clone() for k, t in stack.opt.items()},
            best={},
            nonfinite=stack.nonfinite[:n].clone(),
            loss_sum=stack.loss_sum[:n].clone(),
        )


def warm(
    forward, stack: Stack, x: torch.Tensor, y: torch.Tensor, c_out: float, protocol: Protocol, chunk: int | None
) -> None:
    """Compile, before training, every graph the training will need: one step on a copy of ``stack`` and
    one on a copy of a single run of it (the dynamic graph for 2 runs or more, and the graph of 1). No
    compile then happens inside an epoch, where it would wait for the device and distort its time."""
    for size in sorted({stack.size, 1}, reverse=True):
        train_step(scratch_copy(stack, size), x, y, c_out, protocol, chunk, forward)


def select_forward(
    option,
    stack: Stack,
    x: torch.Tensor,
    y: torch.Tensor,
    c_out: float,
    protocol: Protocol,
    chunk: int | None,
    train_examples: int,
) -> tuple[Callable, ForwardChoice]:
    """The training forward for ``option``: a callable ``forward(net, x)`` (used as given), "eager",
    "compiled", "graph" (the eager forward, whose whole step the trainer captures as a CUDA graph:
    ``study.training.graphed``), "compiled-graph" (the compiled forward, its step captured likewise), "fused" and
    "fused-graph" (the forward with fused epilogues, ``study.training.stack.fused_forward``, and its step captured),
    or "auto" (``choose``). A forward other than the eager one is run first on copies of the stack (``warm``, on
    the minibatch (x, y)): a compiled one, or the fused epilogues, compile there."""
    if callable(option):
        choice = ForwardChoice(getattr(option, "kind", "given"), "given by the caller")
        forward = option
    else:
        choice = (
            choose(stack.net.spec, stack.lr.device, train_examples, protocol.batch_size)
            if option == "auto"
            else ForwardChoice(option, "asked for")
        )
        compiles = choice.kind in ("compiled", "compiled-graph")
        forward = (
            CompiledForward(stack.net.spec) if compiles else fused_forward if choice.kind in FUSED else folded_forward
        )
    if forward is not folded_forward:  # a compiled forward compiles here, on copies
        warm(forward, stack, x, y, c_out, protocol, chunk)
    return forward, choice
