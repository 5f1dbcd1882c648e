"""Finding a dataset's files in the directories it searches, and recording them (path, size, SHA-256) in
``meta`` and in the cache key, so a result can always say exactly which bytes it was computed from."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Sequence

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def file_record(path: Path) -> dict:
    path = Path(path)
    return {"path": str(path.resolve()), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def find_file(dirs: Iterable[Path], names: Sequence[str]) -> Path | None:
    """The first of ``names`` that is a file in the first directory of ``dirs`` holding one."""
    for d in dirs:
        for n in names:
            p = Path(d) / n
            if p.is_file():
                return p
    return None


def search_text(dirs: Sequence[Path]) -> str:
    return " or ".join(str(d) for d in dirs)
