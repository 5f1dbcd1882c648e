"""The study's datasets (NLC paper appendix D; the Han papers' checkerboard): ``load_dataset(name, seed, root)``.

Each dataset is declared once, torch-free, in ``study.experiment.datasets`` (what it is, its classes, sizes,
options, the NLC paper's "better than random" error, and its loader as "module:function" of this package);
``DATASETS`` is those declarations with their loaders imported.

Built in, offline: ``waveform-noise`` (Breiman's generator), ``checkerboard`` (the Han papers' grid),
``digits`` (scikit-learn's bundled copy). From a user's files, with the paper's preprocessing (D.2):
``mnist`` and ``fashion-mnist`` (IDX), ``cifar10`` (python pickles); fashion-mnist defaults to Debian's
``dataset-fashion-mnist`` package. Nothing here ever downloads: a missing or malformed file is a
``UserError`` whose one line names the expected files and the directory searched.

    >>> data = load_dataset("waveform-noise", seed=0)
    >>> data.train.x.shape, data.train.y.dtype, data.d_in, data.n_classes
    (torch.Size([3000, 40]), torch.int64, 40, 3)
    >>> load_dataset("checkerboard", blocks=8).meta["source"]["edge_points"]
    1377
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from archstudy.sampling.constraints import SEED, Boolean, Choice, Constraint, SpecError, check

from ..experiment.datasets import DATASET_DECLARATIONS, PACKAGE, DatasetDeclaration
from . import images, waveform
from .dataset import DataFileMalformed, DataFilesMissing, Dataset, Split
from .cache import CACHE_ENV

__all__ = [
    "CACHE_ENV", "DATASETS", "DataFileMalformed", "DataFilesMissing", "Dataset", "DatasetInfo", "Split",
    "load_dataset",
]


@dataclass(frozen=True)
class PathOption(Constraint):
    """A directory or file path (str or os.PathLike), or None where ``optional``."""

    optional: bool = True

    def normalize(self, value):
        if value is None and self.optional:
            return None
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value and "\n" not in value):
            return Path(value).expanduser()
        self.fail()

    def describe(self):
        return "must be a path (str or os.PathLike)" + (" or None" if self.optional else "")

    def invalid_examples(self):
        return (3, "")


# Options every dataset accepts, so a caller can pass them uniformly; only the image sets use them
# (the generated sets are rebuilt in milliseconds, faster than reading a cache file).
COMMON_OPTIONS = {"cache_dir": PathOption(), "cache": Boolean()}


@dataclass(frozen=True)
class DatasetInfo:
    """What ``archstudy datasets`` shows and ``load_dataset`` dispatches on: a dataset's declaration
    (``study.experiment.datasets.DatasetDeclaration``) with its loader resolved (``load``)."""

    name: str
    source: str  # "generated", "bundled" or "files"
    summary: str
    n_classes: int
    d_in: int | None  # None: chosen by the PCA step of the preprocessing
    sizes: str
    load: Callable[..., Dataset] = field(repr=False)
    options: dict = field(default_factory=dict, repr=False)  # option -> Constraint
    defaults: dict = field(default_factory=dict, repr=False)
    reads_root: bool = False
    declaration: DatasetDeclaration | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, d: DatasetDeclaration) -> DatasetInfo:
        """The declaration with its ``loader`` ("module:function" of this package) imported."""
        module, _, name = d.loader.partition(":")
        load = getattr(importlib.import_module(f"{PACKAGE}.{module}"), name)
        return cls(d.name, d.source, d.summary, d.n_classes, d.d_in, d.sizes, load, dict(d.options),
                   dict(d.defaults), d.reads_root, d)

    def status(self, root: Path | None = None) -> tuple[bool, str]:
        """(available here?, where it comes from or what is missing where)."""
        if self.source == "files":
            image_set = images.IMAGE_SETS[self.name]
            try:
                paths = image_set.locate(root)
            except DataFilesMissing as e:
                return False, str(e).split(": ", 1)[1]
            folders = sorted({str(p.parent) for p in paths.values()})
            return True, "found in " + ", ".join(folders)
        if self.name == waveform.NAME and root is not None:
            path = Path(root).expanduser() / waveform.FILE
            if path.is_file():
                return True, f"found {path}"
            return False, f"expected {waveform.FILE} in {path.parent} (without a root: generated)"
        return True, self.summary


# Every dataset of ``study.experiment.datasets.DATASET_DECLARATIONS``, in its order, its loader imported.
DATASETS: dict[str, DatasetInfo] = {d.name: DatasetInfo.of(d) for d in DATASET_DECLARATIONS}


def load_dataset(name: str, seed: int = 0, root: str | os.PathLike | None = None, **options: Any) -> Dataset:
    """The dataset ``name`` with its seeded train/val/test splits (float64 ``x`` [N, d_in], int64 ``y``).

    ``seed`` fixes every random draw (generator, splits, projection). ``root``: the directory holding a
    user's files (mnist, cifar10, a waveform-+noise.data; fashion-mnist defaults to the Debian package's
    folder); the generated sets take none. Options: ``blocks`` (checkerboard: 8 or 12, default 12),
    ``cache_dir`` (default ``$ARCHSTUDY_CACHE`` or ``~/.cache/archstudy``) and ``cache`` (default True)
    for the preprocessed image sets. Bad arguments raise ``SpecError``; missing or malformed files
    ``DataFilesMissing`` / ``DataFileMalformed`` (all ``sampling.UserError``)."""
    name = check("load_dataset", "name", Choice(tuple(DATASETS)), name)
    info = DATASETS[name]
    seed = check("load_dataset", "seed", SEED, seed)
    root = check("load_dataset", "root", PathOption(), root)
    if root is not None and not info.reads_root:
        raise SpecError("load_dataset", "root", str(root), f"must be None: {name} is {info.source}, it reads no files")
    allowed = {**COMMON_OPTIONS, **info.options}
    kwargs = dict(info.defaults)
    for key, value in options.items():
        if key not in allowed:
            raise SpecError("load_dataset", key, value,
                            f"is not an option of {name}; its options: {', '.join(sorted(allowed))}")
        kwargs[key] = check("load_dataset", key, allowed[key], value)
    if info.source != "files":
        for key in COMMON_OPTIONS:
            kwargs.pop(key, None)
    if info.reads_root:
        kwargs["root"] = root
    return info.load(seed, **kwargs)
