"""``measure``: every metric of an architecture at initialization, as one flat row of floats (``study.measure``,
``study.metrics.measure``; this module is the row, ``study.metrics.measurement``).

    row = measure(net, data, spec, options=MetricOptions(), seed=0)
    row.update(measure_trained(trained_net, data, spec, options=..., seed=0))   # E.3, after training

The keys are the Parquet columns of ``docs/results.md`` ("init metrics", "zero-cost proxies",
"optional", ``flops``) plus ``measure_s``, the seconds the call took (``MEASURE_COLUMNS``). Every value is a
float, NaN where it was not computed (the optional E.1 unless switched on; E.3 always, see below) or is not
finite (a network whose output overflows gets NaNs; ``measure`` never raises on a pathological network);
``high_bias`` is a bool, true when the bias exceeds ``HIGH_BIAS`` = 1000 (an infinite bias, i.e. a
constant output, counts as high).

What is measured on which data:

* training set, in minibatches of ``batch_size`` = 250: NLC and its factors (section G), bias, output_q,
  c_out (= output_q, the trainer's output scale), GVCS and gradient length (``gradient_batches``
  minibatches), variability (planes through the training data), E.1 (``region_batches`` minibatches);
* one random training minibatch of ``proxy_batch_size`` = 128: grad_norm, snip, jacob_cov, NWOT; synflow
  takes an all-ones input;
* the spec alone: AR, FLOPs, NLC_tau(1) and the linear approximation error of the activation variant.

Each column comes from the function of its metric module that names it in its ``@measures``
(``study.metrics.registry``; ``METRIC_FUNCTIONS`` takes them from its registry, which imports every module of the
package): ``measure``
makes the NLC pass first (its ``c_out`` is the output scale the loss-based metrics divide by), then calls every
function once, in the order of their first column in the schema.

The network is never changed: every pass runs with batch statistics and running statistics untouched
(``frozen_statistics``), gradients are taken with ``torch.autograd.grad`` (no ``.grad`` is written), and
the metrics that need another mode (synflow, variability of a batchnorm net) work on a deep copy. A
stack of R runs (identical at initialization) is measured on its first copy. Every random draw comes
from ``seed``; the global random state is neither used nor advanced.

E.3, the maximal error-preserving perturbation, is a property of the trained network (figure 3E: "we
corrupted the test set with small random perturbations and measured how large these perturbations
could be before the test error increased significantly"; at initialization the error is chance and the
number means nothing). ``measure`` leaves it NaN; ``measure_trained`` computes it on the test set for the
network training selected (the runner calls it when ``perturbation`` is on), in evaluation mode as the
test error itself is measured (running statistics of batchnorm).
"""

from __future__ import annotations

import math
import time
from typing import cast

import torch
from torch import nn

from archstudy.sampling import ArchSpec, SpecError
from archstudy.sampling.constraints import SEED, check

from ..experiment.metric_options import MetricOptions
from ..experiment.schema import MEASURE_ROW
from ..nn.network import Network
from .gradients import finite_or_nan
from .nlc import nlc_parts
from .regions import error_perturbation
from .registry import MEASURES, NLC_STREAM, PERTURBATION_STREAM, Measuring, generator_seed, metric_functions

# The columns of the results schema this returns (``study.experiment.schema.MEASURE_ROW``), plus the time taken.
MEASURE_COLUMNS = MEASURE_ROW + ("measure_s",)
# The functions of the row: the ``@measures`` functions of the metric modules (every module of the package, imported
# by ``MEASURES``), in the order of their first column in the schema, checked: each column of the row computed by
# exactly one of them.
METRIC_FUNCTIONS = metric_functions(MEASURES.values())


def _tensor(a, dtype, device) -> torch.Tensor:
    return torch.as_tensor(a, dtype=dtype).to(device)


def _split(data, name: str, device) -> tuple[torch.Tensor, torch.Tensor]:
    split = getattr(data, name)
    return _tensor(split.x, torch.float64, device), _tensor(split.y, torch.int64, device)


def _check_inputs(net: nn.Module, data, spec: ArchSpec) -> None:
    if not isinstance(spec, ArchSpec):
        raise SpecError("measure", "spec", type(spec).__name__, "must be an ArchSpec")
    net_spec = getattr(net, "spec", None)
    if net_spec is not None and net_spec != spec:
        raise SpecError("measure", "spec", spec.content_id, f"must be the network's own spec {net_spec.content_id}")
    if data.d_in != spec.d_in:
        raise SpecError("measure", "data.d_in", data.d_in, f"must equal spec.d_in = {spec.d_in}")
    if data.n_classes != spec.d_out:
        raise SpecError("measure", "data.n_classes", data.n_classes, f"must equal spec.d_out = {spec.d_out}")


def _checked(where: str, options: MetricOptions | None, seed: int) -> tuple[MetricOptions, int]:
    opts = MetricOptions() if options is None else options
    if not isinstance(opts, MetricOptions):
        raise SpecError(where, "options", type(opts).__name__, "must be a MetricOptions or None")
    return opts, check(where, "seed", SEED, seed)


def _first_run(net: nn.Module, data, spec: ArchSpec) -> nn.Module:
    """``net`` checked against ``spec`` and ``data``; a stack of R runs (identical at initialization, or
    the selected run after training) is measured on its first copy."""
    _check_inputs(net, data, spec)
    return cast(Network, net).select(0) if getattr(net, "runs", 1) > 1 else net  # a stack: a Network


def nlc_seed(seed: int) -> int:
    """The seed of the NLC's draws in ``measure(..., seed=seed)``: the trainer's NLC after training uses it
    too, so before and after see the same minibatches and Gaussian matrices (common random numbers)."""
    return generator_seed(seed, NLC_STREAM)


def measure(net: nn.Module, data, spec: ArchSpec, *, options: MetricOptions | None = None, seed: int = 0) -> dict:
    """All metrics of ``net`` (built from ``spec``) on ``data`` (a ``study.load_dataset`` result); see the
    module docstring. Returns ``{column: value}`` with exactly the keys ``MEASURE_COLUMNS``."""
    start = time.perf_counter()
    opts, seed = _checked("measure", options, seed)
    net = _first_run(net, data, spec)
    device = next(net.parameters()).device
    x, y = _split(data, "train", device)
    m = Measuring(net, spec, opts, x, y, nlc_parts(net, x, opts.nlc_batches, opts.batch_size, nlc_seed(seed)))
    row: dict = {}
    for function in METRIC_FUNCTIONS:  # in the schema's order
        row.update(function(m, seed))

    out = {k: (row[k] if k == "high_bias" else finite_or_nan(row[k])) for k in MEASURE_COLUMNS[:-1]}
    out["measure_s"] = time.perf_counter() - start
    return out


def measure_trained(
    net: nn.Module | None, data, spec: ArchSpec, *, options: MetricOptions | None = None, seed: int = 0
) -> dict:
    """The metrics of a trained network (the selected run's, ``outcome.network``): ``{"error_perturbation":
    value}``, E.3 on the test set in evaluation mode, NaN when ``options.perturbation`` is off, the
    network is None (nothing was trained) or its output is not finite. The network is not changed."""
    opts, seed = _checked("measure_trained", options, seed)
    if not opts.perturbation or net is None:
        return {"error_perturbation": math.nan}
    net = _first_run(net, data, spec)
    xt, yt = _split(data, "test", next(net.parameters()).device)
    was_training = net.training
    net.eval()  # the test error's own mode; a plain callable, so error_perturbation adds no batch mode
    try:
        value = error_perturbation(
            lambda v: net(v),
            xt,
            yt,
            opts.region_batches,
            opts.region_directions,
            opts.batch_size,
            opts.perturbation_tolerance,
            opts.region_k_max,
            generator_seed(seed, PERTURBATION_STREAM),
        )
    finally:
        net.train(was_training)
    return {"error_perturbation": finite_or_nan(value)}
