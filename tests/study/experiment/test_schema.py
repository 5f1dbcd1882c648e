"""The results schema (study.experiment.schema): one declaration of every column, and the files a real study writes
(conftest ``real_study_dir``: the runner on built-in data) hold exactly those columns, types and metadata;
docs/results.md's column tables are generated from it."""

import datetime as dt
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from archstudy.sampling import ArchSpec
from archstudy.study.experiment import schema
from archstudy.study.experiment.provenance import PROVENANCE_KEY
from archstudy.study.experiment.schema import (
    ARCHITECTURES,
    REGENERATE,
    RUNS,
    SCHEMA_KEY,
    UNIT_TABLES_KEY,
    SCIENCE_FINGERPRINT_KEY,
    SCIENCE_KEY,
    TABLE_KEY,
    TABLES,
    TYPES,
    columns,
    names,
    update_doc,
)
from archstudy.study.execution.store import Store

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "results.md"
# The file type of each declared type, written out here independently of study.execution.store.
ARROW = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def test_docs_results_md_holds_the_generated_column_tables():
    text = DOC.read_text(encoding="utf-8")
    assert update_doc(text) == text, f"docs/results.md is out of date with study/schema.py: run `{REGENERATE}`"
    for table in TABLES:
        for c in columns(table):
            assert f"| `{c.name}` | {c.type} |" in text


def test_the_declaration_is_complete_and_the_spec_columns_are_the_archspec_fields():
    assert set(ARROW) == set(TYPES)
    spec = columns(ARCHITECTURES, "spec")
    assert [(c.name, c.type) for c in spec] == [
        (f.name, {"int": "int64", "float": "float64", "bool": "bool", "str": "str"}[str(f.type)])
        for f in fields(ArchSpec)
    ]
    for table in TABLES:
        cols = columns(table)
        assert len({c.name for c in cols}) == len(cols) and all(c.meaning and c.table == table for c in cols)
        assert [c.name for c in cols if c.required][:1] == ["arch_id"]  # a row must say whose it is
    assert schema.MEASURED == names(ARCHITECTURES, "init metrics", "proxies", "optional")


def test_update_doc_rewrites_only_the_generated_tables_and_refuses_a_doc_without_them(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("| `nlc` | float64 |", "| `nlc` | int64 |")
    assert stale != text and update_doc(stale) == text
    shortened = text.replace(
        text[
            text.index("<!-- columns of runs") : text.index("<!-- end -->", text.index("<!-- columns of runs"))
            + len("<!-- end -->")
        ],
        "",
    )
    with pytest.raises(ValueError, match=f"{len(TABLES) - 1} generated column tables"):
        update_doc(shortened)
    path = tmp_path / "results.md"  # the command the failure message names
    path.write_text(stale, encoding="utf-8")
    assert schema.main([str(path)]) == 0 and path.read_text(encoding="utf-8") == text


def test_a_real_study_writes_exactly_the_declared_columns_types_and_metadata(real_study_dir):
    config = Store(real_study_dir).read_config()
    for table in TABLES:
        files = sorted((Path(real_study_dir) / table).glob("*.parquet"))
        assert files, table
        for path in files:
            t = pq.read_table(path)
            assert t.column_names == list(names(table)), path.name
            for c in columns(table):
                assert t.schema.field(c.name).type == ARROW[c.type], (path.name, c.name)
            meta = t.schema.metadata
            # a finished unit's tables, with its row, and who computed it (study.experiment.provenance)
            own = (UNIT_TABLES_KEY, PROVENANCE_KEY) if table == ARCHITECTURES else ()
            keys = (SCHEMA_KEY, TABLE_KEY, SCIENCE_KEY, SCIENCE_FINGERPRINT_KEY, *own)
            assert set(meta) == {k.encode() for k in keys}
            assert meta[SCHEMA_KEY.encode()] == b"2" and meta[TABLE_KEY.encode()] == table.encode()
            assert meta[SCIENCE_KEY.encode()].decode() == config.science_json
            assert meta[SCIENCE_FINGERPRINT_KEY.encode()].decode() == config.science_fingerprint
            for c in columns(table):
                values = t.column(c.name).to_pylist()
                if c.type == "timestamp":  # UTC, to the second (when the row was made)
                    assert all(
                        v.tzinfo is not None
                        and v.utcoffset() == dt.timedelta(0)
                        and v.microsecond == 0
                        and abs(v - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(days=1)
                        for v in values
                    )
                elif c.type in ("str", "int64", "bool"):
                    assert None not in values, (path.name, c.name)  # only floats may be missing (NaN)
    # and the analysis reads them with the declared pandas types
    from archstudy.analysis import load_results

    r = load_results(real_study_dir)
    for table, df in ((ARCHITECTURES, r.architectures), (RUNS, r.runs)):
        for c in columns(table):
            got = df[c.name].dtype
            if c.type == "timestamp":
                assert isinstance(got, pd.DatetimeTZDtype) and str(got.tz) == "UTC", c.name
            elif c.type == "str":
                assert pd.api.types.is_string_dtype(got), c.name
            else:
                assert str(got) == c.type, (c.name, got)


# The columns of the measure row and the baselines that do not predict test error, and why: a new metric column
# must either declare how the analysis uses it (``AsPredictor``) or be named here.
NOT_PREDICTORS = {
    "nlc_jacobian_q": "a factor of the NLC",
    "nlc_input_sd_q": "a factor of the NLC (the data's)",
    "nlc_output_sd_q": "a factor of the NLC and the bias",
    "output_q": "the scale c_out, a factor of the bias",
    "c_out": "the trainer's output scale (= output_q)",
    "high_bias": "a flag: bias > 1000",
    "error_perturbation": "measured after training",
    "activation_units": "AR's numerator",
}


def test_every_measured_column_and_baseline_declares_how_the_analysis_uses_it():
    measured = [c for c in columns(ARCHITECTURES) if c.name in schema.MEASURE_ROW or c.group == "baselines"]
    undeclared = {c.name for c in measured if c.predictor is None}
    assert undeclared == set(NOT_PREDICTORS), undeclared ^ set(NOT_PREDICTORS)
    for c in schema.predictor_columns():
        p = c.predictor
        assert c.table == ARCHITECTURES and c.type in ("int64", "float64"), c.name
        assert p.label and p.why and p.kind in schema.PREDICTOR_KINDS and isinstance(p.log, bool), c.name
        assert p.figure in ("", *schema.PREDICTOR_FIGURES), c.name
    # the trivial baselines are the spec's depth and width and the counts of the baselines group
    assert {c.name for c in schema.predictor_columns() if c.predictor.kind == "baseline"} == {
        "depth",
        "width",
        *(n for n in names(ARCHITECTURES, "baselines") if n != "activation_units"),
    }


def test_the_predictors_are_listed_kind_by_kind_by_rank_then_in_column_order():
    cols = schema.predictor_columns()
    order = {c.name: i for i, c in enumerate(columns(ARCHITECTURES))}
    keys = [(schema.PREDICTOR_KINDS.index(c.predictor.kind), c.predictor.rank, order[c.name]) for c in cols]
    assert keys == sorted(keys)
    assert [c.name for c in cols] == [
        "nlc",
        "bias",
        "ar",
        "variability",
        "gvcs",
        "grad_length",
        "nlc_tau",
        "linear_approx_error",
        "lar_diameter",
        "grad_norm",
        "snip",
        "synflow",
        "jacob_cov",
        "nwot",
        "num_params",
        "depth",
        "width",
        "flops",
    ]


def test_the_measure_row_is_the_metric_groups_and_flops():
    """The columns ``measure`` computes (each by the ``@measures`` function of ``study.metrics`` naming it: the
    registry's test) are the metrics at initialization, the proxies, the optional metrics and the FLOPs."""
    assert schema.MEASURE_ROW == (*names(ARCHITECTURES, "init metrics", "proxies", "optional"), "flops")
    assert not any(f.name == "measured_by" for f in fields(schema.Column))  # no "module:function" path
