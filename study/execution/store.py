"""The study's storage: Parquet results written exactly once, through ``pyarrow.fs``.

A study lives in a local directory or under an object-storage prefix (``s3://bucket/prefix``,
``gs://...``, ``file:///abs/path``); every operation goes through one ``pyarrow.fs.FileSystem`` and a
root path, so a local path and a URI take the same code. The layout (docs/results.md)::

    study.yaml                          the config (``study.experiment.config.StudyConfig``)
    architectures/<index>-<arch_id>.parquet   one row per finished architecture
    runs/<index>-<arch_id>.parquet            one row per learning rate of it
    curves/<index>-<arch_id>.parquet          one row per learning rate and epoch of it
    <table>/pack-<seq>-<tag>.parquet          the rows of many finished units (``study.execution.compaction``)
    failed/<index>-<arch_id>.json             an architecture that failed after its retries
    checkpoints/<index>-<arch_id>.pt          trainer state of an architecture in progress
    progress/<index>-<arch_id>.json           how far a running architecture is (``study.execution.live``)
    driver.json                         the running driver's heartbeat (pid, host, what is in flight)
    .lock                               (local studies) held by the running driver

Exactly once, by construction: a unit's file name is its index and content id, the driver is the only
writer of results, and each file appears whole or not at all: on a local filesystem it is written to a
hidden temporary name in the same directory (``.<name>.tmp-...``, which Parquet dataset readers skip) and
renamed; on object storage it is put whole (an object becomes visible only when its upload completes).
The ``architectures`` file is written last, so it is the commit point, and it says which other files the
unit has (``FileCheck.requires``): its metadata ``archstudy.unit_tables`` names the tables written before it
(``runs,curves`` for a trained architecture, none for one pruned at launch, ``trained`` false). A file from
before that key requires what its writer always wrote: a trained architecture's ``runs`` and ``curves`` files
when the file has the ``trained`` column (added with the curves), else (finished before curves were
recorded) its ``runs`` file only. A unit is finished when its ``architectures`` file is valid, the files it
requires are there and valid, and a ``curves`` file, if there, is valid: a deleted file of a finished unit
is found, and a resume redoes the unit.

Packs (``study.experiment.packs``): a compaction copies finished units into packs, each committed by its
``architectures`` file, then deletes the units' own files; a unit's rows come from the good pack of highest
sequence number holding it, else from its own files, so every reader (``read_table``, ``state.survey``,
``analysis.load_results``) reads each row exactly once, during a compaction and after one killed at any moment.

Every entry of a local study the driver writes or deletes (``ENTRIES``) is checked never to be a symbolic
link (``Store.links``, ``Store.refuse_links``; ``write_bytes`` and ``delete`` refuse a folder that is one):
a planted ``progress -> /elsewhere`` never has files written or deleted there.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import math
import os
import secrets
import stat
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from archstudy.sampling import UserError, config_yaml
from archstudy.sampling.constraints import redact
from archstudy.sampling.regular_files import read_regular
from archstudy.sampling.unit_names import UNIT_NAME, unit_name  # noqa: F401 - unit_name: part of this module's API

from ..experiment import schema
from ..experiment.checkpoint_key import SECRET_BYTES, SECRET_NAME, SecretError, secret_at
from ..experiment.config import CONFIG_NAME, StudyConfig, same_science, science_fingerprint
from ..experiment.layout import (  # noqa: F401 - PROGRESS, DRIVER_STATE: its API
    CHECKPOINTS,
    DRIVER_STATE,
    FAILED,
    FOLDERS,
    PROGRESS,
    UNIT_FILES,
)
from ..experiment.packs import MAX_READS, Pack, pack_path, read_packs, rows_of, sources
from ..experiment.notes import NOTES_NAME
from ..experiment.provenance import PROVENANCE_KEY, entries
from ..experiment.value_checks import value_problem
from ..experiment.location import first_line, open_location, reach
from .object_lock import LEASE_S, ObjectLock, object_lock
from ..experiment.schema import (  # noqa: F401 - runs_required, unit_tables: part of this module's API
    ARCHITECTURES,
    runs_required,
    unit_tables,
    CURVES,
    RUNS,
    SCHEMA_KEY,
    UNIT_TABLES_KEY,
    RESULTS_SCHEMA_VERSION,
    RESULTS_SCHEMA_VERSIONS,
    SCIENCE_FINGERPRINT_KEY,
    SCIENCE_KEY,
    TABLE_KEY,
    TABLES,
    TIMESTAMP_UNIT,
    timestamps_as_text,
)

LOCK_NAME = ".lock"
# Every entry of a study a driver (or a worker of it) writes or deletes: its folders (``study.experiment.layout``)
# and its files at the root. The writers use these names, and each is checked never to be a symbolic link
# (``Store.links``).
ROOT_FILES = (CONFIG_NAME, DRIVER_STATE, LOCK_NAME, SECRET_NAME, NOTES_NAME)
ENTRIES = FOLDERS + ROOT_FILES
NAME_RE = UNIT_NAME  # the file stem of one architecture of a study (sampling.unit_names)
TEMP_MARK = ".tmp-"
PROBE = f".write-check{TEMP_MARK}"  # the name of an object-store write probe begins so (``Store.write_problem``)


# -- the Parquet schemas, from the one declaration of every column (study.experiment.schema) ---------------------------
# A timestamp is a Parquet timestamp (UTC) in the file; ISO 8601 UTC text in the files of schema version 1.
TIMESTAMP = pa.timestamp(TIMESTAMP_UNIT, tz="UTC")
_ARROW_TYPES = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
    "timestamp": TIMESTAMP,
}


def arrow_type(type_: str, version: str = RESULTS_SCHEMA_VERSION) -> pa.DataType:
    """The pyarrow type of a schema type (``study.experiment.schema.TYPES``) in the files of ``version``."""
    return pa.string() if type_ == "timestamp" and timestamps_as_text(version) else _ARROW_TYPES[type_]


def arrow_schema(table: str, version: str = RESULTS_SCHEMA_VERSION) -> pa.Schema:
    """The pyarrow schema of ``table`` with its key-value metadata (schema version and table name), as the files
    of schema ``version`` have it (default: the version this archstudy writes)."""
    return pa.schema(
        [(c.name, arrow_type(c.type, version)) for c in schema.columns(table)],
        metadata={SCHEMA_KEY.encode(): version.encode(), TABLE_KEY.encode(): table.encode()},
    )


SCHEMAS = {table: arrow_schema(table) for table in TABLES}
ARCHITECTURES_SCHEMA, RUNS_SCHEMA = SCHEMAS[ARCHITECTURES], SCHEMAS[RUNS]
_VERSION_SCHEMAS = {(table, v): arrow_schema(table, v) for table in TABLES for v in RESULTS_SCHEMA_VERSIONS}
_TIMESTAMPS = {c.name for table in TABLES for c in schema.columns(table) if c.type == "timestamp"}


def schema_fits(found: pa.Schema, kind: str, version: str = RESULTS_SCHEMA_VERSION) -> bool:
    """Whether a file's schema is the ``kind`` schema of schema ``version``, or the schema an older writer of that
    version gave it: the same columns in the same order, without some of the columns added later
    (``study.experiment.schema.ADDED_COLUMNS``)."""
    full = _VERSION_SCHEMAS[(kind, version)]
    present = set(found.names)
    if not set(full.names) - present <= set(schema.ADDED_COLUMNS[kind]):
        return False
    return found.equals(pa.schema([f for f in full if f.name in present]), check_metadata=False)


def file_version(table: pa.Table | pa.Schema) -> str:
    """The schema version a result file's metadata records ("" where it records none)."""
    return (
        ((table.metadata if isinstance(table, pa.Schema) else table.schema.metadata) or {})
        .get(SCHEMA_KEY.encode(), b"")
        .decode(errors="replace")
    )


def current(table: pa.Table) -> pa.Table:
    """A valid result file's table with this version's column types: the ISO 8601 text timestamps of a schema
    version 1 file become timestamps (the values are the same instants), so files of every version concatenate."""
    if not timestamps_as_text(file_version(table)):
        return table
    for i, field in enumerate(table.schema):
        if field.type == pa.string() and field.name in _TIMESTAMPS:
            table = table.set_column(i, field.name, table.column(i).cast(TIMESTAMP))
    return table


# Key-value metadata each result file records besides its schema's: the science config its rows were
# computed under (``StudyConfig.science_json``) and its fingerprint. A study holds one science config: a
# file of another is never counted as finished, and a driver refuses to run beside it (study.execution.driver).
def with_science(table: pa.Table, science: str) -> pa.Table:
    """``table`` with the science config ``science`` (canonical JSON) and its fingerprint in its metadata."""
    meta = {
        **(table.schema.metadata or {}),
        SCIENCE_KEY.encode(): science.encode(),
        SCIENCE_FINGERPRINT_KEY.encode(): science_fingerprint(science).encode(),
    }
    return table.replace_schema_metadata(meta)


def with_provenance(table: pa.Table, provenance: str | None) -> pa.Table:
    """``table`` with ``provenance`` (``study.experiment.provenance.record_json``: who computed its rows) in its
    metadata; unchanged for None."""
    if provenance is None:
        return table
    meta = {**(table.schema.metadata or {}), PROVENANCE_KEY.encode(): provenance.encode()}
    return table.replace_schema_metadata(meta)


def recorded_science(metadata: Mapping[bytes, bytes] | None) -> tuple[str | None, dict | None]:
    """(fingerprint, science dict) a result file's metadata records; None for what it lacks or garbles."""
    meta = metadata or {}
    fp = meta.get(SCIENCE_FINGERPRINT_KEY.encode())
    try:
        science = json.loads(meta[SCIENCE_KEY.encode()])
    except (KeyError, ValueError):
        science = None
    return (fp.decode(errors="replace") if fp is not None else None), (science if isinstance(science, dict) else None)


class SchemaError(ValueError):
    """Rows that do not fit the results schema (a missing or unknown column, a value of the wrong type)."""


class StoreWriteError(UserError, OSError):
    """A write to the study's storage failed: ``path`` (relative to the study) and ``why`` in words (the disk is
    full, the directory is read-only or gone, a folder is a link, the object store refused). The file was not
    written, and nothing written before it is touched (a write is whole or not at all)."""

    def __init__(self, path: str, why: str, doing: str = "write"):
        super().__init__(f"cannot {doing} {path} ({why})")
        self.path, self.why, self.doing = path, why, doing

    def __reduce__(self):  # picklable with its arguments (it may cross from a worker to the driver)
        return type(self), (self.path, self.why, self.doing)


def write_failure_why(error: BaseException) -> str:
    """What a failed write says, in words: the operating system's text for its errno (No space left on device,
    Permission denied, Read-only file system, ...), else the error's first line."""
    if isinstance(error, StoreWriteError):
        return error.why
    code = getattr(error, "errno", None)
    if isinstance(code, int) and code:
        return os.strerror(code)
    return first_line(error, 200)


def _coerce(value: Any, type_: pa.DataType, column: str) -> Any:
    """One value as the column's Python type; None/NaN rules: floats become NaN, other types must be set."""
    try:
        if pa.types.is_floating(type_):
            return math.nan if value is None else float(value)
        if value is None:
            raise SchemaError(f"column {column!r} is None; a {type_} column needs a value")
        if pa.types.is_boolean(type_):
            if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
                return bool(value)
            raise SchemaError(f"column {column!r} = {value!r}: not a boolean")
        if pa.types.is_integer(type_):
            if isinstance(value, float) and value != int(value) or isinstance(value, bool):
                raise SchemaError(f"column {column!r} = {value!r}: not an integer")
            return int(value)
        if pa.types.is_timestamp(type_):
            return _instant(value, column)
        if not isinstance(value, str):
            raise SchemaError(f"column {column!r} = {value!r}: not a string")
        return value
    except (TypeError, ValueError) as e:
        if isinstance(e, SchemaError):
            raise
        raise SchemaError(f"column {column!r} = {value!r}: {e}") from None


def _instant(value: Any, column: str) -> datetime.datetime:
    """A timestamp column's value as an aware UTC datetime: a ``datetime`` with a time zone, or ISO 8601 text with
    one (``study.experiment.config.utc_now``: ``2026-01-31T12:00:00Z``)."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        except ValueError:
            raise SchemaError(f"column {column!r} = {value!r}: not an ISO 8601 time") from None
    if not isinstance(value, datetime.datetime) or value.tzinfo is None:
        raise SchemaError(f"column {column!r} = {value!r}: not a time with a time zone (UTC)")
    return value.astimezone(datetime.timezone.utc)


def to_table(kind: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows as a table of the ``kind`` schema; the columns must be exactly the schema's (else ``SchemaError``)."""
    schema = SCHEMAS[kind]
    if not rows:
        raise SchemaError(f"{kind}: no rows")
    names = set(schema.names)
    columns: dict[str, list] = {n: [] for n in schema.names}
    for row in rows:
        keys = set(row)
        if keys != names:
            missing, extra = sorted(names - keys), sorted(keys - names)
            raise SchemaError(f"{kind} row: missing columns {missing}, unknown columns {extra}")
        for f in schema:
            columns[f.name].append(_coerce(row[f.name], f.type, f.name))
    return pa.Table.from_pydict(columns, schema=schema)


def table_of(data: bytes) -> pa.Table:
    """The table of the Parquet file ``data``, read in the calling thread. Not ``pq.read_table``: its dataset reader
    released the file's last reference on one of Arrow's threads, which then needed the GIL; where that came while
    the interpreter was finishing, the thread was ended inside C++ and the process aborted ("terminate called without
    an active exception", SIGABRT at the exit of `archstudy status`: 3 of 98 runs at load 5 to 6 on 2 cores, 0 of 300
    after)."""
    return pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)


def parquet_bytes(table: pa.Table, *, lean: bool = False) -> bytes:
    """``table`` as the bytes of a zstd-compressed Parquet file. ``lean``: without column statistics and
    dictionaries, which a file of one unit's few rows never uses and which double the time to write its
    80 columns (a unit's files are written so; a pack keeps them, for row-group filters)."""
    sink = pa.BufferOutputStream()
    if lean:
        pq.write_table(table, sink, compression="zstd", write_statistics=False, use_dictionary=False)
    else:
        pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


@dataclass(frozen=True)
class FileCheck:
    """What validating one result file found: ``ok``, or the one-line ``problem``; ``foreign`` when the file is
    a readable archstudy file of another schema version (never deleted: another version of archstudy wrote it).
    For a valid ``architectures`` file, ``trained`` (its row's; true in a file from before the column) and the
    tables its unit ``requires`` besides it (``runs_required``)."""

    ok: bool
    problem: str = ""
    foreign: bool = False
    other_config: bool = False  # a valid file of another science config (never deleted: not this study's)
    science: dict | None = None  # the science config such a file records (None: it records none)
    trained: bool = True
    tables: tuple[str, ...] | None = None  # a valid architectures file: the tables its unit has besides it
    provenance: tuple = ()  # a valid file: the (record, units) pairs of its metadata (study.experiment.provenance)

    @property
    def requires(self) -> tuple[str, ...]:
        return runs_required(self.trained) if self.tables is None else self.tables


def _other_science(meta: Mapping[bytes, bytes], fingerprint: str | None) -> FileCheck | None:
    """The refusal of a file (or pack) whose Parquet metadata ``meta`` records another science config than
    ``fingerprint``'s; None where it is the same, or where no fingerprint is asked for."""
    if fingerprint is None:
        return None
    text = meta.get(SCIENCE_KEY.encode())
    fp, science = recorded_science(meta)
    if same_science(fp, None if text is None else text.decode(errors="replace"), fingerprint):
        return None
    what = f"science fingerprint {fp}" if fp else "no science config recorded"
    return FileCheck(
        False,
        f"computed under another science config ({what}; this study's is {fingerprint})",
        other_config=True,
        science=science,
    )


def check_table_bytes(
    data: bytes, kind: str, name: str, fingerprint: str | None = None, runs: int | None = None
) -> FileCheck:
    """Validate a result file's content: readable Parquet, archstudy metadata, this schema, rows naming this unit,
    (when ``fingerprint`` is given) computed under the science config of that fingerprint, and values the science
    allows (``study.experiment.value_checks``; ``runs``: the runs the study's protocol plans)."""
    try:
        table = table_of(data)
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        return FileCheck(False, f"unreadable Parquet ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
    meta = table.schema.metadata or {}
    version = meta.get(SCHEMA_KEY.encode(), b"").decode()
    if meta.get(TABLE_KEY.encode(), b"").decode() != kind:
        return FileCheck(False, f"not an archstudy {kind} file (metadata archstudy.table missing or different)")
    if version not in RESULTS_SCHEMA_VERSIONS:
        return FileCheck(
            False,
            f"schema version {version!r}; this archstudy reads {', '.join(map(repr, RESULTS_SCHEMA_VERSIONS))}",
            foreign=True,
        )
    if not schema_fits(table.schema, kind, version):
        return FileCheck(False, "columns differ from the schema of docs/results.md")
    m = NAME_RE.match(name)
    if kind == ARCHITECTURES and table.num_rows != 1:
        return FileCheck(False, f"{table.num_rows} rows; an architectures file has exactly 1")
    if table.num_rows < 1:
        return FileCheck(False, "no rows")
    ids = set(table.column("arch_id").to_pylist())
    idx = set(table.column("index").to_pylist())
    if m is None or ids != {m["arch_id"]} or idx != {int(m["index"])}:
        return FileCheck(False, f"its rows name arch_id {sorted(ids)} / index {sorted(idx)}, not the file's {name}")
    other = _other_science(meta, fingerprint)
    if other is not None:
        return other
    forbidden = value_problem(table, kind, runs)
    if forbidden is not None:
        return FileCheck(False, forbidden)
    if kind == ARCHITECTURES:
        trained = bool(table.column("trained")[0].as_py()) if "trained" in table.column_names else True
        tables = unit_tables(meta, table.column_names, trained)
        if isinstance(tables, str):
            return FileCheck(False, tables)
        return FileCheck(True, trained=trained, tables=tables, provenance=tuple(entries(meta)))
    return FileCheck(True)


class Store:
    """One study's files, on a local filesystem or object storage (see the module docstring)."""

    def __init__(
        self,
        location: str | os.PathLike | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        root: str | None = None,
    ):
        self._held: int | None = None  # the driver lock's file descriptor while this store holds it (local)
        # the driver lock's object while this store holds it (s3://, study.execution.object_lock)
        self._object_lock: ObjectLock | None = None
        if filesystem is not None:  # an already-open filesystem (tests use pyarrow's in-memory one)
            self.fs, self.root, self.location = filesystem, (root or "").rstrip("/"), f"{filesystem.type_name}:{root}"
            self._opened = self.location
            return
        location = os.fspath(cast("str | os.PathLike[str]", location))  # given without a filesystem
        self.fs, self.root = open_location(location)  # a bad URI is one line; s3:// with bounded waits
        self.location = redact(location)  # as every message shows it: credentials starred
        self._opened = location

    def reach(self) -> None:
        """Ask object storage once whether it answers (``study.experiment.location.reach``): an endpoint that refuses
        or never answers is one ``UserError`` line within a bounded time, before anything else is tried."""
        reach(self.fs, self.root, self.location)

    @property
    def uri(self) -> str:
        """The location as any process on any node can open it: the absolute path of a local study, else the URI."""
        return self.root if self.local and "://" not in self._opened else self._opened

    def __repr__(self):
        return f"Store({self.location!r})"

    # -- paths -----------------------------------------------------------------------------------------
    @property
    def local(self) -> bool:
        """True on a local filesystem: writes go through a temporary name and a rename; a driver lock works."""
        return self.fs.type_name == "local"

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts]) if self.root else "/".join(parts)

    def exists(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound

    def is_study(self) -> bool:
        return self.fs.get_file_info(self.path(CONFIG_NAME)).type == pafs.FileType.File

    def has_lock(self) -> bool:
        """Whether the study root holds a driver's lock (``driver_lock``: held now, or left by a driver that ended)."""
        return self.fs.get_file_info(self.path(LOCK_NAME)).type == pafs.FileType.File

    def listing(self) -> list[str]:
        """Names of the study root's entries (for the 'is it empty' check before creating a study), but the lock a
        driver killed before it wrote study.yaml left, and a starting driver's write probe (``write_problem``: a
        second driver that lists the root while the first one's probe exists must not take it for a study's
        file)."""
        info = self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        return sorted(i.base_name for i in info if i.base_name != LOCK_NAME and not i.base_name.startswith(PROBE))

    def root_kind(self) -> str:
        """ "missing", "dir" or "file" for the study location itself (object storage: "dir" once anything is
        under it)."""
        t = self.fs.get_file_info(self.root).type
        if t == pafs.FileType.NotFound:
            return "dir" if not self.local and self.listing() else "missing"
        return "dir" if t == pafs.FileType.Directory else "file"

    def write_problem(self) -> str | None:
        """Why a driver could not write this study, or None: checked before anything starts (Ray, the data),
        so a read-only location is one line, not a traceback after minutes. Local: the study directory (or
        the nearest existing parent, which it would be created in) and its existing folders must be writable
        directories (a file where a folder should be is refused too). Object storage: a probe object is put and
        deleted (a hidden temporary name)."""
        if not self.local:
            probe = f"{PROBE}{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                with self.fs.open_output_stream(self.path(probe)) as f:
                    f.write(b"")
                self.fs.delete_file(self.path(probe))
            except (OSError, pa.ArrowException) as e:
                return f"cannot write there ({(str(e).strip().splitlines() or [type(e).__name__])[0][:200]})"
            return None
        path = self.root
        while not os.path.lexists(path):
            path = os.path.dirname(path)
        if not os.path.isdir(path):
            return f"{path} is not a directory"
        if path == self.root:
            for name in FOLDERS:
                folder = self.path(name)
                if os.path.lexists(folder) and not os.path.islink(folder) and not os.path.isdir(folder):
                    return f"{folder} is not a directory: a file stands where the study keeps a folder"
        folders = [path] + [p for p in (self.path(d) for d in FOLDERS) if path == self.root and os.path.isdir(p)]
        for folder in folders:
            if not os.access(folder, os.W_OK | os.X_OK):
                return f"cannot write there ({folder} is not writable)"
        return None

    # -- bytes -----------------------------------------------------------------------------------------
    def read_bytes(self, *parts: str) -> bytes:
        """A file of the study, whole. Local: opened without waiting and read only if it is a regular file
        (``sampling.regular_files``: a FIFO planted at ``driver.json`` hung every command that read it)."""
        return self.read_head(*parts, limit=None)

    def read_head(self, *parts: str, limit: int | None) -> bytes:
        """At most the first ``limit`` bytes of a file (a config is read so: a huge file is refused, not loaded)."""
        if self.local:
            return read_regular(self.path(*parts), limit, what=f"{'/'.join(parts)} of a study")
        with self.fs.open_input_stream(self.path(*parts)) as f:
            return f.read() if limit is None else f.read(limit)

    def write_bytes(self, parts: Iterable[str], data: bytes) -> None:
        """Write a file so it appears whole or not at all (temporary name + rename, or one object put).

        A failed write is a ``StoreWriteError`` naming the file and why (a full disk, a read-only or vanished
        directory, the object store's refusal). While the driver holds the study (``driver_lock``), a vanished
        study directory is never created again (its results would land in an empty directory without its
        study.yaml); and a folder of the study that is a symbolic link is never written through."""
        parts = tuple(parts)
        if not parts or parts[0] not in ENTRIES:  # every entry written is one ``links`` checks
            raise ValueError(f"{'/'.join(parts)}: not an entry of a study ({', '.join(ENTRIES)})")
        final = self.path(*parts)
        parent = final.rsplit("/", 1)[0]
        if not self.local:
            lock = self._object_lock
            if lock is not None and lock.lost.is_set():
                raise StoreWriteError(
                    "/".join(parts),
                    "another driver took over the study's lock: this driver's "
                    f"lease ran out (not renewed for {LEASE_S:g} s)",
                )
            try:
                self.fs.create_dir(parent, recursive=True)
                with self.fs.open_output_stream(final) as f:  # the object is visible once the upload completes
                    f.write(data)
            except (OSError, pa.ArrowException) as e:
                raise StoreWriteError("/".join(parts), write_failure_why(e)) from e
            return
        tmp = f"{parent}/.{parts[-1]}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self._local_folder(parent)
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            self.fs.move(tmp, final)  # rename(2): atomic, replaces a file (or a link) of the same name
        except BaseException as e:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)
            if isinstance(e, (OSError, pa.ArrowException)):
                raise StoreWriteError("/".join(parts), write_failure_why(e)) from e
            raise

    def _local_folder(self, folder: str) -> None:
        """Make sure ``folder`` (the study root or one of its folders) is a real directory to write in."""
        if self._held is not None and (os.fstat(self._held).st_nlink == 0 or not os.path.isdir(self.root)):
            # The lock file or the root is gone: so is the directory this driver locked (removed, or moved away;
            # a worker may have made an empty one since).
            raise StoreWriteError(folder, f"the study directory {self.root} is gone")
        if folder != self.root and os.path.islink(folder):
            raise StoreWriteError(
                folder, f"{folder[len(self.root) + 1 :]} is a symbolic link; a study never writes through a link"
            )
        if self._held is None:
            os.makedirs(folder, exist_ok=True)
        elif folder != self.root:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder)  # below the locked root only: never the root again

    def links(self) -> list[str]:
        """The entries of a local study that are symbolic links (``ENTRIES``: every folder and root file a driver
        writes or deletes): a driver never writes or deletes through one (a planted ``checkpoints -> /elsewhere``
        would make every worker write there, ``progress -> /elsewhere`` the driver delete files there); object
        storage has none."""
        if not self.local:
            return []
        return [name for name in ENTRIES if os.path.islink(self.path(name))]

    def refuse_links(self) -> None:
        """A ``UserError`` naming the first entry of the study that is a symbolic link (``links``), if any."""
        for name in self.links():
            try:
                to = f" (to {os.readlink(self.path(name))})"
            except OSError:
                to = ""
            raise UserError(
                f"{self.location}: {name} is a symbolic link{to}; a study never writes through a link, so "
                "nothing was run: replace it with a real directory (or file)"
            )

    def delete(self, *parts: str) -> bool:
        """Delete one file of the study (False where there was none, or it could not be deleted); never in a folder
        of the study that is a symbolic link (``StoreWriteError``: a planted link is never followed)."""
        if self.local and len(parts) > 1:
            folder = self.path(*parts[:-1])
            if os.path.islink(folder):
                raise StoreWriteError(
                    "/".join(parts),
                    f"{folder[len(self.root) + 1 :]} is a symbolic link; a study never deletes through a link",
                    "delete",
                )
        try:
            self.fs.delete_file(self.path(*parts))
            return True
        except (FileNotFoundError, OSError):
            return False

    def names(self, folder: str, suffix: str) -> list[str]:
        """WorkUnit names (``<index>-<arch_id>``) of the visible files ``<folder>/*<suffix>``, sorted."""
        info = self.fs.get_file_info(pafs.FileSelector(self.path(folder), allow_not_found=True))
        out = []
        for i in info:
            if i.type == pafs.FileType.File and i.base_name.endswith(suffix) and not i.base_name.startswith("."):
                stem = i.base_name[: -len(suffix)]
                if NAME_RE.match(stem):
                    out.append(stem)
        return sorted(out)

    def blocked(self, names: Iterable[str]) -> list[str]:
        """Paths where the study writes a file of one of the units ``names`` (its checkpoint, result files, failure
        record) that hold something else, a directory say (local stores): every attempt to write there fails."""
        if not self.local:
            return []
        wanted = set(names)
        out = []
        for folder, suffix in UNIT_FILES:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path(folder), allow_not_found=True))
            for i in infos:
                if (
                    i.base_name.endswith(suffix)
                    and i.base_name[: -len(suffix)] in wanted
                    and i.type != pafs.FileType.File
                ):
                    out.append(i.path)
        return sorted(out)

    def temp_files(self) -> list[str]:
        """Leftover temporary files of writes that a killed process did not finish: the driver's hidden
        ``.<name>.tmp-...`` files, and the trainer's ``checkpoints/<name>.pt.<random>.tmp`` files."""
        out = []
        for folder in ("", *FOLDERS):
            base = self.path(folder) if folder else self.root
            if folder and self.local and os.path.islink(base):
                continue  # never listed, never deleted through a link (``refuse_links`` names it)
            for i in self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
                if i.type != pafs.FileType.File:
                    continue
                mine = i.base_name.startswith(".") and TEMP_MARK in i.base_name
                trainers = folder == CHECKPOINTS and i.base_name.endswith(".tmp")
                if mine or trainers:
                    out.append(i.path)
        return sorted(out)

    def remove_temp_files(self) -> list[str]:
        """Delete leftover temporary files; only the driver, holding the lock before it starts any work, may
        call this (no process of the study is writing then)."""
        removed = self.temp_files()
        for p in removed:
            with contextlib.suppress(OSError):
                self.fs.delete_file(p)
        return removed

    # -- config ----------------------------------------------------------------------------------------
    def read_config(self) -> StudyConfig:
        if not self.is_study() and self.local and os.path.lexists(self.path(CONFIG_NAME)):
            self.read_head(CONFIG_NAME, limit=0)  # a FIFO, a device, a directory there: named (``NotRegular``)
        if not self.is_study():
            raise UserError(f"{self.location} is not a study (no {CONFIG_NAME}); start one with `archstudy run`")
        text = self.read_head(CONFIG_NAME, limit=config_yaml.MAX_BYTES + 1)
        return StudyConfig.from_yaml(text, where=self.path(CONFIG_NAME))

    def write_config(self, config: StudyConfig) -> None:
        self.write_bytes([CONFIG_NAME], config.to_yaml().encode())

    # -- results ---------------------------------------------------------------------------------------
    def write_result(
        self,
        name: str,
        architecture: Mapping[str, Any],
        runs: Sequence[Mapping[str, Any]],
        curves: Sequence[Mapping[str, Any]] = (),
        *,
        science: str | None = None,
        provenance: str | None = None,
    ) -> None:
        """Commit one finished architecture: its runs file and its curves file (a trained architecture; the
        curves when recorded), then its architectures file (the commit point).

        Every table is built (and checked against the schema) before anything is written; a pruned
        architecture (``trained`` false) has neither runs nor curves, a trained one has runs. ``science``:
        the science config the rows were computed under (``StudyConfig.science_json``; the driver always
        gives it), recorded in every file's metadata, as is ``provenance`` (who computed the rows:
        ``study.experiment.provenance.record_json``; None records none) in the architectures file's."""
        arch_table = to_table(ARCHITECTURES, [architecture])
        trained = bool(architecture["trained"])
        if trained != bool(runs) or (curves and not trained):
            raise SchemaError(
                f"{name}: an architecture with trained = {trained} and {len(runs)} runs rows, "
                f"{len(curves)} curves rows: a trained one has runs (and curves when recorded), a "
                "pruned one neither"
            )
        tables = [(RUNS, to_table(RUNS, list(runs)))] if runs else []
        if curves:
            tables.append((CURVES, to_table(CURVES, list(curves))))
        self.write_tables(name, arch_table, dict(tables), science=science, provenance=provenance)

    def write_tables(
        self,
        name: str,
        arch_table: pa.Table,
        others: Mapping[str, pa.Table],
        *,
        science: str | None = None,
        provenance: str | None = None,
    ) -> None:
        """``write_result``'s commit from tables already of the schema (``SCHEMAS``): ``others`` (``runs``, and
        ``curves`` when recorded; none for a pruned architecture) first, then the architectures file (the commit
        point) naming them. Batch writers (``study.perf.synthetic_store``) build the tables of many units at once
        and commit each unit's slices here, so every file is written as the driver writes it."""
        tables = [(kind, others[kind]) for kind in (RUNS, CURVES) if kind in others]
        if science is not None:
            arch_table = with_science(arch_table, science)
            tables = [(kind, with_science(table, science)) for kind, table in tables]
        written = ",".join(kind for kind, _ in tables)  # what the commit point says its unit has
        arch_table = with_provenance(arch_table, provenance)
        arch_table = arch_table.replace_schema_metadata(
            {**(arch_table.schema.metadata or {}), UNIT_TABLES_KEY.encode(): written.encode()}
        )
        for kind, table in tables:
            self.write_bytes([kind, f"{name}.parquet"], parquet_bytes(table, lean=True))
        self.write_bytes([ARCHITECTURES, f"{name}.parquet"], parquet_bytes(arch_table, lean=True))

    def check_file(self, kind: str, name: str, fingerprint: str | None = None, runs: int | None = None) -> FileCheck:
        try:
            data = self.read_bytes(kind, f"{name}.parquet")
        except FileNotFoundError:
            return FileCheck(False, "missing")
        except OSError as e:
            return FileCheck(False, f"unreadable ({e})")
        return check_table_bytes(data, kind, name, fingerprint, runs)

    def check_files(
        self,
        kind: str,
        names: Iterable[str],
        threads: int = 16,
        fingerprint: str | None = None,
        runs: int | None = None,
    ) -> dict[str, FileCheck]:
        """``check_file`` for many files, concurrently (object storage answers each read with latency)."""
        names = list(names)
        if not names:
            return {}
        with ThreadPoolExecutor(max_workers=min(threads, len(names))) as pool:
            return dict(zip(names, pool.map(lambda n: self.check_file(kind, n, fingerprint, runs), names)))

    def science_of(self, kind: str, name: str) -> tuple[str | None, dict | None]:
        """(fingerprint, science dict) the result file records; (None, None) when it cannot be read."""
        try:
            return recorded_science(pq.read_schema(pa.BufferReader(self.read_bytes(kind, f"{name}.parquet"))).metadata)
        except (OSError, pa.ArrowException):
            return None, None

    def packs(self) -> list[Pack]:
        """The study's committed packs (``study.experiment.packs``), by sequence number, good or not."""
        return read_packs(self.fs, self.root)

    def check_pack(self, pack: Pack, fingerprint: str | None = None) -> FileCheck:
        """A good pack's science check (``check_table_bytes``'s last one, for all its units at once): ok, or
        ``other_config`` when its rows were computed under another science config than ``fingerprint``'s."""
        if not pack.ok:
            return FileCheck(False, pack.problem, foreign=pack.foreign)
        return _other_science(pack.metadata, fingerprint) or FileCheck(True)

    def read_table(self, kind: str = ARCHITECTURES):
        """All of the study's ``kind`` rows as a pandas DataFrame, each unit's once: from the good pack that holds it,
        else from its own file (``study.experiment.packs``: its own files are listed before the packs, and a file
        deleted under the read means a compaction committed a pack since: listed again)."""
        for attempt in range(MAX_READS):
            names = self.names(kind, ".parquet")
            packs = self.packs()
            winners = sources(packs)
            try:
                tables = [current(table_of(self.read_bytes(kind, f"{n}.parquet"))) for n in names if n not in winners]
                for pack in packs:
                    if pack.ok and (kind == ARCHITECTURES or kind in pack.tables):
                        path = pack_path(self.root, kind, pack.stem)
                        with self.fs.open_input_file(path) as f:
                            tables.append(rows_of(pq.read_table(f), pack, winners))
            except FileNotFoundError:
                if attempt == MAX_READS - 1:
                    raise
                continue
            break
        # files from before an added column lack it: it is null there; older versions' types are this one's
        tables = [t.replace_schema_metadata(None) for t in tables]
        return (
            pa.concat_tables(tables, promote_options="default") if tables else SCHEMAS[kind].empty_table()
        ).to_pandas()

    # -- failures --------------------------------------------------------------------------------------
    def write_failure(self, name: str, record: Mapping[str, Any]) -> None:
        self.write_bytes([FAILED, f"{name}.json"], (json.dumps(dict(record), indent=1, sort_keys=True) + "\n").encode())

    def read_failure(self, name: str) -> dict | None:
        try:
            return json.loads(self.read_bytes(FAILED, f"{name}.json"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            return {"reason": f"(unreadable failure record: {e})", "attempts": 0}

    def failures(self) -> dict[str, dict]:
        # the records listed: read_failure's None (a record gone since the listing) is not expected here
        return {n: cast(dict, self.read_failure(n)) for n in self.names(FAILED, ".json")}

    # -- checkpoints -----------------------------------------------------------------------------------
    def checkpoint_parts(self, name: str) -> tuple[str, str]:
        return CHECKPOINTS, f"{name}.pt"

    def checkpoint_folder(self) -> str:
        """The local ``checkpoints`` folder a worker's trainer writes in, made if needed: never through a link,
        never in a study directory that is gone (``StoreWriteError``: the unit fails with that reason)."""
        folder = self.path(CHECKPOINTS)
        if not os.path.isdir(self.root):
            raise StoreWriteError(CHECKPOINTS, f"the study directory {self.root} is gone")
        if os.path.islink(folder):
            raise StoreWriteError(CHECKPOINTS, f"{CHECKPOINTS} is a symbolic link; a study never writes through a link")
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        return folder

    def checkpoint_secret(self, *, create: bool = False) -> tuple[bytes, str]:
        """``(key, note)``: the study's checkpoint key (``study.experiment.checkpoint_key``), ``SECRET_NAME`` at its
        root. Local: a file of mode 0600, read without following a link; on object storage an object, whose readers
        are the bucket's. ``create`` (the driver, holding the lock, before any unit runs): made where missing, and
        replaced where it is not a key, ``note`` saying why; without it, such a key is ``SecretError``."""
        if self.local:
            return secret_at(self.path(SECRET_NAME), create=create)
        try:
            found: bytes | None = self.read_bytes(SECRET_NAME)
        except FileNotFoundError:
            found = None
        if found is not None and len(found) == SECRET_BYTES:
            return found, ""
        why = "no checkpoint key" if found is None else f"not a key: {len(found)} bytes, not {SECRET_BYTES}"
        if not create:
            raise SecretError(f"{self.location}/{SECRET_NAME}: {why}")
        secret = secrets.token_bytes(SECRET_BYTES)
        self.write_bytes([SECRET_NAME], secret)
        return secret, "" if found is None else f"{self.location}/{SECRET_NAME}: {why}: replaced by a new one"

    # -- the driver's heartbeat and lock ---------------------------------------------------------------
    def write_driver_state(self, state: Mapping[str, Any]) -> None:
        self.write_bytes([DRIVER_STATE], (json.dumps(dict(state), indent=1) + "\n").encode())

    def read_driver_state(self) -> dict | None:
        try:
            return json.loads(self.read_bytes(DRIVER_STATE))
        except (FileNotFoundError, ValueError):
            return None

    @contextlib.contextmanager
    def driver_lock(self):
        """Hold the study's driver lock: a second driver on the same study is refused. Local stores: ``flock`` on
        ``<study>/.lock``, released when the process ends, however it ends. ``s3://``: a lock object created only
        if absent, with an owner and a lease (``study.execution.object_lock``). Yields a line to tell the user, or None:
        a lock taken over from a driver that is gone, or that this object store has no lock (run one driver per
        study there)."""
        if not self.local:
            lock = object_lock(self.fs, self.root, self.location)
            if lock is None:
                yield (
                    f"{self.location}: no driver lock on this object store (s3:// with boto3 >= 1.35 has one): "
                    "run one driver per study"
                )
                return
            taken = lock.acquire()
            self._object_lock = lock
            try:
                yield taken
            finally:
                self._object_lock = None
                lock.release()
            return
        self.fs.create_dir(self.root, recursive=True)
        self.refuse_links()  # an untrusted study: a planted `checkpoints -> /elsewhere` would be written through
        try:  # O_NOFOLLOW: a `.lock -> /anywhere` planted since is refused too, never created or opened there
            fd = self._open_lock(os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
        except OSError as e:
            if e.errno == errno.ELOOP:
                self.refuse_links()
            raise
        try:
            for attempt in range(5):  # `archstudy status` holds a shared lock for a moment: let it pass
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if attempt == 4:
                        raise UserError(
                            f"{self.location}: another archstudy driver is running on this study "
                            "(see `archstudy status`)"
                        ) from None
                    time.sleep(0.1)
            self._held = fd
            yield None
        finally:
            self._held = None
            os.close(fd)

    def _open_lock(self, flags: int) -> int:
        """The local lock file opened without waiting (``O_NONBLOCK``: a FIFO planted at ``.lock`` waited forever
        for a writer); anything but a regular file there (a directory, a FIFO, a device) is one ``UserError``."""
        path = self.path(LOCK_NAME)
        try:
            fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
        except IsADirectoryError:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a directory opens read-only: refused just below
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, a device or a socket"
            raise UserError(
                f"{path}: the study's driver lock is {kind}, not a regular file; nothing was changed (move it away: "
                "the lock is made again when a driver starts)"
            )
        return fd

    def check_lock(self) -> None:
        """Refuse, before anything starts, a local study whose ``.lock`` is not a regular file (``_open_lock``)."""
        if self.local and os.path.lexists(self.path(LOCK_NAME)) and not os.path.islink(self.path(LOCK_NAME)):
            os.close(self._open_lock(os.O_RDONLY))

    def driver_running(self) -> bool | None:
        """Whether a driver holds the lock now (local stores); None where it cannot be known (object storage)."""
        if not self.local:
            return None
        try:
            fd = self._open_lock(os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
