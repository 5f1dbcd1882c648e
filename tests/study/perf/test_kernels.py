"""study.perf.kernels: a step's time operator by operator, and ``archstudy bench --kernels``."""

import json
import math
from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from archstudy.sampling import ArchSpec
from archstudy.study.cli import main
from archstudy.study.perf.kernels import OUTSIDE, attribute, format_profile, profile_step
from archstudy.study.perf.projection import EVAL_CHUNKS, eval_times
from archstudy.study.perf.operators import step_operators

pytestmark = pytest.mark.usefixtures("one_thread")

SPEC = ArchSpec(depth=4, width=12, d_in=7, d_out=3, activation="relu", norm="batch")


def _event(name, self_us, parent=None, device=DeviceType.CPU):
    return SimpleNamespace(
        name=name,
        cpu_parent=parent,
        self_cpu_time_total=self_us,
        self_device_time_total=10 * self_us,
        device_type=device,
    )


def test_time_goes_to_the_outermost_counted_operator_and_a_call_is_counted_there():
    """relu runs clamp_min inside it: clamp_min's time is relu's; a backward operator under autograd's node is
    its own; an uncounted ATen operator keeps its name; the engine's own time is outside; a kernel's record is
    skipped (its time is in its operator's device time)."""
    node = _event("autograd::engine::evaluate_function: ReluBackward0", 5)
    relu = _event("aten::relu", 2)
    events = [
        relu,
        _event("aten::clamp_min", 30, relu),
        node,
        _event("aten::threshold_backward", 40, node),
        _event("aten::empty", 1, node),
        _event("void at::native::vectorized_elementwise_kernel", 99, device=DeviceType.CUDA),
    ]
    seconds, calls = attribute(events, {"relu", "threshold_backward"}, device_time=False)
    assert dict(seconds) == pytest.approx({"relu": 32e-6, "threshold_backward": 40e-6, "empty": 1e-6, OUTSIDE: 5e-6})
    assert dict(calls) == {"relu": 1, "threshold_backward": 1}
    device, _ = attribute(events, {"relu", "threshold_backward"}, device_time=True)
    assert device["relu"] == pytest.approx(320e-6)


def test_the_profile_of_a_step_agrees_with_the_operator_counter():
    """The profiler's calls per step equal the dispatch counter's for every counted operator (two independent
    observers of the same step); each operator's bytes are the counter's; the shares add up to 1."""
    profile = profile_step(SPEC, runs=3, batch=20, steps=2)
    counted = step_operators(SPEC, runs=3, batch=20)
    rows = {r["operator"]: r for r in profile["operators"]}
    for name, n in counted.compute.items():
        if name in rows:  # an operator too quick for the profiler's clock may show no time
            assert rows[name]["calls"] == n, name
            assert rows[name]["gigabytes"] == counted.bytes[name] / 1e9
    assert {"bmm", "native_batch_norm", "native_batch_norm_backward", "_foreach_addcmul_"} <= set(rows)
    assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0, rel=1e-12)
    assert profile["busy_s"] == pytest.approx(sum(r["seconds"] for r in rows.values()), rel=1e-12)
    bmm = rows["bmm"]
    assert bmm["product"] and bmm["gb_per_s"] == pytest.approx(bmm["gigabytes"] / bmm["seconds"], rel=1e-12)
    assert bmm["of_copy"] == pytest.approx(bmm["gb_per_s"] / (profile["copy_tb_s"] * 1e3), rel=1e-12)
    assert profile["step_s"] > 0 and math.isnan(profile["graph_step_s"]) and profile["kernels"] == []
    assert set(profile["eval_s_per_example_run"]) == set(EVAL_CHUNKS)
    text = format_profile("tiny", profile, rows=3)
    longest = profile["operators"][0]["operator"]  # on a net this small, bmm need not be among the 3 longest
    assert text.startswith("tiny: ") and f"  {longest} " in text and "more operators" in text and "2^22 " in text


def test_the_evaluation_counts_the_same_errors_whatever_its_chunks():
    """Evaluation mode computes each example on its own: the errors do not depend on how many examples a chunk
    holds (here 1 to all 300 at once), so the chunk size is a speed knob, timed by ``eval_times``."""
    from archstudy.study import build_network
    from archstudy.study.training.loss import errors

    net = build_network(SPEC, 3, runs=4)
    x = torch.randn(300, SPEC.d_in, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, SPEC.d_out, (300,), generator=torch.Generator().manual_seed(2))
    counts = {elements: errors(net, x, y, 12, 4, elements=elements) for elements in (1, 4 * 12 * 7, 1 << 22)}
    assert all(torch.equal(c, counts[1 << 22]) for c in counts.values()) and 0 < counts[1].min() < 1
    times = eval_times(SPEC, runs=4, examples=200, chunks=(48, 1 << 22), repeats=1)
    assert set(times) == {48, 1 << 22} and all(t > 0 for t in times.values())


def test_command_prints_the_profiles_as_json(capsys, malloc_settings):
    assert main(["bench", "--kernels", "--cases", "small-d3", "--runs", "2", "--steps", "1", "--json"]) == 0
    profiles = json.loads(capsys.readouterr().out)
    assert list(profiles) == ["small-d3"] and profiles["small-d3"]["runs"] == 2
    assert profiles["small-d3"]["operators"][0]["seconds"] > 0 and malloc_settings == [True]


@pytest.mark.cuda
def test_cuda_profile_has_device_times_kernels_and_the_graph(cuda):
    """On a GPU: each operator's time is its kernels' device time, the calls still agree with the counter, the
    kernels are listed, and the graph's step and its replayed kernels are timed."""
    profile = profile_step(SPEC, runs=4, batch=50, device=cuda, steps=2)
    counted = step_operators(SPEC, runs=4, batch=50, device=cuda)
    rows = {r["operator"]: r for r in profile["operators"]}
    assert rows["bmm"]["calls"] == counted.compute["bmm"] and rows["bmm"]["seconds"] > 0
    assert profile["kernels"] and all(k["seconds"] > 0 for k in profile["kernels"])
    assert profile["graph_step_s"] > 0 and profile["copy_tb_s"] > 0
    assert OUTSIDE not in rows  # the host's own time is no device time
