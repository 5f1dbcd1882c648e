"""The curves table and pruned architectures in the store: which files a unit's commit needs (its architectures file
says), a study whose units finished before curves existed stays finished, a curves file that is there must be
valid, a pruned unit is finished with its architectures file alone and counted apart."""

from pyarrow._fs import _MockFileSystem
import pytest

from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.schema import ADDED_COLUMNS, ARCHITECTURES, CURVES, RUNS, columns
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import SchemaError, Store, check_table_bytes, parquet_bytes, to_table
from archstudy.study.execution.pruning import untrained_row
from archstudy.study.execution.unit import work_units

CONFIG = StudyConfig(
    dataset="waveform-noise", architectures=6, param_budget=2000, seed=7, protocol="quick", d_in=40, d_out=3
)
UNITS = work_units(CONFIG)
VALUE = {"int64": 1, "float64": 0.5, "bool": True, "str": "x", "timestamp": "2026-01-31T12:00:00Z"}


def rows(unit, trained=True):
    """An architectures row, two runs rows and three curves rows of ``unit`` (well typed, arbitrary values)."""
    ident = {"arch_id": unit.arch_id, "index": unit.index, "variant": unit.variant}
    arch = {**{c.name: VALUE[c.type] for c in columns(ARCHITECTURES)}, **unit.spec.to_dict(), **ident}
    if not trained:
        return {**arch, **untrained_row()}, [], []
    runs = [
        {**{c.name: VALUE[c.type] for c in columns(RUNS)}, **ident, "lr_index": k, "selected": k == 0} for k in range(2)
    ]
    curves = [
        {**{c.name: VALUE[c.type] for c in columns(CURVES)}, **ident, "lr_index": k, "epoch": e}
        for k in range(1)
        for e in range(3)
    ]
    return arch, runs, curves


def older(arch: dict) -> bytes:
    """The architectures file of a writer from before the added columns (no ``trained``, no new spec fields)."""
    return parquet_bytes(to_table(ARCHITECTURES, [arch]).drop_columns(list(ADDED_COLUMNS[ARCHITECTURES])))


def test_which_files_a_unit_needs_is_what_its_architectures_file_says(tmp_path):
    store = Store(tmp_path / "study")
    store.write_config(CONFIG)
    new, old, pruned, no_runs, bad_curves, stray = UNITS[:6]
    store.write_result(new.name, *rows(new))
    # finished before curves (and the trained column) existed: runs and architectures files only
    arch, runs, _ = rows(old)
    store.write_bytes([RUNS, f"{old.name}.parquet"], parquet_bytes(to_table(RUNS, runs)))
    store.write_bytes([ARCHITECTURES, f"{old.name}.parquet"], older(arch))
    store.write_result(pruned.name, *rows(pruned, trained=False))
    arch, _, _ = rows(no_runs)
    store.write_bytes([ARCHITECTURES, f"{no_runs.name}.parquet"], parquet_bytes(to_table(ARCHITECTURES, [arch])))
    store.write_result(bad_curves.name, *rows(bad_curves))
    store.write_bytes([CURVES, f"{bad_curves.name}.parquet"], b"PAR1 truncated")
    store.write_result(stray.name, *rows(stray))
    _, _, curves = rows(new)  # another unit's curves under this unit's name
    store.write_bytes([CURVES, f"{stray.name}.parquet"], parquet_bytes(to_table(CURVES, curves)))

    assert not (tmp_path / "study" / RUNS / f"{pruned.name}.parquet").exists()
    assert not (tmp_path / "study" / CURVES / f"{pruned.name}.parquet").exists()
    assert store.check_file(ARCHITECTURES, old.name).trained
    assert not store.check_file(ARCHITECTURES, pruned.name).trained
    state = survey(store)
    assert state.finished == [new.name, old.name, pruned.name] and state.pruned == [pruned.name]
    assert state.corrupt == {
        no_runs.name: "runs file: missing",
        bad_curves.name: state.corrupt[bad_curves.name],
        stray.name: state.corrupt[stray.name],
    }
    assert state.corrupt[bad_curves.name].startswith("curves file: unreadable Parquet")
    assert state.corrupt[stray.name].startswith("curves file: its rows name arch_id")
    assert state.to_dict()["pruned"] == 1 and state.to_dict()["finished"] == 3


def test_a_commit_holds_the_files_its_kind_of_unit_has():
    store = Store(None, filesystem=_MockFileSystem(), root="/s")
    unit = UNITS[0]
    arch, runs, curves = rows(unit)
    pruned_arch, _, _ = rows(unit, trained=False)
    with pytest.raises(SchemaError, match="a trained one has runs"):
        store.write_result(unit.name, arch, [], curves)
    with pytest.raises(SchemaError, match="a pruned one neither"):
        store.write_result(unit.name, pruned_arch, runs)
    with pytest.raises(SchemaError, match="a pruned one neither"):
        store.write_result(unit.name, pruned_arch, [], curves)
    assert store.names(ARCHITECTURES, ".parquet") == []  # nothing written
    store.write_result(unit.name, arch, runs)  # a trained unit without curves (as versions before them wrote)
    assert store.check_file(ARCHITECTURES, unit.name).ok and store.names(CURVES, ".parquet") == []
    assert check_table_bytes(parquet_bytes(to_table(CURVES, curves)), CURVES, unit.name).ok
    assert pruned_arch["lr_index"] == -1 and pruned_arch["n_runs"] == 0 and pruned_arch["selected_by"] == "none"


# -- every table's file of a finished architecture is checked, the curves file included --------------------------------
def test_a_deleted_curves_file_of_a_finished_architecture_makes_it_corrupt_and_redone(tmp_path):
    """Its architectures file says which tables its unit has (``archstudy.unit_tables``); a file written before that
    key by a writer that recorded curves (it has the ``trained`` column) requires them too."""
    import pyarrow.parquet as pq

    from archstudy.study.execution.store import UNIT_TABLES_KEY

    store = Store(tmp_path / "study")
    store.write_config(CONFIG)
    full, no_curves, unkeyed, old, pruned, bad_key = UNITS[:6]
    for unit in (full, no_curves, unkeyed, bad_key):
        store.write_result(unit.name, *rows(unit))
    store.write_result(pruned.name, *rows(pruned, trained=False))
    arch, runs, _ = rows(old)  # finished before curves were recorded: runs and architectures files only
    store.write_bytes([RUNS, f"{old.name}.parquet"], parquet_bytes(to_table(RUNS, runs)))
    store.write_bytes([ARCHITECTURES, f"{old.name}.parquet"], older(arch))
    meta = {
        u.name: pq.read_schema(tmp_path / "study" / ARCHITECTURES / f"{u.name}.parquet").metadata for u in UNITS[:6]
    }
    assert meta[full.name][UNIT_TABLES_KEY.encode()] == b"runs,curves"
    assert meta[pruned.name][UNIT_TABLES_KEY.encode()] == b"" and UNIT_TABLES_KEY.encode() not in meta[old.name]
    # the architectures file of today's main: the trained column, no key
    arch, _, _ = rows(unkeyed)
    store.write_bytes([ARCHITECTURES, f"{unkeyed.name}.parquet"], parquet_bytes(to_table(ARCHITECTURES, [arch])))
    bad = to_table(ARCHITECTURES, [rows(bad_key)[0]])
    bad = bad.replace_schema_metadata({**bad.schema.metadata, UNIT_TABLES_KEY.encode(): b"runs,nonsense"})
    store.write_bytes([ARCHITECTURES, f"{bad_key.name}.parquet"], parquet_bytes(bad))
    assert survey(store).finished == sorted(u.name for u in UNITS[:6] if u is not bad_key)

    for unit in (full, no_curves, unkeyed):
        (tmp_path / "study" / CURVES / f"{unit.name}.parquet").unlink()
    (tmp_path / "study" / CURVES / f"{bad_key.name}.parquet").unlink()
    store.write_result(no_curves.name, *rows(no_curves)[:2])  # a writer that recorded none says so: finished
    state = survey(store)
    assert state.finished == [no_curves.name, old.name, pruned.name] and state.pruned == [pruned.name]
    assert state.corrupt == {
        full.name: "curves file: missing",
        unkeyed.name: "curves file: missing",
        bad_key.name: "architectures file: metadata archstudy.unit_tables = 'runs,nonsense' does not fit trained = "
        "True (a trained architecture has 'runs' or 'runs,curves', a pruned one none)",
    }
    assert state.remaining == sorted(state.corrupt) and not state.done
