"""The data a trainer sees: checked float64 splits on the device, and the seeded minibatch order.

Every run of an architecture sees the same minibatches in the same order (common random numbers across
learning rates, the "one initialization" spirit of E.2). The order of epoch ``e`` is a permutation
drawn from ``SeedSequence([seed, purpose, e])``, so it needs no generator state: a resumed trainer, or a
run trained alone, gets exactly the minibatches it would have had. An epoch is ``N // batch_size`` full
minibatches (one of N when N < batch_size); the few examples left over are in other epochs' minibatches.
Dropping the remainder keeps every step's gradient noise the same and never feeds batchnorm a tiny batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from archstudy.sampling import ArchSpec, SpecError

TRAIN_ORDER, LR_MIN_ORDER = 1, 2  # purposes of the minibatch-order streams


@dataclass(frozen=True)
class Split:
    x: torch.Tensor  # float64 [N, d_in]
    y: torch.Tensor  # int64 [N]

    def __len__(self):
        return self.x.shape[0]


@dataclass(frozen=True)
class Splits:
    train: Split
    val: Split
    test: Split

    def fingerprint(self) -> str:
        """A short hash of the training and validation data (a checkpoint must match it)."""
        h = hashlib.sha256()
        for s in (self.train, self.val, self.test):
            h.update(np.asarray(s.x.shape).tobytes())
            h.update(s.x.detach().double().sum(0).cpu().numpy().tobytes())
            h.update(s.y.detach().cpu().numpy().astype(np.int64).tobytes())
        return h.hexdigest()[:16]


def _as_tensor(value, dtype, where, name) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    try:
        return torch.as_tensor(np.asarray(value))
    except (TypeError, ValueError):
        raise SpecError(where, name, type(value).__name__, "must be an array or tensor") from None


def check_split(split, name: str, spec: ArchSpec, device: torch.device, classes: int | None = None) -> Split:
    """``split.x`` as float64 [N, d_in] and ``split.y`` as int64 [N] with labels in [0, classes), on ``device``;
    ``classes`` defaults to d_out (``Protocol.classes``: a 1-output mse net tells 2 classes apart)."""
    where = "data"
    if not (hasattr(split, "x") and hasattr(split, "y")):
        raise SpecError(where, name, type(split).__name__, "must have .x (inputs) and .y (labels)")
    x = _as_tensor(split.x, torch.float64, where, f"{name}.x")
    y = _as_tensor(split.y, torch.int64, where, f"{name}.y")
    if x.dim() != 2 or x.shape[1] != spec.d_in or x.shape[0] < 1:
        raise SpecError(where, f"{name}.x", tuple(x.shape), f"must have shape [N >= 1, d_in = {spec.d_in}]")
    if not (x.is_floating_point() and bool(torch.isfinite(x).all())):
        raise SpecError(where, f"{name}.x", str(x.dtype), "must hold finite real numbers")
    if y.dim() != 1 or y.shape[0] != x.shape[0]:
        raise SpecError(where, f"{name}.y", tuple(y.shape), f"must have shape [N = {x.shape[0]}]")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise SpecError(where, f"{name}.y", str(y.dtype), "must hold integer class labels")
    lo, hi = int(y.min()), int(y.max())
    if classes is None or classes == spec.d_out:
        if lo < 0 or hi >= spec.d_out:
            raise SpecError(where, f"{name}.y", f"labels in [{lo}, {hi}]", f"must be in [0, d_out = {spec.d_out})")
    elif lo < 0 or hi >= classes:
        raise SpecError(
            where,
            f"{name}.y",
            f"labels in [{lo}, {hi}]",
            f"must be in [0, {classes}) (the classes {spec.d_out} output(s) tell apart under this loss)",
        )
    return Split(
        x.to(device=device, dtype=torch.float64).contiguous(), y.to(device=device, dtype=torch.int64).contiguous()
    )


def check_splits(data, spec: ArchSpec, device: torch.device, classes: int | None = None) -> Splits:
    """The ``.train``, ``.val`` and ``.test`` splits of ``data``, checked (``check_split``)."""
    for name in ("train", "val", "test"):
        if not hasattr(data, name):
            raise SpecError("data", name, type(data).__name__, "must have .train, .val and .test splits")
    return Splits(*(check_split(getattr(data, n), n, spec, device, classes) for n in ("train", "val", "test")))


def steps_per_epoch(n: int, batch_size: int) -> int:
    return max(1, n // batch_size)


def epoch_order(n: int, batch_size: int, seed: int, purpose: int, epoch: int, device: torch.device) -> torch.Tensor:
    """Minibatch indices of epoch ``epoch``: [steps, min(batch_size, n)] int64 on ``device``."""
    perm = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, purpose, epoch]))).permutation(n)
    b = min(batch_size, n)
    steps = steps_per_epoch(n, batch_size)
    return torch.as_tensor(perm[: steps * b].reshape(steps, b), device=device)
