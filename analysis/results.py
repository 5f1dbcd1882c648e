"""Reading a study from disk (docs/results.md): the architectures, runs and curves tables, typed, with the
schema version of every file checked, the failed architectures, and how far the study has come.

A study is a local directory or an object-storage prefix (``s3://``, ``gs://``: read through
``pyarrow.fs``). Only whole files are read: the runner writes each file under a temporary name and
renames it, so a name that is not ``<index>-<arch_id>.<ext>`` is a file in flight and is ignored. A compacted
study's packs (``<table>/pack-<seq>-<tag>.parquet``) are read by the rule of ``study.experiment.packs``: a unit's
rows come from the good pack of highest ``seq`` that holds it, else from its own files, so each row is read once,
during a compaction too.
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, cast

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from archstudy.sampling import BASE, ArchSpec, SpecError, UserError, config_yaml, plan_study
from archstudy.sampling.constraints import Integer, added_later, check, redact
from archstudy.sampling.spec import canonical_json, content_hash
from archstudy.sampling.unit_names import UNIT_STEM
from archstudy.study.experiment.config import StudyConfig, same_science
from archstudy.study.experiment.layout import CHECKPOINTS, FAILED
from archstudy.study.experiment.location import open_location
from archstudy.study.experiment.value_checks import planned_runs, value_problem
from archstudy.study.experiment.packs import MAX_READS, Pack, pack_path, read_packs, rows_of, sources
from archstudy.study.experiment.provenance import entries, merge
from archstudy.study.experiment.schema import (
    HIGH_BIAS,
    SCHEMA_KEY,
    RESULTS_SCHEMA_VERSIONS,
    SCIENCE_FINGERPRINT_KEY,
    SCIENCE_KEY,
    TABLE_KEY,
    TIMESTAMP_UNIT,
    columns,
    timestamps_as_text,
    unit_tables,
)

from .degenerate import without_degenerate
from .columns import (
    ARCHITECTURE_DTYPES,
    ARCHITECTURE_REQUIRED,
    CURVE_DTYPES,
    CURVE_REQUIRED,
    RUN_DTYPES,
    RUN_REQUIRED,
    SPEC_DTYPES,
)

_NAME = re.compile(rf"^{UNIT_STEM}\.(?P<ext>parquet|json|pt)$")


@dataclass(frozen=True)
class Results:
    """One study as read from disk.

    ``planned`` is the number of architectures the study will train: ``architectures`` of study.yaml,
    times one plus the siblings of each when siblings are on (re-sampled from the config, see
    ``planned_count``); ``None`` when it cannot be known yet, and ``planned_note`` says why. Finished
    architectures include those pruned at launch (``trained`` false, ``pruned``). ``curves`` holds the
    training curves when ``load_results`` was asked for them (else it is empty).
    """

    study_dir: str
    config: dict[str, Any]
    architectures: pd.DataFrame
    runs: pd.DataFrame
    failed: list[dict[str, Any]]
    in_progress: int
    planned: int | None
    planned_note: str = ""
    files: dict[str, int] = field(default_factory=dict)
    # result files left out of both tables ("architectures/<name>" -> why): computed under another science
    # config than study.yaml's (or recording none), or an index beyond the study's architectures
    excluded: dict[str, str] = field(default_factory=dict)
    # result files that cannot be read whole ("runs/<name>" -> what is wrong): truncated or not Parquet, left out of
    # every table as `archstudy status` reports them and a resume redoes them
    corrupt: dict[str, str] = field(default_factory=dict)
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)
    # who computed the rows (``study.experiment.provenance``, from the architectures files' metadata): each distinct
    # record and the architectures it computed; files of a version before the record count in none
    provenance: list[tuple[dict[str, Any], int]] = field(default_factory=list)

    @property
    def n_finished(self) -> int:
        return len(self.architectures)

    @property
    def trained(self) -> pd.DataFrame:
        """The finished architectures that were trained (all but those pruned at launch)."""
        return self.architectures[_trained(self.architectures)]

    @property
    def pruned(self) -> pd.DataFrame:
        """The architectures pruned at launch: measured at initialization, not trained (``nlc_window``)."""
        return self.architectures[~_trained(self.architectures)]

    @property
    def n_failed(self) -> int:
        return len(self.failed)

    @property
    def complete(self) -> bool:
        """finished + failed == planned."""
        return self.planned is not None and self.n_finished + self.n_failed == self.planned

    @property
    def dataset(self) -> str:
        ds = self.config.get("dataset")
        if isinstance(ds, str) and ds:
            return ds
        if len(self.architectures) and self.architectures["dataset"].notna().any():
            return str(self.architectures["dataset"].dropna().iloc[0])
        return "unknown"


def _trained(arch: pd.DataFrame) -> pd.Series:
    """Whether each architecture was trained: its ``trained`` value, true where a row has none (every
    architecture was trained before pruning at launch existed)."""
    if "trained" not in arch.columns:
        return pd.Series(True, index=arch.index, dtype=bool)
    return arch["trained"].astype("boolean").fillna(True).astype(bool)


# -- reading files -----------------------------------------------------------------------------------


def study_filesystem(study_dir: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str, str]:
    """(filesystem, root path within it, the name to show the user)."""
    text = str(study_dir)
    if "://" in text:
        try:  # as every command opens it: object storage with bounded waits (study.experiment.location)
            fs, root = open_location(text)
        except UserError as e:
            raise SpecError("load_results", "study_dir", redact(text), f"cannot be opened: {e}") from None
        return fs, root.rstrip("/"), text
    return pafs.LocalFileSystem(), os.path.abspath(text), text


def local_root(study_dir: str | os.PathLike[str]) -> str | None:
    """The study's absolute local path (a plain path or a file:// URI), None on object storage."""
    fs, root, _ = study_filesystem(study_dir)
    return root if isinstance(fs, pafs.LocalFileSystem) else None


def _list(fs: pafs.FileSystem, root: str, sub: str, ext: str) -> list[tuple[str, re.Match[str]]]:
    """Whole files ``<root>/<sub>/<index>-<arch_id>.<ext>``, sorted by name (so by index)."""
    infos = fs.get_file_info(pafs.FileSelector(f"{root}/{sub}", allow_not_found=True))
    out = []
    for info in infos:
        m = _NAME.match(info.base_name)
        if info.type == pafs.FileType.File and m and m["ext"] == ext:
            out.append((info.path, m))
    return sorted(out, key=lambda t: t[0])


def _read_text(fs: pafs.FileSystem, path: str) -> str:
    with fs.open_input_stream(path) as f:
        text: str = f.read().decode("utf-8")
        return text


def read_config(fs: pafs.FileSystem, root: str, shown: str) -> dict[str, Any]:
    info = fs.get_file_info(f"{root}/study.yaml")
    if info.type != pafs.FileType.File:
        raise SpecError("load_results", "study_dir", shown, "must be a study directory (it has no study.yaml)")
    with fs.open_input_stream(info.path) as f:
        text = f.read(config_yaml.MAX_BYTES + 1)
    config = config_yaml.parse(text, "load_results", "study.yaml", f"{shown}/study.yaml")
    if not isinstance(config, dict):
        raise SpecError(f"{shown}/study.yaml", "(file)", type(config).__name__, "must be a mapping of keys to values")
    return config


def config_fingerprint(config: dict[str, Any]) -> str | None:
    """study.yaml's science fingerprint (``StudyConfig.science_fingerprint``), None where this version cannot read
    the config as a whole: computed once per table, not once per file (it validates the whole config)."""
    try:
        return StudyConfig.from_dict(config).science_fingerprint
    except (UserError, TypeError, ValueError):
        return None


def not_of_config(
    metadata: dict[bytes, bytes] | None, config: dict[str, Any], fingerprint: str | None = None
) -> str | None:
    """Why a result file is not one of the study described by ``config`` (study.yaml), or None when it is: the
    science config a file records (``archstudy.science`` and its fingerprint) must be study.yaml's, as
    ``study.experiment.config.same_science`` reads them (a file of a version that recorded none is the study's own).
    ``fingerprint``: study.yaml's (``config_fingerprint``), when the caller has it already."""
    meta = metadata or {}
    raw_fp, raw_text = meta.get(SCIENCE_FINGERPRINT_KEY.encode()), meta.get(SCIENCE_KEY.encode())
    fp = None if raw_fp is None else raw_fp.decode(errors="replace")
    text = None if raw_text is None else raw_text.decode(errors="replace")
    mine = fingerprint if fingerprint is not None else config_fingerprint(config)
    if mine is None:
        # a study.yaml this version cannot read as a whole: its values of the recorded keys, as they are
        try:
            recorded = json.loads(text) if text is not None else None
        except ValueError:
            recorded = None
        if not isinstance(recorded, dict):
            return None if fp is None and text is None else "it records no readable science config"
        mine = content_hash(canonical_json({k: config.get(k) for k in recorded}))
    if not same_science(fp, text, mine):
        return "computed under another science config than study.yaml's"
    return None


class CorruptFile(SpecError):
    """A result file that is not a whole archstudy file of its table (truncated, not Parquet, another table): a
    study is read without it and says so (``Results.corrupt``), as ``archstudy status`` and a resume treat it;
    ``problem`` says what is wrong in a few words."""

    def __init__(self, where: str, field: str, value: Any, allowed: str, problem: str):
        super().__init__(where, field, value, allowed)
        self.problem = problem


def read_parquet_checked(fs: pafs.FileSystem, path: str, table: str, shown: str, runs: int | None = None) -> pa.Table:
    """One Parquet file, after checking its key-value metadata: ``archstudy.schema_version`` must be
    a version this package reads (``RESULTS_SCHEMA_VERSIONS``) and ``archstudy.table`` the table its directory
    holds. The metadata is kept (``_read_table`` drops it after reading the science config from it); the timestamps of a
    version 1 file (ISO 8601 text) are read as the timestamps later versions store. Its values must be those the
    science allows (``study.experiment.value_checks``; ``runs``: the runs the study's protocol plans), else it is a
    ``CorruptFile``, as ``archstudy status`` finds it."""
    try:
        with fs.open_input_file(path) as f:
            t = pq.ParquetFile(f).read(use_threads=False)  # files are read in parallel instead
    except FileNotFoundError:
        raise  # deleted since it was listed: a compaction packed it (``_read_table`` lists again)
    except (pa.ArrowInvalid, OSError) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise CorruptFile(
            shown, "(file)", "...", f"must be a readable Parquet file ({first})", f"not readable Parquet ({first})"
        ) from None
    meta = t.schema.metadata or {}
    version = meta.get(SCHEMA_KEY.encode())
    version = None if version is None else version.decode()
    if version not in RESULTS_SCHEMA_VERSIONS:
        raise SpecError(
            shown,
            SCHEMA_KEY,
            version,
            f"must be one of {', '.join(map(repr, RESULTS_SCHEMA_VERSIONS))} (the "
            "results layouts this archstudy reads, docs/results.md)",
        )
    kind = meta.get(TABLE_KEY.encode())
    kind = None if kind is None else kind.decode()
    if kind != table:
        raise CorruptFile(
            shown,
            TABLE_KEY,
            kind,
            f"must be {table!r} for a file under {table}/",
            f"not an archstudy {table} file ({TABLE_KEY} {kind!r})",
        )
    t = t.drop_columns([c for c in t.column_names if c.startswith("__index_level_")])
    if timestamps_as_text(version):
        for name in (c.name for c in columns(table) if c.type == "timestamp"):
            if name in t.column_names and pa.types.is_string(t.schema.field(name).type):
                try:
                    t = t.set_column(
                        t.column_names.index(name), name, t.column(name).cast(pa.timestamp(TIMESTAMP_UNIT, tz="UTC"))
                    )
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    pass  # not ISO 8601: ``typed`` names the column and the problem
    forbidden = value_problem(t, table, runs)
    if forbidden is not None:
        raise CorruptFile(shown, "(values)", "...", "must hold values the science allows (docs/results.md)", forbidden)
    return t


def _read_table(
    fs: pafs.FileSystem,
    root: str,
    shown: str,
    table: str,
    config: dict[str, Any],
    excluded: dict[str, str],
    arch_ids: set[str] | None = None,
    corrupt: dict[str, str] | None = None,
    required: dict[str, tuple[str, ...]] | None = None,
    records: list[list[tuple[dict[str, Any], int]]] | None = None,
) -> tuple[pd.DataFrame, int]:
    """The rows of ``<root>/<table>`` (only the architectures ``arch_ids`` when given) that belong to the study
    ``config`` describes, each unit's once: from the good pack that holds it, else from its own file
    (``study.experiment.packs``); the files (or a pack's units) that do not belong are added to ``excluded``
    (name -> why), those that cannot be read whole (``CorruptFile``, a pack that is not whole) to ``corrupt``
    (name -> problem), and left out. A file deleted between its listing and its read was packed by a compaction
    meanwhile: the table is listed and read again (at most ``MAX_READS`` times). ``required`` (architectures): filled
    with the tables each unit read from its own file has besides it (``schema.unit_tables``). ``records``: where
    given, the provenance pairs of every file and pack read are added to it
    (``study.experiment.provenance.entries``)."""
    for attempt in range(MAX_READS):
        found_excluded: dict[str, str] = {}
        found_corrupt: dict[str, str] = {}
        found_required: dict[str, tuple[str, ...]] = {}
        found_records: list[list[tuple[dict[str, Any], int]]] = []
        try:
            out = _read_table_once(
                fs, root, shown, table, config, found_excluded, arch_ids, found_corrupt, found_records, found_required
            )
        except FileNotFoundError:
            if attempt == MAX_READS - 1:
                raise
            continue
        excluded.update(found_excluded)
        if corrupt is not None:
            corrupt.update(found_corrupt)
        if required is not None:
            required.update(found_required)
        if records is not None:
            records.extend(found_records)
        return out
    raise AssertionError("unreachable")  # pragma: no cover


def _pack_rows(
    fs: pafs.FileSystem, root: str, table: str, pack: Pack, winners: dict[str, str], arch_ids: set[str] | None
) -> pa.Table:
    """The rows of ``pack``'s ``table`` read from it (``rows_of``), only those of ``arch_ids`` when given (row
    groups of other indices are skipped)."""
    if table == "architectures":
        assert pack.architectures is not None  # a good pack's
        t = pack.architectures
        if arch_ids is not None:
            t = t.filter(pc.is_in(t.column("arch_id"), pa.array(sorted(arch_ids), pa.string())))
    else:
        with fs.open_input_file(pack_path(root, table, pack.stem)) as f:
            if arch_ids is None:
                t = pq.ParquetFile(f).read()
            else:
                names = [n for n in pack.names if n.split("-", 1)[1] in arch_ids]
                indices = sorted({int(n.split("-", 1)[0]) for n in names})
                t = pq.read_table(
                    f,
                    filters=(pc.field("index").isin(indices)) & (pc.field("arch_id").isin(sorted(arch_ids))),
                )
    return rows_of(t, pack, winners)


def _read_table_once(
    fs: pafs.FileSystem,
    root: str,
    shown: str,
    table: str,
    config: dict[str, Any],
    excluded: dict[str, str],
    arch_ids: set[str] | None,
    corrupt: dict[str, str],
    records: list[list[tuple[dict[str, Any], int]]],
    required: dict[str, tuple[str, ...]] | None = None,
) -> tuple[pd.DataFrame, int]:
    files = _list(fs, root, table, "parquet")  # the units' own files, listed before the packs
    packs = read_packs(fs, root)
    winners = sources(packs)
    files = [(p, m) for p, m in files if m.group(0)[: -len(".parquet")] not in winners]
    if arch_ids is not None:
        files = [(p, m) for p, m in files if m["arch_id"] in arch_ids]
    for pack in packs:
        if not pack.ok and table == "architectures":
            corrupt[f"{table}/{pack.stem}.parquet"] = f"pack not whole: {pack.problem}"

    runs = planned_runs(config.get("protocol"), config.get("lr_window"))

    # One small file per architecture: the per-file overhead dominates, so read several at once.
    def read(pm: tuple[str, re.Match[str]]) -> pa.Table | CorruptFile:
        try:
            return read_parquet_checked(fs, pm[0], table, f"{shown}/{table}/{pm[1].group(0)}", runs)
        except CorruptFile as e:
            return e

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        read_files = list(pool.map(read, files))
    count = config.get("architectures")
    chosen = config.get("indices")  # a study of chosen draws (``archstudy rank``'s top K): the first ``count``
    drawn = set(chosen[:count]) if isinstance(chosen, list) and isinstance(count, int) else None
    mine = config_fingerprint(config)

    def beyond(index: int) -> str | None:
        if drawn is not None and index not in drawn:
            return f"index {index} is not among the study's {count} chosen draws (indices)"
        if drawn is None and isinstance(count, int) and index >= count:
            return f"index {index} is beyond the study's {count} architectures"
        return None

    tables = []
    for (_, m), t in zip(files, read_files):
        if isinstance(t, CorruptFile):  # left out, and said (a resume redoes it)
            corrupt[f"{table}/{m.group(0)}"] = t.problem
            continue
        why = not_of_config(t.schema.metadata, config, mine) or beyond(int(m["index"]))
        if why is not None:
            excluded[f"{table}/{m.group(0)}"] = why
            continue
        if table == "architectures" and required is not None:  # the tables its unit has besides it
            trained = bool(t.column("trained")[0].as_py()) if "trained" in t.column_names else True
            needs = unit_tables(t.schema.metadata or {}, t.column_names, trained)
            required[m.group(0)[: -len(".parquet")]] = needs if isinstance(needs, tuple) else ("runs",)
        records.append(entries(t.schema.metadata))
        # pandas' own metadata would turn columns into an index; the contract has none.
        tables.append(t.replace_schema_metadata(None))
    n_files = len(tables)
    for pack in packs:
        if not pack.ok or (table != "architectures" and table not in pack.tables):
            continue
        why = not_of_config(dict(pack.metadata), config, mine)
        if why is not None:
            excluded[f"{table}/{pack.stem}.parquet"] = why
            continue
        t = _pack_rows(fs, root, table, pack, winners, arch_ids)
        records.append(entries(pack.metadata))
        out = sorted({i for i in t.column("index").to_pylist() if beyond(i) is not None}) if t.num_rows else []
        if out:  # rows of indices beyond the study's (a study whose config shrank): left out, per unit
            for name in pack.names:
                index = int(name.split("-", 1)[0])
                if index in set(out):
                    excluded[f"{table}/{pack.stem}.parquet:{name}"] = cast(str, beyond(index))
            t = t.filter(pc.invert(pc.is_in(t.column("index"), pa.array(out, pa.int64()))))
        tables.append(t.replace_schema_metadata(None))
        n_files += 1
    if not tables:
        return pd.DataFrame(), 0
    try:
        joined = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SpecError(
            f"{shown}/{table}",
            "(columns)",
            "...",
            f"must have one type per column across files ({str(e).splitlines()[0]})",
        ) from None
    # One chunk per column, not one per file: pandas keeps a string column as the Arrow chunks it was given, and
    # every row selection of a 1,000-chunk column costs a millisecond (most of a report's statistics went there).
    return joined.combine_chunks().to_pandas(), n_files


def _check_curves(fs: pafs.FileSystem, root: str, shown: str, config: dict[str, Any], corrupt: dict[str, str]) -> None:
    """Each unit's own curves file read and checked (``read_parquet_checked``), those that break a rule added to
    ``corrupt``; the rows are not kept (``read_curves`` reads the ones an analysis draws)."""
    winners = sources(read_packs(fs, root))
    files = [(p, m) for p, m in _list(fs, root, "curves", "parquet") if m.group(0)[: -len(".parquet")] not in winners]
    runs = planned_runs(config.get("protocol"), config.get("lr_window"))

    def check(pm: tuple[str, re.Match[str]]) -> str | None:
        try:
            read_parquet_checked(fs, pm[0], "curves", f"{shown}/curves/{pm[1].group(0)}", runs)
        except CorruptFile as e:
            return e.problem
        except FileNotFoundError:  # packed since it was listed
            return None
        return None

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for (_, m), problem in zip(files, pool.map(check, files)):
            if problem is not None:
                corrupt[f"curves/{m.group(0)}"] = problem


def _whole_units(
    fs: pafs.FileSystem,
    root: str,
    arch: pd.DataFrame,
    runs: pd.DataFrame,
    required: dict[str, tuple[str, ...]],
    corrupt: dict[str, str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``arch`` and ``runs`` without the units whose own architectures file requires a table file (``required``) that
    is missing, or whose runs or curves file is corrupt: such a unit is not finished (``archstudy status`` says corrupt,
    a resume redoes it), so it is left out and said in ``corrupt``, as its file is. Each table's files are listed (one
    listing); their contents were judged where they were read (``corrupt``)."""
    listed = {
        table: {m.group(0)[: -len(".parquet")] for _, m in _list(fs, root, table, "parquet")}
        for table in {t for tables in required.values() for t in tables}
    }
    gone: dict[str, str] = {}
    for name, tables in required.items():
        for table in ("runs", "curves"):  # a curves file it does not require must be whole where it is there
            bad = corrupt.get(f"{table}/{name}.parquet")
            if bad is None and (table not in tables or name in listed[table]):
                continue
            gone[name] = f"its {table} file is " + (f"corrupt ({bad})" if bad is not None else "missing")
            break
    if not gone:
        return arch, runs
    for name, why in gone.items():
        corrupt[f"architectures/{name}.parquet"] = why
    ids = {name.split("-", 1)[1] for name in gone}
    keep = ~arch["arch_id"].astype(str).isin(ids) if len(arch) else slice(None)
    arch = arch[keep].reset_index(drop=True)
    if len(runs):
        runs = runs[~runs["arch_id"].astype(str).isin(ids)].reset_index(drop=True)
    return arch, runs


# -- typing --------------------------------------------------------------------------------------------


def _empty(dtype: str, n: int) -> pd.Series:
    kind = {"int64": "Int64", "bool": "boolean"}.get(dtype, dtype)
    if dtype == "str":
        return pd.Series([None] * n, dtype="str")
    return pd.Series(pd.array([pd.NA] * n, dtype=kind) if kind in ("Int64", "boolean") else [None] * n, dtype=kind)


def _typed_column(s: pd.Series, dtype: str, where: str, name: str) -> pd.Series:
    try:
        if dtype == "float64":
            return pd.to_numeric(s, errors="raise").astype("float64")
        if dtype == "int64":
            v = pd.to_numeric(s, errors="raise")
            if v.isna().any():
                return v.astype("Int64")
            if (v.astype("float64") % 1 != 0).any():
                raise ValueError("non-integer values")
            return v.astype("int64")
        if dtype == "bool":
            if s.isna().any():
                return s.astype("boolean")
            if not pd.api.types.is_bool_dtype(s):
                if not s.isin([0, 1, True, False]).all():
                    raise ValueError("non-boolean values")
            return s.astype("bool")
        if dtype == "str":
            return s.astype("str")
        if dtype.startswith("datetime64"):
            return pd.to_datetime(s, utc=True, format="ISO8601")
    except (ValueError, TypeError) as e:
        raise SpecError(where, name, str(s.dtype), f"must hold {dtype} values (docs/results.md): {e}") from None
    raise AssertionError(dtype)  # pragma: no cover - the dtype tables hold only the kinds above


def typed(df: pd.DataFrame, dtypes: dict[str, str], required: tuple[str, ...], where: str) -> pd.DataFrame:
    """The table with every contract column present and of its declared type.

    A required column missing is an error; any other missing column is added empty (NaN / NA), so an
    analysis of a column some runner did not write shows "not measured" instead of failing. Columns
    beyond the contract are kept as they are (the runner's columns may grow)."""
    n = len(df)
    for name in required:
        if n and name not in df.columns:
            raise SpecError(where, name, None, "is a required column (docs/results.md)")
    out = {}
    for name, dtype in dtypes.items():
        out[name] = _typed_column(df[name], dtype, where, name) if name in df.columns else _empty(dtype, n)
    extra = {c: df[c] for c in df.columns if c not in dtypes}
    return pd.DataFrame({**out, **extra}, index=pd.RangeIndex(n))


def _fill_derived(arch: pd.DataFrame, config: dict[str, Any]) -> pd.DataFrame:
    """Fill what the contract defines from other columns when a file lacks it: also the columns added after
    the first files of the schema (``study.experiment.schema.ADDED_COLUMNS``), with what every older row was: a spec
    field's default, the protocol's monitored split as the split that selected the run, and one initialization (the
    study's ``init_seeds`` before it existed) whose mean test error is the row's."""
    if arch["variant"].isna().any():
        arch["variant"] = arch["variant"].fillna("base")
    for f in fields(ArchSpec):
        if added_later(f) and arch[f.name].isna().any():
            arch[f.name] = arch[f.name].fillna(f.default).astype(SPEC_DTYPES[f.name])
    if arch["trained"].isna().any():  # every architecture was trained before pruning at launch existed
        arch["trained"] = arch["trained"].fillna(True).astype("bool")
    protocol = config.get("protocol")
    monitor = protocol.get("monitor", "val") if isinstance(protocol, dict) else "val"
    if arch["selected_by"].isna().any() and monitor in ("val", "train"):
        arch["selected_by"] = arch["selected_by"].fillna(monitor)
    ds = config.get("dataset")
    if isinstance(ds, str) and arch["dataset"].isna().any():
        arch["dataset"] = arch["dataset"].fillna(ds)
    if arch["inits"].isna().any():  # one initialization before init_seeds existed: its spread is the row's own
        arch["inits"] = arch["inits"].fillna(arch["trained"].astype("int64")).astype("int64")
        arch["test_error_mean"] = arch["test_error_mean"].fillna(arch["test_error"])
    if arch["high_bias"].isna().any():
        derived = (arch["bias"] > HIGH_BIAS).where(arch["bias"].notna())
        arch["high_bias"] = arch["high_bias"].fillna(derived.astype("boolean"))
        if not arch["high_bias"].isna().any():
            arch["high_bias"] = arch["high_bias"].astype("bool")
    return arch


# -- planned count ---------------------------------------------------------------------------------------


def sibling_axes(value: Any) -> tuple[str, ...] | None:
    """The sibling axes a study's ``siblings`` setting turns on, read as ``StudyConfig`` reads it (``true`` =
    all, ``false``/absent = none, a list or one name = those), plus a mapping ``{axes: [...]}`` or
    ``{enabled: ...}``. ``None`` when the setting is unreadable."""
    if isinstance(value, dict):
        if "axes" in value:
            return sibling_axes(value["axes"])
        if "enabled" in value:
            return sibling_axes(bool(value["enabled"]))
        return None
    try:
        axes: tuple[str, ...] = StudyConfig.normalize("siblings", value)
        return axes
    except SpecError:
        return None


def planned_count(config: dict[str, Any], architectures: pd.DataFrame) -> tuple[int | None, str]:
    """(planned number of architectures, how it was found).

    Without siblings it is ``architectures`` of study.yaml. With siblings, the number of siblings of
    each drawn architecture varies (a variant that would be invalid is left out by ``sampling.siblings``),
    so the study's plan is re-drawn from the config exactly as the runner draws it (``sampling.plan_study``;
    a key study.yaml lacks means ``StudyConfig``'s declared default) and counted. The re-drawn content ids
    must contain every finished base draw's, else the config does not describe what ran and the count is
    unknown."""
    try:
        n = check("study.yaml", "architectures", Integer(0), config.get("architectures"))
    except SpecError as e:
        return None, str(e)
    axes = sibling_axes(config.get("siblings"))
    if axes is None:
        return None, f"study.yaml.siblings = {config.get('siblings')!r} is not a setting this analysis reads"
    if not axes:
        return n, "architectures in study.yaml (no siblings)"
    dims = {}
    for key in ("d_in", "d_out"):
        if config.get(key) is not None:
            dims[key] = config[key]
        elif len(architectures) and architectures[key].notna().any():
            dims[key] = int(architectures[key].dropna().iloc[0])
        else:
            return None, (
                "unknown until an architecture finishes (siblings are on, and the input and output sizes come from it)"
            )
    # The stored space (a study is self-describing even when presets change), else the preset's name.
    space = config.get("space") or config.get("preset", StudyConfig.default("preset"))
    try:
        ids: set[str] = set()
        total = 0
        for planned in plan_study(
            config.get("seed", StudyConfig.default("seed")),
            n,
            dims["d_in"],
            dims["d_out"],
            space,
            config.get("param_budget", StudyConfig.default("param_budget")),
            axes,
            indices=config.get("indices"),
        ):
            total += 1
            if planned.variant == BASE:
                ids.add(planned.spec.content_id)
    except (UserError, TypeError, ValueError) as e:
        return None, f"the config cannot be re-sampled ({e})"
    base = architectures[architectures["variant"] == BASE] if len(architectures) else architectures
    if len(base):
        missing = set(base["arch_id"].astype(str)) - ids
        if missing:
            return None, (
                f"{len(missing)} finished base architecture(s) are not among those re-sampled from "
                "study.yaml, so the planned count is unknown"
            )
    return total, f"architectures in study.yaml with their siblings along {', '.join(axes)}"


# -- the entry point ----------------------------------------------------------------------------------


def load_results(
    study_dir: str | os.PathLike[str], *, runs: bool = True, curves: bool | Iterable[str] = False
) -> Results:
    """Read a study: ``study.yaml``, ``architectures/*.parquet``, ``runs/*.parquet``, ``failed/*.json``
    and the count of ``checkpoints/*.pt`` (architectures in progress), per docs/results.md; with ``curves``
    also ``curves/*.parquet`` (True: every architecture's; a collection of arch_ids: only theirs, a few
    files of what may be the largest table).

    Every Parquet file's key-value metadata must name a schema version this archstudy reads (``"1"`` or ``"2"``:
    ``study.experiment.schema.RESULTS_SCHEMA_VERSIONS``), else a one-line ``sampling.UserError``. A file that cannot be
    read whole (truncated, not Parquet, of another table) is left out and listed in ``Results.corrupt``, as
    ``archstudy status`` lists it and a resume redoes it. A file whose rows were computed under another
    science config than study.yaml's (its ``archstudy.science`` metadata), or that records none, is left
    out of every table and listed in ``Results.excluded`` (a study holds one science config; ``archstudy
    status`` reports such files and a resume refuses to run beside them). Columns are typed as the contract says.
    ``runs=False`` skips the per-run table (``Results.runs`` is then empty).
    """
    fs, root, shown = study_filesystem(study_dir)
    info = fs.get_file_info(root)
    if info.type != pafs.FileType.Directory:
        raise SpecError("load_results", "study_dir", shown, "must be an existing study directory")
    config = read_config(fs, root, shown)

    excluded: dict[str, str] = {}
    corrupt: dict[str, str] = {}
    required: dict[str, tuple[str, ...]] = {}
    records: list[list[tuple[dict[str, Any], int]]] = []
    raw_arch, n_arch_files = _read_table(
        fs, root, shown, "architectures", config, excluded, corrupt=corrupt, required=required, records=records
    )
    raw_runs, n_run_files = (
        _read_table(fs, root, shown, "runs", config, excluded, corrupt=corrupt) if runs else (pd.DataFrame(), 0)
    )
    if runs:  # the curves files too, as `archstudy status` checks them (read and checked, not kept)
        _check_curves(fs, root, shown, config, corrupt)
    raw_arch, raw_runs = _whole_units(fs, root, raw_arch, raw_runs, required, corrupt)
    arch = typed(raw_arch, ARCHITECTURE_DTYPES, ARCHITECTURE_REQUIRED, f"{shown}/architectures")
    arch = _fill_derived(arch, config)
    run_table = typed(raw_runs, RUN_DTYPES, RUN_REQUIRED, f"{shown}/runs")
    if run_table["init_index"].isna().any():  # a runs file from before init_seeds: the one initialization
        run_table["init_index"] = run_table["init_index"].fillna(0).astype("int64")
    curve_table = (
        read_curves(study_dir, None if curves is True else curves)
        if curves is not False
        else typed(pd.DataFrame(), CURVE_DTYPES, CURVE_REQUIRED, f"{shown}/curves")
    )
    arch = arch.sort_values(["index", "variant", "arch_id"], kind="stable").reset_index(drop=True)
    order = ["index", "arch_id", "init_index", "lr_index"]
    run_table = run_table.sort_values(order, kind="stable").reset_index(drop=True)

    finished = set(arch["arch_id"].astype(str))
    failed = []
    for path, m in _list(fs, root, FAILED, "json"):
        if m["arch_id"] in finished:
            continue  # failed once, then finished on a resume
        try:
            payload = json.loads(_read_text(fs, path))
        except json.JSONDecodeError:
            payload = {"reason": "unreadable failure record"}
        if not isinstance(payload, dict):
            payload = {"reason": str(payload)}
        failed.append({"index": int(m["index"]), "arch_id": m["arch_id"], **payload})
    in_progress = sum(1 for _, m in _list(fs, root, CHECKPOINTS, "pt") if m["arch_id"] not in finished)

    planned, note = planned_count(config, arch)
    return Results(
        study_dir=shown,
        config=config,
        architectures=arch,
        runs=run_table,
        failed=failed,
        in_progress=in_progress,
        planned=planned,
        planned_note=note,
        files={"architectures": n_arch_files, "runs": n_run_files},
        excluded=excluded,
        curves=curve_table,
        corrupt=corrupt,
        provenance=merge(records),
    )


def read_curves(study_dir: str | os.PathLike[str], arch_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """The ``curves`` table of a study (docs/results.md), typed, sorted by architecture, run and epoch; only the
    files of ``arch_ids`` when given. Architectures without a curves file (finished before curves were recorded,
    or pruned at launch) have no rows."""
    fs, root, shown = study_filesystem(study_dir)
    ids = None if arch_ids is None else {str(a) for a in arch_ids}
    raw = pd.DataFrame()
    # Read (and ask for the study's config) only where some curves can be: a unit's own file of ``ids``, or a pack.
    own = any(ids is None or m["arch_id"] in ids for _, m in _list(fs, root, "curves", "parquet"))
    if (ids is None or ids) and (own or read_packs(fs, root)):
        excluded: dict[str, str] = {}  # curves of another science config: left out, as load_results does
        raw, _ = _read_table(fs, root, shown, "curves", read_config(fs, root, shown), excluded, ids)
    out = typed(raw, CURVE_DTYPES, CURVE_REQUIRED, f"{shown}/curves")
    return out.sort_values(["index", "arch_id", "lr_index", "epoch"], kind="stable").reset_index(drop=True)


def architectures_table(table: object, where: str) -> pd.DataFrame:
    """The architectures DataFrame of ``table``: a ``Results`` (``load_results``) or the DataFrame itself,
    so ``correlations(load_results(d))`` works as ``correlations(load_results(d).architectures)``; its degenerate
    measures (``analysis.degenerate``: no signal back through the net, overflow, 0 on a log axis) as NaN, so that
    every fit that reads a table through here leaves them out."""
    if isinstance(table, Results):
        return without_degenerate(table.architectures)
    if isinstance(table, pd.DataFrame):
        return without_degenerate(table)
    raise SpecError(where, "df", type(table).__name__, "must be a pandas DataFrame or an analysis.Results")
