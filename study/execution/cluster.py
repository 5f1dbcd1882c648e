"""The cluster file rehearsed on this machine: ``cluster.yaml``'s node types under Ray's own autoscaler.

``start`` translates the cluster file's ``available_node_types`` into an autoscaling config for Ray's fake
multi-node provider and starts it the way Ray documents it, ``RAY_FAKE_CLUSTER=1 ray start --head
--autoscaling-config=...``. The autoscaler that ``ray up`` runs on AWS (Ray 2.58's default for it, v1) then
reads the pending actors' resources, picks node types, starts nodes, removes idle ones after the idle
timeout and replaces lost ones; a node is a local raylet with the resources its type declares. The provider
is Ray's, with one change (``study.execution.cluster_provider``): a node whose raylet has died is no longer listed, as
a reclaimed spot instance is no longer listed by EC2. What is scaled down to fit one machine (``Scale``):

* the head keeps the resources the file declares (cluster.yaml: ``CPU: 0``: no architecture runs on it);
* a worker type keeps its instance's GPU count, as logical GPUs (p3.2xlarge 1, p4d.24xlarge 8, p5.48xlarge 8),
  and gets ``min(its vCPUs, node_cpus)`` logical CPUs: a node here runs at most node_cpus / cpus_per_arch
  architectures at once, where a real p4d runs 32 at ``--gpus-per-arch 0.25 --cpus-per-arch 1``;
* every type's ``max_workers``, and the cluster's, are capped at ``max_nodes``: a node here is a raylet and
  two agents (about 0.2 GB), plus about 0.4 GB per running architecture (a process with torch);
* the idle timeout is ``idle_timeout_minutes`` (the file's is for paid instances);
* the nodes run with ``LOGICAL_GPUS_ENV`` = 1: a unit holding a logical GPU trains on CPU torch.

It never touches a Ray it did not start. It refuses to start while its state file names a live rehearsal, or
when its ports are taken; its head listens on its own port (default 6390, not Ray's 6379) and keeps its files
in its own temp dir (not /tmp/ray), so it is not the cluster that /tmp/ray/ray_current_cluster announces: a
plain ``ray.init()`` on this machine never joins it, and ``--address auto`` reaches it through
``export RAY_ADDRESS=<address>`` (as on a head node; without it Ray's "auto" takes any Ray it finds running).
``stop`` and ``lose_node`` end only processes of its own session: those whose Ray flags name its session
directory, and their descendants (the workers, whose titles Ray rewrites).

Ray 2.58's own helpers do not fit that, so they are not used: ``ray.cluster_utils.AutoscalingCluster`` reads
``fake_multi_node/example.yaml``, which the 2.58 wheel does not ship, and its ``start``/``shutdown`` run
``ray stop --force``, which kills every Ray process of the machine's user. The provider's own pitfalls, which
the config below accounts for: it names the head node type ``ray.head.default``; it assumes the head at port
6379 unless ``provider.gcs_address``; without ``launch_multiple`` it starts one node per launch request
whatever the count asked; the nodes it starts are children of the autoscaler's monitor and outlive it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

import yaml

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Declared, Integer, Real, check, declare
from archstudy.sampling.regular_files import NotRegular, open_regular

from ..experiment.config import utc_now

WHERE = "cluster"
HEAD_TYPE = "ray.head.default"  # the fake provider's name for the head node, whatever the file calls it
DEFAULT_PORT = 6390  # the rehearsal's head (GCS); Ray's default 6379 stays free for a Ray of the user's
DEFAULT_DASHBOARD_PORT = 8265  # Ray's own: `ray job submit --address http://127.0.0.1:8265` as on a cluster
OBJECT_STORE_BYTES = 256 * 2**20  # per node: the dataset and results pass through it; Ray's default is 30% of RAM
STATE_NAME = "cluster-rehearsal.json"
# Ray's fake multi-node provider, where a node whose raylet died is gone as a reclaimed instance is (its module).
PROVIDER = "archstudy.study.execution.cluster_provider.RehearsalNodeProvider"
# Rehearsal mode, set in the environment of the rehearsal's nodes only (its `ray start`, whose raylets and
# workers inherit it): their GPUs are Ray's logical resources, and a unit holding one trains on CPU torch
# (study.execution.unit.unit_device). A real cluster never sets it: there a unit holding a GPU torch cannot see fails.
LOGICAL_GPUS_ENV = "ARCHSTUDY_LOGICAL_GPUS"

# vCPUs and GPUs of the instance types a node type may name without declaring `resources` (on AWS Ray reads
# them from EC2; here nothing can be asked). The fast-FP64 GPU families cluster.yaml allows, and its head.
INSTANCE_TYPES: dict[str, tuple[int, int]] = {
    "m6i.2xlarge": (8, 0),
    "p3.2xlarge": (8, 1),
    "p3.8xlarge": (32, 4),
    "p3.16xlarge": (64, 8),
    "p3dn.24xlarge": (96, 8),  # V100
    "p4d.24xlarge": (96, 8),
    "p4de.24xlarge": (96, 8),  # A100
    "p5.4xlarge": (16, 1),
    "p5.48xlarge": (192, 8),
    "p5e.48xlarge": (192, 8),
    "p5en.48xlarge": (192, 8),  # H100, H200
}


# -- the cluster file ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeType:
    """One entry of ``available_node_types``: its instance's CPUs and GPUs (the file's ``resources``, else the
    instance type's), its other declared resources, and its worker counts."""

    name: str
    instance_type: str | None
    cpus: float
    gpus: float
    min_workers: int = 0
    max_workers: int = 0
    custom: dict = field(default_factory=dict)  # resources beyond CPU and GPU, kept as declared


@dataclass(frozen=True)
class ClusterFile:
    path: str
    head: NodeType
    workers: tuple  # NodeType, in the file's order
    max_workers: int
    idle_timeout_minutes: float
    upscaling_speed: float


def _node_type(name: str, entry: Any, head: bool) -> NodeType:
    where = f"{WHERE}.available_node_types.{name}"
    if not isinstance(entry, Mapping):
        raise SpecError(f"{WHERE}.available_node_types", name, entry, "must be a mapping (resources, node_config, ...)")
    resources = entry.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise SpecError(where, "resources", resources, "must be a mapping of resource names to amounts")
    resources = {str(k): check(f"{where}.resources", k, Real(0.0), v) for k, v in resources.items()}
    config = entry.get("node_config") or {}
    instance = config.get("InstanceType") if isinstance(config, Mapping) else None
    known = INSTANCE_TYPES.get(instance) if isinstance(instance, str) else None
    for key, index in (("CPU", 0), ("GPU", 1)):
        if key not in resources:
            if known is None:
                raise SpecError(
                    where,
                    "resources",
                    dict(resources),
                    f"has no {key} and the instance type {instance!r} is not one archstudy knows "
                    f"({', '.join(INSTANCE_TYPES)}): declare resources: {{CPU: n, GPU: g}}",
                )
            resources[key] = float(known[index])
    lo = 0 if head else check(where, "min_workers", Integer(0), entry.get("min_workers", 0))
    hi = 0 if head else check(where, "max_workers", Integer(0), entry.get("max_workers", 0))
    if lo > hi:
        raise SpecError(where, "min_workers", lo, f"must be <= max_workers ({hi})")
    custom = {k: v for k, v in resources.items() if k not in ("CPU", "GPU", "memory", "object_store_memory")}
    return NodeType(name, instance, resources["CPU"], resources["GPU"], lo, hi, custom)


def read_cluster_file(path: str | os.PathLike) -> ClusterFile:
    """The node types, worker counts, idle timeout and upscaling speed of a Ray autoscaler file."""
    path = str(path)
    try:
        with open_regular(path, "a Ray cluster file") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise SpecError(
            WHERE, "file", path, "no such file (the Ray cluster file, e.g. the project's cluster.yaml)"
        ) from None
    except NotRegular as e:
        if e.kind != "a directory":
            raise
        raise SpecError(WHERE, "file", path, "is a directory, not a Ray cluster file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise SpecError(WHERE, "file", path, f"cannot be read as YAML ({type(e).__name__})") from None
    if not isinstance(data, Mapping):
        raise SpecError(WHERE, "file", path, "must be a YAML mapping (a Ray autoscaler config)")
    types = data.get("available_node_types")
    if not isinstance(types, Mapping) or not types:
        raise SpecError(WHERE, "available_node_types", types, "must map node type names to their configs")
    head_name: Any = data.get("head_node_type")  # YAML: checked to be a key of ``types`` below
    if head_name not in types:
        raise SpecError(WHERE, "head_node_type", head_name, f"must be one of available_node_types: {', '.join(types)}")
    head = _node_type(head_name, types[head_name], head=True)
    workers = tuple(_node_type(n, e, head=False) for n, e in types.items() if n != head_name)
    return ClusterFile(
        path=path,
        head=head,
        workers=workers,
        # Ray's defaults where the file says nothing (ray-schema.json / defaults.yaml): 2 workers, 5 minutes, 1.0.
        max_workers=check(WHERE, "max_workers", Integer(0), data.get("max_workers", 2)),
        idle_timeout_minutes=check(WHERE, "idle_timeout_minutes", Real(0.0), data.get("idle_timeout_minutes", 5)),
        upscaling_speed=check(WHERE, "upscaling_speed", Real(0.0, lo_open=True), data.get("upscaling_speed", 1.0)),
    )


# -- scaled to this machine ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale(Declared, where=WHERE):
    """How the cluster is scaled down to one machine (see the module docstring)."""

    node_cpus: int = declare(
        Integer(1), 2, doc="logical CPUs of a worker node, at most (its instance's vCPUs if fewer)"
    )
    max_nodes: int = declare(Integer(1), 3, doc="worker nodes at most: every type's max_workers and the cluster's")
    idle_timeout_minutes: float = declare(
        Real(0.0, lo_open=True), 1.0, doc="minutes before an idle worker node is removed"
    )

    def node(self, t: NodeType) -> NodeType:
        """The rehearsal's version of a worker node type: same GPUs (logical), CPUs and workers capped."""
        hi = min(t.max_workers, self.max_nodes)
        return NodeType(
            t.name,
            t.instance_type,
            min(t.cpus, float(self.node_cpus)),
            t.gpus,
            min(t.min_workers, hi),
            hi,
            dict(t.custom),
        )


def autoscaling_config(cluster: ClusterFile, scale: Scale, gcs_address: str) -> dict:
    """The fake multi-node autoscaling config of ``cluster`` scaled by ``scale``, its head at ``gcs_address``."""

    def resources(t: NodeType) -> dict:
        return {"CPU": t.cpus, "GPU": t.gpus, **t.custom, "object_store_memory": OBJECT_STORE_BYTES}

    types = {HEAD_TYPE: {"resources": resources(cluster.head), "node_config": {}, "max_workers": 0}}
    for t in cluster.workers:
        s = scale.node(t)
        types[t.name] = {
            "resources": resources(s),
            "node_config": {},
            "min_workers": s.min_workers,
            "max_workers": s.max_workers,
        }
    return {
        "cluster_name": "archstudy-rehearsal",
        "max_workers": min(cluster.max_workers, scale.max_nodes),
        "upscaling_speed": cluster.upscaling_speed,
        "idle_timeout_minutes": scale.idle_timeout_minutes,
        "provider": {
            "type": "external",
            "module": PROVIDER,
            "gcs_address": gcs_address,
            "launch_multiple": True,
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
        },
        "auth": {},
        "docker": {},
        "available_node_types": types,
        "head_node_type": HEAD_TYPE,
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
        "initialization_commands": [],
        "setup_commands": [],
        "head_setup_commands": [],
        "worker_setup_commands": [],
        "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
    }


def describe(cluster: ClusterFile, scale: Scale) -> list[str]:
    """The translation as a table: every node type, what the file's instance has and what the rehearsal gives."""

    def n(x: float) -> str:
        return f"{x:g}"

    rows = [("node type", "instance", "CPU", "GPU", "here: CPU", "GPU (logical)", "workers: file", "here")]
    h = cluster.head
    rows.append((f"{h.name} (head)", h.instance_type or "-", n(h.cpus), n(h.gpus), n(h.cpus), n(h.gpus), "-", "-"))
    for t in cluster.workers:
        s = scale.node(t)
        rows.append(
            (
                t.name,
                t.instance_type or "-",
                n(t.cpus),
                n(t.gpus),
                n(s.cpus),
                n(s.gpus),
                f"{t.min_workers}-{t.max_workers}",
                f"{s.min_workers}-{s.max_workers}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


# -- processes of a session ---------------------------------------------------------------------------------
# Ray's flags that name a process's session directory (the raylet, GCS, monitor, dashboard, log monitor, agents).
_SESSION_FLAGS = ("--session_dir=", "--session-dir=", "--log_dir=", "--log-dir=", "--logs-dir=")


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) of every live process on this machine (Linux /proc); zombies left out."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            argv = Path(f"/proc/{d}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            out[int(d)] = (int(ppid), [a for a in argv if a])
    return out


def _names_session(argv: list[str], session_dir: str) -> bool:
    for arg in argv:
        for flag in _SESSION_FLAGS:
            if arg.startswith(flag) and (
                arg[len(flag) :] == session_dir or arg[len(flag) :].startswith(session_dir + "/")
            ):
                return True
    return False


def _with_descendants(roots: set[int], table: dict) -> set[int]:
    found, grew = set(roots), True
    while grew:
        more = {pid for pid, (ppid, _) in table.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return found


def session_processes(session_dir: str) -> dict[int, list[str]]:
    """pid -> argv of every process of the Ray session in ``session_dir``: those whose Ray flags name it, and
    their descendants."""
    table = _processes()
    roots = {pid for pid, (_, argv) in table.items() if _names_session(argv, session_dir)}
    return {pid: table[pid][1] for pid in _with_descendants(roots, table)}


def _is_raylet(argv: list[str]) -> bool:
    return bool(argv) and os.path.basename(argv[0]) == "raylet"


def _flag(argv: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in argv if a.startswith(name + "=")), None)


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.split("\0") if "=" in kv)


def _end(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while True:
        alive = pids & set(_processes())
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.1)


# -- the rehearsal ------------------------------------------------------------------------------------------
@dataclass
class Rehearsal:
    """A running rehearsal, as its state file records it."""

    address: str  # the head's GCS, for --address
    dashboard: str | None  # http://127.0.0.1:PORT for `ray job submit`, None without ray[default]
    temp_dir: str
    session_dir: str
    cluster_file: str
    config_path: str
    started: str

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Rehearsal":
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def processes(self) -> dict[int, list[str]]:
        return session_processes(self.session_dir)

    def nodes(self) -> list[dict]:
        """The live nodes' raylets: node id, node type (``HEAD_TYPE`` for the head), raylet pid."""
        out = []
        for pid, argv in self.processes().items():
            if _is_raylet(argv):
                kind = HEAD_TYPE if "--head" in argv else _environ(pid).get("RAY_NODE_TYPE_NAME", "?")
                out.append({"node_id": _flag(argv, "--node_id"), "type": kind, "pid": pid})
        return sorted(out, key=lambda n: n["node_id"] or "")


def state_path() -> Path:
    """Where the running rehearsal is recorded: archstudy's cache directory (``$ARCHSTUDY_CACHE`` or
    ``~/.cache/archstudy``)."""
    from ..datasets.cache import cache_dir  # imported when needed: the datasets package imports torch

    return cache_dir() / STATE_NAME


def load_state(path: Path | None = None) -> Rehearsal | None:
    """The rehearsal the state file records, if its processes are alive; a stale file is removed."""
    path = path or state_path()
    try:
        rehearsal = Rehearsal.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"{path} is not a rehearsal's state file; remove it if no rehearsal is running") from None
    if rehearsal.processes():
        return rehearsal
    path.unlink(missing_ok=True)
    return None


def refuse_if_running(state: Path | None = None) -> None:
    """One rehearsal at a time (per state file): a second is refused, naming the first."""
    running = load_state(state)
    if running is not None:
        raise UserError(
            f"a rehearsal is already running at {running.address} (of {running.cluster_file}, started "
            f"{running.started}): `archstudy cluster stop` ends it"
        )


def _port_free(port: int) -> bool:
    """Whether nothing listens on ``port`` (connections of a Ray just stopped, in TIME_WAIT, do not count:
    Ray's servers bind with SO_REUSEADDR too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _installed(extra: str) -> bool:
    """Whether Ray's ``dashboard`` (the Jobs API; ray[default]) or ``client`` server can run here."""
    import ray._private.utils as ray_utils

    check = {"dashboard": ray_utils.get_dashboard_dependency_error, "client": ray_utils.get_ray_client_dependency_error}
    return check[extra]() is None


def start(
    cluster: ClusterFile,
    scale: Scale = Scale(),
    *,
    port: int = DEFAULT_PORT,
    dashboard_port: int = DEFAULT_DASHBOARD_PORT,
    dashboard: bool | None = None,
    update_interval_s: int | None = None,
    state: Path | None = None,
    temp_root: str | None = None,
) -> Rehearsal:
    """Start the rehearsal of ``cluster`` (its head only: the autoscaler starts the workers on demand), record
    it in the state file, and return it. ``dashboard`` None: when ray[default] is installed.
    ``update_interval_s`` overrides the autoscaler's update interval (Ray's default 5 s)."""
    state = state or state_path()
    refuse_if_running(state)
    with_dashboard = _installed("dashboard") if dashboard is None else dashboard
    for what, p in (("port", port), ("dashboard_port", dashboard_port if with_dashboard else None)):
        if p is not None and not _port_free(p):
            raise SpecError(WHERE, what, p, "is in use on this machine (another Ray?): choose another port")
    ip = _node_ip()
    address = f"{ip}:{port}"
    temp_dir = tempfile.mkdtemp(prefix="archstudy-rehearsal-", dir=temp_root)  # short: Ray's sockets live here
    config_path = os.path.join(temp_dir, "autoscaling.json")
    with open(config_path, "w") as f:
        json.dump(autoscaling_config(cluster, scale, address), f, indent=1)
    bin_dir = os.path.dirname(sys.executable)
    env = {
        **os.environ,
        "RAY_FAKE_CLUSTER": "1",
        LOGICAL_GPUS_ENV: "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        # `ray job submit -- archstudy run ...` runs the entrypoint in the head's environment: this venv's.
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
    env.pop("RAY_ADDRESS", None)
    if update_interval_s is not None:
        env["AUTOSCALER_UPDATE_INTERVAL_S"] = str(int(update_interval_s))
    cmd = [
        sys.executable,
        "-m",
        "ray.scripts.scripts",
        "start",
        "--head",
        f"--port={port}",
        f"--temp-dir={temp_dir}",
        f"--num-cpus={cluster.head.cpus:g}",
        f"--num-gpus={cluster.head.gpus:g}",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        f"--autoscaling-config={config_path}",
        "--disable-usage-stats",
        f"--include-dashboard={'true' if with_dashboard else 'false'}",
        # Ray's fixed default ports (52365; 10001 where Ray Client is installed) would collide with a Ray of
        # the user's, or another Ray's agent could get this cluster's job requests: free ports instead.
        f"--dashboard-agent-listen-port={_free_port()}",
    ]
    if _installed("client"):
        cmd.append(f"--ray-client-server-port={_free_port()}")
    if cluster.head.custom:
        cmd.append(f"--resources={json.dumps(cluster.head.custom)}")
    if with_dashboard:
        cmd += [f"--dashboard-port={dashboard_port}", "--dashboard-host=127.0.0.1"]
    try:
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except BaseException:  # interrupted while starting: end what had started (every path is under temp_dir)
        _stop_session(temp_dir)
        raise
    session_dir = os.path.realpath(os.path.join(temp_dir, "session_latest"))
    if done.returncode != 0 or not os.path.isdir(session_dir):
        _stop_session(temp_dir)
        last = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["no output"]
        raise UserError(f"`ray start` of the rehearsal failed (exit {done.returncode}): {last[0].strip()}")
    rehearsal = Rehearsal(
        address=address,
        dashboard=f"http://127.0.0.1:{dashboard_port}" if with_dashboard else None,
        temp_dir=temp_dir,
        session_dir=session_dir,
        cluster_file=os.path.abspath(cluster.path),
        config_path=config_path,
        started=utc_now(),
    )
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(rehearsal.to_dict(), indent=1) + "\n")
    return rehearsal


def _node_ip() -> str:
    """The address Ray gives this machine's nodes (the fake provider's nodes use it too)."""
    import ray._private.services as services

    return services.get_node_ip_address()


def _stop_session(session_dir: str, grace_s: float = 10.0) -> int:
    """End every process of the session (or of every session under a temp dir): the autoscaler first (so it
    starts or ends no node meanwhile), then the raylets (each takes its workers), then the rest; SIGKILL what
    is left after ``grace_s``. Returns how many processes there were."""
    procs = session_processes(session_dir)
    if not procs:
        return 0
    monitor = {p for p, argv in procs.items() if any(a.endswith("autoscaler/_private/monitor.py") for a in argv)}
    raylets = {p for p, argv in procs.items() if _is_raylet(argv)}
    _end(monitor, signal.SIGTERM)
    _wait_gone(monitor, grace_s)
    _end(raylets, signal.SIGTERM)
    _wait_gone(raylets, grace_s)
    rest = set(procs) | set(session_processes(session_dir))  # whatever started meanwhile
    _end(rest, signal.SIGTERM)
    left = _wait_gone(rest, grace_s)
    _end(left, signal.SIGKILL)
    _wait_gone(left, grace_s)
    return len(rest)


def stop(state: Path | None = None) -> tuple[Rehearsal, int] | None:
    """End the rehearsal the state file records (only its own processes); None if none is running."""
    state = state or state_path()
    rehearsal = load_state(state)
    if rehearsal is None:
        return None
    n = _stop_session(rehearsal.session_dir)
    state.unlink(missing_ok=True)
    return rehearsal, n


def lose_node(rehearsal: Rehearsal, node_id: str | None = None) -> dict:
    """Lose a worker node the way a reclaimed spot instance is lost: every process of it killed at once
    (SIGKILL). The provider no longer lists it (study.execution.cluster_provider), and the autoscaler starts another
    if work is waiting. ``node_id`` None: the worker node running the most Ray workers."""
    procs = rehearsal.processes()
    table = _processes()
    workers = [n for n in rehearsal.nodes() if n["type"] != HEAD_TYPE]
    if node_id is not None:
        chosen = [n for n in rehearsal.nodes() if n["node_id"] == node_id]
        if not chosen:
            raise SpecError(
                WHERE,
                "node",
                node_id,
                "is no live node of the rehearsal; its worker nodes: "
                + (", ".join(n["node_id"] for n in workers) or "none"),
            )
        if chosen[0]["type"] == HEAD_TYPE:
            raise SpecError(WHERE, "node", node_id, "is the head: `archstudy cluster stop` ends the rehearsal")
        node = chosen[0]
    else:
        if not workers:
            raise UserError("the rehearsal has no worker node now (the autoscaler starts them for pending work)")
        busy = {n["node_id"]: len(_with_descendants({n["pid"]}, table)) for n in workers}
        node = max(workers, key=lambda n: (busy[n["node_id"]], n["node_id"]))
    doomed = _with_descendants({node["pid"]}, table) & (set(procs) | {node["pid"]})
    _end(doomed, signal.SIGKILL)
    _wait_gone(doomed, 10.0)
    return {**node, "processes": len(doomed)}
