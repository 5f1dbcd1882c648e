"""``archstudy cluster``: rehearse the cluster file on this machine under Ray's own autoscaler.

``rehearse [CLUSTER_YAML]`` starts it (study.execution.cluster: the node types scaled down, GPUs logical) and prints the
addresses to use; ``lose-node`` loses a worker node as a reclaimed spot instance is lost; ``stop`` ends it.
"""

from __future__ import annotations

import time
from dataclasses import fields

from .flags import shown
from .commands import subcommand


@subcommand("cluster", order=130, activity="checking the cluster file")
def register(sub) -> None:
    from ..execution.cluster import DEFAULT_DASHBOARD_PORT, DEFAULT_PORT, Scale

    p = sub.add_parser(
        "cluster",
        help="rehearse cluster.yaml on this machine under Ray's autoscaler",
        description="Rehearse a Ray cluster file on this machine: its node types under Ray's own autoscaler (the "
        "fake multi-node provider), worker nodes started from zero for pending work and removed when idle, "
        "GPUs as logical resources (units holding one train on CPU torch). Only processes it started are ever "
        "ended.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    r = actions.add_parser(
        "rehearse",
        help="start the rehearsal and print the --address to use",
        description="Translate CLUSTER_YAML's available_node_types (scaled down to this machine: every worker type "
        "keeps its GPU count as logical GPUs and gets at most --node-cpus logical CPUs; at most --max-nodes "
        "worker nodes) into a fake multi-node autoscaling config, start its head, and print the addresses to "
        "use. The autoscaler starts worker nodes when work is waiting.",
    )
    r.add_argument(
        "cluster_file",
        metavar="CLUSTER_YAML",
        nargs="?",
        default="cluster.yaml",
        help="the Ray cluster file (default: ./%(default)s)",
    )
    doc = {f.name: f.metadata["doc"] for f in fields(Scale)}
    default = Scale()
    r.add_argument(
        "--max-nodes",
        type=int,
        metavar="N",
        default=default.max_nodes,
        help=f"{doc['max_nodes']} (default %(default)s)",
    )
    r.add_argument(
        "--node-cpus",
        type=int,
        metavar="N",
        default=default.node_cpus,
        help=f"{doc['node_cpus']} (default %(default)s)",
    )
    r.add_argument(
        "--idle-timeout",
        type=float,
        metavar="MINUTES",
        dest="idle_timeout_minutes",
        default=default.idle_timeout_minutes,
        help=f"{doc['idle_timeout_minutes']} (default {shown(default.idle_timeout_minutes)}; the file's "
        "applies to paid instances)",
    )
    r.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="the head's port (default %(default)s; Ray's 6379 is left to a Ray of yours)",
    )
    r.add_argument(
        "--dashboard-port",
        type=int,
        default=DEFAULT_DASHBOARD_PORT,
        help="the dashboard and Jobs API port (default %(default)s)",
    )
    r.set_defaults(func=rehearse)
    s = actions.add_parser(
        "stop",
        help="end the rehearsal (only its own processes)",
        description="End the rehearsal: every process of its Ray session, and nothing else.",
    )
    s.set_defaults(func=stop)
    lose = actions.add_parser(
        "lose-node",
        help="lose a worker node as a reclaimed spot instance is lost",
        description="Kill every process of one worker node of the rehearsal at once (SIGKILL), as when a spot "
        "instance is reclaimed: its units are lost and retried elsewhere; the node provider no longer lists it "
        "(as EC2 no longer lists a reclaimed instance), and the autoscaler starts another if work is waiting.",
    )
    lose.add_argument(
        "node", metavar="NODE_ID", nargs="?", help="the node (default: the worker node running the most Ray workers)"
    )
    lose.set_defaults(func=lose_node)


def _running():
    from archstudy.sampling import UserError

    from ..execution.cluster import load_state

    rehearsal = load_state()
    if rehearsal is None:
        raise UserError("no rehearsal is running (`archstudy cluster rehearse` starts one)")
    return rehearsal


def rehearse(args) -> int:
    import ray

    from ..execution.cluster import Scale, describe, read_cluster_file, refuse_if_running, start

    scale = Scale(node_cpus=args.node_cpus, max_nodes=args.max_nodes, idle_timeout_minutes=args.idle_timeout_minutes)
    cluster = read_cluster_file(args.cluster_file)
    refuse_if_running()
    print(
        f"archstudy cluster: {cluster.path} under Ray {ray.__version__}'s autoscaler, with its fake multi-node "
        "provider, on this machine:"
    )
    for line in describe(cluster, scale):
        print(line)
    print(
        f"  worker nodes at most {min(cluster.max_workers, scale.max_nodes)} (the file: {cluster.max_workers}); "
        f"idle ones removed after {scale.idle_timeout_minutes:g} min (the file: {cluster.idle_timeout_minutes:g})"
    )
    print("  GPUs are logical: a unit holding one trains on CPU torch (ARCHSTUDY_LOGICAL_GPUS=1, on these nodes only)")
    t0 = time.monotonic()
    r = start(cluster, scale, port=args.port, dashboard_port=args.dashboard_port)
    print(
        f"started in {time.monotonic() - t0:.0f} s, the head only: the autoscaler starts worker nodes for waiting work"
    )
    print(f"  address      --address {r.address}   (or `export RAY_ADDRESS={r.address}`, then --address auto)")
    if r.dashboard:
        print(f"  jobs         ray job submit --address {r.dashboard} -- archstudy run --address auto ...")
    else:
        print("  jobs         none: the dashboard and `ray job submit` need ray[default] (pip install -e '.[cluster]')")
    print(f"  autoscaler   ray status --address {r.address}   (its log: {r.session_dir}/logs/monitor.log)")
    print("  lose a node  archstudy cluster lose-node")
    print("  stop         archstudy cluster stop")
    return 0


def stop(args) -> int:
    from ..execution.cluster import stop as stop_rehearsal

    stopped = stop_rehearsal()
    if stopped is None:
        print("archstudy cluster: no rehearsal is running")
        return 0
    r, n = stopped
    print(
        f"archstudy cluster: stopped the rehearsal at {r.address}: {n} processes ended (its logs: {r.session_dir}/logs)"
    )
    return 0


def lose_node(args) -> int:
    from ..execution.cluster import lose_node as lose

    node = lose(_running(), args.node)
    print(
        f"archstudy cluster: lost node {node['node_id']} ({node['type']}): {node['processes']} processes killed; "
        "the autoscaler starts another if work is waiting"
    )
    return 0
