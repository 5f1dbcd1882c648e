"""IDX files (LeCun's MNIST format, also Fashion-MNIST's), gzipped or not, in one folder or in
torchvision's ``<root>/MNIST/raw/`` (``<root>/FashionMNIST/raw/``) layout.

An IDX file is a big-endian header and a row-major array::

    bytes 0-1   0x00 0x00
    byte  2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
    byte  3     number of dimensions n
    4 .. 4+4n   each dimension's size, big-endian uint32
    then        prod(sizes) elements, big-endian

so MNIST images are magic 0x00000803 with sizes (N, 28, 28) and labels 0x00000801 with (N,). A file is
gzipped when it starts with the gzip magic 1f 8b, whatever its name. Anything else (a wrong magic, a
truncated or overlong payload) is rejected with the file named and what was wrong.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import DataFileMalformed, DataFilesMissing
from .sources import find_file, search_text

IDX_TYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
GZIP_MAGIC = b"\x1f\x8b"
# role -> file stem; each is looked for as stem, stem.gz, and with '.' before idx (some mirrors' spelling).
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def parse_idx(raw: bytes) -> np.ndarray:
    """The array an IDX byte string holds (native byte order); ``ValueError`` saying what is wrong."""
    if len(raw) < 4:
        raise ValueError(f"{len(raw)} bytes, shorter than the 4-byte IDX magic")
    magic = int.from_bytes(raw[:4], "big")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in IDX_TYPES or raw[3] == 0:
        raise ValueError(
            f"bad IDX magic 0x{magic:08x} (need 0x0000TTNN: type TT in "
            f"{', '.join(f'{t:02x}' for t in IDX_TYPES)}, NN >= 1 dimensions)"
        )
    ndim, dtype = raw[3], IDX_TYPES[raw[2]]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"header of {ndim} dimensions truncated at {len(raw)} bytes")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != need:
        raise ValueError(
            f"header says shape {shape} of {dtype.str[1:]} ({need} bytes of data) but "
            f"{len(raw) - header} bytes follow it"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def read_bytes(path: Path) -> bytes:
    """A file's content, gunzipped when it starts with the gzip magic."""
    raw = Path(path).read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"broken gzip stream ({e})") from None
    return raw


def candidates(stem: str) -> list[str]:
    dotted = stem.replace("-idx", ".idx")
    return [stem, stem + ".gz", dotted, dotted + ".gz"]


def search_dirs(root: Path, torchvision_folder: str) -> list[Path]:
    return [Path(root), Path(root) / torchvision_folder / "raw"]


def expected_text(root: Path | None, torchvision_folder: str) -> str:
    files = ", ".join(f"{s}[.gz]" for s in FILES.values())
    if root is None:
        return f"{files} (no directory given: pass root=DIR)"
    return f"{files} in {search_text(search_dirs(root, torchvision_folder))}"


def locate(name: str, root: Path | None, torchvision_folder: str) -> dict[str, Path]:
    """role -> path of the four IDX files, or ``DataFilesMissing`` naming them and the directories searched."""
    if root is None:
        raise DataFilesMissing(f"{name}: expected {expected_text(root, torchvision_folder)}")
    dirs = search_dirs(root, torchvision_folder)
    found = {role: find_file(dirs, candidates(stem)) for role, stem in FILES.items()}
    missing = [FILES[r] for r, p in found.items() if p is None]
    if len(missing) == len(FILES):
        raise DataFilesMissing(f"{name}: expected {expected_text(root, torchvision_folder)}; none found")
    if missing:
        raise DataFilesMissing(
            f"{name}: expected {expected_text(root, torchvision_folder)}; missing {', '.join(missing)}"
        )
    return {role: path for role, path in found.items() if path is not None}  # every one: none is missing


def read_idx_file(name: str, path: Path, ndim: int, expected: str) -> np.ndarray:
    """An unsigned-byte IDX array of ``ndim`` dimensions from ``path`` (images 3, labels 1)."""
    try:
        arr = parse_idx(read_bytes(path))
    except ValueError as e:
        raise DataFileMalformed(f"{name}: {path}: {e}; expected {expected}") from None
    if arr.dtype != np.uint8 or arr.ndim != ndim:
        raise DataFileMalformed(
            f"{name}: {path}: holds a {arr.ndim}-d {arr.dtype} array, need a {ndim}-d uint8 "
            f"(IDX magic 0x0000080{ndim}); expected {expected}"
        )
    return arr


def read_images(name: str, paths: dict[str, Path], expected: str, n_classes: int = 10):
    """(train images [N, rows*cols] uint8, train labels [N], test images, test labels), checked for
    matching counts, equal image sizes and labels in 0 .. n_classes - 1."""
    out = {}
    for part in ("train", "test"):
        img = read_idx_file(name, paths[f"{part}_images"], 3, expected)
        lab = read_idx_file(name, paths[f"{part}_labels"], 1, expected)
        if min(img.shape[1:]) == 0:
            raise DataFileMalformed(
                f"{name}: {paths[f'{part}_images']}: holds images of {img.shape[1]} x "
                f"{img.shape[2]} pixels, need at least 1 x 1; expected {expected}"
            )
        if img.shape[0] != lab.shape[0] or img.shape[0] == 0:
            raise DataFileMalformed(
                f"{name}: {paths[f'{part}_images']} holds {img.shape[0]} images but "
                f"{paths[f'{part}_labels']} {lab.shape[0]} labels; expected {expected}"
            )
        if lab.max() >= n_classes:
            raise DataFileMalformed(
                f"{name}: {paths[f'{part}_labels']}: label {lab.max()} outside 0..{n_classes - 1}; expected {expected}"
            )
        out[part] = (img.reshape(img.shape[0], -1), lab.astype(np.int64))
    if out["train"][0].shape[1] != out["test"][0].shape[1]:
        raise DataFileMalformed(
            f"{name}: train images have {out['train'][0].shape[1]} pixels, test images "
            f"{out['test'][0].shape[1]}; expected {expected}"
        )
    return (*out["train"], *out["test"])
