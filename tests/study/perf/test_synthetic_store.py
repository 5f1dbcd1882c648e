"""The synthetic study writer (study.perf.synthetic_store, `archstudy bench --store N --out DIR`): what it writes
is what the store's reader, `status`, `top` and `load_results` accept as a finished study of the schema's columns
and types, with the invariants of a real study (one selected run carrying the architecture's errors, runs at
lr_min * 3^k, curves ending at the run's error); written as packs it reads the same."""

import argparse
import json
import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from archstudy.analysis import load_results
from archstudy.sampling import SpecError
from archstudy.study.cli import bench, main
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import ARCHITECTURES, CURVES, RUNS, SCHEMAS, Store
from archstudy.study.perf.synthetic_store import write_synthetic_study

N, LRS, EPOCHS = 5, 4, 2
# not measured by default in a real study either; test_error_sd: NaN with one initialization (init_seeds: 1)
NAN_BY_DESIGN = {"lar_diameter", "error_perturbation", "test_error_sd"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    loose = write_synthetic_study(str(root / "loose"), N, num_lrs=LRS, curve_epochs=EPOCHS)
    write_synthetic_study(str(root / "packed"), N, num_lrs=LRS, curve_epochs=EPOCHS, packed=True)
    return root, loose


def test_the_store_finds_every_architecture_finished_with_files_of_the_schema(written):
    root, loose = written
    assert (loose.units, loose.runs, loose.curves) == (N, N * LRS, N * LRS * (EPOCHS + 1))
    store = Store(root / "loose")
    state = survey(store, driver=False)
    assert len(state.finished) == N and not state.corrupt and not state.remaining and not state.extra
    name = state.finished[0]
    for kind in (ARCHITECTURES, RUNS, CURVES):
        assert store.check_file(kind, name, store.read_config().science_fingerprint).ok
        found = pq.read_schema(root / "loose" / kind / f"{name}.parquet")
        assert found.equals(SCHEMAS[kind], check_metadata=False)
    packed = survey(Store(root / "packed"), driver=False)
    assert sorted(packed.packed) == sorted(state.finished) and not packed.corrupt


def test_load_results_reads_a_study_with_the_invariants_of_a_real_one(written):
    root, _ = written
    r = load_results(root / "loose", curves=True)
    arch, runs, curves = r.architectures, r.runs, r.curves
    assert (len(arch), len(runs), len(curves), r.planned, r.complete) == (N, N * LRS, N * LRS * (EPOCHS + 1), N, True)
    assert not r.corrupt and not r.excluded
    for column in SCHEMAS[ARCHITECTURES].names:
        if column not in NAN_BY_DESIGN:
            assert arch[column].notna().all(), column
    selected = runs[runs["selected"]].set_index("arch_id")
    assert len(selected) == N
    a = arch.set_index("arch_id")
    np.testing.assert_array_equal(selected.loc[a.index, "lr_index"], a["lr_index"])
    np.testing.assert_allclose(selected.loc[a.index, "test_error"], a["test_error"], rtol=0, atol=0)
    diverged = runs.groupby("arch_id")["diverged"].sum()
    np.testing.assert_array_equal(diverged.loc[a.index], a["n_diverged"])
    np.testing.assert_allclose(runs["lr"], a.loc[runs["arch_id"], "lr_min"].to_numpy() * 3.0 ** runs["lr_index"])
    assert ((a["test_error"] >= 0) & (a["test_error"] <= 1)).all()
    assert (a["high_bias"] == (a["bias"] > 1000)).all()  # the schema's definition (bias > 1000)
    np.testing.assert_allclose(a.loc[a["high_bias"], "test_error"], 1 - 1 / a.loc[a["high_bias"], "d_out"])
    last = curves[curves["epoch"] == EPOCHS].merge(runs, on=["arch_id", "lr_index"])
    finite = last["val_error"].notna()
    np.testing.assert_allclose(last.loc[finite, "monitored_error"], last.loc[finite, "val_error"])
    assert curves.loc[curves["epoch"] == 0, "train_loss"].isna().all()
    packed = load_results(root / "packed", curves=True)
    for table in ("architectures", "runs", "curves"):
        pd.testing.assert_frame_equal(getattr(r, table), getattr(packed, table))


def test_status_and_top_read_it(written, capsys):
    root, _ = written
    for study in ("loose", "packed"):
        assert main(["status", str(root / study), "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert (status["finished"], status["remaining"], status["corrupt"]) == (N, 0, {})
        assert status["packed"] == (N if study == "packed" else 0)
    assert main(["top", str(root / "packed"), "--json", "-k", "3", "--predictors", "1"]) == 0
    top = json.loads(capsys.readouterr().out)
    best = sorted(load_results(root / "loose", runs=False).architectures["test_error"])[:3]
    assert [row["test_error"] for row in top["architectures"]] == pytest.approx(best)


def test_bench_store_writes_a_study_and_refuses_a_missing_or_full_out(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    bench.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "--store", "3", "--out", str(tmp_path / "s")])
    assert args.func(args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"wrote 3 architectures (120 runs, 720 curve rows) to {tmp_path / 's'} in ")
    assert math.isfinite(float(line.split(" s per thousand")[0].rsplit("(", 1)[1]))
    assert len(survey(Store(tmp_path / "s"), driver=False).finished) == 3
    with pytest.raises(SpecError, match="bench.out = .* must be a new or empty directory"):
        args.func(args)
    args = parser.parse_args(["bench", "--store", "3"])
    with pytest.raises(SpecError, match="bench.out = None: must name"):
        args.func(args)
    args = parser.parse_args(["bench", "--store", "0", "--out", str(tmp_path / "t")])
    with pytest.raises(SpecError, match="store"):
        args.func(args)
