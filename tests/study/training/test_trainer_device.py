"""The trainer on a device: no host synchronization inside an epoch (checked on the CPU by catching every
tensor-to-host conversion, on a GPU by CUDA's sync debug mode), and, on a CUDA device (tests marked
``cuda``, skipped without one): build, measure, train, checkpoint and resume; stacked == alone; the same
selected run as on the CPU; the compiled forward; the bench."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from device_training import DATA, LAYERNORM, RICH, SHORT, SPEC, no_host_sync, on_device, same_runs

from archstudy.study import build_network, measure, train_architecture
from archstudy.study.training import trainer as trainer_module
from archstudy.study.training.compiled import CompiledForward


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("spec", [SPEC, RICH, LAYERNORM], ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip"])
def test_an_epoch_never_waits_for_the_device(monkeypatch, spec):
    """Inside an epoch's steps nothing converts a tensor to a Python value or host memory, branches on a
    tensor's value, or builds an index on the host: on a GPU the host can queue a whole epoch ahead.
    (The test's spies catch such a call on a CPU too, where it costs nothing.)"""
    no_host_sync(monkeypatch, torch.device("cpu"), spec)


def test_the_spies_see_a_host_conversion(monkeypatch):
    """The check above can fail: a step that reads a loss with ``.item()`` is caught."""
    original = trainer_module.train_step

    def reading(stack, x, y, *args, **kwargs):
        original(stack, x, y, *args, **kwargs)
        stack.lr.sum().item()

    monkeypatch.setattr(trainer_module, "train_step", reading)
    with pytest.raises(AssertionError, match="item"):
        no_host_sync(monkeypatch, torch.device("cpu"), SPEC)


# -- on a CUDA device ------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_builds_measures_trains_and_resumes_a_checkpoint(cuda, tmp_path):
    """Build and measure on the GPU (finite metrics, the same as on the CPU to 1e-9), train with a checkpoint
    after every step, stop after epoch 3 and resume: the outcome is the uninterrupted one, exactly."""
    data = on_device(DATA, cuda)
    net = build_network(RICH, seed=3, device=cuda)
    assert all(p.device.type == "cuda" for p in net.parameters())
    row = measure(net, data, RICH, seed=3)
    row_cpu = measure(build_network(RICH, seed=3), DATA, RICH, seed=3)
    for k in ("nlc", "bias", "output_q"):
        assert math.isfinite(row[k]) and row[k] == pytest.approx(row_cpu[k], rel=1e-9), k
    p = SHORT.replace(lrs=[0.01, 0.1, 1.0])
    whole = train_architecture(RICH, data, seed=3, protocol=p, device=cuda)
    path = tmp_path / "ckpt.pt"

    class Stop(Exception):
        pass

    def stop(progress):
        if progress.epoch == 3:
            raise Stop

    with pytest.raises(Stop):
        train_architecture(
            RICH, data, seed=3, protocol=p, device=cuda, checkpoint_path=path, checkpoint_every_s=0.0, progress=stop
        )
    resumed = train_architecture(RICH, data, seed=3, protocol=p, device=cuda, checkpoint_path=path)
    same_runs(whole, resumed, 0.0)
    for (name, a), (_, b) in zip(whole.network.stacked_tensors(), resumed.network.stacked_tensors()):
        assert a.device.type == "cuda" and torch.equal(a, b), name


@pytest.mark.cuda
@pytest.mark.parametrize("spec", [SPEC, RICH, LAYERNORM], ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip"])
def test_cuda_stacked_equals_each_rate_trained_alone(cuda, spec):
    data = on_device(DATA, cuda)
    lrs = [0.03, 0.3]
    both = train_architecture(spec, data, seed=3, protocol=SHORT.replace(lrs=lrs), device=cuda)
    alone = [train_architecture(spec, data, seed=3, protocol=SHORT.replace(lrs=[lr]), device=cuda) for lr in lrs]
    for k in range(2):
        # the same run: its index in the stack of one is 0, in the stack of two k
        same_runs(
            SimpleNamespace(runs=[alone[k].runs[0]]),
            SimpleNamespace(runs=[both.runs[k]]),
            1e-9,
            fields=("epochs", "divisions", "diverged"),
        )
    k = both.best.lr_index
    for (name, a), (_, b) in zip(alone[k].network.stacked_tensors(), both.network.stacked_tensors()):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12, msg=name)


@pytest.mark.cuda
def test_cpu_and_cuda_select_the_same_run_with_the_same_errors(cuda):
    """The GPU's products and reductions add in another order than the CPU's (cuBLAS tiles, tree
    reductions in batchnorm), so the trained parameters differ by round-off that training amplifies a
    little; the schedule's decisions and the errors (counts of misclassified examples) are the same."""
    p = SHORT.replace(lrs=[0.01, 0.03, 0.1, 0.3])
    cpu = train_architecture(SPEC, DATA, seed=3, protocol=p)
    gpu = train_architecture(SPEC, on_device(DATA, cuda), seed=3, protocol=p, device=cuda)
    same_runs(cpu, gpu, 1e-12)
    assert cpu.best.lr_index == gpu.best.lr_index
    for (name, a), (_, b) in zip(cpu.network.stacked_tensors(), gpu.network.stacked_tensors()):
        torch.testing.assert_close(a, b.cpu(), rtol=1e-7, atol=1e-10, msg=name)


@pytest.mark.cuda
@pytest.mark.parametrize("forward", ["eager", "compiled"])
def test_cuda_epochs_never_wait_for_the_device(cuda, monkeypatch, forward):
    no_host_sync(monkeypatch, cuda, RICH, forward)


@pytest.mark.cuda
def test_cuda_compiled_forward_trains_like_the_eager_one(cuda):
    data = on_device(DATA, cuda)
    p = SHORT.replace(lrs=[0.01, 0.1, 1.0], max_epochs=6)
    eager = train_architecture(RICH, data, seed=3, protocol=p, device=cuda, forward="eager")
    forward = CompiledForward(RICH)
    compiled = train_architecture(RICH, data, seed=3, protocol=p, device=cuda, forward=forward)
    same_runs(eager, compiled, 1e-12)
    assert forward.stats.graphs <= 1 + (1 in forward.stats.sizes)


@pytest.mark.cuda
def test_cuda_bench_row_is_complete(cuda):
    from archstudy.study.perf.bench import BenchCase, bench_case

    case = BenchCase("tiny", SPEC, 1_000, 3, 200)
    row = bench_case(case, runs=4, batch=50, repeats=1, device=cuda)
    assert row["device_name"] == torch.cuda.get_device_name(cuda) and row["device"].startswith("cuda")
    assert all(
        row[k] > 0
        for k in ("stacked_s_per_epoch", "compiled_s_per_epoch", "sequential_s_per_epoch", "gemm_gflops", "compile_s")
    )
    assert row["rule"] in ("eager", "compiled", "graph", "fused-graph") and np.isnan(row["stacked_cpu_s_per_epoch"])
