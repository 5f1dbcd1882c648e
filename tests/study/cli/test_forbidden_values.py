"""Values the science forbids: a result file holding one is corrupt, as a truncated one is, and `status`, `top` and
the analysis the report draws from agree on it: `status` lists it (a resume redoes it), `top` and ``load_results``
leave its architecture out and count it as not finished. The findings: a test_error of NaN, -5 or inf (which `top`
would rank first), a runs file missing a run, curves with duplicated rows, and terminal escapes in a stored
`activation` (printed escaped).

Each case plants one finding in one unit's file of a small synthetic study (``study.perf.synthetic_store``, written
through the store's own write path), its metadata kept, as a hand or a bug would leave it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from archstudy.analysis import load_results
from archstudy.study.cli import main
from archstudy.study.execution.store import Store
from archstudy.study.experiment.value_checks import value_problem
from archstudy.study.perf.synthetic_store import write_synthetic_study

UNITS, RUNS = 4, 3


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    study = tmp_path_factory.mktemp("clean") / "s"
    write_synthetic_study(str(study), UNITS, num_lrs=RUNS)
    return study


def _set(table: pa.Table, column: str, value, row: int = 0) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def _drop_row(table: pa.Table, row: int) -> pa.Table:
    return table.filter(pa.array([i != row for i in range(table.num_rows)]))


def _twice(table: pa.Table, row: int) -> pa.Table:
    return pa.concat_tables([table, table.slice(row, 1)])


# (finding, table, change, what the problem says)
FINDINGS = [
    ("test_error NaN", "architectures", lambda t: _set(t, "test_error", float("nan")), "test_error = NaN"),
    ("test_error -5", "architectures", lambda t: _set(t, "test_error", -5.0), "test_error = -5.0; it holds [0, 1]"),
    ("test_error inf", "architectures", lambda t: _set(t, "test_error", float("inf")), "test_error = inf"),
    ("val_error 1.5", "architectures", lambda t: _set(t, "val_error", 1.5), "val_error = 1.5"),
    ("nlc negative", "architectures", lambda t: _set(t, "nlc", -1.0), "nlc = -1.0; it holds [0, inf] or NaN"),
    ("num_params 0", "architectures", lambda t: _set(t, "num_params", 0), "num_params = 0.0; it holds [1, inf)"),
    ("train_s NaN", "architectures", lambda t: _set(t, "train_s", float("nan")), "train_s = NaN"),
    (
        "activation with escapes",
        "architectures",
        lambda t: _set(t, "activation", "\x1b[31mrelu\x1b[0m"),
        "activation = '\\x1b[31mrelu\\x1b[0m'; it holds one of `relu`",
    ),
    ("variant unknown", "architectures", lambda t: _set(t, "variant", "twin"), "variant = 'twin'"),
    ("host with a newline", "architectures", lambda t: _set(t, "host", "a\nb"), "host = 'a\\nb'"),
    (
        "arch_id not its spec's",
        "architectures",
        lambda t: _set(t, "depth", t.column("depth")[0].as_py() + 1),
        "is not the content id of its spec",
    ),
    ("lr_index beyond the runs", "architectures", lambda t: _set(t, "lr_index", RUNS), f"not one of its {RUNS} runs"),
    ("n_runs not planned", "architectures", lambda t: _set(t, "n_runs", RUNS + 1), f"the protocol plans {RUNS} runs"),
    ("a run missing", "runs", lambda t: _drop_row(t, RUNS - 1), f"the protocol plans {RUNS}"),
    ("a run twice", "runs", lambda t: _twice(t, t.column("selected").to_pylist().index(False)), "run(s) twice"),
    ("a run's error 2", "runs", lambda t: _set(t, "test_error", 2.0, 1), "test_error = 2.0"),
    ("curve points twice", "curves", lambda t: _twice(t, 3), "(run, epoch) point(s) more than once"),
    ("a curve's loss -1", "curves", lambda t: _set(t, "train_loss", -1.0, 2), "train_loss = -1.0"),
    ("monitored unknown", "curves", lambda t: _set(t, "monitored", "holdout", 0), "monitored = 'holdout'"),
]


def _plant(study: Path, table: str, change) -> str:
    """``change`` one unit's ``table`` file (its metadata kept); the unit's name."""
    name = Store(study).names("architectures", ".parquet")[1]
    path = study / table / f"{name}.parquet"
    original = pq.read_table(path)
    pq.write_table(change(original).replace_schema_metadata(original.schema.metadata), path)
    return name


@pytest.mark.parametrize("finding, table, change, says", FINDINGS, ids=[f[0] for f in FINDINGS])
def test_a_file_with_a_value_the_science_forbids_is_corrupt_for_status_top_and_the_analysis(
    finding, table, change, says, clean, tmp_path, capsys
):
    study = tmp_path / "s"
    shutil.copytree(clean, study)
    name = _plant(study, table, change)
    assert main(["status", str(study), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["finished"] == UNITS - 1 and list(state["corrupt"]) == [name], state
    assert (
        state["corrupt"][name].startswith(f"{table} file: values the science forbids: ")
        and says in (state["corrupt"][name])
    ), state["corrupt"][name]
    assert main(["top", str(study), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["finished"] == UNITS - 1 and name.split("-")[1] not in {a["arch_id"] for a in board["architectures"]}
    results = load_results(study)  # what the report draws from
    assert len(results.architectures) == UNITS - 1 and name.split("-")[1] not in set(results.architectures["arch_id"])
    left_out = [k for k in results.corrupt if name in k]
    assert left_out, results.corrupt


def test_a_clean_study_breaks_nothing_and_each_table_is_checked_whole(clean):
    """Every file of the synthetic study passes; a pack's many rows are checked as one table (numpy, per column)."""
    store = Store(clean)
    whole = {
        table: pa.concat_tables(pq.read_table(clean / table / f"{n}.parquet") for n in store.names(table, ".parquet"))
        for table in ("architectures", "runs", "curves")
    }
    for table, rows in whole.items():
        assert value_problem(rows, table, RUNS) is None, table
    # as many runs as the protocol plans, not as the file holds
    assert f"the protocol plans {RUNS + 1}" in value_problem(whole["runs"], "runs", RUNS + 1)


def test_nan_stands_where_an_architecture_was_not_trained_and_nowhere_else(clean):
    """The selected run's errors are NaN exactly where ``trained`` is false (pruned at launch, measured only)."""
    name = Store(clean).names("architectures", ".parquet")[0]
    row = pq.read_table(clean / "architectures" / f"{name}.parquet")
    untrained = row
    for column, value in (
        ("trained", False),
        ("test_error", float("nan")),
        ("val_error", float("nan")),
        ("train_error", float("nan")),
        ("lr_index", -1),
        ("n_runs", 0),
        ("n_diverged", 0),
    ):
        untrained = _set(untrained, column, value)
    assert value_problem(untrained, "architectures", RUNS) is None
    assert "test_error = NaN" in value_problem(_set(row, "test_error", float("nan")), "architectures", RUNS)
    assert "not trained with a selected run" in value_problem(_set(untrained, "lr_index", 0), "architectures", RUNS)


def test_status_prints_a_stored_string_with_its_control_characters_escaped(clean, tmp_path, capsys):
    """A failure record's reason (or a progress record's, driver.json's host) is read from the study: a terminal
    escape in it is printed as its escape, never sent to the terminal."""
    study = tmp_path / "s"
    shutil.copytree(clean, study)
    name = Store(study).names("architectures", ".parquet")[0]
    (study / "architectures" / f"{name}.parquet").unlink()
    (study / "failed").mkdir(exist_ok=True)
    (study / "failed" / f"{name}.json").write_text(json.dumps({"reason": "\x1b[2J\x1b[31mboom\x07", "attempts": 1}))
    assert main(["status", str(study)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J\\x1b[31mboom\\x07" in out, out
