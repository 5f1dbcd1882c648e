"""study.measure: the flat row of init metrics, its contract with docs/results.md, and its side effects."""

import math
import types

import pytest
import torch

from archstudy.sampling import ArchSpec, SpecError, sample_specs
from archstudy.study import MetricOptions, build_network, frozen_statistics, measure, measure_trained, output_scale
from archstudy.study.metrics import activation_ratio, flops, linear_approx_error, nlc_tau
from archstudy.study.metrics.measurement import MEASURE_COLUMNS
from archstudy.study.experiment.schema import ARCHITECTURES, names

FAST = MetricOptions(nlc_batches=5, gradient_batches=2, proxy_batch_size=32, variability_grid=9, variability_planes=2)


pytestmark = pytest.mark.usefixtures("one_thread")


def stand_in_data(n=400, d_in=5, classes=3, seed=0):
    """What ``study.load_dataset`` returns, from Gaussian data: .train/.val/.test with .x, .y; .d_in, .n_classes."""
    g = torch.Generator().manual_seed(seed)

    def split(m):
        return types.SimpleNamespace(
            x=torch.randn(m, d_in, generator=g, dtype=torch.float64), y=torch.randint(0, classes, (m,), generator=g)
        )

    return types.SimpleNamespace(train=split(n), val=split(n // 4), test=split(n // 4), d_in=d_in, n_classes=classes)


def spec_of(**kw):
    return ArchSpec(**{**dict(depth=4, width=40, d_in=5, d_out=3, bias_init="gaussian"), **kw})


def test_keys_are_the_results_columns():
    """The row is the results schema's measured columns (init metrics, proxies, optional), flops and the time."""
    measured = names(ARCHITECTURES, "init metrics", "proxies", "optional")
    assert len(measured) == 21 and MEASURE_COLUMNS == measured + ("flops", "measure_s")
    assert {"flops", "measure_s"} <= set(names(ARCHITECTURES))
    row = measure(build_network(spec_of()), stand_in_data(), spec_of(), options=FAST)
    assert list(row) == list(MEASURE_COLUMNS)
    for key, value in row.items():
        assert type(value) is (bool if key == "high_bias" else float), key
    finite = set(MEASURE_COLUMNS) - {"lar_diameter", "error_perturbation"}
    assert all(math.isfinite(row[k]) for k in finite - {"high_bias"}), row
    assert math.isnan(row["lar_diameter"]) and math.isnan(row["error_perturbation"])
    assert row["measure_s"] > 0


def test_values_agree_with_their_definitions():
    spec = spec_of(activation="selu", dilation=0.8, shift=0.2, debias=True, norm="batch")
    net = build_network(spec, seed=2)
    data = stand_in_data(n=620)
    row = measure(net, data, spec, options=FAST)
    assert row["c_out"] == row["output_q"] == pytest.approx(output_scale(net, data.train.x), rel=1e-12)
    assert row["bias"] == pytest.approx(row["output_q"] / row["nlc_output_sd_q"], rel=1e-12)
    assert row["nlc"] == pytest.approx(
        row["nlc_jacobian_q"] * row["nlc_input_sd_q"] / (math.sqrt(3) * row["nlc_output_sd_q"]), rel=1e-12
    )
    assert row["grad_length"] == pytest.approx(math.sqrt(5) * row["gvcs"], rel=1e-12)
    assert row["ar"] == activation_ratio(spec) and row["flops"] == flops(spec)
    assert row["nlc_tau"] == nlc_tau(spec) and row["linear_approx_error"] == linear_approx_error(spec)
    assert row["high_bias"] is False


def test_measure_never_changes_the_network_or_the_global_random_state(global_random_state):
    spec = spec_of(norm="batch", param="gmp")
    net = build_network(spec, seed=0)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    rng_state = global_random_state()
    everything = MetricOptions.from_dict(
        {**FAST.to_dict(), "lar": True, "perturbation": True, "region_batches": 1, "region_directions": 1}
    )
    measure(net, stand_in_data(), spec, options=everything)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert net.training and all(p.grad is None for p in net.parameters())
    assert global_random_state() == rng_state
    net.eval()
    measure(net, stand_in_data(), spec, options=FAST)
    assert not net.training


def test_measure_is_seeded():
    spec = spec_of(weights="householder", activation="abs")
    data = stand_in_data()
    a, b, c = (measure(build_network(spec, seed=1), data, spec, options=FAST, seed=s) for s in (7, 7, 8))
    del a["measure_s"], b["measure_s"], c["measure_s"]
    assert a == b
    assert a["nlc"] != c["nlc"] and a["ar"] == c["ar"]


def test_a_stack_is_measured_on_its_first_copy():
    spec = spec_of(skip="after_norm", norm="layer", skip_length=3)
    data = stand_in_data()
    stack = build_network(spec, seed=0, runs=3)
    a = measure(stack, data, spec, options=FAST)
    b = measure(stack.select(0), data, spec, options=FAST)
    del a["measure_s"], b["measure_s"]
    assert a == b


def test_optional_metrics_when_switched_on():
    spec = spec_of(activation="tanh")
    opts = MetricOptions.from_dict(
        {**FAST.to_dict(), "lar": True, "perturbation": True, "region_batches": 1, "region_directions": 2}
    )
    net = build_network(spec)
    row = measure(net, stand_in_data(), spec, options=opts)
    assert 0 < row["lar_diameter"] < opts.region_k_max
    assert math.isnan(row["error_perturbation"])  # a trained network's metric: measure_trained
    after = measure_trained(net, stand_in_data(), spec, options=opts)
    assert set(after) == {"error_perturbation"} and 0 < after["error_perturbation"] <= opts.region_k_max
    assert math.isnan(measure_trained(net, stand_in_data(), spec, options=FAST)["error_perturbation"])
    assert math.isnan(measure_trained(None, stand_in_data(), spec, options=opts)["error_perturbation"])


def test_error_perturbation_after_training_uses_evaluation_mode_and_changes_nothing():
    """E.3 on a trained batchnorm net runs on its running statistics (as its test error does): equal to
    error_perturbation of the evaluation-mode function with the same seeded draws; the net keeps its mode."""
    from archstudy.study.metrics import error_perturbation
    from archstudy.study.metrics.registry import PERTURBATION_STREAM, generator_seed

    spec = spec_of(activation="tanh", norm="batch")
    data = stand_in_data()
    net = build_network(spec, seed=3)
    net.train()
    with torch.no_grad():  # running statistics that differ from the initial (0, 1)
        net(torch.as_tensor(data.train.x) * 3.0 + 1.0)
    opts = MetricOptions.from_dict(
        {**FAST.to_dict(), "perturbation": True, "region_batches": 1, "region_directions": 2}
    )
    buffers = [b.clone() for b in net.buffers()]
    value = measure_trained(net, data, spec, options=opts, seed=5)["error_perturbation"]
    assert net.training and all(torch.equal(a, b) for a, b in zip(buffers, net.buffers()))
    net.eval()
    xt, yt = torch.as_tensor(data.test.x), torch.as_tensor(data.test.y)
    expected = error_perturbation(
        lambda v: net(v),
        xt,
        yt,
        1,
        2,
        opts.batch_size,
        opts.perturbation_tolerance,
        opts.region_k_max,
        generator_seed(5, PERTURBATION_STREAM),
    )
    assert value == expected


def test_an_overflowing_network_gives_nans_not_errors():
    # square activations squared 29 times: the output overflows to inf / nan
    spec = ArchSpec(depth=30, width=40, d_in=5, d_out=3, activation="square")
    row = measure(build_network(spec), stand_in_data(), spec, options=FAST)
    for key in ("nlc", "bias", "c_out", "gvcs", "grad_norm", "snip", "synflow", "jacob_cov", "variability"):
        assert math.isnan(row[key]), key
    assert row["high_bias"] is False
    assert math.isfinite(row["ar"]) and math.isfinite(row["nlc_tau"])


def test_a_constant_output_is_high_bias():
    # an output bias of 1e6 against output variations of order 1: bias ~ 1e6 > 1000
    spec = ArchSpec(depth=3, width=40, d_in=5, d_out=3)
    net = build_network(spec)
    with torch.no_grad():
        net.linears[-1].bias.fill_(1e6)
    assert measure(net, stand_in_data(), spec, options=FAST)["high_bias"] is True


def test_bad_options_and_data_are_one_line_errors():
    with pytest.raises(SpecError, match=r"^MetricOptions.nlc_batches = 0: must be an integer >= 1$"):
        MetricOptions(nlc_batches=0)
    with pytest.raises(SpecError, match=r"^MetricOptions.lar = 'yes': must be true or false$"):
        MetricOptions(lar="yes")
    with pytest.raises(SpecError, match=r"^MetricOptions.grid = 5: is not an option"):
        MetricOptions.from_dict({"grid": 5})
    spec = spec_of()
    with pytest.raises(SpecError, match=r"^measure.data.d_in = 4: must equal spec.d_in = 5$"):
        measure(build_network(spec), stand_in_data(d_in=4), spec)
    with pytest.raises(SpecError, match=r"^measure.spec = "):
        measure(build_network(spec), stand_in_data(), spec_of(width=41))


def test_every_kind_of_sampled_architecture_is_measured():
    # Tiny nets drawn from the extended space (Householder, GmP, skips, every activation and norm): the
    # row is always complete; the NLC, bias and proxies are finite whenever the output is.
    data = stand_in_data(n=300, d_in=6)
    specs = sample_specs(n=10, study_seed=3, d_in=6, d_out=3, preset="extended", param_budget=3000)
    assert {s.weights for s in specs} == {"dense", "householder"} and {s.param for s in specs} == {"sp", "gmp"}
    for spec in specs:
        net = build_network(spec, seed=0)
        row = measure(net, data, spec, options=FAST)
        assert list(row) == list(MEASURE_COLUMNS)
        with torch.no_grad(), frozen_statistics(net):
            finite_output = bool(torch.isfinite(net(data.train.x[:250])).all())
        if finite_output:
            for key in ("nlc", "bias", "c_out", "gvcs", "grad_norm", "snip"):
                assert math.isfinite(row[key]), (key, spec)
