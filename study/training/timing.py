"""Timing training steps on a CPU or a GPU without disturbing what is timed.

On a CPU a step is done when the call returns: wall time (``time.perf_counter``) and the CPU time of the
process (``time.process_time``, all threads; steadier on a shared machine) bracket the steps. On a GPU
the call returns as soon as the kernels are queued, so the steps are bracketed by two CUDA events
recorded on the current stream, and the host synchronizes once, on the second event, after the last
step: no synchronization inside the timed steps, which would add a round trip per step that training
does not pay. (CPU time means nothing there and is reported as NaN.)
"""

from __future__ import annotations

import math
import time
from typing import Callable

import torch

from archstudy.sampling import ArchSpec

TIMING_LR = 1e-4  # the rate of every timed run: small, so that a timing does not depend on where training goes


def timing_batches(
    spec: ArchSpec, batch: int, device: torch.device, count: int = 4
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` random minibatches (inputs, labels) of ``spec``'s shapes to time steps on, from a generator of their
    own (seed 0): the bench's, the projection's and the cost probe's, none touching a study's data or random state."""
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(batch, spec.d_in, generator=g, dtype=torch.float64).to(device) for _ in range(count)]
    ys = [torch.randint(0, spec.d_out, (batch,), generator=g).to(device) for _ in range(count)]
    return list(zip(xs, ys))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(fn: Callable[[int], object], calls: int, device: torch.device) -> tuple[float, float]:
    """(wall seconds, CPU seconds) per call of ``fn(i)``, i = 0 .. calls - 1 (see the module docstring).
    The device is synchronized before the first call so that earlier queued work is not counted."""
    synchronize(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(calls):
            fn(i)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / calls, math.nan
    w0, c0 = time.perf_counter(), time.process_time()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - w0) / calls, (time.process_time() - c0) / calls
