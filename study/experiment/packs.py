"""Packs: a study's finished results compacted into few larger files, and the rule by which every reader reads
each row exactly once (docs/results.md, "Packs"). Torch-free and pure ``pyarrow.fs``: the store
(``study.execution.store``, ``state``), the compaction (``study.execution.compaction``) and the reader
(``analysis.results``) share it.

A pack ``pack-<seq>-<tag>`` (``seq`` six or more digits, increasing; ``tag`` 8 hex digits) holds the rows of
many finished units: ``runs/<pack>.parquet`` and ``curves/<pack>.parquet`` are written first, then
``architectures/<pack>.parquet``, the commit point, whose metadata ``archstudy.pack`` (JSON) names the tables
written before it, their row counts, and the trained units that have no curves (finished before curves were
recorded). A pack is *good* when its architectures file is a readable pack of a schema version this archstudy
reads and every table it names has its file, a pack file of that table and pack with the recorded row count;
else it is ignored by every reader (its units are read from their own files if they have them, else they are
not finished).

The rule, for every table: a unit's rows come from the good pack of highest ``seq`` that holds it, else from its
own files (``<table>/<index>-<arch_id>.parquet``); its own files beside a pack that holds it are leftovers,
never read, and removed by the next compaction. A reader lists the units' own files *before* the packs: a
compaction commits a pack before it deletes the files it copied, so a unit is never missed; a file deleted
between the listing and its read (``FileNotFoundError``) means a pack holding it was committed since, and the
reader lists again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Mapping

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from archstudy.sampling.unit_names import unit_name

from .schema import ARCHITECTURES, CURVES, RESULTS_SCHEMA_VERSIONS, RUNS, SCHEMA_KEY, TABLE_KEY
from .value_checks import value_problem

PACK_KEY = "archstudy.pack"  # a pack file's metadata: its pack (tables and row counts on the commit point)
PACK_STEM = re.compile(r"^pack-(?P<seq>[0-9]{6,})-(?P<tag>[0-9a-f]{8})$")
MAX_READS = 5  # listings a reader tries before it gives up (each retry follows a compaction's commit)


def pack_stem(seq: int, tag: str) -> str:
    """``pack-<seq:06d>-<tag>``: the stem of a pack's files."""
    return f"pack-{seq:06d}-{tag}"


def pack_path(root: str, table: str, stem: str) -> str:
    return f"{root}/{table}/{stem}.parquet" if root else f"{table}/{stem}.parquet"


def pack_stems(fs: pafs.FileSystem, root: str, table: str = ARCHITECTURES) -> list[str]:
    """The stems of the pack files under ``<root>/<table>`` (of ``architectures``: the committed packs), by
    ``seq``."""
    base = f"{root}/{table}" if root else table
    out = []
    for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        stem = info.base_name[: -len(".parquet")] if info.base_name.endswith(".parquet") else ""
        m = PACK_STEM.match(stem)
        if info.type == pafs.FileType.File and m:
            out.append((int(m["seq"]), stem))
    return [stem for _, stem in sorted(out)]


def seq_of(stem: str) -> int:
    m = PACK_STEM.match(stem)
    return int(m["seq"]) if m else -1


@dataclass(frozen=True)
class Pack:
    """One committed pack as read: its architectures rows (metadata kept; None when unreadable), the unit names
    of its rows in order, the tables and row counts its commit point records, and ``problem`` ("" for a good
    pack; ``foreign``: a pack of a schema version this archstudy does not read)."""

    stem: str
    architectures: pa.Table | None = None
    names: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    rows: Mapping[str, int] = field(default_factory=dict)
    without_curves: frozenset[str] = frozenset()
    problem: str = ""
    foreign: bool = False

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def seq(self) -> int:
        return seq_of(self.stem)

    @property
    def metadata(self) -> Mapping[bytes, bytes]:
        return (self.architectures.schema.metadata or {}) if self.architectures is not None else {}


def pack_record(tables: Mapping[str, int], without_curves: list[str]) -> bytes:
    """The commit point's ``archstudy.pack`` value: the tables written before it with their row counts, and the
    trained units without curves."""
    return json.dumps({"tables": dict(tables), "without_curves": sorted(without_curves)}, sort_keys=True).encode()


def _problem_of_table(fs: pafs.FileSystem, root: str, table: str, stem: str, rows: int) -> str:
    """Why the ``table`` file of pack ``stem`` is not the whole file its commit point records ("" when it is):
    read from the file's footer (its metadata and row count), not its rows."""
    path = pack_path(root, table, stem)
    try:
        found = fs.get_file_info(path).type
        if found not in (pafs.FileType.File, pafs.FileType.NotFound):  # a FIFO's open would wait for a writer
            return f"{table}/{stem}.parquet is not a regular file"
        with fs.open_input_file(path) as f:
            md = pq.read_metadata(f)
    except FileNotFoundError:
        return f"{table}/{stem}.parquet is missing"
    except (OSError, pa.ArrowException) as e:
        return f"{table}/{stem}.parquet is not readable Parquet ({(str(e).splitlines() or [type(e).__name__])[0]})"
    meta = md.metadata or {}
    if meta.get(TABLE_KEY.encode(), b"").decode(errors="replace") != table or (
        meta.get(PACK_KEY.encode(), b"").decode(errors="replace") != stem
    ):
        return f"{table}/{stem}.parquet is not the {table} file of pack {stem}"
    if md.num_rows != rows:
        return f"{table}/{stem}.parquet has {md.num_rows} rows; its pack records {rows}"
    return ""


def read_pack(fs: pafs.FileSystem, root: str, stem: str) -> Pack:
    """Pack ``stem`` as its commit point records it, and whether it is good (module docstring)."""
    path = pack_path(root, ARCHITECTURES, stem)
    try:
        with fs.open_input_file(path) as f:
            table = pq.ParquetFile(f).read(use_threads=False)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        return Pack(stem, problem=f"{ARCHITECTURES}/{stem}.parquet is not readable Parquet ({first})")
    meta = table.schema.metadata or {}
    version = meta.get(SCHEMA_KEY.encode(), b"").decode(errors="replace")
    try:
        names = tuple(
            unit_name(i, a)
            for i, a in zip(table.column("index").to_pylist(), table.column("arch_id").to_pylist(), strict=True)
        )
    except (KeyError, ValueError, TypeError, pa.ArrowException) as e:
        return Pack(stem, problem=f"{ARCHITECTURES}/{stem}.parquet: its rows name no units ({e})")
    if meta.get(TABLE_KEY.encode(), b"").decode(errors="replace") != ARCHITECTURES:
        return Pack(stem, problem=f"{ARCHITECTURES}/{stem}.parquet is not an archstudy architectures file")
    if version not in RESULTS_SCHEMA_VERSIONS:
        return Pack(
            stem,
            names=names,
            problem=f"schema version {version!r}; this archstudy reads {', '.join(map(repr, RESULTS_SCHEMA_VERSIONS))}",
            foreign=True,
        )
    try:
        record = json.loads(meta[PACK_KEY.encode()])
        tables = {str(t): int(n) for t, n in record["tables"].items()}
        without = frozenset(str(n) for n in record.get("without_curves", ()))
    except (KeyError, ValueError, TypeError, AttributeError):
        return Pack(stem, problem=f"{ARCHITECTURES}/{stem}.parquet has no readable {PACK_KEY} record")
    if not set(tables) <= {RUNS, CURVES}:
        return Pack(stem, problem=f"{PACK_KEY} names tables {sorted(tables)}; a pack has runs and curves only")
    forbidden = value_problem(table, ARCHITECTURES)  # its rows as a unit's own file's (study.experiment.value_checks)
    if forbidden is not None:
        return Pack(stem, problem=f"{ARCHITECTURES}/{stem}.parquet: {forbidden}")
    for kind, rows in tables.items():
        problem = _problem_of_table(fs, root, kind, stem, rows)
        if problem:
            return Pack(stem, table, names, tuple(tables), tables, without, problem)
    return Pack(stem, table, names, tuple(tables), tables, without)


def read_packs(fs: pafs.FileSystem, root: str) -> list[Pack]:
    """Every committed pack, by ``seq`` (a commit point deleted since the listing is left out)."""
    out = []
    for stem in pack_stems(fs, root):
        try:
            out.append(read_pack(fs, root, stem))
        except FileNotFoundError:
            continue
    return out


def sources(packs: list[Pack]) -> dict[str, str]:
    """unit name -> the stem of the good pack of highest ``seq`` that holds it (module docstring)."""
    out: dict[str, str] = {}
    for pack in sorted((p for p in packs if p.ok), key=lambda p: p.seq):
        for name in pack.names:
            out[name] = pack.stem
    return out


def rows_of(table: pa.Table, pack: Pack, winners: Mapping[str, str]) -> pa.Table:
    """The rows of ``pack``'s ``table`` whose unit is read from this pack: all of them, unless a later good pack
    holds some of its units too (then those are filtered out, row by row)."""
    if not table.num_rows or all(winners.get(n) == pack.stem for n in pack.names):
        return table
    mine = [
        winners.get(unit_name(i, a)) == pack.stem
        for i, a in zip(table.column("index").to_pylist(), table.column("arch_id").to_pylist())
    ]
    return table.filter(pa.array(mine, pa.bool_()))
