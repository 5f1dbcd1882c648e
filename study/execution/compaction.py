"""Compaction: a study's finished units' own result files copied into packs of up to ``PACK_UNITS`` units, then
removed, under the store's exactly-once rule (``study.experiment.packs``, docs/results.md "Packs").

A study of N finished units holds 3N small files; a reader pays a request (a file open, an object GET) per file
(7 ms each here), so 100,000 units take minutes to read. After ``compact`` they are N / ``PACK_UNITS`` packs of
three files each.

``compact`` runs while its caller holds the study's driver lock (``Store.driver_lock``: the driver is the only
writer), in this order, each step safe to be killed at any moment:

1. pack files of a compaction killed before its commit point (``runs``/``curves`` pack files without an
   ``architectures`` pack file) are deleted: no reader reads them;
2. the own files of units that a good pack holds (a compaction killed after its commit) are deleted: no reader
   reads them either;
3. the finished units read from their own files (``study.execution.state.survey``: valid, of this study's
   science config, in its plan), in name order, PACK_UNITS at a time: their files are read, their rows
   concatenated with this version's column types (``store.current``; a column added later and missing from an
   older file is null there, as a reader reads it), the pack written (``runs``, ``curves``, then the commit
   point, each whole or not at all), and only then their own files deleted.

A kill before a commit point leaves the units in their own files and an orphan that step 1 removes; after it,
the pack is what every reader reads and the own files are leftovers that step 2 removes. A reader never sees a
unit's rows twice or not at all (``study.experiment.packs``: the pack wins, a file deleted under a reader makes
it list again).
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..experiment.config import StudyConfig
from ..experiment.packs import PACK_KEY, pack_record, pack_stem, pack_stems, seq_of
from ..experiment.provenance import entries, merge, record_json
from ..experiment.schema import RESULTS_SCHEMA_VERSION, SCHEMA_KEY, TABLE_KEY
from .state import survey, survey_files
from .store import ARCHITECTURES, CURVES, RUNS, SCHEMAS, Store, current, table_of, with_provenance, with_science

PACK_UNITS = 10_000  # units per pack: 10 packs for 100,000 units; a pack of 40 runs each is 400,000 runs rows
ROW_GROUP = 65_536  # rows per Parquet row group of a pack: a reader of a few units' curves skips the others
THREADS = 16  # concurrent reads of the units' own files (object storage answers each with latency)


@dataclass
class Compaction:
    """What ``compact`` did: units packed, the packs written, own files of packed units and orphan pack files
    removed."""

    packed: int = 0
    packs: list[str] = field(default_factory=list)
    leftovers: int = 0
    orphans: int = 0

    def line(self, location: str) -> str:
        if not self.packed and not self.leftovers and not self.orphans:
            return f"{location}: nothing to compact"
        parts = [f"{self.packed:,} architectures packed into {len(self.packs)} pack(s)"]
        if self.leftovers:
            parts.append(f"{self.leftovers:,} files of already packed architectures removed")
        if self.orphans:
            parts.append(f"{self.orphans} pack file(s) of an interrupted compaction removed")
        return f"{location}: " + "; ".join(parts)


def conform(tables: Sequence[pa.Table], kind: str) -> pa.Table:
    """Result tables of ``kind`` (any schema version, with or without the columns added later) as one table of this
    version's schema (``SCHEMAS``): a column a file lacks is null in its rows."""
    joined = pa.concat_tables(
        [current(t).replace_schema_metadata(None) for t in tables], promote_options="default"
    ).combine_chunks()
    schema = SCHEMAS[kind]
    n = joined.num_rows
    columns = [
        joined.column(f.name).cast(f.type) if f.name in joined.column_names else pa.nulls(n, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _next_seq(store: Store) -> int:
    seqs = [seq_of(s) for kind in (ARCHITECTURES, RUNS, CURVES) for s in pack_stems(store.fs, store.root, kind)]
    return max(seqs, default=0) + 1


def _pack_bytes(table: pa.Table, meta: Mapping[bytes, bytes]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(
        table.replace_schema_metadata({**(table.schema.metadata or {}), **meta}),
        sink,
        compression="zstd",
        row_group_size=ROW_GROUP,
    )
    return sink.getvalue().to_pybytes()


def write_pack(
    store: Store,
    tables: Mapping[str, pa.Table],
    science: str,
    without_curves: Sequence[str] = (),
    provenance: str | None = None,
) -> str:
    """Write one pack of ``tables`` (``architectures``, and ``runs`` and ``curves`` where they have rows; this
    version's schema) computed under ``science``: the runs and curves files, then the architectures file, its
    commit point (``study.experiment.packs``), with ``provenance`` (the distinct records of its units and their
    counts, ``study.experiment.provenance.merge``) in its metadata. The caller holds the driver lock. Returns the
    pack's stem."""
    stem = pack_stem(_next_seq(store), uuid.uuid4().hex[:8])
    written = {}
    for kind in (RUNS, CURVES):
        table = tables.get(kind)
        if table is None or not table.num_rows:
            continue
        meta = {
            SCHEMA_KEY.encode(): RESULTS_SCHEMA_VERSION.encode(),
            TABLE_KEY.encode(): kind.encode(),
            PACK_KEY.encode(): stem.encode(),
        }
        store.write_bytes([kind, f"{stem}.parquet"], _pack_bytes(with_science(table, science), meta))
        written[kind] = table.num_rows
    meta = {
        SCHEMA_KEY.encode(): RESULTS_SCHEMA_VERSION.encode(),
        TABLE_KEY.encode(): ARCHITECTURES.encode(),
        PACK_KEY.encode(): pack_record(written, list(without_curves)),
    }
    arch = with_provenance(with_science(tables[ARCHITECTURES], science), provenance)
    store.write_bytes([ARCHITECTURES, f"{stem}.parquet"], _pack_bytes(arch, meta))
    return stem


def _read_unit(store: Store, name: str, kinds: Sequence[str]) -> dict[str, pa.Table]:
    return {kind: table_of(store.read_bytes(kind, f"{name}.parquet")) for kind in kinds}


def compact(
    store: Store,
    config: StudyConfig | None = None,
    units: list | None = None,
    *,
    per_pack: int = PACK_UNITS,
    say: Callable[[str], None] | None = None,
) -> Compaction:
    """Compact the study's finished units into packs (module docstring). The caller holds the driver lock
    (``compact_study`` takes it); ``units``: the plan, when the caller has it (else planned from the config)."""
    config = config or store.read_config()
    done = Compaction()
    committed = set(pack_stems(store.fs, store.root))
    for kind in (RUNS, CURVES):  # 1. orphans of a compaction killed before its commit point
        for stem in pack_stems(store.fs, store.root, kind):
            if stem not in committed and store.delete(kind, f"{stem}.parquet"):
                done.orphans += 1
    if units is None:  # only what the files name: sampling the whole plan (100,000 specs) would take minutes
        state = survey_files(store, config, driver=False)
    else:
        state = survey(store, config, units, driver=False)
    listed = {kind: set(store.names(kind, ".parquet")) for kind in (ARCHITECTURES, RUNS, CURVES)}
    for name in sorted(set(state.packed) & set().union(*listed.values())):  # 2. leftovers of packed units
        for kind in (ARCHITECTURES, RUNS, CURVES):
            if name in listed[kind] and store.delete(kind, f"{name}.parquet"):
                done.leftovers += 1
    todo = [n for n in state.finished if n not in state.packed]  # 3. the units read from their own files
    science = config.science_json
    threads = min(THREADS, os.cpu_count() or 1) if store.local else THREADS
    for lo in range(0, len(todo), per_pack):
        chunk = todo[lo : lo + per_pack]
        kinds = {n: [k for k in (RUNS, CURVES, ARCHITECTURES) if n in listed[k]] for n in chunk}
        with ThreadPoolExecutor(max_workers=threads) as pool:
            read = list(pool.map(_read_unit, [store] * len(chunk), chunk, [kinds[n] for n in chunk]))
        tables = {
            kind: conform([r[kind] for r in read if kind in r], kind)
            for kind in (ARCHITECTURES, RUNS, CURVES)
            if any(kind in r for r in read)
        }
        without = [n for n, r in zip(chunk, read) if RUNS in r and CURVES not in r]
        records = merge(entries(r[ARCHITECTURES].schema.metadata) for r in read)
        stem = write_pack(store, tables, science, without, record_json(records) if records else None)
        for name in chunk:
            for kind in kinds[name][::-1]:  # architectures (the unit's own commit point) first
                store.delete(kind, f"{name}.parquet")
        done.packed += len(chunk)
        done.packs.append(stem)
        if say is not None:
            say(f"packed {lo + len(chunk):,}/{len(todo):,} architectures ({stem})")
    return done


def compact_study(location: str, *, per_pack: int = PACK_UNITS, say: Callable[[str], None] | None = None) -> Compaction:
    """``compact`` under the study's driver lock (refused while a driver runs on it)."""
    store = Store(location)
    if not store.local:
        store.reach()
    config = store.read_config()
    with store.driver_lock() as line:
        if line and say is not None:
            say(line)
        store.remove_temp_files()
        return compact(store, config, per_pack=per_pack, say=say)
