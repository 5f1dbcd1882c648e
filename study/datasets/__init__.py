"""The study's datasets (NLC paper appendix D; the Han papers' checkerboard): ``load_dataset(name, seed, root)``.

Each dataset is declared once, torch-free, in ``study.experiment.datasets`` (what it is, its classes, sizes,
options, the NLC paper's "better than random" error); ``DATASETS`` is those declarations by name. The module of
this package that loads a dataset registers its loader against the declared name (``loaders``); the registry
imports every module of the package, so a new loader module registers by being in it, and importing the package
fails unless every declared dataset has its loader.

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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archstudy.sampling.constraints import SEED, Boolean, Choice, Constraint, SpecError, check

from ..experiment.datasets import DECLARED, DatasetDeclaration
from .cache import CACHE_ENV
from .dataset import DataFileMalformed, DataFilesMissing, Dataset, Split
from .loaders import LOADERS, check_complete, status

__all__ = [
    "CACHE_ENV",
    "DATASETS",
    "DataFileMalformed",
    "DataFilesMissing",
    "Dataset",
    "Split",
    "load_dataset",
    "status",
]

check_complete()  # reads ``LOADERS``: every module of the package imported, each registering its loaders

# Every dataset of ``study.experiment.datasets``, in its order: the one declaration of each.
DATASETS: dict[str, DatasetDeclaration] = DECLARED


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


def load_dataset(name: str, seed: int = 0, root: str | os.PathLike | None = None, **options: Any) -> Dataset:
    """The dataset ``name`` with its seeded train/val/test splits (float64 ``x`` [N, d_in], int64 ``y``).

    ``seed`` fixes every random draw (generator, splits, projection). ``root``: the directory holding a
    user's files (mnist, cifar10, a waveform-+noise.data; fashion-mnist defaults to the Debian package's
    folder); the generated sets take none. Options: ``blocks`` (checkerboard: 8 or 12, default 12),
    ``cache_dir`` (default ``$ARCHSTUDY_CACHE`` or ``~/.cache/archstudy``) and ``cache`` (default True)
    for the preprocessed image sets. Bad arguments raise ``SpecError``; missing or malformed files
    ``DataFilesMissing`` / ``DataFileMalformed`` (all ``sampling.UserError``)."""
    name = check("load_dataset", "name", Choice(tuple(DATASETS)), name)
    declared = DATASETS[name]
    seed = check("load_dataset", "seed", SEED, seed)
    root = check("load_dataset", "root", PathOption(), root)
    if root is not None and not declared.reads_root:
        raise SpecError(
            "load_dataset", "root", str(root), f"must be None: {name} is {declared.source}, it reads no files"
        )
    allowed = {**COMMON_OPTIONS, **declared.options}
    kwargs = dict(declared.defaults)
    for key, value in options.items():
        if key not in allowed:
            raise SpecError(
                "load_dataset", key, value, f"is not an option of {name}; its options: {', '.join(sorted(allowed))}"
            )
        kwargs[key] = check("load_dataset", key, allowed[key], value)
    if declared.source != "files":
        for key in COMMON_OPTIONS:
            kwargs.pop(key, None)
    if declared.reads_root:
        kwargs["root"] = root
    return LOADERS[name].load(seed, **kwargs)
