"""``archstudy lookup`` and ``archstudy.lookup`` (``analysis.lookup``): an architecture by its content id (whole, a
prefix, its unit name), by a spec written another way (fewer fields, other key order, reals written as integers),
by a filter over the columns (checked against pandas), loose and packed; bad queries are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archstudy
from archstudy.analysis import load_results
from archstudy.sampling import SpecError
from archstudy.study.cli import main
from archstudy.study.execution.compaction import compact
from archstudy.study.execution.store import Store
from archstudy.study.perf.synthetic_store import write_synthetic_study

N, RATES = 8, 3


@pytest.fixture(scope="module", params=["loose", "packed"])
def study(request, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lookup") / "study"
    write_synthetic_study(str(root), N, num_lrs=RATES, curve_epochs=1)
    if request.param == "packed":
        store = Store(str(root))
        with store.driver_lock():
            compact(store, store.read_config(), per_pack=3)
        assert not list((root / "architectures").glob("0*.parquet"))
    return root


@pytest.fixture(scope="module")
def table(study):
    return load_results(study).architectures


def test_an_id_a_prefix_and_a_unit_name_find_the_row_its_runs_and_its_curves(study, table):
    row = table.sort_values("index").iloc[3]
    arch_id, unit = row["arch_id"], f"{int(row['index']):06d}-{row['arch_id']}"
    for query in (arch_id, arch_id[:8], unit):
        found = archstudy.lookup(study, id=query)
        assert found.matches == 1 and found.architectures["arch_id"].tolist() == [arch_id]
        assert found.architectures["test_error"].iloc[0] == row["test_error"]
        runs = found.runs_of(arch_id, int(row["index"]))
        assert runs["lr_index"].tolist() == list(range(RATES)) and runs["selected"].sum() == 1
        assert f"arch_id {arch_id}" in found.curves[unit] or f"{unit}.parquet" in found.curves[unit]


def test_an_equivalent_spec_finds_the_same_row(study, table):
    row = table.sort_values("index").iloc[5]
    spec = archstudy.ArchSpec.from_dict(
        {k: row[k] for k in archstudy.ArchSpec.__dataclass_fields__ if k in row and k != "preset"}
        | {"preset": "extended"}
    )
    assert spec.content_id == row["arch_id"]  # an independent check: the row's own fields give its id
    given = {k: v for k, v in reversed(list(spec.to_dict().items())) if k not in ("width", "d_in", "d_out", "preset")}
    given = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in given.items()}  # 1.0 as 1
    assert any(isinstance(spec.to_dict()[k], float) and isinstance(v, int) for k, v in given.items())
    found = archstudy.lookup(study, spec=json.dumps(given))
    assert found.architectures["arch_id"].tolist() == [row["arch_id"]]


def test_a_filter_finds_what_pandas_finds_lowest_test_error_first(study, table):
    expected = table[(table["depth"] > 10) & (table["norm"] != "none")].sort_values("test_error")
    found = archstudy.lookup(study, where='depth > 10 and not norm == "none"', limit=100)
    assert found.matches == len(expected) and found.architectures["arch_id"].tolist() == expected["arch_id"].tolist()


def test_the_command_prints_the_row_and_json(study, table, capsys):
    arch_id = table["arch_id"].iloc[0]
    assert main(["lookup", str(study), "--id", arch_id, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matches"] == 1 and out["architectures"][0]["row"]["arch_id"] == arch_id
    assert len(out["architectures"][0]["runs"]) == RATES
    assert main(["lookup", str(study), "--id", arch_id, "--wide"]) == 0
    text = capsys.readouterr().out
    assert f"1 architecture with arch_id {arch_id}" in text and f"runs by learning rate ({RATES})" in text


@pytest.mark.parametrize(
    "query, field",
    [
        ({"id": "ab"}, "id"),
        ({"id": "xyz0123"}, "id"),
        ({"where": "depth.real > 3"}, "where"),
        ({"where": "__import__('os')"}, "where"),
        ({"spec": "[1, 2]"}, "spec"),
    ],
)
def test_a_bad_query_is_one_line_naming_the_field(study, query, field):
    with pytest.raises(SpecError) as e:
        archstudy.lookup(study, **query)
    assert str(e.value).startswith(f"lookup.{field} = ") and "\n" not in str(e.value)


def test_a_missing_id_finds_nothing_and_says_so(study, capsys):
    assert main(["lookup", str(study), "--id", "0" * 16]) == 0
    assert "0 architectures with arch_id" in capsys.readouterr().out


def test_notes_are_added_dated_listed_and_leave_the_results_alone(tmp_path, capsys):
    root = tmp_path / "study"
    write_synthetic_study(str(root), 2, num_lrs=2, curve_epochs=1)
    before = {p: p.read_bytes() for p in root.rglob("*.parquet")}
    assert main(["note", str(root), "lr grid too coarse", "--tag", "todo"]) == 0
    assert "noted at" in capsys.readouterr().out
    archstudy.add_note(root, "second")
    assert main(["note", str(root), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)
    assert [(n["text"], n["tags"]) for n in notes] == [("lr grid too coarse", ["todo"]), ("second", [])]
    assert all(n["at"].endswith("+00:00") or n["at"].endswith("Z") for n in notes)
    assert {p: p.read_bytes() for p in root.rglob("*.parquet")} == before
    with pytest.raises(SpecError, match="tag"):
        archstudy.add_note(root, "x", ["bad tag"])
