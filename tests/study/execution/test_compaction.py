"""Compaction (study.execution.compaction) under the store's exactly-once rule: killed before every filesystem
change it makes, local and on object storage, the study reads as the uncompacted one and a second compaction
finishes it; a reader during a compaction (at every change, and with files deleted between its listing and its
reads) sees every row once; units of older writers (schema version 1, no curves, no science record) read the
same after compaction; a pack that is not whole is found; `archstudy compact` on an S3-protocol server."""

import argparse
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyarrow._fs import _MockFileSystem

from archstudy.analysis import load_results
from archstudy.analysis import results as results_module
from archstudy.study.execution.compaction import compact, compact_study
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import ARCHITECTURES, CURVES, RUNS, Store
from archstudy.study.experiment import schema
from archstudy.study.experiment.packs import pack_stems
from archstudy.study.perf.synthetic_store import write_synthetic_study

TABLES = (ARCHITECTURES, RUNS, CURVES)
MUTATIONS = ("open_output_stream", "move", "delete_file")


class Killed(BaseException):
    """The process died here: nothing after it runs (not even cleanup that catches ``Exception``)."""


class Dying:
    """A filesystem that forwards to ``real`` and dies before its ``kill_at``-th change (a file opened for
    writing, a rename, a deletion), and at every call after; ``hook`` runs before every change."""

    def __init__(self, real, kill_at=None, hook=None):
        self._real, self.kill_at, self.hook, self.changes, self.dead = real, kill_at, hook, 0, False

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            if self.dead:
                raise Killed(name)
            if name in MUTATIONS:
                if self.kill_at is not None and self.changes == self.kill_at:
                    self.dead = True
                    raise Killed(name)
                self.changes += 1
                if self.hook is not None:
                    self.hook()
            return attr(*args, **kwargs)

        return call


def tables_of(location, fs=None, root=None):
    store = Store(filesystem=fs, root=root) if fs is not None else Store(location)
    out = {}
    for kind in TABLES:
        df = store.read_table(kind)
        keys = (
            ["index", "arch_id"]
            + (["lr_index"] if kind != ARCHITECTURES else [])
            + (["epoch"] if kind == CURVES else [])
        )
        out[kind] = df.sort_values(keys).reset_index(drop=True)
    return out


def assert_same(a, b):
    for kind in TABLES:
        pd.testing.assert_frame_equal(a[kind], b[kind], check_like=True)


def assert_once(tables, n_units):
    """Every unit's rows once: one architectures row per unit, no duplicated run or curve point."""
    arch, runs, curves = tables[ARCHITECTURES], tables[RUNS], tables[CURVES]
    assert len(arch) == n_units and not arch.duplicated(["index", "arch_id"]).any()
    assert not runs.duplicated(["arch_id", "lr_index"]).any()
    assert not curves.duplicated(["arch_id", "lr_index", "epoch"]).any()


def own_files(root):
    return sorted(p.name for kind in TABLES for p in (root / kind).glob("*.parquet") if not p.name.startswith("pack-"))


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A finished synthetic study of 3 architectures (3 files each) and what it reads as, uncompacted."""
    root = tmp_path_factory.mktemp("compaction") / "template"
    write_synthetic_study(str(root), 3, num_lrs=3, curve_epochs=2)
    return root, tables_of(root)


def test_compaction_killed_before_each_of_its_changes_loses_and_duplicates_nothing(template, tmp_path):
    source, reference = template
    probe = tmp_path / "probe"
    shutil.copytree(source, probe)
    store = Store(probe)
    counting = Dying(store.fs)
    store.fs = counting
    compact(store, per_pack=2)  # 2 packs (2 + 1 architectures): writes, renames, deletions
    total = counting.changes
    assert total >= 2 * 3 * 2 + 9, total  # 3 files per pack, each written and renamed; 9 own files deleted
    assert own_files(probe) == [] and len(pack_stems(pafs.LocalFileSystem(), str(probe))) == 2
    assert_same(tables_of(probe), reference)
    # every change of the first pack (its files written and renamed, its units' own files deleted), and the second
    # pack's commit point and last deletion: the second pack's other moments are the first's
    first = 2 * 3 + 2 * 3
    for kill_at in [*range(first + 1), total - 4, total - 1]:
        root = tmp_path / f"k{kill_at}"
        shutil.copytree(source, root)
        store = Store(root)
        store.fs = Dying(store.fs, kill_at)
        with pytest.raises(Killed):
            compact(store, per_pack=2)
        assert_same(tables_of(root), reference)  # nothing lost, nothing twice
        if kill_at % 4 == 0:  # and a resume would find every architecture finished
            state = survey(Store(root), driver=False)
            assert len(state.finished) == 3 and not state.corrupt and not state.remaining and not state.bad_packs
        done = compact_study(str(root), per_pack=2)  # the next compaction finishes it (temporary files removed)
        assert own_files(root) == [] and not list(root.rglob(".*tmp-*"))
        assert done.packed + done.leftovers > 0 or kill_at >= total - 1
        if kill_at % 4 == 0:
            assert_same(tables_of(root), reference)
            state = survey(Store(root), driver=False)
            assert len(state.packed) == 3 and not state.corrupt and not state.bad_packs


def test_on_object_storage_a_killed_compaction_loses_nothing_and_readers_never_see_a_row_twice(template):
    source, reference = template
    fs = _MockFileSystem()

    def fresh(prefix):
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source).as_posix()
            if path.is_dir():
                fs.create_dir(f"{prefix}/{rel}")
            else:
                with fs.open_output_stream(f"{prefix}/{rel}") as f:
                    f.write(path.read_bytes())
        return Store(filesystem=fs, root=prefix)

    seen = []

    def read_now():  # a reader at every change of the compaction
        tables = tables_of(None, fs, "b/live")
        assert_once(tables, 3)
        seen.append(len(pack_stems(fs, "b/live")))

    store = fresh("b/live")
    store.fs = Dying(fs, hook=read_now)
    compact(store, per_pack=2)
    assert seen and seen[0] == 0 and seen[-1] == 2
    assert_same(tables_of(None, fs, "b/live"), reference)
    for kill_at in (1, 3, 7):  # inside the first pack, after its commit point, in the second pack
        store = fresh(f"b/k{kill_at}")
        store.fs = Dying(fs, kill_at)
        with pytest.raises(Killed):
            compact(store, per_pack=2)
        assert_same(tables_of(None, fs, f"b/k{kill_at}"), reference)
        compact(Store(filesystem=fs, root=f"b/k{kill_at}"), per_pack=2)
        assert_same(tables_of(None, fs, f"b/k{kill_at}"), reference)
        assert not [
            i
            for i in fs.get_file_info(pafs.FileSelector(f"b/k{kill_at}", recursive=True))
            if "-" in i.base_name and not i.base_name.startswith("pack-") and i.base_name.endswith(".parquet")
        ]


def test_a_reader_whose_files_are_packed_between_its_listing_and_its_reads_lists_again(template, tmp_path, monkeypatch):
    source, reference = template
    root = tmp_path / "s"
    shutil.copytree(source, root)
    before = load_results(root, curves=True)
    real = results_module.read_packs
    calls = []

    def stale_then_compact(fs, where):
        packs = real(fs, where)
        calls.append(len(packs))
        if len(calls) == 1:  # listed the own files and found no pack: now a compaction packs them all
            compact_study(str(root), per_pack=2)
        return packs

    monkeypatch.setattr(results_module, "read_packs", stale_then_compact)
    after = load_results(root, curves=True)
    assert calls[:2] == [0, 2]  # the first read found its files gone and listed again
    for name in ("architectures", "runs", "curves"):
        pd.testing.assert_frame_equal(getattr(before, name), getattr(after, name))
    assert after.files == {"architectures": 2, "runs": 2} and not after.corrupt


def as_older_writer(root, name, kind):
    """Rewrite one unit's file as archstudy 0.1.0 wrote it: schema version 1 (timestamps as ISO 8601 text),
    without the columns added later, with no science record and no ``unit_tables`` key."""
    path = root / kind / f"{name}.parquet"
    t = pq.read_table(path)
    t = t.drop_columns([c for c in schema.ADDED_COLUMNS[kind] if c in t.column_names])
    for i, field in enumerate(t.schema):
        if pa.types.is_timestamp(field.type):
            text = [v.strftime("%Y-%m-%dT%H:%M:%SZ") for v in t.column(i).to_pylist()]
            t = t.set_column(i, field.name, pa.array(text, pa.string()))
    meta = {schema.SCHEMA_KEY.encode(): b"1", schema.TABLE_KEY.encode(): kind.encode()}
    pq.write_table(t.replace_schema_metadata(meta), path)


def test_studies_of_older_writers_read_the_same_after_compaction(template, tmp_path):
    # two units as archstudy 0.1.0 wrote them (schema version 1, no curves, no `trained` or later columns, no
    # science record) beside one of today: one pack holds both kinds; a failure stays as it is
    source, _ = template
    root = tmp_path / "old"
    shutil.copytree(source, root)
    names = Store(root).names(ARCHITECTURES, ".parquet")
    for name in names[:2]:
        as_older_writer(root, name, ARCHITECTURES)
        as_older_writer(root, name, RUNS)
        (root / CURVES / f"{name}.parquet").unlink()
    Store(root).write_failure("000003-0123456789abcdef", {"reason": "worker lost", "attempts": 3})
    before = load_results(root, curves=True)
    state = survey(Store(root), driver=False)
    assert len(state.finished) == 3 and not state.corrupt
    done = compact_study(str(root), per_pack=4)
    assert done.packed == 3 and len(done.packs) == 1
    after = load_results(root, curves=True)
    assert len(before.curves) == len(after.curves) > 0
    for name in ("architectures", "runs", "curves"):
        pd.testing.assert_frame_equal(getattr(before, name), getattr(after, name))
    assert after.n_failed == before.n_failed == 1 and (root / "failed" / "000003-0123456789abcdef.json").exists()
    again = survey(Store(root), driver=False)
    assert sorted(again.packed) == sorted(state.finished) and not again.corrupt and not again.remaining


def test_a_pack_missing_a_file_is_found_and_its_architectures_are_not_finished(template, tmp_path):
    source, _ = template
    root = tmp_path / "s"
    shutil.copytree(source, root)
    compact_study(str(root), per_pack=2)
    first = pack_stems(pafs.LocalFileSystem(), str(root))[0]
    (root / RUNS / f"{first}.parquet").unlink()
    state = survey(Store(root), driver=False)
    assert len(state.finished) == 1 and len(state.corrupt) == 2
    assert all(p == f"pack {first}: runs/{first}.parquet is missing" for p in state.corrupt.values())
    assert state.bad_packs == {first: f"runs/{first}.parquet is missing"}
    r = load_results(root)
    assert len(r.architectures) == 1 and r.corrupt == {
        f"architectures/{first}.parquet": f"pack not whole: runs/{first}.parquet is missing"
    }


def test_the_compact_command_refuses_bad_input_in_one_line_and_reports_what_it_did(template, tmp_path, capsys):
    from archstudy.study.cli import compact as command

    source, reference = template
    root = tmp_path / "s"
    shutil.copytree(source, root)
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["compact", str(root), "--per-pack", "0"])
    with pytest.raises(Exception, match="per_pack"):
        args.func(args)
    args = parser.parse_args(["compact", str(root), "--per-pack", "2"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == f"{root}: 3 architectures packed into 2 pack(s)"
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == f"{root}: nothing to compact"
    assert_same(tables_of(root), reference)


def test_a_synthetic_study_on_an_s3_server_compacts_and_reads_as_on_a_local_disk(s3_endpoint, template, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    source, reference = template
    query = f"endpoint_override={s3_endpoint}&scheme=http"
    pafs.FileSystem.from_uri(f"s3://archstudy-compact?{query}&allow_bucket_creation=true")[0].create_dir(
        "archstudy-compact"
    )
    uri = f"s3://archstudy-compact/studies/synth?{query}"
    write_synthetic_study(uri, 3, num_lrs=3, curve_epochs=2)
    local = load_results(source, curves=True)  # the same study, written to a local disk
    done = compact_study(uri, per_pack=2)
    assert done.packed == 3 and len(done.packs) == 2
    after = load_results(uri, curves=True)
    for name in ("architectures", "runs", "curves"):
        pd.testing.assert_frame_equal(getattr(local, name), getattr(after, name))
    state = survey(Store(uri), driver=False)
    assert len(state.packed) == 3 and not state.corrupt
