"""Provenance: the code and libraries that computed a study's rows, recorded with them.

A record names archstudy's version and, for a source tree under git, its commit (``dirty`` when tracked files
differ from it; none for an install from a wheel, which carries no repository), the versions of Python and of the
libraries the numbers depend on (``LIBRARIES``), and where a GPU computed them, CUDA's version and the device's
name. Versions are read from the installed distributions' metadata (``importlib.metadata``), so recording them
imports none of the libraries; only the worker that holds the device adds CUDA and the device
(``study.execution.unit``).

Every result file records the record of the process that computed its rows in its Parquet key-value metadata
(``PROVENANCE_KEY``), as a JSON list of ``[record, units]`` pairs: one pair in a unit's own file, the distinct records
of the units a pack holds with their counts (``merge``). ``archstudy status``, the report and the exports read them
back (``entries``).

``science_version`` says what a record's numbers mean: archstudy raises ``SCIENCE_VERSION`` when a change computes
other numbers for the same config and spec (a metric's formula, the trainer's schedule), so rows of two science
versions are two experiments. A resume refuses to run beside rows of another science version; another commit or
other library versions are said in one line (``differences``) and recorded, not refused: the same method computed
on another install.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from archstudy.sampling.spec import canonical_json

from .config import package_version

PROVENANCE_KEY = "archstudy.provenance"  # a result file's Parquet key-value metadata (module docstring)
# Raised when a change computes other numbers for the same config and spec (module docstring).
SCIENCE_VERSION = "1"
# The distributions whose versions a record names (their names on PyPI), besides archstudy and Python.
LIBRARIES = ("torch", "numpy", "pandas", "pyarrow", "scikit-learn", "ray")
GIT_TIMEOUT_S = 5.0  # a git that does not answer (a hung network file system) leaves the commit unknown
# The keys of a record, in the order a line names them.
KEYS = ("archstudy", "commit", "dirty", "science_version", "python", *LIBRARIES, "cuda", "device")


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def source_root() -> Path:
    """The folder of archstudy's source tree this module would be in (``study/experiment/provenance.py``)."""
    return Path(__file__).resolve().parent.parent.parent


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def source_commit() -> tuple[str | None, bool | None]:
    """(commit, dirty) of archstudy's source tree, or (None, None) where archstudy does not run from a git
    checkout of its own (an install from a wheel; a tree without git): the repository must be the source tree
    itself, not one that merely contains it (a virtual environment inside another project's repository)."""
    root = source_root()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != root or not (root / "pyproject.toml").is_file():
        return None, None
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return commit.strip(), None if status is None else bool(status.strip())


@functools.lru_cache(maxsize=1)
def _installed() -> dict[str, Any]:
    commit, dirty = source_commit()
    return {
        "archstudy": package_version(),
        "commit": commit,
        "dirty": dirty,
        "science_version": SCIENCE_VERSION,
        "python": platform.python_version(),
        **{name: _version(name) for name in LIBRARIES},
    }


def current(cuda: str | None = None, device: str | None = None) -> dict[str, Any]:
    """This process's record: archstudy and its commit, the science version, Python and ``LIBRARIES``; ``cuda``
    and ``device`` (``cpu``, or the GPU's name) where the caller computes on one (a worker) and knows them."""
    return {**_installed(), "cuda": cuda, "device": device}


def record_json(records: Iterable[tuple[Mapping[str, Any], int]]) -> str:
    """The metadata value of ``records`` (``[record, units]`` pairs), as canonical JSON."""
    return canonical_json([[dict(r), int(n)] for r, n in records])


def entries(meta: Mapping[bytes, bytes] | None) -> list[tuple[dict[str, Any], int]]:
    """The ``[record, units]`` pairs a file's (or pack's) metadata records; none where it records none (a file
    of a version before provenance was recorded) or garbles it."""
    raw = (meta or {}).get(PROVENANCE_KEY.encode())
    if raw is None:
        return []
    try:
        value = json.loads(raw.decode(errors="replace"))
    except ValueError:
        return []
    out = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], dict) and isinstance(item[1], int):
            out.append((item[0], item[1]))
    return out


def merge(groups: Iterable[Iterable[tuple[Mapping[str, Any], int]]]) -> list[tuple[dict[str, Any], int]]:
    """The distinct records of ``groups`` of pairs, each with its units summed, in order of first appearance."""
    counts: dict[str, int] = {}
    for pairs in groups:
        for record, n in pairs:
            key = canonical_json(dict(record))
            counts[key] = counts.get(key, 0) + n
    return [(json.loads(k), n) for k, n in counts.items()]


def science_version(record: Mapping[str, Any]) -> str:
    """A record's science version; a record without one was written before the key, by science version 1."""
    return str(record.get("science_version") or "1")


def describe(record: Mapping[str, Any]) -> str:
    """A record in one line: "archstudy 0.1.0 (commit 1a2b3c4d5e6f, dirty), science 1, Python 3.11.7, torch 2.13.0,
    ..., CUDA 12.8 on NVIDIA H200" (a library not installed: "-"; no commit: "no commit")."""
    commit = record.get("commit")
    head = f"commit {str(commit)[:12]}{', dirty' if record.get('dirty') else ''}" if commit else "no commit"
    libs = ", ".join(f"{name} {record.get(name) or '-'}" for name in LIBRARIES)
    where = f"CUDA {record['cuda']} on {record.get('device')}" if record.get("cuda") else record.get("device") or ""
    return (
        f"archstudy {record.get('archstudy') or '-'} ({head}), science {science_version(record)}, "
        f"Python {record.get('python') or '-'}, {libs}" + (f", {where}" if where else "")
    )


def differences(recorded: Mapping[str, Any], mine: Mapping[str, Any]) -> list[str]:
    """What differs between a recorded record and this process's, as "key recorded -> mine" phrases (the device
    and CUDA left out: a driver does not compute on the workers' devices)."""
    out = []
    for key in KEYS:
        if key in ("cuda", "device"):
            continue
        a, b = recorded.get(key), mine.get(key)
        if key == "science_version":
            a, b = science_version(recorded), science_version(mine)
        if a != b:
            out.append(f"{key} {a if a is not None else '-'} -> {b if b is not None else '-'}")
    return out


def versions_line(recorded: Iterable[tuple[Mapping[str, Any], int]], mine: Mapping[str, Any]) -> str | None:
    """The one line a resume says where the finished units were computed under another install than ``mine``
    (``differences`` against each distinct record, the phrases of all of them once), or None where none differs."""
    pairs = list(recorded)
    phrases = list(dict.fromkeys(p for record, _ in pairs for p in differences(record, mine)))
    if not phrases:
        return None
    units = sum(n for record, n in pairs if differences(record, mine))
    shown = "; ".join(phrases[:6]) + (f"; and {len(phrases) - 6} more" if len(phrases) > 6 else "")
    return (
        f"resuming under other versions than {units:,} finished architecture(s) were computed with ({shown}); "
        "each result file records its own (`archstudy status` lists them)"
    )


def other_science(recorded: Iterable[tuple[Mapping[str, Any], int]]) -> tuple[int, list[str]]:
    """(units, their science versions) of the records whose science version is not this archstudy's."""
    other = [(science_version(r), n) for r, n in recorded if science_version(r) != SCIENCE_VERSION]
    return sum(n for _, n in other), sorted({v for v, _ in other})
