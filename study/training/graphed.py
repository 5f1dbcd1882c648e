"""The training step as one CUDA graph: captured once per stack, replayed every step.

On a GPU the paper's nets wait for the host: each step dispatches its operators from Python one by one (7 per
hidden dense batchnorm-relu layer, ``study.perf.operators``), and at 1M parameters the kernels are shorter than
their launches. A CUDA graph records the kernels of one step once and replays them all with one launch (NVIDIA,
*CUDA C++ Programming Guide*, "CUDA Graphs"; PyTorch's ``torch.cuda.graph``, "whole-network capture").

What is captured: ``study.training.stack.train_step`` on two static minibatch buffers, ``x`` [B, d_in] and ``y``
[B]: the forward, the per-run losses, the gradient, the optimizer's in-place update, batchnorm's running
statistics, the non-finite marks and the loss sums. Everything the step reads or writes keeps its address for
the life of the stack, because every write to the stack between steps is in place (``save_best``, ``rewind``,
``set_rates``, ``loss_sum.zero_()``, ``nonfinite.zero_()``): a replay sees the rates and states they leave.

Per step, outside the graph: the minibatch gather from the epoch's on-device order into the static buffers
(``torch.index_select(..., out=)``), then one ``replay``. Nothing waits for the host.

A stack that shrinks (``study.training.stack.keep``: finished runs leave it) is a new ``Stack`` with new tensors,
so its graph is captured again at the new size (``prepare``, which the trainer calls before each epoch's steps:
a capture synchronizes the device, so it never happens inside an epoch).

The capture follows PyTorch's rules for ``torch.cuda.graph``: first ``WARMUP_STEPS`` eager steps on a side stream
(they create cuBLAS's handles and workspaces, autograd's lazy state, the constants the layers make on their first
call, and the allocator's blocks), run on the stack itself with its whole state saved before and restored after,
bit for bit (``state_of``, ``restore``), so the warm-up changes nothing the training sees; then the capture of one
step, which records the kernels without running them.

A replay runs the eager step's kernels in the eager step's order on the same operands, so the training computes
the eager step's numbers up to round-off (cuBLAS may pick other algorithms under capture); the ``cuda`` tests
compare whole trainings.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

import torch

from ..experiment.protocol import Protocol
from .stack import Stack, folded_forward, parts, train_step

# Eager steps before a capture (PyTorch's documentation of ``torch.cuda.graph`` warms up with 3).
WARMUP_STEPS = 3


def supported(device: torch.device) -> bool:
    """Whether the step can be a CUDA graph on ``device``: on a CUDA device only."""
    return device.type == "cuda"


def _on(device: torch.device):
    """``device`` made the current CUDA device for the block (graph capture makes its stream on the current one)."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


_SIDE_STREAMS: dict[int, torch.cuda.Stream] = {}  # one warm-up stream per device index, for every capture


def warm_up(step: Callable[[], None], device: torch.device, times: int) -> None:
    """``step()`` ``times`` times on a side stream of ``device`` (the current device), the current stream waiting for
    them (PyTorch's rule before a capture). The side stream is made once per device: each stream of a cuBLAS handle
    gets its own workspace."""
    index = torch.cuda.current_device()
    side = _SIDE_STREAMS.get(index)
    if side is None:
        side = _SIDE_STREAMS[index] = torch.cuda.Stream(index)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(times):
            step()
    torch.cuda.current_stream(device).wait_stream(side)


def capture(step: Callable[[], None], device: torch.device) -> torch.cuda.CUDAGraph:
    """The kernels of one ``step()`` on ``device`` recorded as a CUDA graph (not run): ``replay()`` runs them. The
    graph keeps no reference to what ``step`` reads: its caller must keep those alive."""
    graph = torch.cuda.CUDAGraph()
    with _on(device), torch.cuda.graph(graph):
        step()
    return graph


@torch.no_grad()
def state_of(stack: Stack) -> dict[str, torch.Tensor]:
    """A copy of everything a training step writes: the stacked tensors (parameters, per-run buffers, optimizer
    state: ``Stack.tensors``), the non-finite marks and the loss sums."""
    out = {k: t.clone() for k, t in stack.tensors().items()}
    out["nonfinite"] = stack.nonfinite.clone()
    out["loss_sum"] = stack.loss_sum.clone()
    return out


@torch.no_grad()
def restore(stack: Stack, saved: dict[str, torch.Tensor]) -> None:
    """The stack's state <- ``saved`` (``state_of``), in place: every tensor keeps its address."""
    for k, t in stack.tensors().items():
        t.copy_(saved[k])
    stack.nonfinite.copy_(saved["nonfinite"])
    stack.loss_sum.copy_(saved["loss_sum"])


class GraphedStep:
    """``train_step`` of one stack as a CUDA graph (module docstring). ``prepare`` before an epoch's steps
    (captures when the stack, its loss scale, the protocol, the chunk or the data changed), then ``step(idx)``
    per minibatch. ``forward``: the training forward the graph records (default the eager folded one).
    ``captures`` counts the graphs captured so far (one per stack the training had), ``capture_s`` the seconds the
    last capture took (the warm-up and the capture, on the host's clock: the capture synchronizes first).

    The stack, the sources and the loss scale of the current graph are held here (a graph keeps no reference to
    the memory it replays into), and released, with the graph, before the next capture."""

    kind = "graph"

    def __init__(self, forward=folded_forward, warmup: int = WARMUP_STEPS):
        self.forward = forward
        self.warmup = warmup
        self.captures = 0
        self.capture_s = 0.0
        self._graph: torch.cuda.CUDAGraph | None = None
        self._key: tuple | None = None
        self._stack: Stack | None = None
        self.x: torch.Tensor | None = None
        self.y: torch.Tensor | None = None
        self._sources: tuple[torch.Tensor, torch.Tensor] | None = None
        self._c_out: float | torch.Tensor = 0.0  # held, so that an identical tensor is the same one

    def prepare(
        self,
        stack: Stack,
        x_source: torch.Tensor,
        y_source: torch.Tensor,
        idx: torch.Tensor,
        c_out,
        protocol: Protocol,
        chunk: int | None = None,
    ) -> None:
        """Make the graph of ``stack``'s step on minibatches ``x_source[idx]``, ``y_source[idx]`` (``idx``: any
        minibatch's indices, used by the warm-up) with loss scale ``c_out`` (a number, or a tensor [R] that keeps
        its address); nothing when the graph made last is still the one."""
        device = stack.lr.device
        if not supported(device):
            raise ValueError(f"a CUDA graph needs a CUDA device; the stack is on {device}")
        key = (stack.size, protocol, chunk, idx.shape[0])
        if self._graph is not None and self._same(stack, x_source, y_source, c_out) and self._key == key:
            return
        t0 = time.perf_counter()
        self._graph = self._stack = None  # the old graph and its stack's memory go back before the new capture
        self._sources, self._c_out = (x_source, y_source), c_out
        self.x = x_source.index_select(0, idx)
        self.y = y_source.index_select(0, idx)
        x, y, forward = self.x, self.y, self.forward

        def one_step() -> None:
            train_step(stack, x, y, c_out, protocol, chunk, forward)

        with _on(device):
            parts(stack, chunk)  # the chunks' views and constants, made once on the current stream (kept by the stack)
            saved = state_of(stack)
            try:
                warm_up(one_step, device, self.warmup)
            finally:  # also after a warm-up that failed part way (out of memory): the state is as it was
                restore(stack, saved)
            del saved
        self._graph, self._key, self._stack = capture(one_step, device), key, stack
        self.captures += 1
        self.capture_s = time.perf_counter() - t0

    def _same(self, stack: Stack, x_source: torch.Tensor, y_source: torch.Tensor, c_out) -> bool:
        """Whether the graph made last reads these stack, sources and loss scale (the same objects; a scale that is
        a number: the same number)."""
        if self._stack is not stack or self._sources is None:
            return False
        if self._sources[0] is not x_source or self._sources[1] is not y_source:
            return False
        if isinstance(c_out, torch.Tensor) or isinstance(self._c_out, torch.Tensor):
            return c_out is self._c_out
        return float(c_out) == float(self._c_out)

    def step(self, idx: torch.Tensor) -> None:
        """One training step of the prepared stack on the minibatch ``idx`` (on-device indices into the sources
        given to ``prepare``): the gather into the static buffers, then the replay."""
        if self._graph is None or self._sources is None or self.x is None or self.y is None:
            raise RuntimeError("GraphedStep.step before prepare")
        x_source, y_source = self._sources
        # no device context per step: the gather runs on its tensors' device, and a replay guards the device it was
        # captured on (PyTorch's CUDAGraph::replay)
        torch.index_select(x_source, 0, idx, out=self.x)
        torch.index_select(y_source, 0, idx, out=self.y)
        self._graph.replay()
