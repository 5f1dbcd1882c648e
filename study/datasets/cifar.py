"""CIFAR-10, "python version" (Krizhevsky 2009): the pickled batches ``data_batch_1`` .. ``data_batch_5``
(the training file, 50,000 images) and ``test_batch`` (10,000), found in ``<root>/cifar-10-batches-py/``,
directly in ``<root>``, or inside the distributed ``<root>/cifar-10-python.tar.gz`` (read in memory with
``tarfile``; nothing is extracted to disk).

Each batch is a Python 2 pickle of a dict with bytes keys: ``b"data"`` a uint8 array [n, 3072] (the 1024
red, then green, then blue pixels of a 32 x 32 image, row-major) and ``b"labels"`` a list of n ints in
0..9. It is read with ``encoding="bytes"`` (as the dataset's page says) through an unpickler that only
admits the few globals a numpy array needs, so a hostile file cannot run code.
"""

from __future__ import annotations

import importlib
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

from .dataset import DataFileMalformed, DataFilesMissing
from .sources import search_text

FOLDER = "cifar-10-batches-py"
ARCHIVES = ("cifar-10-python.tar.gz", "cifar-10-python.tar")
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
BATCHES = TRAIN_BATCHES + (TEST_BATCH,)
PIXELS = 3 * 32 * 32

try:  # numpy >= 2 moved the module; pickles written by either name it either way
    _multiarray = importlib.import_module("numpy._core.multiarray")
except ImportError:  # pragma: no cover - numpy 1.x
    _multiarray = importlib.import_module("numpy.core.multiarray")
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy.core.multiarray", "scalar"): _multiarray.scalar,
    ("numpy._core.multiarray", "scalar"): _multiarray.scalar,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): importlib.import_module("_codecs").encode,  # bytes in protocol-2 pickles from Python 3
}


class BatchUnpickler(pickle.Unpickler):
    """Unpickles plain containers and numpy arrays only."""

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None


def expected_text(root: Path | None) -> str:
    files = f"{FOLDER}/{{{','.join(BATCHES)}}} or {ARCHIVES[0]}"
    if root is None:
        return f"{files} (no directory given: pass root=DIR or --root DIR)"
    return f"{files} in {search_text([Path(root)])}"


def locate(name: str, root: Path | None) -> dict[str, Path]:
    """The batch files (role = batch name -> path) or ``{"archive": path}``; ``DataFilesMissing`` otherwise.

    Looked for in order: ``<root>/cifar-10-batches-py/``, ``<root>`` itself, then the archive."""
    if root is None:
        raise DataFilesMissing(f"{name}: expected {expected_text(root)}")
    root = Path(root)
    for folder in (root / FOLDER, root):
        paths = {b: folder / b for b in BATCHES}
        if all(p.is_file() for p in paths.values()):
            return paths
    for archive in ARCHIVES:
        if (root / archive).is_file():
            return {"archive": root / archive}
    partial = [b for b in BATCHES if (root / FOLDER / b).is_file() or (root / b).is_file()]
    missing = f"; missing {', '.join(b for b in BATCHES if b not in partial)}" if partial else ""
    raise DataFilesMissing(f"{name}: expected {expected_text(root)}; found neither the batches nor the archive"
                           f"{missing}")


def batch_bytes(name: str, paths: dict[str, Path], expected: str) -> dict[str, tuple[str, bytes]]:
    """batch name -> (where it was read from, pickled bytes)."""
    if "archive" not in paths:
        return {b: (str(paths[b]), paths[b].read_bytes()) for b in BATCHES}
    archive = paths["archive"]
    wanted = {f"{FOLDER}/{b}": b for b in BATCHES}
    out = {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:  # one pass: a .tar.gz is a stream, random access would decompress again
                if member.name in wanted and member.isfile():
                    out[wanted[member.name]] = (f"{archive}:{member.name}", tar.extractfile(member).read())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DataFileMalformed(f"{name}: {archive}: not a readable tar archive ({e}); expected {expected}") from None
    missing = [f"{FOLDER}/{b}" for b in BATCHES if b not in out]
    if missing:
        raise DataFileMalformed(f"{name}: {archive} lacks {', '.join(missing)}; expected {expected}")
    return out


def parse_batch(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(data uint8 [n, 3072], labels int64 [n]) of one pickled batch; ``ValueError`` saying what is wrong."""
    try:
        batch = BatchUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as e:  # any unpickling failure of a user's file is a malformed file
        raise ValueError(f"not a CIFAR batch pickle ({type(e).__name__}: {e})") from None
    if not isinstance(batch, dict):
        raise ValueError(f"holds a {type(batch).__name__}, need a dict")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or "labels" not in batch:
        raise ValueError(f"keys {sorted(map(str, batch))} lack b'data' and b'labels'")
    data, labels = batch["data"], np.asarray(batch["labels"])
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != PIXELS:
        shape = getattr(data, "shape", None)
        raise ValueError(f"b'data' is {type(data).__name__} {getattr(data, 'dtype', '')} {shape}, "
                         f"need uint8 [n, {PIXELS}]")
    if labels.ndim != 1 or labels.shape[0] != data.shape[0] or labels.dtype.kind not in "iu":
        raise ValueError(f"b'labels' holds {labels.shape} {labels.dtype}, need {data.shape[0]} integers")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"label {labels.max() if labels.max() > 9 else labels.min()} outside 0..9")
    return data, labels.astype(np.int64)


def read_images(name: str, paths: dict[str, Path], expected: str):
    """(train images [N, 3072] uint8, train labels [N], test images, test labels)."""
    parsed = {}
    for batch, (where, raw) in batch_bytes(name, paths, expected).items():
        try:
            parsed[batch] = parse_batch(raw)
        except ValueError as e:
            raise DataFileMalformed(f"{name}: {where}: {e}; expected {expected}") from None
    train_x = np.concatenate([parsed[b][0] for b in TRAIN_BATCHES])
    train_y = np.concatenate([parsed[b][1] for b in TRAIN_BATCHES])
    if len(train_y) == 0 or len(parsed[TEST_BATCH][1]) == 0:
        raise DataFileMalformed(f"{name}: empty training or test batches; expected {expected}")
    return train_x, train_y, *parsed[TEST_BATCH]
