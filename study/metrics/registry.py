"""The functions that compute the ``measure`` row, each declaring at its definition the columns it computes.

The row's columns are declared in ``study.experiment.schema`` (``MEASURE_ROW``: ``MEASURED`` and ``flops``); each
is computed by one function of a metric module, marked with the columns it returns and the stream of its seeded
draws, which takes what every metric measures on (``Measuring``) and that stream's seed:

    @measures("gvcs", "grad_length", stream=1)
    def measure_gradients(m: Measuring, seed: int) -> dict[str, float]:
        g = input_gradients(m.net, m.x, m.y, m.c_out, m.options.gradient_batches, m.batch_size, seed)
        return {"gvcs": gvcs_of(g), "grad_length": grad_length_of(g)}

So a new metric at initialization is its computation (its metric module, with its ``@measures`` function) and
its column declaration(s) in the schema; ``@measures`` registers the function in ``MEASURES``
(``sampling.registry``), which finds the metric modules by importing every module of this package, and ``measure``
(``study.metrics.measurement``) takes them in the order of their first column in the schema, checked
(``metric_functions``: each column of the row computed by exactly one), calls each once and checks that it returns
exactly its columns.
Streams keep the draws independent: switching one metric on or off never changes another's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

import numpy as np
import torch
from torch import nn

from archstudy.sampling import ArchSpec
from archstudy.sampling.registry import Registry

from ..experiment.metric_options import MetricOptions
from ..experiment.schema import ARCHITECTURES, MEASURE_ROW, names

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


Compute = Callable[[Measuring, Any], dict[str, Any]]
F = TypeVar("F", bound=Compute)


@dataclass(frozen=True)
class MetricFunction:
    """One function of the row, as its ``@measures`` declares it: the columns it computes, the function, the
    stream of its draws (None: it draws nothing)."""

    columns: tuple[str, ...]
    function: Compute
    stream: int | None

    @property
    def name(self) -> str:
        return f"{self.function.__module__}.{self.function.__qualname__}"

    def __call__(self, m: Measuring, seed: int) -> dict[str, Any]:
        """The function's columns on ``m``, its draws seeded with (``seed``, its stream)."""
        out = self.function(m, None if self.stream is None else generator_seed(seed, self.stream))
        if set(out) != set(self.columns):
            raise AssertionError(f"{self.name} returned {tuple(out)}; its @measures columns: {self.columns}")
        return out


# Every ``@measures`` function of the metric modules, by its qualified name (``MetricFunction.name``).
MEASURES: Registry[MetricFunction] = Registry("metric function", __package__)


def measures(*columns: str, stream: int | None) -> Callable[[F], F]:
    """Declares ``function(m: Measuring, seed) -> {column: value}`` as the computation of ``columns`` (columns of
    the row declared in ``study.experiment.schema``), registered in ``MEASURES``; ``stream``: the stream of its
    seeded draws (``seed`` is that stream's), None for a function that draws nothing (it gets None). The function
    itself is unchanged."""
    if not columns:
        raise TypeError("@measures needs the columns the function computes")

    def declare(function: F) -> F:
        declared = MetricFunction(tuple(columns), function, stream)
        MEASURES.register(declared.name, declared, module=function.__module__)
        return function

    return declare


def metric_functions(functions: Iterable[MetricFunction]) -> tuple[MetricFunction, ...]:
    """The row's functions: ``functions`` (``MEASURES``' own) in the order of their first column in the schema,
    checked against it: every column of the row (``MEASURE_ROW``) is computed by exactly one function, no function
    computes another column, and no two take the same stream or a reserved one."""
    functions = tuple(functions)
    by_column: dict[str, list[str]] = {c: [] for c in MEASURE_ROW}
    for u in functions:
        stray = [c for c in u.columns if c not in by_column]
        if stray:
            raise LookupError(
                f"{u.name} computes {stray}: not columns of the measure row (study.experiment.schema.MEASURE_ROW)"
            )
        for c in u.columns:
            by_column[c].append(u.name)
    missing = [c for c, by in by_column.items() if not by]
    if missing:
        raise LookupError(f"no @measures function of the metric modules computes {missing}")
    twice = {c: by for c, by in by_column.items() if len(by) > 1}
    if twice:
        raise LookupError(f"columns computed by more than one function: {twice}")
    taken = dict(RESERVED_STREAMS)
    for u in functions:
        if u.stream is not None:
            if u.stream in taken:
                raise LookupError(f"{u.name}: stream {u.stream} is already {taken[u.stream]}'s")
            taken[u.stream] = u.name
    order = {c: i for i, c in enumerate(names(ARCHITECTURES))}
    return tuple(sorted(functions, key=lambda u: min(order[c] for c in u.columns)))
