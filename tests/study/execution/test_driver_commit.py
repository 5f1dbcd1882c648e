"""The driver commits a unit from the tables its worker built (study.execution.unit.unit_tables, Arrow IPC bytes):
the files are byte for byte those ``Store.write_result`` writes from the same rows (the driver does not check every
value again), and a result that is not of the schema, or a trained unit without runs, is refused (``SchemaError``,
which the driver counts as a failed attempt). No Ray."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from archstudy.study.execution.dispatch import commit as _commit
from archstudy.study.experiment import provenance
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import ARCHITECTURES, CURVES, RUNS, SchemaError, Store, to_table
from archstudy.study.execution.unit import table_bytes, unit_tables
from archstudy.study.perf.synthetic_store import write_synthetic_study

SCIENCE = '{"seed":0}'


def _rows(store: Store, name: str, kind: str) -> list[dict]:
    return pq.read_table(pa.BufferReader(store.read_bytes(kind, f"{name}.parquet"))).to_pylist()


def test_a_units_tables_commit_the_files_write_result_writes_and_bad_ones_are_refused(tmp_path):
    write_synthetic_study(str(tmp_path / "source"), 2, num_lrs=3, curve_epochs=1)
    source = Store(tmp_path / "source")
    names = survey(source, driver=False).finished
    by_rows, by_tables = Store(tmp_path / "rows"), Store(tmp_path / "tables")
    here = provenance.record_json([(provenance.current(), 1)])  # what commit records where a worker sent none
    for name in names:
        arch, runs, curves = (_rows(source, name, kind) for kind in (ARCHITECTURES, RUNS, CURVES))
        by_rows.write_result(name, arch[0], runs, curves, science=SCIENCE, provenance=here)
        _commit(by_tables, name, {**unit_tables(arch[0], runs, curves), "notes": []}, SCIENCE)
        for kind in (ARCHITECTURES, RUNS, CURVES):
            assert by_tables.read_bytes(kind, f"{name}.parquet") == by_rows.read_bytes(kind, f"{name}.parquet")
    pruned = {**_rows(source, names[0], ARCHITECTURES)[0], "trained": False}  # no runs, no curves
    _commit(by_tables, "000009-pruned", unit_tables(pruned, [], []), SCIENCE)
    by_rows.write_result("000009-pruned", pruned, [], science=SCIENCE, provenance=here)
    assert by_tables.read_bytes(ARCHITECTURES, "000009-pruned.parquet") == by_rows.read_bytes(
        ARCHITECTURES, "000009-pruned.parquet"
    )
    assert not by_tables.exists(RUNS, "000009-pruned.parquet")

    name = names[0]
    arch, runs = _rows(source, name, ARCHITECTURES), _rows(source, name, RUNS)
    good = unit_tables(arch[0], runs, [])
    bad = {
        "a trained unit without runs": {**good, "runs": None},
        "a pruned unit with runs": {**unit_tables({**arch[0], "trained": False}, [], []), "runs": good["runs"]},
        "runs where the architecture goes": {**good, "architecture": good["runs"]},
        "two architecture rows": {**good, "architecture": table_bytes(to_table(ARCHITECTURES, arch * 2))},
        "not an Arrow stream": {**good, "architecture": b"not arrow"},
    }
    for what, result in bad.items():
        with pytest.raises(SchemaError):
            _commit(Store(tmp_path / "refused"), "000000-x", result, SCIENCE)
        assert not (tmp_path / "refused" / ARCHITECTURES / "000000-x.parquet").exists(), what


def test_a_workers_table_without_the_schemas_metadata_commits_the_file_the_driver_would_write(tmp_path):
    """The schema's version and table name in a file are the driver's to write: a worker of another install whose
    tables lack them (or say otherwise) commits the same bytes as one whose tables carry them, not a file the store
    would call foreign."""
    write_synthetic_study(str(tmp_path / "source"), 1, num_lrs=2, curve_epochs=1)
    source = Store(tmp_path / "source")
    (name,) = survey(source, driver=False).finished
    arch, runs = _rows(source, name, ARCHITECTURES), _rows(source, name, RUNS)
    good = unit_tables(arch[0], runs, [])
    bare = {
        kind: table_bytes(pa.ipc.open_stream(good[kind]).read_all().replace_schema_metadata({"archstudy": "other"}))
        for kind in ("architecture", "runs")
    }
    _commit(Store(tmp_path / "good"), name, good, SCIENCE)
    _commit(Store(tmp_path / "bare"), name, {**good, **bare}, SCIENCE)
    for kind in (ARCHITECTURES, RUNS):
        assert Store(tmp_path / "bare").read_bytes(kind, f"{name}.parquet") == Store(tmp_path / "good").read_bytes(
            kind, f"{name}.parquet"
        )
