"""CIFAR-10, "python version" (Krizhevsky 2009): the pickled batches ``data_batch_1`` .. ``data_batch_5``
(the training file, 50,000 images) and ``test_batch`` (10,000), found in ``<root>/cifar-10-batches-py/``,
directly in ``<root>``, or inside the distributed ``<root>/cifar-10-python.tar.gz`` (read in memory with
``tarfile``; nothing is extracted to disk).

Each batch is a Python 2 pickle of a dict with bytes keys: ``b"data"`` a uint8 array [n, 3072] (the 1024
red, then green, then blue pixels of a 32 x 32 image, row-major) and ``b"labels"`` a list of n ints in
0..9. It is read with ``encoding="bytes"`` (as the dataset's page says) through an unpickler that admits
only the globals an array's pickle names, and never lets numpy rebuild an array from the file: the
array's pickle is captured as plain data (shape, dtype name, raw bytes) and the reader builds the one
array the layout has, ``data``, itself, as uint8 from bytes. So a hostile file can neither run code nor
make numpy take attacker bytes for object pointers (a dtype's pickled flags can turn an object array's
raw bytes into pointers that ``np.asarray`` follows); anything but the documented layout is refused.
"""

from __future__ import annotations

import codecs
import io
import pickle
import tarfile
from pathlib import Path
from typing import IO, cast

import numpy as np

from .dataset import DataFileMalformed, DataFilesMissing
from .sources import search_text

FOLDER = "cifar-10-batches-py"
ARCHIVES = ("cifar-10-python.tar.gz", "cifar-10-python.tar")
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
BATCHES = TRAIN_BATCHES + (TEST_BATCH,)
PIXELS = 3 * 32 * 32


class _PickledArray:
    """What ``numpy.core.multiarray._reconstruct(ndarray, shape, typecode)`` and its ``__setstate__`` carry,
    kept as data: ``state = (version, shape, dtype, is_fortran, raw bytes)``."""

    def __init__(self, cls, shape, typecode):
        self.cls, self.state = cls, None

    def __setstate__(self, state):
        self.state = state


class _PickledDType:
    """What ``numpy.dtype(name, align, copy)`` and its ``__setstate__`` carry, kept as data."""

    def __init__(self, name, align=0, copy=0):
        self.name, self.state = name, None

    def __setstate__(self, state):
        self.state = state


_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _PickledArray,
    ("numpy._core.multiarray", "_reconstruct"): _PickledArray,  # numpy >= 2 names the module so
    ("numpy", "ndarray"): "ndarray",
    ("numpy", "dtype"): _PickledDType,
    ("_codecs", "encode"): codecs.encode,  # bytes in protocol-2 pickles from Python 3
}


class BatchUnpickler(pickle.Unpickler):
    """Unpickles plain containers, and arrays as ``_PickledArray`` data (never as numpy objects)."""

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None


def _pixels(value) -> np.ndarray | None:
    """The ``data`` array of a batch: a pickled C-order uint8 ndarray [n, 3072] whose bytes are exactly
    n * 3072, built here from those bytes; None for anything else."""
    if not isinstance(value, _PickledArray) or value.cls != "ndarray" or not isinstance(value.state, tuple):
        return None
    if len(value.state) != 5:
        return None
    _, shape, dtype, fortran, raw = value.state
    if not (isinstance(dtype, _PickledDType) and dtype.name in (b"u1", "u1") and fortran is False):
        return None
    if dtype.state is not None and (
        not isinstance(dtype.state, tuple) or len(dtype.state) < 5 or any(v is not None for v in dtype.state[2:5])
    ):
        return None  # a subarray, field names or fields: not plain uint8
    if isinstance(raw, str):  # Python 2 str read with encoding="latin1"-like decoders
        raw = raw.encode("latin1")
    if not (
        isinstance(shape, tuple)
        and len(shape) == 2
        and all(type(n) is int for n in shape)
        and shape[1] == PIXELS
        and shape[0] >= 0
        and isinstance(raw, bytes)
        and len(raw) == shape[0] * PIXELS
    ):
        return None
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


def expected_text(root: Path | None) -> str:
    files = f"{FOLDER}/{{{','.join(BATCHES)}}} or {ARCHIVES[0]}"
    if root is None:
        return f"{files} (no directory given: pass root=DIR)"
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
    raise DataFilesMissing(
        f"{name}: expected {expected_text(root)}; found neither the batches nor the archive{missing}"
    )


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
                    # a file member: extractfile returns its reader (None only for other members)
                    reader = cast(IO[bytes], tar.extractfile(member))
                    out[wanted[member.name]] = (f"{archive}:{member.name}", reader.read())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DataFileMalformed(f"{name}: {archive}: not a readable tar archive ({e}); expected {expected}") from None
    missing = [f"{FOLDER}/{b}" for b in BATCHES if b not in out]
    if missing:
        raise DataFileMalformed(f"{name}: {archive} lacks {', '.join(missing)}; expected {expected}")
    return out


def parse_batch(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(data uint8 [n, 3072], labels int64 [n]) of one pickled batch; ``ValueError`` saying what is wrong.

    The layout: a dict holding ``b"data"``, a uint8 array [n, 3072], and ``b"labels"``, a list of n Python
    ints in 0..9 (other keys, such as ``b"filenames"``, are not read)."""
    try:
        batch = BatchUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as e:  # any unpickling failure of a user's file is a malformed file
        raise ValueError(f"not a CIFAR batch pickle ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(batch, dict):
        raise ValueError(f"holds a {type(batch).__name__}, need a dict")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or "labels" not in batch:
        raise ValueError(f"keys {sorted(map(str, batch))[:10]} lack b'data' and b'labels'")
    data, labels = _pixels(batch["data"]), batch["labels"]
    if data is None:
        raise ValueError(f"b'data' must be a uint8 array [n, {PIXELS}] (its bytes exactly n * {PIXELS})")
    if type(labels) is not list or len(labels) != data.shape[0] or not all(type(v) is int for v in labels):
        raise ValueError(f"b'labels' must be a list of {data.shape[0]} ints (one per image)")
    bad = next((v for v in labels if not 0 <= v <= 9), None)
    if bad is not None:
        raise ValueError(f"label {bad if abs(bad) < 10**6 else '(a huge integer)'} outside 0..9")
    return data, np.asarray(labels, dtype=np.int64)


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
