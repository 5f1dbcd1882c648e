"""study.metrics.registry: the ``measure`` row is computed by the functions its columns' declarations name, each
marked with the stream of its draws; a function must return exactly its columns."""

from __future__ import annotations

import importlib
import math
import types

import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import MetricOptions, build_network
from archstudy.study.experiment.schema import MEASURED, measured_by
from archstudy.study.metrics import measurement, registry
from archstudy.study.metrics.nlc import nlc_parts
from archstudy.study.metrics.registry import (
    NLC_STREAM, PERTURBATION_STREAM, Measuring, MetricFunction, generator_seed, measures, resolve, metric_functions,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_column_of_the_row_has_one_marked_function_in_its_metric_module():
    us = metric_functions()
    assert [u.path for u in us] == list(measured_by())
    assert sorted(c for u in us for c in u.columns) == sorted((*MEASURED, "flops"))
    for u in us:
        module, _, name = u.path.partition(":")
        assert u.function.__module__ == f"archstudy.study.metrics.{module}" and u.function.__name__ == name
        assert u.stream == u.function.stream


def test_the_streams_are_the_ones_every_stored_number_was_drawn_with():
    """The seed of each metric's draws is (seed, stream): a changed stream would change the stored values."""
    streams = {u.path: u.stream for u in metric_functions()}
    assert streams == {"measurement:measure_spec": None, "nlc:measure_nlc": None,
                       "variability:measure_variability": 3, "gradients:measure_gradients": 1,
                       "proxies:measure_proxies": 2, "regions:measure_lar": 4, "regions:perturbation_at_init": None}
    assert (NLC_STREAM, PERTURBATION_STREAM) == (0, 5)
    assert measurement.nlc_seed(7) == generator_seed(7, 0) != generator_seed(7, 1)


def test_a_function_must_return_exactly_its_columns_and_be_marked():
    @measures(stream=None)
    def two(m, seed):
        return {"a": 1.0, "b": 2.0}

    assert MetricFunction("x:two", ("a", "b"), two, None)(None, 0) == {"a": 1.0, "b": 2.0}
    with pytest.raises(AssertionError, match=r"x:two returned \('a', 'b'\); its columns in the schema: \('a',\)"):
        MetricFunction("x:two", ("a",), two, None)(None, 0)
    with pytest.raises(LookupError, match="no function nlc_parts marked @measures"):
        resolve("nlc:nlc_parts")
    with pytest.raises(LookupError, match="no function missing marked @measures"):
        resolve("nlc:missing")


def test_a_function_gets_its_streams_seed_and_the_shared_nlc_pass():
    seen = {}

    @measures(stream=9)
    def probe(m, seed):
        seen.update(seed=seed, c_out=m.c_out)
        return {"p": 0.0}

    spec = ArchSpec(depth=3, width=8, d_in=4, d_out=2)
    net = build_network(spec)
    x = torch.randn(300, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    parts = nlc_parts(net, x, 2, 250, measurement.nlc_seed(3))
    m = Measuring(net, spec, MetricOptions(), x, torch.zeros(300, dtype=torch.int64), parts)
    MetricFunction("t:probe", ("p",), probe, 9)(m, 3)
    assert seen == {"seed": generator_seed(3, 9), "c_out": parts.output_q}
    assert m.batch_size == 250 and m.device == x.device


def test_a_stream_taken_twice_is_refused(monkeypatch):
    """Two functions drawing from one stream would draw the same numbers: ``metric_functions`` refuses it."""
    gradients = resolve("gradients:measure_gradients")

    @measures(stream=gradients.stream)
    def twin(m, seed):
        return {}

    monkeypatch.setattr(importlib.import_module("archstudy.study.metrics.variability"), "measure_variability", twin)
    metric_functions.cache_clear()
    try:
        with pytest.raises(LookupError, match="stream 1 is already"):
            metric_functions()
    finally:
        monkeypatch.undo()
        metric_functions.cache_clear()
    assert len(metric_functions()) == len(measured_by())


def test_the_row_is_the_functions_outputs():
    """``measure`` is every function's output on one ``Measuring``, made finite or NaN, in the schema's order."""
    spec = ArchSpec(depth=4, width=16, d_in=5, d_out=3, activation="tanh", norm="batch")
    g = torch.Generator().manual_seed(1)

    def split(n):
        return types.SimpleNamespace(x=torch.randn(n, 5, generator=g, dtype=torch.float64),
                                     y=torch.randint(0, 3, (n,), generator=g))

    data = types.SimpleNamespace(train=split(300), val=split(50), test=split(50), d_in=5, n_classes=3)
    opts = MetricOptions(nlc_batches=2, gradient_batches=2, proxy_batch_size=32, variability_grid=9,
                         variability_planes=1)
    net = build_network(spec, seed=0)
    row = measurement.measure(net, data, spec, options=opts, seed=4)
    m = Measuring(net, spec, opts, data.train.x, data.train.y, nlc_parts(net, data.train.x, 2, 250,
                                                                          measurement.nlc_seed(4)))
    by_hand = {}
    for u in metric_functions():
        by_hand.update(u(m, 4))
    for k in measurement.MEASURE_COLUMNS[:-1]:
        v = by_hand[k] if k == "high_bias" else measurement.finite_or_nan(by_hand[k])
        assert (math.isnan(v) and math.isnan(row[k])) or v == row[k], k
    assert registry.PACKAGE == "archstudy.study.metrics"
