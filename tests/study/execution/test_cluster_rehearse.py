"""The rehearsal of cluster.yaml (study.execution.cluster): its translation into a fake multi-node autoscaling config,
the processes it calls its own, and (slow) a study under Ray's real autoscaler started from zero worker nodes.

Other Rays run on this machine at the same time (other tests, other people): the rehearsal gets a free port
and its own temp dir, the test connects to it by its explicit address, and only processes of its own session
are ever ended."""

import copy
import importlib
import logging
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from process_state import alive
import ray
import yaml
from ray.autoscaler._private.fake_multi_node.node_provider import FakeMultiNodeProvider
from ray.autoscaler._private.util import validate_config

from archstudy.sampling import EXTENDED, SpecError
from archstudy.study.cli import main
from archstudy.study.execution.cluster import (
    HEAD_TYPE,
    LOGICAL_GPUS_ENV,
    Scale,
    _free_port,
    _stop_session,
    autoscaling_config,
    read_cluster_file,
    session_processes,
    start,
    stop,
)
from archstudy.study.execution.driver import run_study
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import Store
from archstudy.study.execution.unit import unit_device

ROOT = Path(__file__).resolve().parents[3]
CLUSTER_YAML = ROOT / "cluster.yaml"


# -- the translation ----------------------------------------------------------------------------------------
def _stated_in_comments(text: str) -> dict:
    """instance type -> (GPUs, vCPUs) as cluster.yaml's comments state them ("# p5.4xlarge: 1 x H100 80 GB, 16
    vCPU")."""
    return {
        m[1]: (int(m[2]), int(m[3]))
        for m in re.finditer(r"#\s*([a-z0-9]+\.[a-z0-9]+): (\d+) x [^,]+, (\d+) vCPU", text)
    }


def test_the_project_file_translates_to_its_instances_gpus_as_logical_gpus_on_a_cpu_0_head():
    cluster = read_cluster_file(CLUSTER_YAML)
    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    stated = _stated_in_comments(CLUSTER_YAML.read_text())
    assert cluster.head.name == raw["head_node_type"] and (cluster.head.cpus, cluster.head.gpus) == (0, 0)
    assert [t.name for t in cluster.workers] == [n for n in raw["available_node_types"] if n != raw["head_node_type"]]
    assert {t.instance_type for t in cluster.workers} == {"p5.4xlarge", "p4d.24xlarge", "p5.48xlarge"} <= set(stated)
    for t in cluster.workers:
        assert (t.gpus, t.cpus) == stated[t.instance_type]
        entry = raw["available_node_types"][t.name]
        assert (t.min_workers, t.max_workers) == (entry["min_workers"], entry["max_workers"])

    scale = Scale(node_cpus=2, max_nodes=3, idle_timeout_minutes=0.5)
    config = autoscaling_config(cluster, scale, "10.0.0.1:6390")
    validate_config(copy.deepcopy(config))  # Ray's own schema accepts it
    types = config["available_node_types"]
    assert config["head_node_type"] == HEAD_TYPE and types[HEAD_TYPE]["resources"]["CPU"] == 0
    provider = config["provider"]
    assert provider["type"] == "external" and provider["gcs_address"] == "10.0.0.1:6390"
    module, name = provider["module"].rsplit(".", 1)
    assert issubclass(getattr(importlib.import_module(module), name), FakeMultiNodeProvider)
    assert config["max_workers"] == min(raw["max_workers"], 3) and config["idle_timeout_minutes"] == 0.5
    assert config["upscaling_speed"] == raw["upscaling_speed"]
    for t in cluster.workers:
        here = types[t.name]
        assert here["resources"]["GPU"] == t.gpus  # the GPU count is kept, as logical GPUs
        assert here["resources"]["CPU"] == min(t.cpus, 2)
        assert here["max_workers"] == min(t.max_workers, 3) and here["min_workers"] == min(t.min_workers, 3)


def _write(tmp_path, data) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["available_node_types"]["gpu.h100"]["node_config"].update(InstanceType="x9.huge"), "resources"),
        (lambda d: d.update(head_node_type="nope"), "head_node_type"),
        (lambda d: d["available_node_types"]["gpu.h100"].update(min_workers=9), "min_workers"),
        (lambda d: d["available_node_types"]["gpu.h100"].update(resources={"GPU": -1}), "GPU"),
        (lambda d: d.pop("available_node_types"), "available_node_types"),
    ],
)
def test_a_file_that_cannot_be_translated_is_a_one_line_error_naming_the_field(tmp_path, change, field):
    data = yaml.safe_load(CLUSTER_YAML.read_text())
    change(data)
    with pytest.raises(SpecError) as e:
        read_cluster_file(_write(tmp_path, data))
    assert e.value.field == field and "\n" not in str(e.value)


def test_declared_resources_win_over_the_instance_table(tmp_path):
    data = yaml.safe_load(CLUSTER_YAML.read_text())
    data["available_node_types"]["gpu.h100"].update(resources={"CPU": 1, "GPU": 2, "spot": 1})
    data["available_node_types"]["gpu.h100"]["node_config"]["InstanceType"] = "x9.huge"  # unknown: not needed
    t = next(t for t in read_cluster_file(_write(tmp_path, data)).workers if t.name == "gpu.h100")
    assert (t.cpus, t.gpus, t.custom) == (1, 2, {"spot": 1})
    assert (
        autoscaling_config(read_cluster_file(_write(tmp_path, data)), Scale(), "h:1")["available_node_types"][
            "gpu.h100"
        ]["resources"]["spot"]
        == 1
    )


def test_logical_gpus_train_on_cpu_only_in_rehearsal_mode(monkeypatch):
    import torch

    monkeypatch.delenv(LOGICAL_GPUS_ENV, raising=False)
    assert unit_device(0) == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="torch sees no CUDA device"):
            unit_device(0.25)
    monkeypatch.setenv(LOGICAL_GPUS_ENV, "1")
    assert unit_device(0.25) == "cpu" and unit_device(8) == "cpu"


def test_stop_without_a_rehearsal_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARCHSTUDY_CACHE", str(tmp_path))
    assert main(["cluster", "stop"]) == 0
    assert "no rehearsal is running" in capsys.readouterr().out
    assert main(["cluster", "lose-node"]) == 2
    assert "no rehearsal is running" in capsys.readouterr().err


# -- processes of a session ---------------------------------------------------------------------------------
SLEEP = "import time; time.sleep(120)"
PARENT = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
    "time.sleep(120)"
)


def test_only_processes_naming_the_session_and_their_descendants_are_its_own(tmp_path):
    session = str(tmp_path / "session_1")
    mine = subprocess.Popen([sys.executable, "-c", PARENT, f"--session_dir={session}"])
    other = [
        subprocess.Popen([sys.executable, "-c", SLEEP, f"--session_dir={session}0"]),  # a sibling session
        subprocess.Popen([sys.executable, "-c", SLEEP, f"{session}/logs/monitor.log"]),  # e.g. `tail -f` of a log
        subprocess.Popen([sys.executable, "-c", SLEEP, f"--temp-dir={tmp_path}"]),
    ]
    try:
        deadline = time.monotonic() + 30
        while len(session_processes(session)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        found = session_processes(session)
        assert mine.pid in found and len(found) == 2  # the process naming it, and its child
        child = next(p for p in found if p != mine.pid)
        assert _stop_session(session, grace_s=5.0) == 2
        mine.wait(timeout=10)
        assert not alive(child) and not session_processes(session)
        assert all(p.poll() is None for p in other)  # nobody else's process was touched
    finally:
        for p in [mine, *other]:
            p.kill()
            p.wait()


# -- a study under the real autoscaler (slow) ---------------------------------------------------------------
CHEAP_METRICS = {
    "nlc_batches": 4,
    "gradient_batches": 2,
    "variability_grid": 8,
    "variability_planes": 1,
    "proxy_batch_size": 32,
}
KEYS = {
    "dataset": "waveform-noise",
    "architectures": 4,
    "param_budget": 3000,
    "seed": 11,
    "space": EXTENDED.replace(name="extended-shallow", depths=(3, 5, 7)).to_dict(),
    "protocol": {"preset": "quick", "num_lrs": 3, "max_epochs": 2},
    "metrics": CHEAP_METRICS,
    "max_retries": 1,
}
# What legitimately differs between two computations of the same architecture on different workers.
VOLATILE = {"build_s", "measure_s", "train_s", "total_s", "wall_s", "finished_at", "attempt", "host", "device"}


def _values(df: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in df.columns if c not in VOLATILE]
    by = ["index", "arch_id"] + (["lr_index"] if "lr_index" in keep and "lr_min" not in keep else [])
    return df[keep].sort_values(by).reset_index(drop=True)


@contextmanager
def deadline(seconds: int, what: str):
    """Fail (instead of hanging the suite) if the body takes longer than ``seconds``."""

    def expired(signum, frame):
        raise TimeoutError(f"{what}: still not done after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _wait_for(predicate, timeout=300.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _nodes_in_progress(study: Path) -> dict:
    """name -> node of the architectures in progress that the driver's heartbeat places on a node."""
    store = Store(study)
    return survey(store).nodes if store.is_study() else {}


def _watch_raylets(rehearsal, seen: dict, stop_event: threading.Event) -> None:
    """Record every raylet of the rehearsal (node id -> type, pid, when first seen) until told to stop."""
    while not stop_event.is_set():
        for node in rehearsal.nodes():
            seen.setdefault(node["node_id"], {**node, "seen": time.monotonic()})
        stop_event.wait(0.2)


@pytest.mark.slow
def test_a_study_from_zero_gpu_nodes_under_the_autoscaler_equals_the_embedded_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARCHSTUDY_CACHE", str(tmp_path / "cache"))
    study = tmp_path / "cluster"
    # The embedded run of the same study: a local Ray of this process's own (never an existing cluster).
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        run_study(KEYS, tmp_path / "embedded", progress=None)
    finally:
        ray.shutdown()

    t0 = time.monotonic()
    rehearsal = start(
        read_cluster_file(CLUSTER_YAML),
        Scale(node_cpus=2, max_nodes=2, idle_timeout_minutes=0.05),
        port=_free_port(),
        dashboard=False,
        update_interval_s=1,
    )
    started_s = time.monotonic() - t0
    seen, watching = {}, threading.Event()
    watcher = threading.Thread(target=_watch_raylets, args=(rehearsal, seen, watching), daemon=True)
    watcher.start()
    try:
        with deadline(600, "the study on the rehearsal"):
            ray.init(address=rehearsal.address, log_to_driver=False, logging_level=logging.ERROR)
            try:
                head = [n for n in ray.nodes() if n["Alive"]]
                assert len(head) == 1 and head[0]["Resources"].get("CPU", 0) == 0  # from zero workers
                submitted, box = time.monotonic(), {}
                driver = threading.Thread(
                    target=lambda: box.setdefault(
                        "result", run_study(KEYS, study, address=rehearsal.address, gpus_per_arch=0.25, progress=None)
                    )
                )
                driver.start()
                # While it runs, `archstudy status` says which node runs which architecture.
                where = _wait_for(lambda: _nodes_in_progress(study), what="architectures in progress on a node")
                assert main(["status", str(study)]) == 0
                out = capsys.readouterr().out
                driver.join()
            finally:
                ray.shutdown()
        result = box["result"]
        assert result.complete and not result.failed
        workers = [n for n in seen.values() if n["type"] != HEAD_TYPE]
        assert workers and {n["type"] for n in workers} <= {"gpu.h100", "gpu.a100x8", "gpu.h100x8"}
        for name, node in where.items():
            assert node["type"] in {n["type"] for n in workers} and node["node_id"] in {n["node_id"] for n in workers}
            assert re.search(
                rf"^  {name}  node {re.escape(node['ip'])} \({node['type']}, {node['node_id']}\)$", out, re.M
            )
        first_node_s = min(n["seen"] for n in workers) - submitted
        # Idle worker nodes are removed after the idle timeout (3 s here), the head stays.
        with deadline(120, "the idle scale-down"):
            while any(n["type"] != HEAD_TYPE for n in rehearsal.nodes()):
                time.sleep(0.2)
        monitor = Path(rehearsal.session_dir, "logs", "monitor.log").read_text()
        assert re.search(r"Adding \d+ node\(s\) of type gpu\.", monitor)
        assert re.search(r"Terminating the node with id \w+ and ip \w+\. \(idle\)", monitor)
    finally:
        watching.set()
        watcher.join()
        state = tmp_path / "cache" / "cluster-rehearsal.json"
        stopped = stop(state)
        shutil.rmtree(rehearsal.temp_dir, ignore_errors=True)  # its logs (kept by `archstudy cluster stop`)
    assert stopped is not None and not state.exists()
    # Everything it started has ended: no process names its session, no raylet it had is alive.
    assert not session_processes(rehearsal.session_dir)
    assert not [n for n in seen.values() if alive(n["pid"])]
    raylets = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_names(p, rehearsal.session_dir)]
    assert raylets == []

    embedded, cluster = Store(tmp_path / "embedded"), Store(tmp_path / "cluster")
    for table in ("architectures", "runs"):
        pd.testing.assert_frame_equal(
            _values(cluster.read_table(table)), _values(embedded.read_table(table)), check_exact=True
        )
    assert set(cluster.read_table("architectures")["device"]) == {"cpu"}
    print(f"rehearsal: started in {started_s:.1f} s, first GPU node {first_node_s:.1f} s after submitting")


def _cmdline_names(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


class _StandInNode:
    """What the provider asks of a ``ray._private.node.Node``: its dead processes, and to end the rest."""

    def __init__(self, dead: list):
        self.dead, self.killed = dead, False

    def dead_processes(self):
        return [(kind, None) for kind in self.dead]

    def kill_all_processes(self, check_alive=True, allow_graceful=False):
        self.killed = True


def test_the_provider_forgets_a_node_whose_raylet_died_as_ec2_forgets_a_reclaimed_instance(monkeypatch):
    from ray.autoscaler.tags import TAG_RAY_NODE_KIND

    from archstudy.study.execution.cluster_provider import RehearsalNodeProvider

    monkeypatch.setenv("RAY_FAKE_CLUSTER", "1")
    provider = RehearsalNodeProvider({"gcs_address": "127.0.0.1:1"}, "test")
    head = provider.non_terminated_nodes({})
    tags = {TAG_RAY_NODE_KIND: "worker"}
    lost, alive, agentless = _StandInNode(["raylet"]), _StandInNode([]), _StandInNode(["dashboard_agent"])
    provider._nodes.update(
        {
            "lost": {"tags": tags, "node": lost},
            "alive": {"tags": tags, "node": alive},
            "agentless": {"tags": tags, "node": agentless},
        }
    )
    assert sorted(provider.non_terminated_nodes({})) == sorted(head + ["alive", "agentless"])
    assert lost.killed and not alive.killed and not agentless.killed  # what was left of the lost one is ended
    assert provider.non_terminated_nodes({TAG_RAY_NODE_KIND: "worker"}) == ["alive", "agentless"]
