"""study.metrics.registry: the ``measure`` row is computed by the functions of the metric modules, each declaring
at its definition the columns it computes (``@measures``) and the stream of its draws; every column of the row is
computed by exactly one function, and a function must return exactly its columns."""

from __future__ import annotations

import ast
import math
import pkgutil
import types
from pathlib import Path

import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.sampling.registry import Registry
from archstudy.study import MetricOptions, build_network
from archstudy.study import metrics as metrics_package
from archstudy.study.experiment.schema import ARCHITECTURES, MEASURE_ROW, MEASURED, names
from archstudy.study.metrics import measurement, registry
from archstudy.study.metrics.nlc import nlc_parts
from archstudy.study.metrics.registry import (
    NLC_STREAM,
    PERTURBATION_STREAM,
    Measuring,
    MetricFunction,
    generator_seed,
    measures,
    metric_functions,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def fresh(monkeypatch) -> Registry[MetricFunction]:
    """An empty registry in ``MEASURES``' place, for the ``@measures`` functions a test defines."""
    empty: Registry[MetricFunction] = Registry("metric function", metrics_package.__name__)
    monkeypatch.setattr(registry, "MEASURES", empty)
    return empty


def declared_in_the_package() -> set[str]:
    """The qualified names of the functions under ``@measures`` in every module of ``study.metrics``, read from the
    source files (not from the registry, which is what this checks)."""
    found = set()
    for m in pkgutil.iter_modules(metrics_package.__path__):
        tree = ast.parse((Path(metrics_package.__path__[0]) / f"{m.name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "measures" for d in node.decorator_list
            ):
                found.add(f"{metrics_package.__name__}.{m.name}.{node.name}")
    return found


def test_every_column_of_the_row_is_computed_by_exactly_one_function_and_no_function_computes_another():
    found = set(registry.MEASURES.values())
    assert found == set(measurement.METRIC_FUNCTIONS)
    # a module with @measures functions that the package's scan misses fails
    assert {u.name for u in found} == declared_in_the_package() == set(registry.MEASURES)
    computed = [c for u in found for c in u.columns]
    assert sorted(computed) == sorted(MEASURE_ROW) and len(set(computed)) == len(computed)
    assert MEASURE_ROW == (*MEASURED, "flops")


def test_the_functions_are_called_in_the_order_of_their_first_column_in_the_schema():
    order = names(ARCHITECTURES)
    firsts = [min(order.index(c) for c in u.columns) for u in measurement.METRIC_FUNCTIONS]
    assert firsts == sorted(firsts)
    assert [u.function.__name__ for u in measurement.METRIC_FUNCTIONS] == [
        "measure_spec",
        "measure_nlc",
        "measure_variability",
        "measure_gradients",
        "measure_proxies",
        "measure_lar",
        "perturbation_at_init",
    ]


def test_the_streams_are_the_ones_every_stored_number_was_drawn_with():
    """The seed of each metric's draws is (seed, stream): a changed stream would change the stored values."""
    streams = {u.name.removeprefix("archstudy.study.metrics."): u.stream for u in measurement.METRIC_FUNCTIONS}
    assert streams == {
        "architecture.measure_spec": None,
        "nlc.measure_nlc": None,
        "variability.measure_variability": 3,
        "gradients.measure_gradients": 1,
        "proxies.measure_proxies": 2,
        "regions.measure_lar": 4,
        "regions.perturbation_at_init": None,
    }
    assert (NLC_STREAM, PERTURBATION_STREAM) == (0, 5)
    assert measurement.nlc_seed(7) == generator_seed(7, 0) != generator_seed(7, 1)


def test_a_function_must_return_exactly_its_columns(fresh):
    @measures("a", "b", stream=None)
    def two(m, seed):
        return {"a": 1.0, "b": 2.0}

    (declared,) = fresh.values()
    assert declared.function is two and declared(None, 0) == {"a": 1.0, "b": 2.0}
    assert two(None, None) == {"a": 1.0, "b": 2.0}  # the function itself is unchanged
    with pytest.raises(AssertionError, match=r"two returned \('a', 'b'\); its @measures columns: \('a',\)"):
        MetricFunction(("a",), two, None)(None, 0)
    with pytest.raises(TypeError, match="needs the columns"):
        measures(stream=None)
    with pytest.raises(ValueError, match=r"metric function '.*two' is declared twice: in .*test_registry and in "):
        measures("a", stream=None)(two)


def test_the_row_refuses_a_missing_a_doubled_or_a_stray_column():
    here = measurement.METRIC_FUNCTIONS
    assert metric_functions(reversed(here)) == here
    with pytest.raises(LookupError, match=r"no @measures function of the metric modules computes \['variability'\]"):
        metric_functions(u for u in here if u.columns != ("variability",))

    def again(m, seed):
        return {"gvcs": 0.0}

    with pytest.raises(LookupError, match=r"computed by more than one function: \{'gvcs'"):
        metric_functions([*here, MetricFunction(("gvcs",), again, 7)])

    def stray(m, seed):
        return {"test_error": 0.0}

    with pytest.raises(LookupError, match=r"stray computes \['test_error'\]: not columns of the measure row"):
        metric_functions([*here, MetricFunction(("test_error",), stray, 8)])


def test_a_stream_taken_twice_or_reserved_is_refused():
    """Two functions drawing from one stream would draw the same numbers: ``metric_functions`` refuses it."""
    without = [u for u in measurement.METRIC_FUNCTIONS if u.columns != ("variability",)]
    for stream, taken in ((1, "measure_gradients"), (NLC_STREAM, "the NLC pass"), (PERTURBATION_STREAM, "E.3")):

        def twin(m, seed):
            return {"variability": 0.0}

        with pytest.raises(LookupError, match=f"stream {stream} is already .*{taken}"):
            metric_functions([*without, MetricFunction(("variability",), twin, stream)])


def test_a_function_gets_its_streams_seed_and_the_shared_nlc_pass(fresh):
    seen = {}

    @measures("p", stream=9)
    def probe(m, seed):
        seen.update(seed=seed, c_out=m.c_out)
        return {"p": 0.0}

    spec = ArchSpec(depth=3, width=8, d_in=4, d_out=2)
    net = build_network(spec)
    x = torch.randn(300, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    parts = nlc_parts(net, x, 2, 250, measurement.nlc_seed(3))
    m = Measuring(net, spec, MetricOptions(), x, torch.zeros(300, dtype=torch.int64), parts)
    (declared,) = fresh.values()
    declared(m, 3)
    assert seen == {"seed": generator_seed(3, 9), "c_out": parts.output_q}
    assert m.batch_size == 250 and m.device == x.device


def test_the_row_is_the_functions_outputs():
    """``measure`` is every function's output on one ``Measuring``, made finite or NaN, in the schema's order."""
    spec = ArchSpec(depth=4, width=16, d_in=5, d_out=3, activation="tanh", norm="batch")
    g = torch.Generator().manual_seed(1)

    def split(n):
        return types.SimpleNamespace(
            x=torch.randn(n, 5, generator=g, dtype=torch.float64), y=torch.randint(0, 3, (n,), generator=g)
        )

    data = types.SimpleNamespace(train=split(300), val=split(50), test=split(50), d_in=5, n_classes=3)
    opts = MetricOptions(
        nlc_batches=2, gradient_batches=2, proxy_batch_size=32, variability_grid=9, variability_planes=1
    )
    net = build_network(spec, seed=0)
    row = measurement.measure(net, data, spec, options=opts, seed=4)
    m = Measuring(
        net, spec, opts, data.train.x, data.train.y, nlc_parts(net, data.train.x, 2, 250, measurement.nlc_seed(4))
    )
    by_hand = {}
    for u in registry.MEASURES.values():
        by_hand.update(u(m, 4))
    for k in measurement.MEASURE_COLUMNS[:-1]:
        v = by_hand[k] if k == "high_bias" else measurement.finite_or_nan(by_hand[k])
        assert (math.isnan(v) and math.isnan(row[k])) or v == row[k], k
