"""The functions that compute the ``measure`` row, found from the columns' declarations.

Each column of the row (``study.experiment.schema.MEASURED`` and ``flops``) names in its ``Column`` the
function that computes it, as ``measured_by="module:function"`` of ``archstudy.study.metrics``; one function
may compute several columns. The function lives in its metric module, marked with the stream of its seeded
draws, takes what every metric measures on (``Measuring``) and that stream's seed, and returns its columns:

    @measures(stream=1)
    def measure_gradients(m: Measuring, seed: int) -> dict[str, float]:
        g = input_gradients(m.net, m.x, m.y, m.c_out, m.options.gradient_batches, m.batch_size, seed)
        return {"gvcs": gvcs_of(g), "grad_length": grad_length_of(g)}

So a new metric at initialization is its computation (its metric module, with its ``@measures`` function)
and its column declaration(s) naming that function; ``measure`` (``study.metrics.measurement``) calls every
function once, in the order of their first column in the schema, and checks that each returns exactly its
columns. Streams keep the draws independent: switching one metric on or off never changes another's numbers.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from archstudy.sampling import ArchSpec

from ..experiment.metric_options import MetricOptions
from ..experiment.schema import measured_by

PACKAGE = "archstudy.study.metrics"
# Streams of seeded draws used outside the ``@measures`` functions: no function may take them.
NLC_STREAM = 0  # the NLC pass of ``measure`` (``nlc_seed``), shared with the trainer's NLC after training
PERTURBATION_STREAM = 5  # E.3 on the trained network (``measure_trained``)
RESERVED_STREAMS = {NLC_STREAM: "the NLC pass (nlc_seed)", PERTURBATION_STREAM: "E.3 after training"}


def generator_seed(seed: int, stream: int) -> int:
    """An independent 63-bit seed for each stream's draws (numpy's SeedSequence hashing of (seed, stream))."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1, np.uint64)[0]) >> 1


@dataclass(frozen=True)
class Measuring:
    """What every metric of the row measures on: the network (a stack's first copy), its spec, the options,
    the training split on the network's device, and the NLC pass (``study.metrics.nlc.NLCParts``), computed
    first because its output scale ``c_out`` is what the loss-based metrics divide the output by."""

    net: nn.Module
    spec: ArchSpec
    options: MetricOptions
    x: torch.Tensor
    y: torch.Tensor
    nlc: Any  # NLCParts

    @property
    def device(self) -> torch.device:
        return self.x.device

    @property
    def batch_size(self) -> int:
        return self.options.batch_size

    @property
    def c_out(self) -> float:
        """The trainer's output scale Q_(x,j) f(x,j) (``output_q`` of the NLC pass)."""
        return self.nlc.output_q


def measures(*, stream: int | None) -> Callable:
    """Marks ``function(m: Measuring, seed: int) -> {column: value}`` as the computation of the columns whose
    ``measured_by`` names it; ``stream``: the stream of its seeded draws (``seed`` is that stream's), None
    for a function that draws nothing (it gets None)."""
    def mark(function: Callable) -> Callable:
        function.stream = stream
        return function
    return mark


@dataclass(frozen=True)
class MetricFunction:
    """One function of the row: its "module:function" path, the columns it computes, its stream."""

    path: str
    columns: tuple[str, ...]
    function: Callable
    stream: int | None

    def __call__(self, m: Measuring, seed: int) -> dict:
        out = self.function(m, None if self.stream is None else generator_seed(seed, self.stream))
        if set(out) != set(self.columns):
            raise AssertionError(f"{self.path} returned {tuple(out)}; its columns in the schema: {self.columns}")
        return out


def resolve(path: str) -> Callable:
    module, _, name = path.partition(":")
    function = getattr(importlib.import_module(f"{PACKAGE}.{module}"), name, None)
    if function is None or not hasattr(function, "stream"):
        raise LookupError(f"measured_by = {path!r}: no function {name} marked @measures in {PACKAGE}.{module}")
    return function


@cache
def metric_functions() -> tuple[MetricFunction, ...]:
    """Every function of the row, in the order of its first column in the schema, checked: each path names an
    ``@measures`` function, and no two take the same stream or a reserved one."""
    out = tuple(MetricFunction(path, cols, f, f.stream) for path, cols in measured_by().items() for f in [resolve(path)])
    taken = dict(RESERVED_STREAMS)
    for u in out:
        if u.stream is not None:
            if u.stream in taken:
                raise LookupError(f"{u.path}: stream {u.stream} is already {taken[u.stream]}'s")
            taken[u.stream] = u.path
    return out
