"""The cache of preprocessed image datasets, so a study does not redo the PCA for every architecture.

One ``.npz`` per (dataset, seed, source file hashes, pipeline version) under the cache directory:
``cache_dir=`` if given, else ``$ARCHSTUDY_CACHE``, else ``~/.cache/archstudy``. The file name carries
the dataset name, the seed and 16 hex digits of the key's SHA-256, so changed source files or a new
pipeline version simply miss. Written to a temporary file in the same directory and renamed, so a reader
(another Ray worker, a killed run) sees the whole file or none; an unreadable cache file is a miss and is
rewritten. Stored uncompressed with ``allow_pickle=False``: loading runs no pickled code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from archstudy.sampling.regular_files import open_regular

CACHE_ENV = "ARCHSTUDY_CACHE"


def cache_dir(option: str | os.PathLike | None = None) -> Path:
    if option is not None:
        return Path(option).expanduser()
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "archstudy"


def cache_path(directory: Path, name: str, seed: int, key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(directory) / f"{name}-seed{seed}-{digest}.npz"


def read_cache(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` from ``path``, or None when it is absent or unreadable (a miss)."""
    try:
        with open_regular(path, "a dataset cache") as f, np.load(f, allow_pickle=False) as z:
            return {n: z[n] for n in names}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def write_cache(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            # numpy's stub types **arrays as possibly naming its allow_pickle flag; they name arrays
            np.savez(f, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
