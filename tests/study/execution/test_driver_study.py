"""The study runner end to end on the real pipeline (waveform-noise, tiny budgets), on a local multi-node Ray
cluster (``ray.cluster_utils.Cluster``: two 1-CPU nodes, the head with a logical GPU), shared by the module.

Every interrupted study is compared with an uninterrupted one of the same seed: same ids, every value equal
(NaN == NaN), no duplicates, no temporary files. Interruptions: the driver SIGKILLed (embedded Ray, and
connected to the cluster), a worker SIGKILLed mid-architecture, a node removed mid-study, a truncated file,
architectures failing on every attempt (asked for a GPU where torch has none) then resumed on CPUs.
"""

import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
import yaml
from ray.cluster_utils import Cluster

from study_commands import CHEAP_METRICS, SPACE, VOLATILE, cli, files, tiny_study

from archstudy.sampling import UserError, get_space, init_seed, sample_spec, siblings
from archstudy.study.cli import main
from archstudy.study.execution.engine import Engine
from archstudy.study import load_dataset
from archstudy.study.execution.driver import (
    _check_capacity,
    data_fingerprint,
    prepare_study,
    resume_study,
    run_prepared,
    run_study,
)
from archstudy.study.execution.progress import Progress
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import Store
from archstudy.study.execution.unit import execute_unit

KEYS = tiny_study(architectures=4)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 1})
    c.second = c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False, logging_level=logging.ERROR)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def _tables(location):
    store = Store(location)
    return store.read_table("architectures"), store.read_table("runs")


def _values(df):
    keep = [c for c in df.columns if c not in VOLATILE]
    return (
        df[keep]
        .sort_values(["index", "arch_id", *(["lr_index"] if "lr_index" in keep and "lr_min" not in keep else [])])
        .reset_index(drop=True)
    )


def assert_same_study(location, reference):
    """The study at ``location`` holds exactly the reference's architectures and runs, value for value."""
    arch, runs = _tables(location)
    ref_arch, ref_runs = reference["arch"], reference["runs"]
    assert arch["arch_id"].is_unique and sorted(arch["arch_id"]) == sorted(ref_arch["arch_id"])
    pd.testing.assert_frame_equal(_values(arch), _values(ref_arch), check_exact=True)
    pd.testing.assert_frame_equal(_values(runs), _values(ref_runs), check_exact=True)
    store = Store(location)
    assert store.temp_files() == []
    assert len(pd.read_parquet(Path(location) / "architectures")) == len(ref_arch)
    assert store.names("checkpoints", ".pt") == []
    return arch


@pytest.fixture(scope="module")
def reference(cluster, tmp_path_factory):
    """The uninterrupted study every other test compares with."""
    out = tmp_path_factory.mktemp("reference") / "study"
    log = io.StringIO()
    result = run_study(KEYS, out, progress=log)
    arch, runs = _tables(out)
    return {"path": out, "arch": arch, "runs": runs, "result": result, "log": log.getvalue()}


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _unit_workers(parents=None):
    """(pid, parent pid) of the Ray workers running an architecture now (process title ray::execute_unit),
    those whose parent (their node's raylet) is among ``parents`` when given."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if cmd.startswith(b"ray::execute_unit"):
            ppid = _ppid(int(d))
            if parents is None or ppid in parents:
                out.append((int(d), ppid))
    return out


def _raylets(cluster) -> set:
    return {n.all_processes["raylet"][0].process.pid for n in cluster.list_all_nodes()}


def _wait_for(predicate, timeout=120.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_four_architecture_study_completes_with_the_rows_the_contract_describes(reference):
    arch, runs = reference["arch"], reference["runs"]
    config = Store(reference["path"]).read_config()
    n_lrs = runs.groupby("arch_id").size()
    assert len(arch) == 4 and arch["arch_id"].is_unique and sorted(arch["index"]) == [0, 1, 2, 3]
    assert len(runs) == 4 * n_lrs.iloc[0] and (n_lrs == n_lrs.iloc[0]).all() and (arch["n_runs"] == n_lrs.iloc[0]).all()
    space = get_space(config.space)
    for _, row in arch.iterrows():
        spec = sample_spec(11, int(row["index"]), 40, 3, space, 3000)
        assert row["arch_id"] == spec.content_id and row["num_params"] == spec.num_params
        assert row["seed"] == init_seed(11, int(row["index"])) and row["variant"] == "base"
        assert row["depth"] == spec.depth and row["width"] == spec.width and row["activation"] == spec.activation
        mine = runs[runs["arch_id"] == row["arch_id"]]
        sel = mine[mine["selected"]]
        assert len(sel) == 1 and sel["lr_index"].iloc[0] == row["lr_index"] and sel["lr"].iloc[0] == row["lr"]
        assert row["val_error"] == sel["val_error"].iloc[0] == mine["val_error"].min()  # selected: lowest VCE
        assert row["n_diverged"] == mine["diverged"].sum() and row["all_diverged"] == mine["diverged"].all()
    for col in ("nlc", "bias", "c_out", "ar", "output_q", "lr_min", "lr", "flops", "nlc_tau"):
        assert arch[col].map(lambda v: v == v and abs(v) < float("inf")).all(), col
    assert (arch["nlc"] > 0).all() and (arch["ar"] == arch["activation_units"] / arch["num_params"]).all()
    for col in ("val_error", "train_error", "test_error"):
        assert arch[col].between(0, 1).all() and runs[col].dropna().between(0, 1).all()
    assert (arch["total_s"] >= arch["train_s"]).all() and (arch["attempt"] == 1).all()
    assert not arch["nonfinite_init"].any() and (arch["dataset"] == "waveform-noise").all()
    assert reference["result"].complete and reference["result"].finished == 4
    assert "4/4 architectures finished" in reference["log"]
    # said before training: what runs (study.execution.costs.launch_line); and no progress record is left behind
    assert f"{reference['path']}: 4 architectures to run: 3,000-parameter budget" in reference["log"]
    assert not list(Path(reference["path"]).glob("progress/*"))


def test_the_plan_of_a_new_study_is_what_its_run_did(reference, tmp_path):
    """``prepare_study`` (read-only) of the reference's config on a fresh directory: its todo is the units the
    reference's run committed, its derived keys are what that run recorded in study.yaml."""
    plan = prepare_study(KEYS, tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists() and plan.new and plan.write_config and plan.refusal() is None
    committed = {p.name.removesuffix(".parquet") for p in (Path(reference["path"]) / "architectures").iterdir()}
    assert {u.name for u in plan.todo} == committed and len(plan.todo) == 4
    stored = Store(reference["path"]).read_config()
    assert plan.derived == {"d_in": 40, "d_out": 3, "data_fingerprint": stored.data_fingerprint}
    assert plan.derived["data_fingerprint"] is not None


def test_the_table_equals_the_same_units_computed_in_this_process(reference):
    """Ray changes nothing: unit 2 run here, with the same thread count, gives the stored row exactly."""
    import torch

    from archstudy.study import load_dataset
    from archstudy.study.execution.unit import work_units, compute_unit

    config = Store(reference["path"]).read_config()
    unit = work_units(config)[2]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        arch, runs, _ = compute_unit(unit, load_dataset("waveform-noise"), config)
    finally:
        torch.set_num_threads(threads)
    stored = reference["arch"].set_index("arch_id").loc[unit.arch_id]
    for k, v in arch.items():
        if k not in VOLATILE and k != "arch_id":
            assert (v != v and stored[k] != stored[k]) or v == stored[k], k


def test_a_rate_window_trains_the_sweeps_runs_at_its_rates_and_its_rows_pass_the_value_checks(reference):
    """``lr_window: {size: m, centre: c}``: unit 2 computed with a window of 2 rates gives the reference's runs at
    those rates (the finished study's full sweep), its selected run the window's lowest validation error, so the
    regret is that of the offline measurement (``analysis.learning_rates.window_regret``); and its rows pass the
    checks every reader makes (m runs of consecutive indices, ``n_runs`` m), which a full sweep's rows then fail."""
    import dataclasses

    import numpy as np
    import torch

    from archstudy.analysis.learning_rates import rate_sweep, window_regret
    from archstudy.study import load_dataset
    from archstudy.study.execution.unit import compute_unit, work_units
    from archstudy.study.experiment.rate_window import window_start
    from archstudy.study.execution.store import to_table
    from archstudy.study.experiment.schema import ARCHITECTURES, RUNS
    from archstudy.study.experiment.value_checks import planned_runs, value_problem

    config = Store(reference["path"]).read_config()
    n = config.counted_protocol.num_lrs
    unit = work_units(config)[2]
    full = reference["runs"][reference["runs"]["arch_id"] == unit.arch_id].sort_values("lr_index")
    centre = int(full["lr_index"][full["selected"]].iloc[0]) + 1  # off the best: the window may miss it
    windowed = dataclasses.replace(config, lr_window={"size": 2, "centre": centre})
    assert windowed.runs_per_architecture == 2 and windowed.counted_protocol.num_lrs == 2
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        arch, runs, _ = compute_unit(unit, load_dataset("waveform-noise"), windowed)
    finally:
        torch.set_num_threads(threads)
    s = int(window_start(centre, 2, n))
    assert [r["lr_index"] for r in runs] == [s, s + 1] and arch["n_runs"] == 2
    for r in runs:
        ref = full[full["lr_index"] == r["lr_index"]].iloc[0]
        for k in ("lr", "epochs", "val_error", "train_error", "test_error", "diverged"):
            assert r[k] == ref[k] or abs(r[k] - ref[k]) <= 1e-9, (k, r[k], ref[k])
    inside = full[full["lr_index"].between(s, s + 1)]
    best = inside.sort_values(["val_error", "lr_index"]).iloc[0]
    assert arch["lr_index"] == best["lr_index"] and arch["test_error"] == best["test_error"]
    sweep = rate_sweep(reference["arch"][reference["arch"]["arch_id"] == unit.arch_id], full)
    regret = window_regret(sweep, np.array([centre]), 2)[0]
    assert regret == arch["test_error"] - full["test_error"][full["selected"]].iloc[0]
    plan = planned_runs(windowed.protocol, windowed.lr_window)
    assert (int(plan), plan.series) == (2, n)
    assert value_problem(to_table(RUNS, [{"arch_id": unit.arch_id, "index": 2, **r} for r in runs]), RUNS, plan) is None
    assert value_problem(to_table(ARCHITECTURES, [arch]), ARCHITECTURES, plan) is None
    whole = to_table(RUNS, full.to_dict("records"))
    assert "the protocol plans 2" in value_problem(whole, RUNS, plan)


def test_error_perturbation_is_measured_on_the_trained_network_when_switched_on(reference):
    """E.3 (figure 3E) belongs to the trained network: with ``perturbation`` on, the unit's row holds
    measure_trained of the network training selected, the same number an independent retraining gives;
    the init metrics are unchanged by the switch."""
    import torch

    from archstudy.study import MetricOptions, Protocol, measure_trained, train_architecture
    from archstudy.study.execution.unit import work_units, compute_unit

    base = Store(reference["path"]).read_config()
    metrics = {**CHEAP_METRICS, "perturbation": True, "region_batches": 1, "region_directions": 2}
    config = base.replace(metrics=metrics)
    unit = work_units(config)[1]
    data = load_dataset("waveform-noise")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        arch, _, _ = compute_unit(unit, data, config)
        outcome = train_architecture(unit.spec, data, seed=unit.seed, protocol=Protocol.from_dict(config.protocol))
    finally:
        torch.set_num_threads(threads)
    expected = measure_trained(
        outcome.network, data, unit.spec, options=MetricOptions.from_dict(metrics), seed=unit.seed
    )["error_perturbation"]
    assert 0 < arch["error_perturbation"] <= 1e3 and arch["error_perturbation"] == expected
    stored = reference["arch"].set_index("arch_id").loc[unit.arch_id]
    assert arch["nlc"] == stored["nlc"] and stored["error_perturbation"] != stored["error_perturbation"]  # NaN


def test_capacity_is_counted_node_by_node_and_resources_no_node_has_are_refused_on_an_embedded_ray(cluster):
    assert Engine(execute_unit, cpus=1).capacity() == 2
    assert Engine(execute_unit, cpus=0.5, gpus=0.5).capacity() == 2  # both on the head, the node with the GPU
    assert Engine(execute_unit, cpus=2).capacity() == 0  # two CPUs in the cluster, never two on one node
    with pytest.raises(
        UserError,
        match=r"^this machine cannot run one architecture \(each needs 2 CPU; Ray sees "
        r"2 CPU, 1 GPU\): lower --cpus-per-arch",
    ):
        _check_capacity(Engine(execute_unit, cpus=2), True, Progress(None, 0, 0))
    log = io.StringIO()
    _check_capacity(Engine(execute_unit, cpus=2), False, Progress(log, 0, 0))  # a cluster may still grow
    assert "waiting for the cluster to add one" in log.getvalue()


def test_resuming_a_finished_study_does_nothing_and_says_so(reference, tmp_path, capsys):
    study = tmp_path / "s"
    shutil.copytree(reference["path"], study)
    before = files(study)
    log = io.StringIO()
    result = resume_study(study, progress=log)
    assert result.finished == 0 and result.complete
    assert "nothing to do: all 4 architectures are finished" in log.getvalue()
    assert files(study) == before
    # The same through the command line, which also draws the report of the (complete) study when asked.
    assert main(["resume", str(study), "--report"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(study / "report.html") and "nothing to do" in err
    assert "waveform-noise" in (study / "report.html").read_text()
    drawn = {"report.html", "report.findings.json"}  # the page and its findings beside it
    assert {k: v for k, v in files(study).items() if k not in drawn} == before


def test_a_checkpoint_left_by_a_driver_killed_right_after_a_commit_is_removed_by_resume(reference, tmp_path):
    study = tmp_path / "s"
    shutil.copytree(reference["path"], study)
    name = Store(study).names("architectures", ".parquet")[0]
    (study / "checkpoints").mkdir(exist_ok=True)
    (study / "checkpoints" / f"{name}.pt").write_bytes(b"trainer state of a unit that went on to commit")
    log = io.StringIO()
    result = resume_study(study, progress=log)
    assert result.finished == 0 and result.complete
    assert f"{name}: removed the checkpoint of an architecture that had finished" in log.getvalue()
    assert not (study / "checkpoints" / f"{name}.pt").exists()
    assert_same_study(study, reference)


def test_a_resume_that_loads_other_data_is_refused_unless_the_config_is_forced(reference, tmp_path):
    study = tmp_path / "s"
    shutil.copytree(reference["path"], study)
    text = (study / "study.yaml").read_text()
    real = Store(study).read_config().data_fingerprint
    assert real == data_fingerprint(load_dataset("waveform-noise")) and f"data_fingerprint: {real}" in text
    (study / "study.yaml").write_text(text.replace(real, "0123456789abcdef"))
    before = files(study)
    with pytest.raises(
        UserError,
        match=r"the data loaded now \(fingerprint [0-9a-f]{16}\) is not the study's "
        r"\(0123456789abcdef\)",
    ):
        resume_study(study, progress=None)
    assert files(study) == before
    log = io.StringIO()
    result = run_study(KEYS, study, force_config=True, progress=log)
    assert result.complete and result.finished == 0 and "--force-config" in log.getvalue()
    assert Store(study).read_config().data_fingerprint == real


def test_a_larger_architecture_count_extends_a_study_and_leaves_the_finished_files_alone(reference, tmp_path):
    study = tmp_path / "s"
    shutil.copytree(reference["path"], study)
    before = {k: v for k, v in files(study).items() if k.endswith(".parquet")}
    everything = files(study)
    # the plan (read-only) says the one new unit; run, it is the one unit trained
    plan = prepare_study({**KEYS, "architectures": 5}, study)
    assert files(study) == everything and [u.index for u in plan.todo] == [4] and plan.write_config
    log = io.StringIO()
    result = run_prepared(plan, progress=log)
    assert result.finished_before == 4 and result.finished == 1 and result.complete
    new = {p.name.removesuffix(".parquet") for p in (study / "architectures").iterdir()} - set(plan.state.finished)
    assert new == {plan.todo[0].name}
    assert prepare_study({**KEYS, "architectures": 5}, study).todo == []
    assert "extending the study from 4 to 5 architectures" in log.getvalue()
    after = files(study)
    assert all(after[k] == v for k, v in before.items())
    assert Store(study).read_config().architectures == 5
    arch, _ = _tables(study)
    assert sorted(arch["index"]) == [0, 1, 2, 3, 4]
    assert arch.set_index("index").loc[4, "arch_id"] == sample_spec(11, 4, 40, 3, get_space(SPACE), 3000).content_id


def test_a_study_at_a_file_uri_runs_through_the_filesystem_abstraction(reference, tmp_path, capsys):
    uri = f"file://{tmp_path}/u"
    result = run_study({**KEYS, "architectures": 2}, uri, progress=None)
    assert result.complete and result.location == uri
    arch = pd.read_parquet(tmp_path / "u" / "architectures")
    ref = reference["arch"][reference["arch"]["index"] < 2]
    pd.testing.assert_frame_equal(_values(arch), _values(ref), check_exact=True)
    assert main(["status", uri, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["finished"] == 2


def test_a_truncated_file_is_reported_by_status_and_redone_by_resume(reference, tmp_path, capsys):
    study = tmp_path / "s"
    shutil.copytree(reference["path"], study)
    victim = sorted((study / "architectures").glob("*.parquet"))[1]
    victim.write_bytes(victim.read_bytes()[:300])
    assert main(["status", str(study), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["finished"] == 3 and state["remaining"] == 1 and list(state["corrupt"]) == [victim.stem]
    assert state["corrupt"][victim.stem].startswith("architectures file: unreadable Parquet")
    assert main(["status", str(study)]) == 0
    text = capsys.readouterr().out
    assert "corrupt" in text and victim.stem in text
    log = io.StringIO()
    result = resume_study(study, progress=log)
    assert result.finished == 1 and list(result.redone) == [victim.stem]
    assert f"{victim.stem}: architectures file: unreadable Parquet" in log.getvalue()
    assert_same_study(study, reference)


def test_a_worker_killed_mid_architecture_is_retried_and_the_study_completes(cluster, reference, tmp_path):
    study = tmp_path / "s"
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", run_study(KEYS, study, progress=None)))
    thread.start()

    # While it runs, status sees the driver and what it has in flight.
    def in_progress():
        state = survey(Store(study)) if Store(study).is_study() else None
        return state if state is not None and state.in_progress else None

    state = _wait_for(in_progress, what="architectures in progress")
    assert state.driver_running and state.driver["pid"] == os.getpid()
    assert set(state.in_progress) <= {u.name for u in state.units} and len(state.in_progress) <= 2
    assert len(state.finished) + len(state.in_progress) + len(state.remaining) == 4
    pid, _ = _wait_for(lambda: _unit_workers(_raylets(cluster)), what="a worker running an architecture")[0]
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=300)
    assert box["result"].complete and not box["result"].failed
    arch = assert_same_study(study, reference)
    assert (arch["attempt"] == 2).sum() == 1 and set(arch["attempt"]) == {1, 2}


def test_a_node_removed_mid_study_loses_nothing(cluster, reference, tmp_path):
    study = tmp_path / "s"
    node = cluster.second
    raylet = node.all_processes["raylet"][0].process.pid
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", run_study(KEYS, study, progress=None)))
    thread.start()
    _wait_for(lambda: _unit_workers({raylet}), what="an architecture on node 2")
    cluster.remove_node(node)
    try:
        thread.join(timeout=300)
        assert box["result"].complete and not box["result"].failed
        arch = assert_same_study(study, reference)
        assert (arch["attempt"] == 2).sum() >= 1
    finally:
        cluster.second = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()


def test_failing_architectures_are_recorded_with_their_reason_and_resume_redoes_them(cluster, tmp_path, capsys):
    """Asking for a GPU where torch sees none fails every attempt (on the GPU actor pool); the study still ends,
    each failure recorded with its one-line reason; a resume on CPUs finishes them. With siblings."""
    study = tmp_path / "s"
    keys = {
        **KEYS,
        "architectures": 1,
        "siblings": ["param", "skip"],
        "resources": {"cpus_per_arch": 0.5, "gpus_per_arch": 0.5},
    }
    log = io.StringIO()
    result = run_study(keys, study, progress=log)
    assert not result.complete and result.finished == 0 and len(result.failed) == 3
    reason = "RuntimeError: gpus_per_arch = 0.5 but torch sees no CUDA device on "
    assert all(r.startswith(reason) for r in result.failed.values())
    records = {p.stem: json.loads(p.read_text()) for p in (study / "failed").glob("*.json")}
    assert set(records) == set(result.failed) and all(r["attempts"] == 2 for r in records.values())
    assert main(["status", str(study)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  failed +3 ", out, re.M) and re.search(r"^  remaining +0$", out, re.M) and reason in out
    # Resuming without the failed ones has nothing to do, and exits 1: not every architecture is finished.
    before = files(study)
    assert main(["resume", str(study), "--skip-failed"]) == 1
    assert "nothing to do: 0 of 3 architectures are finished, 3 failed" in capsys.readouterr().err
    assert files(study) == before
    log = io.StringIO()
    result = resume_study(study, cpus_per_arch=1, gpus_per_arch=0, progress=log)
    assert result.complete and result.finished == 3 and not list((study / "failed").glob("*.json"))
    arch, _ = _tables(study)
    assert (arch["attempt"] == 3).all()  # two attempts on the GPU pool, then one on CPUs
    base = sample_spec(11, 0, 40, 3, get_space(SPACE), 3000)
    mine = arch.set_index("variant")
    assert sorted(mine.index) == ["base", "param", "skip"] and (arch["index"] == 0).all()
    for axis in ("param", "skip"):
        assert mine.loc[axis, "arch_id"] == siblings(base, axis, 3000)[0].content_id
    assert mine.loc["base", "arch_id"] == base.content_id
    assert (arch["seed"] == init_seed(11, 0)).all()  # siblings share the initialization seed
    for axis, other in (("param", "skip"), ("skip", "param")):  # each sibling differs in its own axis only
        assert mine.loc[axis, axis] != mine.loc["base", axis] and mine.loc[axis, other] == mine.loc["base", other]


def _launch(args):
    return cli(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _kill(proc):
    """SIGKILL the driver, then whatever of its process group outlives it (Ray's agents of an embedded Ray)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_the_driver_killed_at_different_moments_then_resumed_gives_the_uninterrupted_study(
    cluster, reference, tmp_path
):
    study = tmp_path / "s"
    cfg = tmp_path / "study-keys.yaml"
    cfg.write_text(yaml.safe_dump(KEYS))
    arch_dir = study / "architectures"
    n_files = lambda: len(list(arch_dir.glob("*.parquet"))) if arch_dir.exists() else 0  # noqa: E731

    # 1. Embedded Ray (the default): killed right after the first architecture was committed.
    proc = _launch(["run", "--config", str(cfg), "--out", str(study), "--checkpoint-every", "0.05"])
    try:
        _wait_for(lambda: n_files() >= 1 or proc.poll() is not None, what="the first result")
        # Its workers: children of its raylet, itself a child of the driver.
        embedded = [pid for pid, ppid in _unit_workers() if _ppid(ppid) == proc.pid]
    finally:
        _kill(proc)
    assert proc.returncode == -signal.SIGKILL
    first = n_files()
    assert 1 <= first < 4, proc.stderr.read().decode()[-2000:]
    _wait_for(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in embedded),
        timeout=60,
        what="the embedded Ray's workers to end with it",
    )

    # 2. Connected to the cluster: killed while an architecture is in flight on one of its workers.
    raylets = _raylets(cluster)
    proc = _launch(["resume", str(study), "--address", cluster.address, "--checkpoint-every", "0.05"])
    try:
        _wait_for(lambda: _unit_workers(raylets) or proc.poll() is not None, what="an architecture in flight")
    finally:
        _kill(proc)
    assert proc.returncode == -signal.SIGKILL and n_files() < 4
    _wait_for(lambda: not _unit_workers(raylets), timeout=60, what="the killed driver's workers to end")

    # 3. The same command as the first, to the end.
    result = run_study(KEYS, study, progress=None, checkpoint_every_s=0.05)
    assert result.complete and result.finished_before >= first
    assert_same_study(study, reference)
    names = sorted(p.stem for p in arch_dir.glob("*.parquet"))
    assert names == sorted(p.stem for p in (study / "runs").glob("*.parquet")) and len(set(names)) == 4
