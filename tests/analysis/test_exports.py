"""``archstudy export`` (``analysis.exports``): each target round-trips through its own library (optuna and
optuna-dashboard's HTTP API, mlflow.search_runs, tensorboard's event loader, datasets.load_dataset), the values read
back equal the study's, a failed architecture is a failed trial or run with the spec drawn again, the study's files are
not changed, and a missing library or a non-empty destination is one line."""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server
from urllib.request import urlopen

import numpy as np
import pytest

from archstudy.analysis import load_results
from archstudy.analysis.exports import export_study, library, read_source
from archstudy.sampling import SpecError, UserError
from archstudy.study.execution.study_notes import add_note
from archstudy.study.perf.synthetic_store import write_synthetic_study

N, RATES, EPOCHS = 6, 3, 2


def _needs(module: str):
    try:
        importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{module} is not installed (the optional extra export: pip install -e '.[export]')")


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """6 synthetic architectures (3 rates, curves of 3 epochs), the last one failed instead of finished, one note."""
    root = tmp_path_factory.mktemp("export") / "study"
    write_synthetic_study(str(root), N, num_lrs=RATES, curve_epochs=EPOCHS)
    last = sorted(p.stem for p in (root / "architectures").glob("*.parquet"))[-1]
    for table in ("architectures", "runs", "curves"):
        (root / table / f"{last}.parquet").unlink()
    (root / "failed").mkdir(exist_ok=True)
    (root / "failed" / f"{last}.json").write_text(json.dumps({"reason": "worker lost", "attempts": 3}))
    add_note(str(root), "a first look at the synthetic study", ["pilot"])
    return root


def _digest(root: Path) -> dict[str, str]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="module")
def truth(study):
    r = load_results(study)
    arch = r.architectures.set_index("arch_id")
    return arch, r.failed[0]


def test_the_source_names_the_failed_architectures_spec_drawn_again(study, truth):
    _, failure = truth
    spec = read_source(study).failed_specs[failure["arch_id"]]
    assert spec is not None and spec.content_id == failure["arch_id"]


def test_optuna_trials_hold_the_values_and_optuna_dashboard_serves_them(study, truth, tmp_path):
    _needs("optuna")
    _needs("optuna_dashboard")
    import optuna
    import optuna_dashboard

    arch, failure = truth
    before = _digest(study)
    done = export_study(study, "optuna", tmp_path / "out")
    assert _digest(study) == before
    storage = f"sqlite:///{tmp_path / 'out' / 'optuna.db'}"
    loaded = optuna.load_study(study_name="study", storage=storage)
    complete = [t for t in loaded.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert {t.user_attrs["arch_id"]: t.value for t in complete} == arch["test_error"].to_dict()
    for t in complete:
        row = arch.loc[t.user_attrs["arch_id"]]
        assert t.params["depth"] == row["depth"] and t.params["activation"] == row["activation"]
        assert t.user_attrs["nlc"] == row["nlc"] and t.user_attrs["val_error"] == row["val_error"]
    (fail,) = [t for t in loaded.trials if t.state == optuna.trial.TrialState.FAIL]
    assert fail.user_attrs["arch_id"] == failure["arch_id"] and "worker lost" in fail.user_attrs["why"]
    assert "depth" in fail.params
    assert loaded.user_attrs["notes"][0]["text"] == "a first look at the synthetic study"
    assert done.counts["trials"] == N
    # optuna-dashboard's own server, on the export, read back over HTTP
    app = optuna_dashboard.wsgi(storage)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        studies = json.load(urlopen(f"{base}/api/studies", timeout=30))["study_summaries"]
        assert [s["study_name"] for s in studies] == ["study"]
        detail = json.load(urlopen(f"{base}/api/studies/{studies[0]['study_id']}", timeout=30))
        served = sorted(t["values"][0] for t in detail["trials"] if t["state"] == "Complete")
        assert np.allclose(served, sorted(arch["test_error"]), rtol=0, atol=1e-12)
    finally:
        server.shutdown()
        server.server_close()


def test_mlflow_search_runs_finds_each_architecture_its_rates_and_curve(study, truth, tmp_path):
    _needs("mlflow")
    import mlflow

    arch, failure = truth
    export_study(study, "mlflow", tmp_path / "out")
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    mlflow.set_tracking_uri(client.tracking_uri)
    try:
        runs = mlflow.search_runs(experiment_names=["study"], filter_string="tags.`archstudy.kind` = 'architecture'")
    finally:
        mlflow.set_tracking_uri(None)
    trained = runs[runs["status"] == "FINISHED"].set_index("tags.archstudy.arch_id")
    assert trained["metrics.test_error"].to_dict() == arch["test_error"].to_dict()
    assert trained["params.activation"].to_dict() == arch["activation"].to_dict()
    (failed,) = runs[runs["status"] == "FAILED"]["tags.archstudy.arch_id"]
    assert failed == failure["arch_id"]
    assert (runs["tags.mlflow.source.name"] == "archstudy").all() and runs["tags.archstudy.numpy"].notna().all()
    run_id = trained["run_id"].iloc[0]
    curve = client.get_metric_history(run_id, "curve/monitored_error")
    assert [m.step for m in curve] == list(range(EPOCHS + 1))
    rates = client.search_runs([runs["experiment_id"].iloc[0]], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'")
    assert sorted(int(r.data.tags["archstudy.lr_index"]) for r in rates) == list(range(RATES))


def test_tensorboard_reads_the_hparams_and_the_curves_back(study, truth, tmp_path):
    _needs("tensorboard")
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
    from tensorboard.plugins.hparams import metadata as hp_meta
    from tensorboard.plugins.hparams import plugin_data_pb2

    arch, failure = truth
    export_study(study, "tensorboard", tmp_path / "out")
    mux = EventMultiplexer().AddRunsFromDirectory(str(tmp_path / "out"))
    mux.Reload()
    units = {f"{int(r['index']):06d}-{a}": a for a, r in arch.iterrows()}
    for run, arch_id in units.items():
        (event,) = mux.Tensors(run, "test_error")
        assert event.tensor_proto.float_val[0] == pytest.approx(arch.loc[arch_id, "test_error"], rel=1e-6)
        assert [e.step for e in mux.Tensors(run, "curve/monitored_error")] == list(range(EPOCHS + 1))
        content = mux.SummaryMetadata(run, hp_meta.SESSION_START_INFO_TAG).plugin_data.content
        start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
        assert start.hparams["activation"].string_value == arch.loc[arch_id, "activation"]
    config = mux.SummaryMetadata(".", hp_meta.EXPERIMENT_TAG).plugin_data.content
    experiment = plugin_data_pb2.HParamsPluginData.FromString(config).experiment
    assert "test_error" in [m.name.tag for m in experiment.metric_infos]
    assert any(failure["arch_id"] in run for run in mux.Runs())


def test_datasets_loads_every_table_and_the_card_names_the_provenance(study, truth, tmp_path):
    _needs("datasets")
    import datasets

    arch, failure = truth
    export_study(study, "hf", tmp_path / "out")
    table = datasets.load_dataset(str(tmp_path / "out"), "architectures", split="train").to_pandas()
    assert table.set_index("arch_id")["test_error"].to_dict() == arch["test_error"].to_dict()
    runs = datasets.load_dataset(str(tmp_path / "out"), "runs", split="train")
    assert len(runs) == (N - 1) * RATES
    curves = datasets.load_dataset(str(tmp_path / "out"), "curves", split="train")
    assert len(curves) == (N - 1) * RATES * (EPOCHS + 1)
    failed = datasets.load_dataset(str(tmp_path / "out"), "failed", split="train")
    assert failed["arch_id"] == [failure["arch_id"]]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "numpy " + np.__version__ in card and "a first look at the synthetic study" in card


def test_a_missing_library_is_one_line_naming_the_pip_command(monkeypatch):
    real = importlib.import_module

    def without_optuna(name, *args):
        if name == "optuna":
            raise ImportError("No module named 'optuna'", name="optuna")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_optuna)
    with pytest.raises(UserError) as e:
        library("optuna")
    assert "\n" not in str(e.value) and 'pip install "archstudy[export]"' in str(e.value)


def test_a_non_empty_destination_or_an_unknown_target_is_refused_and_nothing_is_written(study, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(SpecError, match="new or empty directory"):
        export_study(study, "hf", tmp_path)
    with pytest.raises(SpecError, match="must be one of optuna, mlflow, tensorboard, hf"):
        export_study(study, "wandb", tmp_path / "new")
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
