"""study.perf.bench and ``archstudy bench``: the flop count, the GEMM list, the row's arithmetic, the command."""

import json
import math

import pytest
import torch

from archstudy.sampling import ArchSpec, solve_width
from archstudy.study import build_network, frozen_statistics
from archstudy.study.perf.bench import (
    CASES,
    FIELDS,
    PAPER_CASES,
    BenchCase,
    bench_case,
    fp64_peak,
    gemm_ops,
    plain_model,
    step_flops,
)
from archstudy.study.perf.operators import step_operators
from archstudy.study.cli import main


pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]


def test_step_flops_by_hand():
    spec = ArchSpec(depth=3, width=5, d_in=4, d_out=2)
    # layer 1 (4 -> 5): forward and weight gradient; layers 2 (5 -> 5) and 3 (5 -> 2): also the input
    # gradient; 2 flops per multiply-add, minibatch 7, 3 runs
    assert step_flops(spec, 3, 7) == 3 * (2 * 2 * 7 * 4 * 5 + 3 * 2 * 7 * 5 * 5 + 3 * 2 * 7 * 5 * 2)


def test_the_timed_gemms_are_the_products_of_a_step():
    for case in CASES.values():
        ops = gemm_ops(case.spec, 3, 11, torch.device("cpu"))
        flops = sum(2 * out.numel() * a.shape[-1] for _, a, _, out in ops)
        assert flops == step_flops(case.spec, 3, 11)
        for f, a, b, out in ops[:3]:
            assert f(a, b).shape == out.shape


def test_case_sizes_are_what_the_names_say():
    assert abs(CASES["small"].params - 20_000) < 200 and abs(CASES["1M"].params - 1_000_000) < 5_000
    assert {c.spec.depth for k, c in CASES.items() if k.startswith("small")} == {3, 9, 25}


def test_a_row_is_consistent():
    case = BenchCase("tiny", ArchSpec(depth=3, width=6, d_in=5, d_out=3, norm="batch"), 1_000, 2, 100)
    row = bench_case(case, runs=3, batch=50, repeats=1, compiled=False)
    assert set(FIELDS) <= set(row)
    per_epoch = 1_000 // 50
    assert row["speedup"] == pytest.approx(row["sequential_s_per_epoch"] / row["stacked_s_per_epoch"], rel=1e-12)
    assert row["speedup_same_step"] == pytest.approx(
        row["same_step_s_per_epoch"] / row["stacked_s_per_epoch"], rel=1e-12
    )
    assert row["gflops"] == pytest.approx(
        step_flops(case.spec, 3, 50) * per_epoch / row["stacked_s_per_epoch"] / 1e9, rel=1e-12
    )
    assert row["gemm_fraction"] == pytest.approx(row["gflops"] / row["gemm_gflops"], rel=1e-12)
    assert row["params"] == case.spec.num_params and row["runs"] == 3 and row["chunk"] >= 1
    assert all(row[k] > 0 for k in ("stacked_s_per_epoch", "sequential_s_per_epoch", "gemm_gflops"))
    # a CPU is in no table of float64 peaks; the rule keeps the eager step on a CPU
    assert math.isnan(row["peak_fraction"]) and "not in the table" in row["peak_source"] and row["rule"] == "eager"
    assert math.isnan(row["compiled_s_per_epoch"]) and row["compiled_graphs"] == 0
    # the operators of one step of the whole stack (study.perf.operators), per layer
    assert row["operators"] == sum(row["operators_by_name"].values()) and row["operator_views"] > 0
    assert row["operators_per_layer"] == row["operators"] / 3 and row["chunks"] == -(-3 // row["chunk"])
    # the traffic outside the products (study.perf.operators) and the fraction of the bare GEMMs it allows at the
    # bandwidth a copy reaches: t_gemm / (t_gemm + traffic / bandwidth), at most 1, above the measured fraction
    # only where the step spends time beyond its traffic (always, here: the step's Python)
    traffic = step_operators(case.spec, 3, 50).traffic()
    assert row["traffic_gb"] == traffic / 1e9 > 0 and row["memory_tb_s"] > 0
    t_gemm = row["stacked_s_per_epoch"] * row["gemm_fraction"] / per_epoch
    assert row["memory_floor_fraction"] == pytest.approx(
        t_gemm / (t_gemm + traffic / (row["memory_tb_s"] * 1e12)), rel=1e-12
    )
    assert row["gemm_fraction"] < row["memory_floor_fraction"] < 1
    # no graph on a CPU, so no graph of the compiled forward either
    assert math.isnan(row["graph_compiled_s_per_epoch"]) and row["graph_compiled_error"] == ""


def test_the_plain_baseline_computes_what_the_stacked_network_computes():
    """The plain per-run loop trains the same function: the same layers, initialized from a stacked copy,
    give the same output."""
    spec = CASES["small-d3"].spec
    stack = build_network(spec, seed=0, runs=2)
    model = plain_model(spec, torch.device("cpu"))
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for lin, layer in zip(linears, stack.select(1).linears):
            lin.weight.copy_(layer.weight[0])
            lin.bias.copy_(layer.bias[0])
    x = torch.randn(30, spec.d_in, dtype=torch.float64)
    with frozen_statistics(stack):
        expected = stack(x)[1]
    assert torch.allclose(model.train()(x), expected, rtol=1e-12, atol=1e-12)


def test_a_row_times_the_compiled_step_and_says_what_the_rule_picks():
    case = BenchCase("tiny", ArchSpec(depth=3, width=6, d_in=5, d_out=3, norm="batch"), 1_000, 2, 100)
    row = bench_case(
        case, runs=3, batch=50, repeats=1, plain=False, compiled=True, compile_backend="aot_eager_decomp_partition"
    )
    assert row["compiled_s_per_epoch"] > 0 and row["compile_s"] > 0 and row["compiled_graphs"] == 1
    assert row["compiled_speedup"] == pytest.approx(row["stacked_s_per_epoch"] / row["compiled_s_per_epoch"], rel=1e-12)
    assert row["rule"] == "eager" and math.isnan(row["sequential_s_per_epoch"])


def test_the_copy_bandwidth_counts_the_bytes_read_and_written(monkeypatch):
    """Bytes read plus bytes written per second of the best copy: 2 x 8 MiB in 1 ms is 16.8 GB/s."""
    from archstudy.study.perf import bench

    assert 0 < bench.copy_bandwidth(torch.device("cpu"), megabytes=8, repeats=1) < 10  # a real copy: < 10 TB/s
    seconds = iter([2e-3, 1e-3, 3e-3])
    monkeypatch.setattr(bench, "time_calls", lambda fn, calls, device: (fn(0), (next(seconds), 0.0))[1])
    assert bench.copy_bandwidth(torch.device("cpu"), megabytes=8) == pytest.approx(2 * 8 * 2**20 / 1e-3 / 1e12)


def test_an_error_is_one_line_that_says_what_happened():
    """The first line, and the last where the first only introduces the rest (torch.compile's wrapping)."""
    from archstudy.study.perf.bench import error_line

    assert error_line(RuntimeError("capture failed\ndetail")) == "RuntimeError: capture failed"
    wrapped = RuntimeError("backend='inductor' raised:\n\nRuntimeError: operation not permitted\n")
    assert error_line(wrapped) == "RuntimeError: backend='inductor' raised: RuntimeError: operation not permitted"


def test_device_peaks_are_found_by_name():
    assert fp64_peak("NVIDIA H100 80GB HBM3")[0] == 67.0 and fp64_peak("NVIDIA H100 PCIe")[0] == 51.0
    assert fp64_peak("NVIDIA A100-SXM4-80GB")[0] == 19.5 and fp64_peak("Tesla V100-SXM2-16GB")[0] == 7.8
    assert fp64_peak("NVIDIA H200")[0] == 67.0 and fp64_peak("Tesla V100-PCIE-32GB")[0] == 7.0
    peak, why = fp64_peak("NVIDIA L4")
    assert math.isnan(peak) and "'NVIDIA L4' is not in the table" in why


def test_the_householder_case_is_a_1m_parameter_net_as_the_sampler_solves_it():
    spec = CASES["1M-householder"].spec
    assert spec.weights == "householder" and solve_width(spec.replace(width=8), 1_000_000) == spec
    assert abs(spec.num_params - 1_000_000) < 3_000
    assert [CASES[c].spec.depth for c in PAPER_CASES] == [3, 9, 25, 49]
    assert all(abs(CASES[c].params - 1_000_000) < 5_000 for c in PAPER_CASES)


def test_command_prints_json_rows(capsys, malloc_settings):
    assert (
        main(["bench", "--cases", "small", "--runs", "2", "--steps", "1", "--repeats", "1", "--json", "--no-compile"])
        == 0
    )
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert [r["case"] for r in rows] == ["small"] and set(FIELDS) <= set(rows[0]) and rows[0]["runs"] == 2
    assert malloc_settings == [True]
    # each case's row also on standard error as it ends: what a run cut short by a time limit leaves
    assert [json.loads(line) for line in err.splitlines()] == json.loads(json.dumps(rows))


def test_command_prints_a_table(capsys, malloc_settings):
    assert main(["bench", "--quick", "--runs", "2", "--steps", "1", "--repeats", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["case", "params", "threads"] and out[1].split()[0] == "small"
    assert out[-1].startswith("rule for small: eager (CPU")
    assert malloc_settings == [True]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cases", "huge"], "bench.cases = 'huge': must be one of"),
        (["--cases", ","], "bench.cases = ',': must name at least one of"),
        (["--runs", "0"], "bench.runs = 0: must be an integer >= 1"),
        (["--device", "nowhere"], "bench.device = 'nowhere'"),
        (["--gpus-per-arch", "2"], "bench.gpus_per_arch = 2.0: must be"),
        (["--compile-mode", "fastest"], "bench.compile_mode = 'fastest': must be one of"),
        (["--project", "--devices", "0"], "bench.devices = '0': must be a comma-separated list of integers >= 1"),
    ],
)
def test_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_bare_gemms_have_the_layouts_of_the_steps_hidden_products():
    """The roofline's products are the step's: every product of a hidden layer (width to width) in a training step
    has the shapes and strides of one of the bench's bare GEMMs, as many times (the first and the output layer's
    may differ by an operand's transpose)."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from archstudy.study import Protocol
    from archstudy.study.training.stack import new_stack, train_step

    n, d_in, d_out, runs, batch = 12, 7, 3, 4, 20
    spec = ArchSpec(depth=5, width=n, d_in=d_in, d_out=d_out, norm="batch")

    def hidden(operands) -> tuple | None:
        layout = tuple((tuple(t.shape), t.stride()) for t in operands)
        return None if any(d in (d_in, d_out) for shape, _ in layout for d in shape) else layout

    class Products(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: Counter = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.overloadpacket.__name__ == "bmm" and (layout := hidden(args[:2])) is not None:
                self.seen[layout] += 1
            return func(*args, **(kwargs or {}))

    p = Protocol()
    stack = new_stack(build_network(spec, 0, runs=runs), [1e-3] * runs, p)
    x, y = torch.randn(batch, d_in, dtype=torch.float64), torch.randint(0, d_out, (batch,))
    train_step(stack, x, y, 1.0, p)
    with Products() as mode:
        train_step(stack, x, y, 1.0, p)
    bare = Counter(
        layout
        for f, a, b, _ in gemm_ops(spec, runs, batch, torch.device("cpu"))
        if f is torch.bmm and (layout := hidden((a, b))) is not None
    )
    assert mode.seen == bare and sum(bare.values()) == 3 * (spec.depth - 2)
