"""What every loader returns (``Dataset`` of three ``Split`` s), the errors a user sees, and the seeded
helpers the loaders share (random splits, standardization with training statistics).

Seeds: every random draw of a dataset comes from ``numpy.random.Generator(PCG64(SeedSequence([seed,
crc32(name), crc32(purpose)])))``, so each (seed, dataset, purpose) has its own stream, the same on every
machine, and changing how one purpose draws never moves another (e.g. the waveform generator and the
train/val/test permutation are independent streams).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from archstudy.sampling import UserError

DTYPE = torch.float64


class DataFilesMissing(UserError, FileNotFoundError):
    """A dataset's files are not where it looks: the one-line message names the expected files and every
    directory searched."""


class DataFileMalformed(UserError, ValueError):
    """A dataset file is there but is not what its format says (bad header, wrong size, bad labels): the
    one-line message names the file, what is wrong, and the files the dataset expects."""


@dataclass(frozen=True, eq=False)  # tensors have no truth value: compare splits with torch.equal
class Split:
    """One split: ``x`` float [N, d_in], ``y`` int64 class labels [N] in 0 .. n_classes - 1."""

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self):
        if self.x.dim() != 2 or self.y.dim() != 1 or self.x.shape[0] != self.y.shape[0]:
            raise ValueError(f"Split: x {tuple(self.x.shape)} and y {tuple(self.y.shape)} must be [N, d] and [N]")
        if self.y.dtype != torch.int64 or not self.x.is_floating_point():
            raise ValueError(f"Split: x must be floating and y int64, got {self.x.dtype} and {self.y.dtype}")

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def to(self, device=None, dtype: torch.dtype | None = None) -> "Split":
        return Split(self.x.to(device=device, dtype=dtype or self.x.dtype), self.y.to(device=device))


@dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset ready for the study: ``train``, ``val``, ``test`` splits, input dimension, class count, and
    ``meta``, a JSON-able record of where it came from (generator or source files with SHA-256 hashes),
    the preprocessing applied, split sizes and the seed."""

    name: str
    train: Split
    val: Split
    test: Split
    d_in: int
    n_classes: int
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        for part in ("train", "val", "test"):
            s = getattr(self, part)
            if s.x.shape[1] != self.d_in:
                raise ValueError(f"Dataset {self.name}: {part}.x has {s.x.shape[1]} features, d_in = {self.d_in}")

    @property
    def splits(self) -> dict[str, Split]:
        return {"train": self.train, "val": self.val, "test": self.test}

    def to(self, device=None, dtype: torch.dtype | None = None) -> "Dataset":
        """The same dataset with every split on ``device`` (and ``x`` cast to ``dtype`` if given; ``y`` stays int64)."""
        return replace(
            self, train=self.train.to(device, dtype), val=self.val.to(device, dtype), test=self.test.to(device, dtype)
        )

    def __repr__(self) -> str:
        sizes = "/".join(str(len(s)) for s in self.splits.values())
        return f"Dataset({self.name!r}, d_in={self.d_in}, n_classes={self.n_classes}, train/val/test={sizes})"


def unusable(data: Dataset) -> str | None:
    """Why a study could not train and select networks on ``data``, in one line, or None. Every split must
    hold points (each run is evaluated on all three: the schedule watches one, the selection reads one, the
    test error is recorded), their labels must be classes of the dataset, and the training split must hold
    every class (a class without a training point could never be learned; its chance-level error would be
    counted against every architecture alike). Every input must be a finite number (a NaN in a damaged
    preprocessed cache failed every unit), and the training points must not all be the same point (nothing to
    learn from: a constant data file)."""
    sizes = {name: len(split) for name, split in data.splits.items()}
    shown = "/".join(str(n) for n in sizes.values())
    empty = [name for name, n in sizes.items() if n == 0]
    if empty:
        return (
            f"the {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} empty (train/val/test = "
            f"{shown} points)"
        )
    for name, split in data.splits.items():
        lo, hi = int(split.y.min()), int(split.y.max())
        if lo < 0 or hi >= data.n_classes:
            return (
                f"the {name} split has labels in [{lo}, {hi}], outside the {data.n_classes} classes "
                f"0..{data.n_classes - 1}"
            )
    for name, split in data.splits.items():
        bad = int((~torch.isfinite(split.x)).sum())
        if bad:
            return (
                f"the {name} split's inputs hold {bad} value(s) that are not finite numbers (NaN or inf) once loaded "
                "and preprocessed: a data file with such values, or a damaged preprocessed cache (delete it to "
                "have it made again)"
            )
    present = set(torch.unique(data.train.y).tolist())
    missing = [c for c in range(data.n_classes) if c not in present]
    if missing:
        listed = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        return (
            f"class{'es' if len(missing) > 1 else ''} {listed} of {data.n_classes} "
            f"ha{'ve' if len(missing) > 1 else 's'} "
            f"no point in the training split (train/val/test = {shown} points)"
        )
    x = data.train.x
    if len(x) > 1 and bool((x == x[:1]).all()):
        return (
            f"all {len(x)} points of the training split have the same inputs: there is nothing to learn from "
            "(a constant data file?)"
        )
    return None


def stream(seed: int, name: str, purpose: str) -> np.random.Generator:
    """The seeded generator of one purpose of one dataset (module docstring)."""
    key = [int(seed), zlib.crc32(name.encode()), zlib.crc32(purpose.encode())]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(key)))


def split_indices(n: int, sizes: tuple[int, int, int], rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A uniformly random partition of ``range(n)`` into parts of the given sizes (which sum to n); each
    part's indices sorted so a split keeps the source order."""
    if sum(sizes) != n or min(sizes) < 0:
        raise ValueError(f"split sizes {sizes} must be >= 0 and sum to {n}")
    perm = rng.permutation(n)
    bounds = np.cumsum((0,) + tuple(sizes))
    return tuple(np.sort(perm[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))


def fifths(n: int) -> tuple[int, int, int]:
    """Train / val / test sizes in the waveform proportions 3/5, 1/5, 1/5 (5000 -> 3000 / 1000 / 1000,
    NLC paper D.2); with n not a multiple of 5 the remainder goes to test (1797 -> 1078 / 359 / 360)."""
    train, val = 3 * n // 5, n // 5
    return train, val, n - train - val


def standardize(train: np.ndarray, *others: np.ndarray) -> tuple[list[np.ndarray], dict]:
    """Features to zero mean and unit variance with the TRAINING split's statistics
    (x - mean_train) / sd_train, sd with ddof = 0, applied to every split. A feature constant on the
    training split (sd = 0) is only centred. Returns the arrays and the statistics (for ``meta``).

    A feature whose sum or squares leave float64's range (a file scaled by 1e300: sd = inf, every point 0) has its
    statistics computed on the feature divided by its largest magnitude m and scaled back, mean = m mean(x / m),
    sd = m sd(x / m): the same numbers up to rounding, as standardization does not depend on the scale."""
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is handled just below, not printed
        mean = train.mean(axis=0)
        sd = train.std(axis=0)
    if not (np.isfinite(mean).all() and np.isfinite(sd).all()):
        m = np.abs(train).max(axis=0)
        m = np.where((m > 0) & np.isfinite(m), m, 1.0)
        mean, sd = (train / m).mean(axis=0) * m, (train / m).std(axis=0) * m
    scale = np.where(sd > 0, sd, 1.0)
    out = [(a - mean) / scale for a in (train,) + others]
    return out, {"constant_features": int((sd == 0).sum())}


def split_standardized(
    x: np.ndarray, y: np.ndarray, seed: int, name: str
) -> tuple[tuple[Split, Split, Split], dict[str, Any]]:
    """A tabular set's points split at random in the waveform proportions (``fifths``, from the (seed, name,
    "split") stream) and standardized with the training split's statistics (``standardize``; NLC paper D.2):
    (train, val, test) and what ``meta`` records of it, ``preprocessing_stats`` and ``sizes``."""
    sizes = fifths(len(y))
    parts = split_indices(len(y), sizes, stream(seed, name, "split"))
    xs, stats = standardize(*(x[i] for i in parts))
    train, val, test = (make_split(a, y[i]) for a, i in zip(xs, parts))
    return (train, val, test), {"preprocessing_stats": stats, "sizes": dict(zip(("train", "val", "test"), sizes))}


def make_split(x: np.ndarray, y: np.ndarray) -> Split:
    return Split(
        torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64)),
        torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64)),
    )


def jsonable(value: Any) -> Any:
    """numpy scalars and tuples in ``meta`` as plain JSON types."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
