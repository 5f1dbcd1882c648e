"""The loader of every declared dataset, registered by the module that defines it against the declared name.

Each dataset is declared once, torch-free, in ``study.experiment.datasets`` (what it is, its classes, sizes,
options, the NLC paper's "better than random" error). The module of this package that loads it registers its
loader there, beside the function, with ``register(name, load, find)``: the declared layer never names the loader
(it cannot import this torch layer), and nothing is looked up by a string. ``LOADERS`` (``sampling.registry``)
imports every module of the package when first read, so a new loader module registers by being there; the package
checks that every declared dataset has its loader (``check_complete``), and a second loader is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from archstudy.sampling.registry import Registry

from ..experiment.datasets import DECLARED
from .dataset import Dataset

# Whether a dataset's files are where a user keeps them: (found?, where they were found or what is missing
# where), or None where there is nothing to find (a generated or bundled dataset).
Find = Callable[[Path | None], tuple[bool, str] | None]


@dataclass(frozen=True)
class Loader:
    """How one declared dataset is loaded: ``load(seed, **options)``, with ``root=`` too where its declaration
    ``reads_root``, returns its ``Dataset``; ``find(root)`` (see ``Find``), None for a dataset that reads no files."""

    load: Callable[..., Dataset]
    find: Find | None = None


LOADERS: Registry[Loader] = Registry("dataset loader", __package__)  # by dataset name


def register(name: str, load: Callable[..., Dataset], find: Find | None = None) -> None:
    """Registers ``load`` (and ``find``) as the loader of the declared dataset ``name``: a name nobody declared
    (LookupError), or a second loader for one (ValueError), is refused at import."""
    if name not in DECLARED:
        raise LookupError(
            f"{_module(load)} registers a loader for {name!r}, which study.experiment.datasets does not declare"
        )
    LOADERS.register(name, Loader(load, find), module=_module(load))


def _module(load: Callable[..., Dataset]) -> str:
    """The module that defines ``load`` (a ``functools.partial``'s function's)."""
    return str(getattr(getattr(load, "func", load), "__module__", repr(load)))


def check_complete() -> None:
    """Every declared dataset has its loader (each has at most one: ``register``)."""
    missing = [name for name in DECLARED if name not in LOADERS]
    if missing:
        raise LookupError(f"no module of study.datasets registers a loader for {missing} (study.experiment.datasets)")


def status(name: str, root: Path | None = None) -> tuple[bool, str]:
    """(available here?, where it comes from or what is missing where) of the declared dataset ``name``: its
    loader's ``find``, or for a dataset with nothing to find its declared summary."""
    find = LOADERS[name].find
    found = find(root) if find is not None else None
    return found if found is not None else (True, DECLARED[name].summary)
