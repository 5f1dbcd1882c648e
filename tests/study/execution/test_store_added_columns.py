"""Columns added to schema version 1 after its first files (study.experiment.schema.ADDED_COLUMNS): a study's older
files stay finished (a resume does not redo them) and are read with the values their rows had."""

import math

import pytest
import yaml
from schema_values import value

from archstudy.analysis import load_results
from archstudy.sampling import ArchSpec, sample_spec
from archstudy.study.experiment.schema import ADDED_COLUMNS
from archstudy.study.execution.store import (
    ARCHITECTURES,
    ARCHITECTURES_SCHEMA,
    RUNS,
    RUNS_SCHEMA,
    Store,
    check_table_bytes,
    parquet_bytes,
    to_table,
    unit_name,
)

SPEC = sample_spec(3, 7, 40, 3, "extended", 4000)


def rows(index, spec):
    """An architectures row and its runs rows, every column set (storage tests: each value within its column's
    declared values, ``schema_values.value``)."""
    arch = {f.name: value(f, i) for i, f in enumerate(ARCHITECTURES_SCHEMA)}
    arch.update(
        spec.to_dict(),
        arch_id=spec.content_id,
        index=index,
        variant="base",
        nlc=math.nan,
        selected_by="test",
        finished_at="2025-01-01T00:00:00Z",
        trained=True,
    )
    runs = [
        {
            **{f.name: value(f, k) for f in RUNS_SCHEMA},
            "arch_id": spec.content_id,
            "index": index,
            "lr_index": k,
            "selected": k == 1,
        }
        for k in range(3)
    ]
    return arch, runs


def old_file(arch: dict, drop=ADDED_COLUMNS[ARCHITECTURES]) -> bytes:
    """The architectures file a writer from before the added columns wrote (its schema metadata kept)."""
    return parquet_bytes(to_table(ARCHITECTURES, [arch]).drop_columns(list(drop)))


def test_a_file_without_the_added_columns_is_a_valid_finished_file_and_nothing_else_is():
    assert set(ADDED_COLUMNS[ARCHITECTURES]) >= {"init", "dense_ends", "selected_by"}
    arch, _ = rows(7, SPEC)
    name = unit_name(7, SPEC.content_id)
    assert check_table_bytes(old_file(arch), ARCHITECTURES, name).ok
    assert check_table_bytes(old_file(arch, drop=["init"]), ARCHITECTURES, name).ok  # a version in between
    for bad in (old_file(arch, drop=["nlc"]), old_file(arch, drop=["init", "lr_edge"])):
        assert (
            check_table_bytes(bad, ARCHITECTURES, name).problem == "columns differ from the schema of docs/results.md"
        )
    t = to_table(ARCHITECTURES, [arch])
    moved = t.select([t.column_names[-1]] + t.column_names[:-1])
    assert not check_table_bytes(parquet_bytes(moved), ARCHITECTURES, name).ok


def test_a_study_with_older_and_newer_files_reads_them_all_with_their_values(tmp_path):
    store = Store(tmp_path / "s")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "study.yaml").write_text(
        yaml.safe_dump(
            {
                "dataset": "waveform-noise",
                "architectures": 2,
                "d_in": 40,
                "d_out": 3,
                "protocol": {"monitor": "train", "num_lrs": 3},
            }
        )
    )
    old_arch, old_runs = rows(0, SPEC)
    new_spec = ArchSpec(depth=5, width=12, d_in=40, d_out=3, skip="after_linear", init="zero")
    new_arch, new_runs = rows(1, new_spec)
    old_name, new_name = unit_name(0, SPEC.content_id), unit_name(1, new_spec.content_id)
    store.write_bytes([RUNS, f"{old_name}.parquet"], parquet_bytes(to_table(RUNS, old_runs)))
    store.write_bytes([ARCHITECTURES, f"{old_name}.parquet"], old_file(old_arch))
    store.write_result(new_name, new_arch, new_runs)
    assert store.check_file(ARCHITECTURES, old_name).ok and store.check_file(ARCHITECTURES, new_name).ok
    raw = store.read_table(ARCHITECTURES).set_index("index")
    assert raw.loc[1, "init"] == "zero" and raw["init"].isna().tolist() == [True, False]
    arch = load_results(tmp_path / "s").architectures.set_index("index")
    # the old row: what every row was before the columns (defaults; selected by the monitored split)
    assert (arch.loc[0, "init"], arch.loc[0, "dense_ends"], arch.loc[0, "selected_by"]) == ("orthogonal", 0, "train")
    assert (arch.loc[1, "init"], arch.loc[1, "dense_ends"], arch.loc[1, "selected_by"]) == ("zero", 0, "test")
    assert str(arch["dense_ends"].dtype) == "int64"


@pytest.mark.parametrize("kind", [ARCHITECTURES, RUNS])
def test_added_columns_are_columns_of_the_schema(kind):
    schema = {ARCHITECTURES: ARCHITECTURES_SCHEMA, RUNS: RUNS_SCHEMA}[kind]
    assert set(ADDED_COLUMNS[kind]) <= set(schema.names)
