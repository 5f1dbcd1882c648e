"""The Parquet store: exact schema, whole-or-nothing writes, validation of truncated/foreign files, listing,
the object-storage path (pyarrow's in-memory filesystem), file:// URIs, the driver lock; a write that fails names
its file and why, a study directory removed under its driver is never made again, a link inside a study is never
written through."""

import datetime as dt
import errno
import json
import math
import os
import pickle
import re
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from schema_values import value
from pyarrow._fs import _MockFileSystem

from archstudy.sampling import SPEC_FIELDS, UserError, sample_spec
from archstudy.study.execution.store import (
    ARCHITECTURES,
    ARCHITECTURES_SCHEMA,
    CURVES,
    RUNS,
    RUNS_SCHEMA,
    SCHEMAS,
    SchemaError,
    Store,
    StoreWriteError,
    arrow_schema,
    check_table_bytes,
    parquet_bytes,
    to_table,
    unit_name,
)

SPEC = sample_spec(3, 7, 40, 3, "extended", 4000)
NAME = unit_name(7, SPEC.content_id)


class _Proxy:
    """A filesystem that forwards everything to ``real`` except the methods given."""

    def __init__(self, real, **overrides):
        self._real = real
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self._real, name)


def rows(index=7, spec=SPEC, n_runs=3):
    """An architectures row and its runs rows, every column set (storage tests: the values are arbitrary)."""
    arch = {f.name: value(f, i) for i, f in enumerate(ARCHITECTURES_SCHEMA)}
    arch.update(spec.to_dict(), arch_id=spec.content_id, index=index, variant="base", nlc=math.nan, trained=True)
    runs = [
        {
            **{f.name: value(f, k) for f in RUNS_SCHEMA},
            "arch_id": spec.content_id,
            "index": index,
            "lr_index": k,
            "selected": k == 1,
        }
        for k in range(n_runs)
    ]
    return arch, runs


def test_a_written_result_reads_back_exactly_with_the_schema_and_its_metadata(tmp_path):
    store = Store(tmp_path / "s")
    arch, runs = rows()
    store.write_result(NAME, arch, runs)
    assert store.names(ARCHITECTURES, ".parquet") == [NAME] == store.names(RUNS, ".parquet")
    assert store.check_file(ARCHITECTURES, NAME).ok and store.check_file(RUNS, NAME).ok
    f = pq.ParquetFile(tmp_path / "s" / "architectures" / f"{NAME}.parquet")
    meta = f.schema_arrow.metadata
    assert meta[b"archstudy.schema_version"] == b"2" and meta[b"archstudy.table"] == b"architectures"
    df = pd.read_parquet(tmp_path / "s" / "architectures")
    assert len(df) == 1 and list(df.columns) == ARCHITECTURES_SCHEMA.names
    row = df.iloc[0]
    for k, v in arch.items():
        assert (math.isnan(row[k]) and math.isnan(v)) if isinstance(v, float) and math.isnan(v) else row[k] == v, k
    assert set(SPEC_FIELDS) <= set(df.columns)
    assert df["index"].dtype == "int64" and df["nlc"].dtype == "float64" and df["high_bias"].dtype == "bool"
    r = pd.read_parquet(tmp_path / "s" / "runs")
    assert list(r["lr_index"]) == [0, 1, 2] and r["selected"].sum() == 1


def test_rows_that_do_not_fit_the_schema_are_refused_before_anything_is_written(tmp_path):
    store = Store(tmp_path / "s")
    arch, runs = rows()
    with pytest.raises(SchemaError, match=r"missing columns \['nlc'\]"):
        store.write_result(NAME, {k: v for k, v in arch.items() if k != "nlc"}, runs)
    with pytest.raises(SchemaError, match=r"unknown columns \['colour'\]"):
        store.write_result(NAME, {**arch, "colour": 1.0}, runs)
    with pytest.raises(SchemaError, match="'depth' = 2.5: not an integer"):
        to_table(ARCHITECTURES, [{**arch, "depth": 2.5}])
    with pytest.raises(SchemaError, match="'lr_index' is None"):
        store.write_result(NAME, arch, [{**runs[0], "lr_index": None}])
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").rglob("*.parquet"))
    # None in a float column is NaN ("NaN where not computed").
    t = to_table(ARCHITECTURES, [{**arch, "snip": None}])
    assert math.isnan(t.column("snip")[0].as_py())


def test_truncated_foreign_and_misnamed_files_are_found(tmp_path):
    store = Store(tmp_path / "s")
    arch, runs = rows()
    store.write_result(NAME, arch, runs)
    path = tmp_path / "s" / "architectures" / f"{NAME}.parquet"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    c = store.check_file(ARCHITECTURES, NAME)
    assert not c.ok and not c.foreign and c.problem.startswith("unreadable Parquet")
    assert store.check_file(ARCHITECTURES, unit_name(8, SPEC.content_id)).problem == "missing"
    # A readable file of another schema version is "foreign": reported, never treated as corrupt.
    table = to_table(ARCHITECTURES, [arch])
    other = table.replace_schema_metadata({b"archstudy.schema_version": b"9", b"archstudy.table": b"architectures"})
    c = check_table_bytes(parquet_bytes(other), ARCHITECTURES, NAME)
    assert not c.ok and c.foreign and "schema version '9'" in c.problem
    # Rows that name another architecture than the file.
    c = check_table_bytes(parquet_bytes(table), ARCHITECTURES, unit_name(8, SPEC.content_id))
    assert not c.ok and "not the file's" in c.problem
    c = check_table_bytes(parquet_bytes(to_table(RUNS, [{**r, "selected": True} for r in runs])), RUNS, NAME)
    assert not c.ok and c.problem == "values the science forbids: not exactly one selected run per initialization"
    # Two initializations (init_seeds: 2): one selected run each is whole, as the value checks say
    two = [{**r, "init_index": j, "selected": r["selected"]} for j in range(2) for r in runs]
    assert check_table_bytes(parquet_bytes(to_table(RUNS, two)), RUNS, NAME).ok
    c = check_table_bytes(parquet_bytes(pa.table({"a": [1]})), ARCHITECTURES, NAME)
    assert not c.ok and "not an archstudy architectures file" in c.problem


def test_an_interrupted_write_leaves_nothing_visible_and_a_stale_temp_file_is_hidden_then_removed(tmp_path):
    store = Store(tmp_path / "s")
    arch, runs = rows()
    calls = []

    def broken_move(src, dst):
        calls.append(src)
        raise OSError("disk gone")

    real = store.fs
    store.fs = _Proxy(real, move=broken_move)
    with pytest.raises(OSError, match="disk gone"):
        store.write_result(NAME, arch, runs)
    store.fs = real
    assert calls and os.path.basename(calls[0]).startswith(f".{NAME}.parquet.tmp-")
    assert not list((tmp_path / "s").rglob("*.parquet*"))  # the temporary file was removed, nothing else there
    # A driver killed between write and rename leaves a hidden temporary file: readers skip it.
    store.write_result(NAME, arch, runs)
    stale = tmp_path / "s" / "architectures" / f".{unit_name(9, SPEC.content_id)}.parquet.tmp-123-abcd"
    stale.write_bytes(b"PAR1 half a file")
    assert len(pd.read_parquet(tmp_path / "s" / "architectures")) == 1
    assert store.names(ARCHITECTURES, ".parquet") == [NAME]
    ckpt = tmp_path / "s" / "checkpoints" / f"{NAME}.pt.k2j4h1.tmp"  # a trainer killed while checkpointing
    ckpt.parent.mkdir()
    ckpt.write_bytes(b"half a checkpoint")
    assert store.temp_files() == sorted([str(stale), str(ckpt)])
    assert store.remove_temp_files() == sorted([str(stale), str(ckpt)]) and not stale.exists() and not ckpt.exists()


def test_object_storage_puts_each_file_whole_without_temporary_names():
    fs = _MockFileSystem()
    store = Store(filesystem=fs, root="bucket/study")
    assert not store.local
    arch, runs = rows()
    written = []

    def spy(path, *args, **kwargs):
        written.append(path)
        return fs.open_output_stream(path, *args, **kwargs)

    store.fs = _Proxy(fs, open_output_stream=spy)
    store.write_result(NAME, arch, runs)
    store.fs = fs
    assert written == [f"bucket/study/runs/{NAME}.parquet", f"bucket/study/architectures/{NAME}.parquet"]
    assert store.check_file(ARCHITECTURES, NAME).ok and store.check_file(RUNS, NAME).ok
    assert store.names(ARCHITECTURES, ".parquet") == [NAME] and store.temp_files() == []
    assert store.read_table(ARCHITECTURES)["arch_id"].tolist() == [SPEC.content_id]
    assert store.driver_running() is None  # no lock on object storage: the heartbeat decides
    with store.driver_lock():
        pass


def test_file_uri_goes_through_the_same_code(tmp_path):
    store = Store(f"file://{tmp_path}/u")
    assert store.local and store.root == f"{tmp_path}/u" and store.uri == f"file://{tmp_path}/u"
    arch, runs = rows()
    store.write_result(NAME, arch, runs)
    assert pd.read_parquet(tmp_path / "u" / "architectures")["index"].tolist() == [7]
    assert Store(tmp_path / "u").check_file(RUNS, NAME).ok
    with pytest.raises(UserError, match="study location 'nosuch://x'"):
        Store("nosuch://x")


def test_the_driver_lock_is_exclusive_and_released_with_its_holder(tmp_path):
    store = Store(tmp_path / "s")
    assert store.driver_running() is False
    with store.driver_lock():
        assert store.driver_running() is True
        with pytest.raises(UserError, match="another archstudy driver is running"):
            with Store(tmp_path / "s").driver_lock():
                pass
    assert store.driver_running() is False
    assert (tmp_path / "s" / ".lock").read_bytes() == b""  # the lock is the flock, the file stays empty


def test_each_result_file_records_its_science_config_and_a_file_of_another_is_found(tmp_path):
    from archstudy.study.experiment.config import StudyConfig, science_fingerprint, science_json

    config = StudyConfig(dataset="waveform-noise", architectures=3, seed=4).replace(
        d_in=40, d_out=3, data_fingerprint="00ff"
    )
    other = config.replace(seed=5)
    store = Store(tmp_path / "s")
    arch, runs = rows()
    store.write_result(NAME, arch, runs, science=config.science_json)
    for kind in (ARCHITECTURES, RUNS):
        meta = pq.read_schema(tmp_path / "s" / kind / f"{NAME}.parquet").metadata
        assert meta[b"archstudy.science_fingerprint"] == config.science_fingerprint.encode()
        assert meta[b"archstudy.science"].decode() == config.science_json
        assert json.loads(config.science_json)["seed"] == 4 and set(json.loads(config.science_json)) == set(
            config.science()
        )
        assert store.check_file(kind, NAME, config.science_fingerprint).ok
        c = store.check_file(kind, NAME, other.science_fingerprint)
        assert not c.ok and c.other_config and not c.foreign and c.science == json.loads(config.science_json)
        assert c.problem == (
            f"computed under another science config (science fingerprint {config.science_fingerprint}"
            f"; this study's is {other.science_fingerprint})"
        )
    assert config.replace(architectures=30).science_fingerprint == config.science_fingerprint  # it may grow
    assert (
        len(
            {
                config.replace(**change).science_fingerprint
                for change in (
                    {},
                    {"seed": 5},
                    {"param_budget": 7},
                    {"data_fingerprint": "00fe"},
                    {"protocol": "quick"},
                )
            }
        )
        == 5
    )
    # A file that records no science config was written by archstudy 0.1.0, under its study.yaml: the study's own.
    store.write_result(NAME, arch, runs)
    assert store.check_file(ARCHITECTURES, NAME, config.science_fingerprint).ok
    # A record without the keys a later version added (here the protocol's options beyond E.2, at their
    # defaults) is read as this version reads it: the same config, although its text and fingerprint differ.
    older = config.science()
    older["protocol"] = {
        k: v
        for k, v in older["protocol"].items()
        if k not in ("loss", "momentum", "schedule", "iterations", "step_at", "selection")
    }
    older_json = science_json(older)
    assert science_fingerprint(older_json) != config.science_fingerprint
    store.write_result(NAME, arch, runs, science=older_json)
    assert store.check_file(ARCHITECTURES, NAME, config.science_fingerprint).ok
    assert not store.check_file(ARCHITECTURES, NAME, other.science_fingerprint).ok


def test_unit_names_fit_the_patterns_for_every_index_a_study_allows():
    """``<index:06d>-<arch_id>``: the width, the driver's pattern and the analysis reader's pattern agree for
    every index a config allows (0 .. architectures - 1), and a config allows no index the width cannot hold."""
    from archstudy.analysis.results import _NAME as ANALYSIS_NAME
    from archstudy.sampling.constraints import SpecError
    from archstudy.study.experiment.config import StudyConfig
    from archstudy.study.execution.store import NAME_RE

    allowed = StudyConfig.__dataclass_fields__["architectures"].metadata["constraint"]
    assert allowed.hi is not None, "the architecture count must be bounded by what the names hold"
    for index in (0, 1, 99_999, allowed.hi - 1):
        name = unit_name(index, SPEC.content_id)
        m = NAME_RE.match(name)
        assert m and int(m.group(1)) == index and m.group(2) == SPEC.content_id, name
        a = ANALYSIS_NAME.match(f"{name}.parquet")
        assert a and int(a["index"]) == index and a["arch_id"] == SPEC.content_id, name
    StudyConfig(dataset="waveform-noise", architectures=allowed.hi)
    with pytest.raises(SpecError, match=rf"^study.architectures = {allowed.hi + 1}: must be an integer in \[1, "):
        StudyConfig(dataset="waveform-noise", architectures=allowed.hi + 1)


def version_1_file(arch: dict, finished_at: str) -> bytes:
    """The architectures file archstudy wrote under schema version 1: the timestamp as ISO 8601 UTC text."""
    t = to_table(ARCHITECTURES, [arch])
    i = t.column_names.index("finished_at")
    t = t.set_column(i, "finished_at", pa.array([finished_at], pa.string()))
    assert t.schema.equals(arrow_schema(ARCHITECTURES, "1"), check_metadata=False)
    return parquet_bytes(
        t.replace_schema_metadata({b"archstudy.schema_version": b"1", b"archstudy.table": b"architectures"})
    )


def test_timestamps_are_parquet_timestamps_and_version_1_files_with_text_ones_still_read(tmp_path):
    store = Store(tmp_path / "s")
    old_spec = sample_spec(3, 8, 40, 3, "extended", 4000)
    old_name = unit_name(8, old_spec.content_id)
    old_arch, old_runs = rows(8, old_spec)
    store.write_bytes([RUNS, f"{old_name}.parquet"], parquet_bytes(to_table(RUNS, old_runs)))
    store.write_bytes([ARCHITECTURES, f"{old_name}.parquet"], version_1_file(old_arch, "2025-06-30T23:59:58Z"))
    curves = [  # its writer (its file has the `trained` column) always wrote the curves too
        {**{f.name: value(f, k) for f in SCHEMAS[CURVES]}, "arch_id": old_spec.content_id, "index": 8, "lr_index": k}
        for k in range(3)
    ]
    store.write_bytes([CURVES, f"{old_name}.parquet"], parquet_bytes(to_table(CURVES, curves)))
    arch, runs = rows()
    store.write_result(NAME, {**arch, "finished_at": "2026-01-31T12:00:00Z"}, runs)  # ISO text is accepted
    new = pq.read_table(tmp_path / "s" / "architectures" / f"{NAME}.parquet")
    assert new.schema.field("finished_at").type == pa.timestamp("us", tz="UTC")
    assert new.column("finished_at")[0].as_py() == dt.datetime(2026, 1, 31, 12, tzinfo=dt.timezone.utc)
    # the version 1 file is valid and finished; a file that says version 2 but stores text is not
    assert store.check_file(ARCHITECTURES, old_name).ok and store.check_file(ARCHITECTURES, NAME).ok
    mislabelled = pq.read_table(pa.BufferReader(version_1_file(old_arch, "2025-06-30T23:59:58Z")))
    mislabelled = mislabelled.replace_schema_metadata(
        {**mislabelled.schema.metadata, b"archstudy.schema_version": b"2"}
    )
    assert (
        check_table_bytes(parquet_bytes(mislabelled), ARCHITECTURES, old_name).problem
        == "columns differ from the schema of docs/results.md"
    )
    # both read as the same instants, one type, whichever reader
    want = {
        7: dt.datetime(2026, 1, 31, 12, tzinfo=dt.timezone.utc),
        8: dt.datetime(2025, 6, 30, 23, 59, 58, tzinfo=dt.timezone.utc),
    }
    raw = store.read_table(ARCHITECTURES).set_index("index")["finished_at"]
    assert isinstance(raw.dtype, pd.DatetimeTZDtype) and raw.to_dict() == want
    (tmp_path / "s" / "study.yaml").write_text("dataset: waveform-noise\narchitectures: 9\nprotocol: {num_lrs: 3}\n")
    from archstudy.analysis import load_results

    loaded = load_results(tmp_path / "s").architectures.set_index("index")["finished_at"]
    assert isinstance(loaded.dtype, pd.DatetimeTZDtype) and str(loaded.dtype.tz) == "UTC" and loaded.to_dict() == want
    assert len(pd.read_parquet(tmp_path / "s" / "architectures")) == 2  # pandas reads the mixed folder too


def test_a_timestamp_needs_a_time_zone():
    arch, _ = rows()
    for bad, why in (
        ("yesterday", "not an ISO 8601 time"),
        ("2026-01-31T12:00:00", "not a time with a time zone"),
        (dt.datetime(2026, 1, 31), "not a time with a time zone"),
        (17, "not a time with a time zone"),
    ):
        with pytest.raises(SchemaError, match=f"'finished_at' = .*: {why}"):
            to_table(ARCHITECTURES, [{**arch, "finished_at": bad}])


# -- the write path of a study that stops accepting writes, and links inside a study -----------------------------------
def test_a_failed_write_names_the_file_and_why_and_leaves_nothing_behind(tmp_path, monkeypatch):
    store = Store(tmp_path / "s")
    store.write_bytes(["runs", "a.parquet"], b"kept")

    def full(self, tmp, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), tmp)

    monkeypatch.setattr(Store, "_local_folder", full)
    with pytest.raises(StoreWriteError) as e:
        store.write_bytes(["runs", "b.parquet"], b"lost")
    assert str(e.value) == "cannot write runs/b.parquet (No space left on device)" and isinstance(e.value, OSError)
    assert pickle.loads(pickle.dumps(e.value)).args == e.value.args  # it may cross from a worker to the driver
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "s" / "runs").iterdir()) == ["a.parquet"]


def test_a_study_directory_removed_under_its_driver_is_never_made_again(tmp_path):
    store = Store(tmp_path / "s")
    with store.driver_lock():
        store.write_bytes(["failed", "x.json"], b"{}")
        shutil.rmtree(tmp_path / "s")
        for parts in (["failed", "y.json"], ["driver.json"]):
            with pytest.raises(
                StoreWriteError,
                match=rf"\(the study directory {re.escape(str(tmp_path / 's'))} is "
                r"gone\)$",
            ):
                store.write_bytes(parts, b"{}")
        (tmp_path / "s" / "checkpoints").mkdir(parents=True)  # a worker made it again: still not this study
        with pytest.raises(StoreWriteError, match="is gone"):
            store.write_bytes(["failed", "y.json"], b"{}")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["checkpoints"]


def test_a_folder_of_a_study_that_is_a_link_is_never_written_through(tmp_path):
    """Neither by the driver (any folder) nor by a worker's trainer (checkpoints), and the lock refuses it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = Store(tmp_path / "s")
    store.write_bytes(["study.yaml"], b"x")
    for folder in ("runs", "checkpoints"):
        (tmp_path / "s" / folder).symlink_to(elsewhere)
    with pytest.raises(
        StoreWriteError,
        match=r"^cannot write runs/a\.parquet \(runs is a symbolic link; a study "
        r"never writes through a link\)$",
    ):
        store.write_bytes(["runs", "a.parquet"], b"x")
    with pytest.raises(StoreWriteError, match=r"checkpoints is a symbolic link"):
        store.checkpoint_folder()
    assert store.links() == ["runs", "checkpoints"]
    with pytest.raises(UserError, match=r": runs is a symbolic link \(to .*elsewhere\); a study never writes"):
        with store.driver_lock():
            pass
    assert list(elsewhere.iterdir()) == []


# -- every entry a driver writes or deletes is link-checked, progress included -----------------------------------------
def test_every_entry_a_driver_writes_or_deletes_is_checked_never_to_be_a_symbolic_link(tmp_path):
    """A planted ``progress -> /elsewhere`` let run/resume delete the ``NNNNNN-<id>.json`` files there."""
    from archstudy.study.execution import live
    from archstudy.study.execution.store import ENTRIES, FOLDERS
    from archstudy.study.experiment.notes import NOTES_NAME

    assert set(ENTRIES) == set(FOLDERS) | {"study.yaml", "driver.json", ".lock", ".checkpoint-key", NOTES_NAME}
    assert {"architectures", "runs", "curves", "failed", "checkpoints", "progress"} == set(FOLDERS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = ["000000-0123456789abcdef.json", ".000001-0123456789abcdef.json.tmp-1-ab"]
    for name in theirs:
        (elsewhere / name).write_text("{}")
    store = Store(tmp_path / "s")
    store.write_bytes(["study.yaml"], b"x")
    (tmp_path / "s" / "progress").symlink_to(elsewhere)
    assert store.links() == ["progress"]
    with pytest.raises(UserError, match=r": progress is a symbolic link \(to .*elsewhere\); a study never writes"):
        with store.driver_lock():
            pass
    with pytest.raises(
        StoreWriteError,
        match=r"^cannot delete progress/000000-0123456789abcdef\.json \(progress is a symbolic link; a study never "
        r"deletes through a link\)$",
    ):
        live.clear_all(store)
    with pytest.raises(StoreWriteError, match=r"^cannot write progress/x\.json \(progress is a symbolic link"):
        store.write_bytes(["progress", "x.json"], b"{}")
    assert store.temp_files() == [] and store.remove_temp_files() == []  # never listed through the link
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(theirs)
    with pytest.raises(ValueError, match=r"^elsewhere/x: not an entry of a study \(architectures, "):
        store.write_bytes(["elsewhere", "x"], b"x")  # a writer's new entry must be one ``links`` checks
    for entry in ENTRIES:  # each entry planted as a link is named (a lock planted so is refused by O_NOFOLLOW too)
        s = Store(tmp_path / entry.strip("."))
        s.write_bytes(["study.yaml"], b"x")
        if entry != "study.yaml":
            (tmp_path / entry.strip(".") / entry).symlink_to(elsewhere / "nothing")
        else:
            os.replace(tmp_path / entry.strip(".") / entry, elsewhere / "config")
            (tmp_path / entry.strip(".") / entry).symlink_to(elsewhere / "config")
        assert s.links() == [entry]


@pytest.mark.parametrize("folder", ["architectures", "runs", "curves", "failed", "checkpoints", "progress"])
def test_a_link_planted_at_a_folder_while_the_driver_runs_is_never_written_or_deleted_through(folder, tmp_path):
    """The links are checked at every write and delete, not only when the driver starts: one planted at any folder
    after the driver took the study (a worker's progress record, the driver's result or failure record, a
    checkpoint) is refused in one line and nothing lands in, or leaves, its target. (The trainer's own checkpoint
    writes open the folder with O_NOFOLLOW: tests/study/training/test_trainer_checkpoint.py.)"""
    from archstudy.study.execution.store import FOLDERS

    assert folder in FOLDERS
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "000001-0123456789abcdef.x").write_text("theirs")
    store = Store(tmp_path / "s")
    store.write_bytes(["study.yaml"], b"x")
    with store.driver_lock():
        store.write_bytes([folder, "000000-0123456789abcdef.x"], b"ours")  # the folder as the run made it
        shutil.rmtree(tmp_path / "s" / folder)
        (tmp_path / "s" / folder).symlink_to(elsewhere)  # planted mid-run
        with pytest.raises(StoreWriteError, match=rf"\({folder} is a symbolic link; a study never writes through"):
            store.write_bytes([folder, "000002-0123456789abcdef.x"], b"ours")
        with pytest.raises(StoreWriteError, match=rf"\({folder} is a symbolic link; a study never deletes through"):
            store.delete(folder, "000001-0123456789abcdef.x")
        if folder == "checkpoints":
            with pytest.raises(StoreWriteError, match=r"checkpoints is a symbolic link"):
                store.checkpoint_folder()
    assert [(p.name, p.read_text()) for p in elsewhere.iterdir()] == [("000001-0123456789abcdef.x", "theirs")]


@pytest.mark.parametrize("entry", ["driver.json", "study.yaml"])
def test_a_link_planted_at_a_root_file_while_the_driver_runs_is_replaced_never_written_through(entry, tmp_path):
    """A file at the study's root is written by rename(2) over its name: a link planted there is replaced by the
    file, and its target is left as it was."""
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    store = Store(tmp_path / "s")
    store.write_bytes(["study.yaml"], b"x")
    with store.driver_lock():
        (tmp_path / "s" / entry).unlink(missing_ok=True)
        (tmp_path / "s" / entry).symlink_to(target)
        store.write_bytes([entry], b"ours")
    assert not (tmp_path / "s" / entry).is_symlink() and (tmp_path / "s" / entry).read_bytes() == b"ours"
    assert target.read_text() == "theirs"
