"""What the trainer's device tests share (the CPU ones and those marked ``cuda``): the architectures (every layer
kind the trainer's step has), a short protocol, a small seeded dataset, the spies that catch a host
synchronization inside an epoch's steps, and the comparison of two trainings' runs.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch

from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, train_architecture
from archstudy.study.training import trainer as trainer_module

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


def small_data(n_train=400, n_val=200, n_test=200, seed=1):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(40, 3, generator=g, dtype=torch.float64)

    def split(n):
        x = torch.randn(n, 40, generator=g, dtype=torch.float64)
        return SimpleNamespace(x=x, y=(x @ w + 0.5 * torch.randn(n, 3, generator=g, dtype=torch.float64)).argmax(1))

    return SimpleNamespace(train=split(n_train), val=split(n_val), test=split(n_test), d_in=40, n_classes=3)


DATA = small_data()
HOST = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__", "__array__")


@contextlib.contextmanager
def host_conversions_inside_steps(monkeypatch, device):
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


def no_host_sync(monkeypatch, device, spec, forward="eager"):
    """A short training of ``spec`` on ``device`` makes no host conversion (nor, on CUDA, synchronization) inside
    an epoch's steps."""
    with host_conversions_inside_steps(monkeypatch, device) as calls:
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


def on_device(data, device):
    """``data`` with every split's tensors on ``device``."""
    return SimpleNamespace(
        **{
            k: SimpleNamespace(x=getattr(data, k).x.to(device), y=getattr(data, k).y.to(device))
            for k in ("train", "val", "test")
        },
        d_in=data.d_in,
        n_classes=data.n_classes,
    )


def same_runs(a, b, tol, fields=("lr_index", "epochs", "divisions", "diverged")):
    """The two outcomes' runs took the same schedule decisions (``fields``) and their errors agree to ``tol``."""
    for ra, rb in zip(a.runs, b.runs):
        assert [getattr(ra, f) for f in fields] == [getattr(rb, f) for f in fields]
        for f in ("val_error", "train_error", "test_error"):
            assert abs(getattr(ra, f) - getattr(rb, f)) <= tol, f
