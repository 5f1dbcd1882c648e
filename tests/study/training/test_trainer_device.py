"""The trainer on a device: no host synchronization inside an epoch (checked on the CPU by catching every
tensor-to-host conversion, on a GPU by CUDA's sync debug mode), and, on a CUDA device (tests marked
``cuda``, skipped without one): build, measure, train, checkpoint and resume; stacked == alone; the same
selected run as on the CPU; the compiled forward; the bench."""

import contextlib
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, build_network, measure, train_architecture
from archstudy.study.training import trainer as trainer_module
from archstudy.study.training.compiled import CompiledForward

SPEC = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="batch")
# every layer kind the trainer's step has: Householder, GmP with input mean normalization is not here (its
# hidden layers are Householder) but the GmP input layer is, batchnorm, skips with a projection
RICH = ArchSpec(
    depth=5,
    width=12,
    d_in=40,
    d_out=3,
    activation="tanh",
    norm="batch",
    weights="householder",
    param="gmp",
    skip="after_linear",
    debias=True,
    shift=0.2,
)
LAYERNORM = ArchSpec(
    depth=5,
    width=12,
    d_in=40,
    d_out=3,
    activation="selu",
    norm="layer",
    param="gmp",
    skip="after_norm",
    skip_strength=0.5,
    bias_init="gaussian",
)
SHORT = Protocol(batch_size=50, patience_first=3, patience=2, divisions=2, max_epochs=12)


def _data(n_train=400, n_val=200, n_test=200, seed=1):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(40, 3, generator=g, dtype=torch.float64)

    def split(n):
        x = torch.randn(n, 40, generator=g, dtype=torch.float64)
        return SimpleNamespace(x=x, y=(x @ w + 0.5 * torch.randn(n, 3, generator=g, dtype=torch.float64)).argmax(1))

    return SimpleNamespace(train=split(n_train), val=split(n_val), test=split(n_test), d_in=40, n_classes=3)


DATA = _data()
HOST = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__", "__array__")


@contextlib.contextmanager
def _host_conversions_inside_steps(monkeypatch, device):
    """Record every tensor-to-host conversion (and, on CUDA, every synchronization: sync debug mode
    "error") made while the trainer runs an epoch's steps (``_Trainer._steps``)."""
    calls = []
    inside = [False]
    for name in HOST:
        original = getattr(torch.Tensor, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):
            if inside[0]:
                calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, spy)
    for name in ("as_tensor", "tensor", "from_numpy"):  # host data copied to the device, per step
        original = getattr(torch, name)

        def spy_new(*args, _original=original, _name=name, **kwargs):
            if inside[0]:
                calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch, name, spy_new)
    steps = trainer_module._Trainer._steps

    def watched(self, *args, **kwargs):
        inside[0] = True
        if device.type == "cuda":
            torch.cuda.set_sync_debug_mode("error")
        try:
            return steps(self, *args, **kwargs)
        finally:
            inside[0] = False
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(trainer_module._Trainer, "_steps", watched)
    yield calls


def _no_host_sync(monkeypatch, device, spec, forward="eager"):
    with _host_conversions_inside_steps(monkeypatch, device) as calls:
        train_architecture(
            spec,
            DATA,
            seed=3,
            protocol=SHORT.replace(lrs=[0.01, 0.1, 1.0, 10.0], max_epochs=4),
            device=device,
            forward=forward,
            chunk_runs=2,
        )
    assert calls == [], sorted(set(calls))


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("spec", [SPEC, RICH, LAYERNORM], ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip"])
def test_an_epoch_never_waits_for_the_device(monkeypatch, spec):
    """Inside an epoch's steps nothing converts a tensor to a Python value or host memory, branches on a
    tensor's value, or builds an index on the host: on a GPU the host can queue a whole epoch ahead.
    (The test's spies catch such a call on a CPU too, where it costs nothing.)"""
    _no_host_sync(monkeypatch, torch.device("cpu"), spec)


def test_the_spies_see_a_host_conversion(monkeypatch):
    """The check above can fail: a step that reads a loss with ``.item()`` is caught."""
    original = trainer_module.train_step

    def reading(stack, x, y, *args, **kwargs):
        original(stack, x, y, *args, **kwargs)
        stack.lr.sum().item()

    monkeypatch.setattr(trainer_module, "train_step", reading)
    with pytest.raises(AssertionError, match="item"):
        _no_host_sync(monkeypatch, torch.device("cpu"), SPEC)


# -- on a CUDA device ------------------------------------------------------------------------------------
def _on(data, device):
    return SimpleNamespace(
        **{
            k: SimpleNamespace(x=getattr(data, k).x.to(device), y=getattr(data, k).y.to(device))
            for k in ("train", "val", "test")
        },
        d_in=data.d_in,
        n_classes=data.n_classes,
    )


def _same_runs(a, b, tol, fields=("lr_index", "epochs", "divisions", "diverged")):
    for ra, rb in zip(a.runs, b.runs):
        assert [getattr(ra, f) for f in fields] == [getattr(rb, f) for f in fields]
        for f in ("val_error", "train_error", "test_error"):
            assert abs(getattr(ra, f) - getattr(rb, f)) <= tol, f


@pytest.mark.cuda
def test_cuda_builds_measures_trains_and_resumes_a_checkpoint(cuda, tmp_path):
    """Build and measure on the GPU (finite metrics, the same as on the CPU to 1e-9), train with a checkpoint
    after every step, stop after epoch 3 and resume: the outcome is the uninterrupted one, exactly."""
    data = _on(DATA, cuda)
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
    _same_runs(whole, resumed, 0.0)
    for (name, a), (_, b) in zip(whole.network.stacked_tensors(), resumed.network.stacked_tensors()):
        assert a.device.type == "cuda" and torch.equal(a, b), name


@pytest.mark.cuda
@pytest.mark.parametrize("spec", [SPEC, RICH, LAYERNORM], ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip"])
def test_cuda_stacked_equals_each_rate_trained_alone(cuda, spec):
    data = _on(DATA, cuda)
    lrs = [0.03, 0.3]
    both = train_architecture(spec, data, seed=3, protocol=SHORT.replace(lrs=lrs), device=cuda)
    alone = [train_architecture(spec, data, seed=3, protocol=SHORT.replace(lrs=[lr]), device=cuda) for lr in lrs]
    for k in range(2):
        # the same run: its index in the stack of one is 0, in the stack of two k
        _same_runs(
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
    gpu = train_architecture(SPEC, _on(DATA, cuda), seed=3, protocol=p, device=cuda)
    _same_runs(cpu, gpu, 1e-12)
    assert cpu.best.lr_index == gpu.best.lr_index
    for (name, a), (_, b) in zip(cpu.network.stacked_tensors(), gpu.network.stacked_tensors()):
        torch.testing.assert_close(a, b.cpu(), rtol=1e-7, atol=1e-10, msg=name)


@pytest.mark.cuda
@pytest.mark.parametrize("forward", ["eager", "compiled"])
def test_cuda_epochs_never_wait_for_the_device(cuda, monkeypatch, forward):
    _no_host_sync(monkeypatch, cuda, RICH, forward)


@pytest.mark.cuda
def test_cuda_compiled_forward_trains_like_the_eager_one(cuda):
    data = _on(DATA, cuda)
    p = SHORT.replace(lrs=[0.01, 0.1, 1.0], max_epochs=6)
    eager = train_architecture(RICH, data, seed=3, protocol=p, device=cuda, forward="eager")
    forward = CompiledForward(RICH)
    compiled = train_architecture(RICH, data, seed=3, protocol=p, device=cuda, forward=forward)
    _same_runs(eager, compiled, 1e-12)
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
    assert row["rule"] in ("eager", "compiled") and np.isnan(row["stacked_cpu_s_per_epoch"])
