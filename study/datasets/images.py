"""The image sets read from a user's files, ``mnist``, ``fashion-mnist`` and ``cifar10``, with the NLC
paper's preprocessing (``preprocess``, appendix D.2) and a cache of the result (``cache``).

Splits (D.2): the official test file is the test split, in file order; the training file is split at
random into training and validation, validation being 1/6 of it for the MNIST-like sets (60,000 ->
50,000 / 10,000) and 1/5 for CIFAR10 (50,000 -> 40,000 / 10,000). A smaller training file (a subset, a
test fixture) keeps those fractions (validation = N // 6 or N // 5).

``fashion-mnist`` (Xiao, Rasul and Vollgraf 2017; same IDX format and sizes as MNIST) is not in the paper;
by default it is read from Debian's ``dataset-fashion-mnist`` package (/usr/share/datasets/fashion-mnist),
so the full 70,000-image path can run on any Debian machine without a download.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from . import cifar, idx
from .cache import cache_dir as resolve_cache_dir
from .cache import cache_path, read_cache, write_cache
from .dataset import DataFileMalformed, DataFilesMissing, Dataset, jsonable, make_split, split_indices, stream
from .loaders import register
from .preprocess import VARIANCE_HELD, paper_preprocessing
from .sources import file_record

PIPELINE_VERSION = 1  # bump when the preprocessing changes: old cache files then miss
N_CLASSES = 10
_ARRAYS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test", "info")


@dataclass(frozen=True)
class ImageSet:
    name: str
    format: str  # "idx" or "cifar"
    val_divisor: int  # validation = N // val_divisor of the training file
    torchvision_folder: str = ""  # idx only: <root>/<folder>/raw
    default_root: Path | None = None
    default_hint: str = ""  # how to get the files into default_root

    def expected(self, root: Path | None) -> str:
        if self.format == "idx":
            return idx.expected_text(root, self.torchvision_folder)
        return cifar.expected_text(root)

    def locate(self, root: Path | None) -> dict[str, Path]:
        """role -> file; ``DataFilesMissing`` naming the expected files and the directories searched."""
        if root is None and self.default_root is not None:
            try:
                return self.locate(self.default_root)
            except DataFilesMissing as e:
                raise DataFilesMissing(f"{e} ({self.default_hint}, or pass root=DIR)") from None
        if self.format == "idx":
            return idx.locate(self.name, root, self.torchvision_folder)
        return cifar.locate(self.name, root)

    def find(self, root: Path | None) -> tuple[bool, str]:
        """(found?, the folders its files were found in, or what is missing where): ``archstudy datasets``."""
        try:
            paths = self.locate(root)
        except DataFilesMissing as e:
            return False, str(e).split(": ", 1)[1]
        folders = sorted({str(p.parent) for p in paths.values()})
        return True, "found in " + ", ".join(folders)

    def read(self, paths: dict[str, Path], expected: str):
        if self.format == "idx":
            return idx.read_images(self.name, paths, expected, N_CLASSES)
        return cifar.read_images(self.name, paths, expected)


IMAGE_SETS = {
    "mnist": ImageSet("mnist", "idx", 6, torchvision_folder="MNIST"),
    "fashion-mnist": ImageSet(
        "fashion-mnist",
        "idx",
        6,
        torchvision_folder="FashionMNIST",
        default_root=Path("/usr/share/datasets/fashion-mnist"),
        default_hint="install the Debian package dataset-fashion-mnist",
    ),
    "cifar10": ImageSet("cifar10", "cifar", 5),
}


def split_sizes(n_train_file: int, n_test: int, val_divisor: int) -> tuple[int, int, int]:
    val = n_train_file // val_divisor
    return n_train_file - val, val, n_test


def build(image_set: ImageSet, seed: int, paths: dict[str, Path], expected: str) -> dict[str, np.ndarray]:
    """Read, split and preprocess: the arrays the cache stores (``info``: JSON of what was measured)."""
    train_file_x, train_file_y, test_x, test_y = image_set.read(paths, expected)
    sizes = split_sizes(len(train_file_y), len(test_y), image_set.val_divisor)
    tr, va = split_indices(len(train_file_y), sizes[:2] + (0,), stream(seed, image_set.name, "split"))[:2]
    try:
        x_train, x_val, x_test, info = paper_preprocessing(
            train_file_x[tr], train_file_x[va], test_x, stream(seed, image_set.name, "projection")
        )
    except ValueError as e:
        raise DataFileMalformed(f"{image_set.name}: {e}; expected {expected}") from None
    return {
        "x_train": x_train,
        "y_train": train_file_y[tr],
        "x_val": x_val,
        "y_val": train_file_y[va],
        "x_test": x_test,
        "y_test": test_y,
        "info": np.array(json.dumps(info)),
    }


def load(name: str, seed: int = 0, root: Path | None = None, cache_dir=None, cache: bool = True) -> Dataset:
    image_set = IMAGE_SETS[name]
    paths = image_set.locate(root)
    searched = Path(root).expanduser() if root is not None else image_set.default_root
    expected = image_set.expected(searched)
    files = {role: file_record(p) for role, p in sorted(paths.items())}
    key = {
        "name": name,
        "seed": seed,
        "pipeline": PIPELINE_VERSION,
        "variance_held": VARIANCE_HELD,
        "val_divisor": image_set.val_divisor,
        "sources": [f["sha256"] for f in files.values()],
    }
    path = cache_path(resolve_cache_dir(cache_dir), name, seed, key)
    arrays = read_cache(path, _ARRAYS) if cache else None
    if arrays is None:
        arrays = build(image_set, seed, paths, expected)
        if cache:
            try:
                write_cache(path, arrays)
            except OSError as e:  # a read-only or full cache directory costs time, not the result
                warnings.warn(f"{name}: could not write the cache file {path}: {e}", stacklevel=2)
    info = json.loads(str(arrays["info"]))
    splits = [make_split(arrays[f"x_{s}"], arrays[f"y_{s}"]) for s in ("train", "val", "test")]
    k = info["pca_dimension"]
    meta = {
        "name": name,
        "seed": seed,
        "source": {"kind": "files", "format": image_set.format, "files": files},
        "preprocessing": [
            "per-point mean and variance normalization",
            "per-feature mean normalization (training split's means)",
            f"PCA on the training split: {k} of {info['input_dimension']} dimensions hold "
            f"{info['variance_held']:.4f} >= {VARIANCE_HELD} of the variance",
            f"projection by a seeded {info['input_dimension']} x {k} submatrix of a uniformly random orthogonal matrix",
            f"one global scale 1/{info['scale']:.6g} so that Q_(x,i) x(i) = 1 on the training split",
        ],
        "preprocessing_stats": info,
        "pipeline_version": PIPELINE_VERSION,
        "cache_key": path.stem,
        "sizes": {s: len(sp) for s, sp in zip(("train", "val", "test"), splits)},
        "d_in": k,
        "n_classes": N_CLASSES,
    }
    train, val, test = splits
    return Dataset(name, train, val, test, d_in=k, n_classes=N_CLASSES, meta=jsonable(meta))


def find(name: str, root: Path | None) -> tuple[bool, str]:
    """``ImageSet.find`` of the image set ``name`` as ``IMAGE_SETS`` holds it when asked."""
    return IMAGE_SETS[name].find(root)


# Each image set is the declared dataset of its name (``study.experiment.datasets``): its loader is
# ``load(name, seed, root=..., cache_dir=..., cache=...)``.
for _name in IMAGE_SETS:
    register(_name, partial(load, _name), partial(find, _name))
