"""Reading a study (docs/results.md): typed tables, schema checks, partly finished and multi-dataset studies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from archstudy.analysis import correlations, load_results, planned_count
from archstudy.analysis.columns import ARCHITECTURE_DTYPES, RUN_DTYPES
from archstudy.analysis.results import sibling_axes
from archstudy.sampling import BUDGET_AXES, PAPER, UserError

import synthetic_study as synth


def _expected_dtype(declared: str) -> str:
    return {"str": "str"}.get(declared, declared)


def test_tables_are_typed_as_the_contract_says(tiny_study_dir):
    r = load_results(tiny_study_dir)
    for table, dtypes in ((r.architectures, ARCHITECTURE_DTYPES), (r.runs, RUN_DTYPES)):
        for col, declared in dtypes.items():
            got = table[col].dtype
            if declared.startswith("datetime64"):
                assert isinstance(got, pd.DatetimeTZDtype) and str(got.tz) == "UTC", col
            elif declared == "str":
                assert pd.api.types.is_string_dtype(got), (col, got)
            else:
                assert str(got) == declared, (col, got, declared)


def test_values_round_trip_and_runs_select_one_per_architecture(tiny_study_dir):
    r = load_results(tiny_study_dir)
    items = synth.specs_of(8, 0, 40, 3, with_siblings=True)
    assert sorted(r.architectures["arch_id"]) == sorted(s.content_id for _, _, s in items)
    # every file's test error is the one written: re-read one file directly with pyarrow
    one = sorted((Path(tiny_study_dir) / "architectures").glob("*.parquet"))[3]
    raw = pq.read_table(one).to_pandas().iloc[0]
    row = r.architectures.set_index("arch_id").loc[raw["arch_id"]]
    assert row["test_error"] == raw["test_error"] and row["nlc"] == raw["nlc"] and row["depth"] == raw["depth"]
    sel = r.runs[r.runs["selected"]]
    assert len(sel) == len(r.architectures) and sel["arch_id"].is_unique
    merged = sel.merge(r.architectures[["arch_id", "lr_index", "test_error"]], on="arch_id", suffixes=("_run", ""))
    assert (merged["lr_index_run"] == merged["lr_index"]).all()
    assert np.allclose(merged["test_error_run"], merged["test_error"])
    assert r.files == {"architectures": len(items), "runs": len(items)}


def test_planned_count_with_siblings_counts_each_draws_siblings(tiny_study_dir):
    r = load_results(tiny_study_dir)
    from archstudy.sampling import sample_spec, siblings

    expected = 0
    for i in range(8):  # independent count: each draw and its siblings along every axis
        spec = sample_spec(0, i, 40, 3, "extended", synth.BUDGET)
        expected += 1 + sum(len(siblings(spec, a, synth.BUDGET)) for a in BUDGET_AXES)
    assert r.planned == expected == r.n_finished
    assert r.complete


def test_partly_finished_study_counts_failed_and_in_progress(tmp_path):
    root = synth.write_study(
        tmp_path / "s", n=6, with_siblings=True, failed=(2, 9), in_progress=(4,), finished=[0, 1, 3, 5, 6, 7, 8]
    )
    r = load_results(root)
    n_items = len(synth.specs_of(6, 0, 40, 3, with_siblings=True))
    assert r.planned == n_items
    assert (r.n_finished, r.n_failed, r.in_progress) == (7, 2, 1)
    assert not r.complete
    assert {f["reason"] for f in r.failed} == {"worker lost"} and all(f["attempts"] == 3 for f in r.failed)
    # A failed architecture counts toward completion: finished + failed == planned
    root2 = synth.write_study(tmp_path / "s2", n=3, failed=(1,))
    r2 = load_results(root2)
    assert (r2.planned, r2.n_finished, r2.n_failed, r2.complete) == (3, 2, 1, True)


def test_failed_then_finished_is_not_counted_failed_and_files_in_flight_are_ignored(tmp_path):
    root = synth.write_study(tmp_path / "s", n=3)
    name = sorted((root / "architectures").glob("*.parquet"))[0].stem
    (root / "failed" / f"{name}.json").write_text(json.dumps({"reason": "oom", "attempts": 1}))
    (root / "architectures" / f".{name}.parquet.tmp").write_bytes(b"partial")  # a write in flight
    (root / "architectures" / "notes.txt").write_text("not a result")
    r = load_results(root)
    assert (r.n_finished, r.n_failed, r.complete) == (3, 0, True)


def test_planned_without_siblings_is_the_configured_count(tmp_path):
    r = load_results(synth.write_study(tmp_path / "s", n=5, finished=[0, 1]))
    assert (r.planned, r.n_finished, r.complete) == (5, 2, False)


@pytest.mark.parametrize(
    "value, expected",
    [
        (True, tuple(BUDGET_AXES)),
        (False, ()),
        (None, ()),
        (["norm", "skip"], ("norm", "skip")),
        ("param", ("param",)),
        ({"axes": ["weights"]}, ("weights",)),
        (["colour"], None),
        (3, None),
    ],
)
def test_sibling_setting_is_read_defensively(value, expected):
    assert sibling_axes(value) == expected


def test_planned_is_unknown_when_the_config_does_not_describe_what_ran(tmp_path):
    """Files that record no science config (written by archstudy 0.1.0: they are the study's own), yet the
    space study.yaml gives does not re-sample them."""
    root = synth.write_study(tmp_path / "s", n=3, with_siblings=True, record_science=False)
    config = yaml.safe_load((root / "study.yaml").read_text())
    (root / "study.yaml").write_text(yaml.safe_dump({**config, "space": PAPER.to_dict()}))
    r = load_results(root)
    assert r.n_finished > 0 and not r.excluded
    assert r.planned is None and not r.complete
    assert "not among those re-sampled" in r.planned_note


def test_rows_of_another_science_config_or_beyond_the_plan_are_left_out_and_listed(tmp_path):
    root = synth.write_study(tmp_path / "s", n=4)
    names = sorted(p.name for p in (root / "architectures").glob("*.parquet"))
    config = yaml.safe_load((root / "study.yaml").read_text())
    science = {k: config[k] for k in synth.SCIENCE}
    # file 1: another seed; file 2: no science config recorded (as archstudy 0.1.0 wrote: the study's own)
    for table in ("architectures", "runs"):
        for name, recorded in ((names[1], {**science, "seed": 7}), (names[2], None)):
            path = root / table / name
            df = pq.read_table(path).to_pandas()
            path.unlink()
            synth.write_parquet(df, path, table, science=recorded)
    (root / "study.yaml").write_text(yaml.safe_dump({**config, "architectures": 3}))  # index 3 is beyond the plan
    r = load_results(root)
    assert r.n_finished == 2 and sorted(r.architectures["index"]) == [0, 2] and set(r.runs["index"]) == {0, 2}
    assert r.excluded == {
        f"{t}/{names[1]}": "computed under another science config than study.yaml's" for t in ("architectures", "runs")
    } | {f"{t}/{names[3]}": "index 3 is beyond the study's 3 architectures" for t in ("architectures", "runs")}
    assert (r.planned, r.complete) == (3, False)


@pytest.mark.parametrize("version", ["9", None])  # "9": no version of archstudy wrote it
def test_wrong_or_missing_schema_version_is_one_line_error(tmp_path, version):
    root = synth.write_study(tmp_path / "s", n=2)
    target = sorted((root / "architectures").glob("*.parquet"))[1]
    df = pq.read_table(target).to_pandas()
    target.unlink()
    synth.write_parquet(df, target, "architectures", version=version)
    with pytest.raises(UserError) as e:
        load_results(root)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"{target.name}.archstudy.schema_version = {version!r}: must be one of '1', '2'" in msg


def test_a_file_of_the_wrong_table_or_truncated_is_left_out_and_listed(tmp_path):
    """Such a file does not refuse the whole study: `status` and a resume read on without it (a resume redoes it),
    and so does the analysis, listing it in ``Results.corrupt``."""
    root = synth.write_study(tmp_path / "s", n=3)
    run, other = sorted((root / "runs").glob("*.parquet"))[:2]
    (root / "architectures" / run.name).unlink()
    (root / "architectures" / run.name).write_bytes(run.read_bytes())
    (root / "architectures" / other.name).write_bytes((root / "architectures" / other.name).read_bytes()[:50])
    r = load_results(root)
    assert r.corrupt == {
        f"architectures/{run.name}": "not an archstudy architectures file (archstudy.table 'runs')",
        f"architectures/{other.name}": r.corrupt[f"architectures/{other.name}"],
    }
    assert r.corrupt[f"architectures/{other.name}"].startswith("not readable Parquet (")
    assert len(r.architectures) == 1 and r.excluded == {}


def test_not_a_study_directory(tmp_path):
    with pytest.raises(UserError, match=r"load_results.study_dir = .*must be an existing study directory"):
        load_results(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"must be a study directory \(it has no study.yaml\)"):
        load_results(tmp_path / "empty")


def test_missing_optional_column_reads_as_not_measured(tmp_path):
    def rows(i, v, spec, rng):
        row = synth.synthetic_row(i, v, spec, "digits", 0, rng)
        del row["synflow"], row["high_bias"]
        row["bias"] = 5000.0 if i % 2 else 3.0
        return row

    root = synth.write_study(tmp_path / "s", n=6, dataset="digits", rows=rows)
    r = load_results(root)
    a = r.architectures
    assert a["synflow"].isna().all() and a["synflow"].dtype == "float64"
    # high_bias is derived from the bias by the paper's definition (bias > 1000) when a file lacks it
    assert a["high_bias"].dtype == bool and a["high_bias"].tolist() == [bool(i % 2) for i in a["index"]]
    c = correlations(a, n_boot=20)
    assert c.set_index("predictor").loc["synflow", "n"] == 0


def test_several_datasets_give_one_row_per_predictor_and_dataset(tmp_path):
    a = load_results(synth.write_study(tmp_path / "a", n=10, dataset="waveform-noise")).architectures
    b = load_results(synth.write_study(tmp_path / "b", n=10, dataset="digits", study_seed=1)).architectures
    c = correlations(pd.concat([a, b], ignore_index=True), n_boot=50)
    assert sorted(c["dataset"].unique()) == ["digits", "waveform-noise"]
    per = c.groupby("dataset").size()
    assert per["digits"] == per["waveform-noise"] == c["predictor"].nunique()
    # each dataset's numbers are those of that dataset alone
    alone = correlations(b, n_boot=50).set_index("predictor")
    both = c[c["dataset"] == "digits"].set_index("predictor")
    assert np.allclose(alone["kendall"], both["kendall"], equal_nan=True)
    assert np.allclose(alone["kendall_lo"], both["kendall_lo"], equal_nan=True)


def test_a_study_can_be_named_by_uri(tiny_study_dir):
    """Object-storage prefixes go through pyarrow.fs; a file:// URI takes the same path."""
    r = load_results(Path(tiny_study_dir).resolve().as_uri())
    assert r.n_finished == load_results(tiny_study_dir).n_finished and r.complete


def test_planned_count_is_the_runners_plan_with_the_configs_declared_defaults():
    """A study.yaml without seed, preset or param_budget means StudyConfig's declared defaults, exactly as the
    runner reads it: the analysis counts the runner's own plan (``study.execution.unit.work_units``)."""
    from archstudy.study.experiment.config import StudyConfig
    from archstudy.study.execution.unit import work_units

    config = {"dataset": "waveform-noise", "architectures": 5, "siblings": True, "d_in": 40, "d_out": 3}
    runner = work_units(StudyConfig.from_dict(config))
    finished = pd.DataFrame({"arch_id": [u.arch_id for u in runner], "variant": [u.variant for u in runner]})
    planned, note = planned_count(config, finished)
    assert planned == len(runner) > 5 and "siblings along weights, param, norm, skip" in note
    # Every default is part of what is drawn: another seed, space or budget re-draws other architectures.
    for change in ({"seed": 1}, {"preset": "paper"}, {"param_budget": 500_000}):
        assert planned_count({**config, **change}, finished)[0] is None, change
