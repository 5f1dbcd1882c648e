"""``archstudy run``: start a study (or continue it: the same command on the same directory).

With no arguments at all it runs the README's small example: 8 architectures on waveform-noise with a
small parameter budget and the quick protocol, into ``studies/example``, and ends by writing the report.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, cast

from archstudy.sampling import SpecError, UserError, config_yaml

from ..experiment.config import (
    CONNECT_TIMEOUT_S,
    EXECUTION_SETTINGS,
    RECORDED_KEYS,
    REPORT_NAME,
    StudyConfig,
    execution_declaration,
)
from .flags import add_flag, declared_flags, shown
from .commands import subcommand

# The README's end-to-end example: a few minutes on 2 CPU cores.
EXAMPLE: dict[str, Any] = {
    "dataset": "waveform-noise",
    "architectures": 8,
    "param_budget": 3000,
    "preset": "extended",
    "protocol": {"preset": "quick", "max_epochs": 15},
    "seed": 0,
}
EXAMPLE_OUT = os.path.join("studies", "example")

# A study estimated above this asks before it starts (on a terminal), or needs --yes (without one).
CONFIRM_ABOVE_S = 3600.0
# The plan times a few steps of the architecture of median depth, and of the shallowest and the deepest too when
# that took less than this (small nets: milliseconds; a 1,000,000-parameter net: seconds, minutes under load).
MORE_PROBES_BELOW_S = 1.0
# Small nets are probed one after another while all the probes together took less than this: at one depth the
# layers' kinds change a step's time tenfold (a Householder or GmP net against a dense one), so each small study's
# architectures are best timed one by one.
PROBE_BUDGET_S = 6.0

# Every study key that declares a flag is one of `run` (``StudyConfig``: ``declare(..., flag=Flag(...))``), generated
# from the declarations; beside them, the flags that set no declared key alone: --config, --out, and --root (an
# execution key, which each command names beside its data: run, a study key like --dataset; resume, the data read
# this time). Any of them makes `run` a study of its own (without any: the example).
_OTHER_STUDY_FLAGS = ("config", "out", "root", "lr_window", "lr_window_from")
WINDOW_PREDICTORS = ("median", "measures")  # study.experiment.rate_window.PREDICTORS


def key_flags() -> tuple[str, ...]:
    """The study keys `run` sets by a flag of their name: the science keys that declare one, and --root."""
    return declared_flags(StudyConfig) + ("root",)


# The execution settings a session may override by a flag (those that declare one), shared by run and resume.
# ``root`` declares none: each command names it beside its data (run: a study key like --dataset; resume: the
# data read this time).
EXECUTION_FLAGS = tuple(name for name in EXECUTION_SETTINGS if execution_declaration(name)[1].flag is not None)


def add_execution_arguments(p: argparse.ArgumentParser, report: bool = True) -> None:
    """Flags that decide how the work is spread, not what it computes (shared by run, resume and rank; ``report``:
    also --report)."""
    g = p.add_argument_group("execution (not part of the science: a resume may change them)")
    g.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster to use: 'auto' on a cluster node (after `ray up`), or host:port; "
        "default: an embedded local Ray on this machine",
    )
    g.add_argument(
        "--connect-timeout",
        type=float,
        metavar="S",
        default=CONNECT_TIMEOUT_S,
        dest="connect_timeout_s",
        help=f"seconds to wait for --address to answer before giving up (default {shown(CONNECT_TIMEOUT_S)})",
    )
    for name in EXECUTION_FLAGS:
        add_flag(g, execution_declaration(name)[0], name)
    g.add_argument(
        "--max-in-flight",
        type=int,
        metavar="N",
        help="architectures submitted at once (default: what the cluster can run now; set it to the "
        "cluster's maximum size to let an autoscaler grow at once)",
    )
    if not report:
        return
    p.add_argument(
        "--report",
        action="store_true",
        help=f"write the HTML report when the study is complete (STUDY/{REPORT_NAME}; ./{REPORT_NAME} for "
        "an s3:// or gs:// study)",
    )


def execution_of(args) -> dict[str, Any]:
    """The execution settings of the flags (None where a flag is absent: the study's own)."""
    return {name: getattr(args, name) for name in EXECUTION_FLAGS}


@subcommand("run", order=10, activity="running the study")
def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a study (no arguments: the small example on waveform-noise)",
        # --out is required with any study flag, and absent for the example: argparse cannot say both
        usage="%(prog)s                              (the example, into studies/example)\n"
        "       %(prog)s --out DIR|URI (--dataset NAME --architectures N | --config FILE) [options]",
        description="Sample architectures, measure each at initialization, train each at all its learning rates "
        "(stacked, float64), and store one Parquet row per architecture in OUT/architectures (and one per "
        "learning rate in OUT/runs). Ray spreads the architectures over this machine's cores, or over a cluster "
        "with --address auto. Running it again on the same OUT continues the study (the same config is "
        "required). With no arguments: the README's example (8 architectures on waveform-noise, quick protocol, "
        f"into {EXAMPLE_OUT}, ending with the report).",
    )
    p.add_argument("--config", metavar="FILE", help="YAML file of study keys (those of study.yaml); flags override it")
    p.add_argument(
        "--out",
        metavar="DIR|URI",
        help="the study: a directory, or s3://, gs://, file:// URI (required "
        "with any study flag; without any, the example goes into studies/example)",
    )
    p.add_argument("--root", metavar="DIR", help="directory of the dataset's files (mnist, cifar10, ...)")
    for name in declared_flags(StudyConfig):
        add_flag(p, StudyConfig, name)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (architectures, parameters, protocol, memory, estimated time) and exit; nothing is "
        "run and nothing is written",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --dry-run: print the plan as one JSON object on standard output (estimated_seconds, ...)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help=f"start a study estimated above {CONFIRM_ABOVE_S / 3600:g} hour without asking (needed for such a "
        "study when no terminal can answer: a script, a job)",
    )
    p.add_argument(
        "--force-config",
        action="store_true",
        help="OUT holds a study with another config: replace its study.yaml (finished rows stay)",
    )
    g = p.add_argument_group("rate window (study key lr_window: train m of the protocol's rates, not all)")
    g.add_argument(
        "--lr-window",
        metavar="M",
        type=int,
        help="train only M rates per architecture, around a best rate predicted before training by a finished "
        "study of the full sweep (--lr-window-from); default: every rate, the paper's protocol",
    )
    g.add_argument("--lr-window-from", metavar="STUDY", help="with --lr-window: the finished study it is fitted on")
    g.add_argument(
        "--lr-window-predictor",
        choices=WINDOW_PREDICTORS,
        default="median",
        help="with --lr-window: 'median' centres every window on that study's median best rate index (default); "
        "'measures' on a ridge regression of it on the measures at initialization, refused unless its held-out "
        "windows beat the median rule there",
    )
    add_execution_arguments(p)
    p.set_defaults(func=command)


def window_of(args, protocol: Any = None) -> dict | None:
    """The study key ``lr_window`` of --lr-window M --lr-window-from STUDY (``analysis.learning_rates.
    resolve_window``: the centre resolved from that study, or a one-line refusal); None without them. That study's
    series of rates must be this one's (``protocol``: the study key; None: the default), or an index would name
    another rate."""
    if args.lr_window is None and args.lr_window_from is None:
        return None
    if args.lr_window is None or args.lr_window_from is None:
        given, missing = (
            ("--lr-window", "--lr-window-from")
            if args.lr_window is not None
            else (
                "--lr-window-from",
                "--lr-window",
            )
        )
        raise UserError(f"run: {given} needs {missing} (the window's size M and the finished study it is fitted on)")
    if args.lr_window < 1:
        raise SpecError("run", "lr_window", args.lr_window, "must be a number of rates >= 1")
    from archstudy.analysis.learning_rates import resolve_window
    from archstudy.analysis.results import load_results

    from ..experiment.protocol import Protocol

    results = load_results(args.lr_window_from)
    theirs = Protocol.of(results.config.get("protocol") or "paper")
    ours = Protocol.of(protocol if protocol is not None else StudyConfig.default("protocol"))
    series = ("num_lrs", "lr_factor", "lr_min_scale", "lrs")  # what a rate index means
    if any(getattr(theirs, f) != getattr(ours, f) for f in series):
        differ = ", ".join(
            f"{f} {getattr(ours, f)} (its {getattr(theirs, f)})"
            for f in series
            if getattr(theirs, f) != getattr(ours, f)
        )
        raise SpecError(
            "run", "lr_window_from", args.lr_window_from, f"must share the study's series of rates: {differ}"
        )
    return resolve_window(
        results.trained, results.runs, args.lr_window, args.lr_window_predictor, source=str(args.lr_window_from)
    )


def config_of(args) -> tuple[dict, str, bool]:
    """The study keys from --config and the flags, the output location, and whether this is the example."""
    if all(getattr(args, k) is None for k in _OTHER_STUDY_FLAGS + key_flags()):
        return dict(EXAMPLE), EXAMPLE_OUT, True
    keys: dict[str, Any] = {}
    if args.config is not None:
        loaded = config_yaml.read(args.config, "run", "config")
        if not isinstance(loaded, dict):
            raise SpecError("run", "config", args.config, "must be a YAML mapping of study keys")
        # A study's own study.yaml is a fine template for a new one: what archstudy recorded about that
        # study (its data's shape and fingerprint, version, creation time) is recorded afresh for this one.
        keys.update({k: v for k, v in loaded.items() if k not in RECORDED_KEYS})
    for k in key_flags():
        if getattr(args, k) is not None:
            keys[k] = getattr(args, k)
    if args.protocol is not None:  # a protocol's name, or a file of its fields
        is_file = args.protocol.endswith((".yaml", ".yml")) or os.path.isfile(args.protocol)
        keys["protocol"] = config_yaml.read(args.protocol, "run", "protocol") if is_file else args.protocol
    window = window_of(args, keys.get("protocol"))
    if window is not None:
        keys["lr_window"] = window
    if args.preset is not None and args.config is not None:
        keys.pop("space", None)  # --preset names the space; drop a space dict from the file
    if args.out is not None and not args.out.strip():
        raise SpecError("run", "out", args.out, "must be a directory or a URI (s3://, gs://, file://)")
    if args.out is None:
        raise UserError(
            "run: --out is required (the study directory or URI); `archstudy run` with no arguments runs the example"
        )
    return keys, args.out, False


# What a study with flags takes, for the keys its flags and config file leave out, that the example sets otherwise.
_EXAMPLE_DIFFERS = ("param_budget", "protocol")


def defaults_line(keys: dict, example: bool) -> str | None:
    """Which defaults this `run` takes, said before anything runs (docs/running.md, "The first run and a study"):
    the example's, or the paper's study's for what the flags leave out; None where the flags name them all."""
    if example:
        protocol = EXAMPLE["protocol"]
        return (
            f"no study flags: the example, {EXAMPLE['architectures']} architectures on {EXAMPLE['dataset']} at "
            f"{EXAMPLE['param_budget']:,} parameters, protocol {protocol['preset']} capped at "
            f"{protocol['max_epochs']} epochs, into {EXAMPLE_OUT} (a study with flags takes the paper's defaults "
            f"instead: {', '.join(f'{k} {shown(StudyConfig.default(k))}' for k in _EXAMPLE_DIFFERS)})"
        )
    left = [k for k in _EXAMPLE_DIFFERS if k not in keys]
    if not left:
        return None
    return (
        f"the paper's defaults for what the flags leave out: "
        f"{', '.join(f'{k} {shown(StudyConfig.default(k))}' for k in left)} (`--param-budget "
        f"{EXAMPLE['param_budget']} --protocol {EXAMPLE['protocol']['preset']}`: the example's scale)"
    )


def finish(result, location: str, args, example: bool) -> int:
    """After run/resume: the report when asked (and the study is complete); exit 0 when every architecture
    is finished, 1 when some failed."""
    if example or (args.report and result.complete):
        from archstudy.analysis import write_report

        from ..execution.store import Store

        store = Store(location)
        print(write_report([store.uri], report_path(store)))
    elif args.report:
        print(
            f"archstudy: no report: {result.total - result.finished_before - result.finished} architectures are "
            "not finished",
            file=sys.stderr,
        )
    return 0 if result.complete else 1


@dataclass
class Preview:
    """What `run` will do, said before anything starts: its lines (what will run, the memory), what the estimate
    needs, and once made the estimated seconds of the session (None when none can be made here, or nothing is
    left to run)."""

    lines: list[str]
    config: StudyConfig
    data: Any
    todo: list
    slots: int | None  # architectures at once; None: on a cluster, not known here
    estimate_s: float | None = None
    study: Any = None  # the driver's plan (``study.execution.driver.Preparation``) that `run` then runs
    memory_bytes: float | None = None  # the most one architecture needs (``study.execution.memory``)

    def to_dict(self) -> dict[str, Any]:
        """The plan as ``run --dry-run --json`` prints it: the study, its architectures (all, to run, finished), the
        runs each trains (rates x initializations), at once, the memory of the architecture that needs the most,
        ``estimated_seconds`` (None where none can be made here), and the plan's lines."""

        units = getattr(self.study, "units", None) or []
        config = self.config
        runs = config.runs_per_architecture if config is not None else None
        return {
            "study": getattr(getattr(self.study, "store", None), "location", None),
            "architectures": len(units),
            "to_run": len(self.todo),
            "finished": len(units) - len(self.todo),
            "runs_per_architecture": runs,
            "at_once": self.slots,
            "memory_bytes": self.memory_bytes,
            "estimated_seconds": self.estimate_s,
            "plan": list(self.lines),
        }

    def estimate(self) -> str | None:
        """Time a few steps (``estimate_line``) and return the line that says the estimate, or why there is none
        (None: nothing to run)."""
        if not self.todo:
            return None
        if self.slots is None:
            return (
                "estimate: none yet (this machine is not the cluster's workers): the driver says it once the first "
                "architectures have timed their steps on the workers"
            )
        text, self.estimate_s, seconds = estimate_line(self.config, self.data, self.todo, self.slots)
        if self.study is not None:  # the driver's ETA starts from each architecture's own estimate
            self.study.weights = seconds
        return text


def _slots(config, address: str | None, max_in_flight: int | None) -> int | None:
    """Architectures at once on an embedded Ray on this machine (as ``Engine.capacity`` counts them: its CPUs
    over ``cpus_per_arch``, its GPUs over ``gpus_per_arch``); None on a cluster (not known before it is reached)."""
    if address or os.environ.get("RAY_ADDRESS"):
        return None
    res = config.resources
    slots = math.floor((os.cpu_count() or 1) / res.cpus_per_arch + 1e-9)
    if res.gpus_per_arch > 0:
        import torch

        slots = min(slots, math.floor(torch.cuda.device_count() / res.gpus_per_arch + 1e-9))
    if max_in_flight:
        slots = min(slots, max_in_flight)
    return slots if slots >= 1 else None


def _probe_order(todo: list) -> list:
    """The units the estimate may time, in order: the one of median depth, the shallowest and the deepest, then the
    others spread over the depths (each depth once before any twice; within one, in study order): the step time
    at a fixed parameter budget depends mostly on depth, and at one depth on the layers' kinds."""
    ordered = sorted(todo, key=lambda u: (u.spec.depth, u.index))
    first: list = []
    for i in dict.fromkeys([len(ordered) // 2, 0, len(ordered) - 1]):  # median, shallowest, deepest
        if all(u.spec.depth != ordered[i].spec.depth for u in first):
            first.append(ordered[i])
    by_depth: dict[int, list] = {}
    for u in ordered:
        if u not in first:
            by_depth.setdefault(u.spec.depth, []).append(u)
    seen = {u.spec.depth for u in first}
    depths = sorted(by_depth, key=lambda d: (d in seen, d))  # at each level, a depth already probed comes last
    rest = []
    for level in range(max((len(us) for us in by_depth.values()), default=0)):
        rest += [by_depth[d][level] for d in depths if len(by_depth[d]) > level]
    return first + rest


def estimate_line(config, data, todo: list, slots: int) -> tuple[str, float, dict[str, float]]:
    """The session's estimate from a few timed steps on this machine (``study.execution.costs.probe``, with the
    worker's torch threads), as ``Forecast`` makes it, and each architecture's seconds (the driver's ``Forecast``
    weights, refined from the units that finish): a probed one its own probe, the metrics at initialization and the
    NLC after training (timed on the first, ``_time_measures``); any other its depth (``relative_cost``) times the
    probed ones' seconds per layer. Units are probed in ``_probe_order`` while each probe is quick
    (``MORE_PROBES_BELOW_S``) and all of them take less than ``PROBE_BUDGET_S``; the work is placed on the
    ``min(slots, n)`` that run at once as they free up."""
    import torch

    from ..execution.costs import Forecast, duration, probe, relative_cost

    protocol = config.counted_protocol  # a rate window's m rates
    device = "cuda" if config.resources.gpus_per_arch > 0 else "cpu"
    threads = torch.get_num_threads()
    torch.set_num_threads(config.resources.threads)
    probes: dict[str, dict] = {}
    by_name = {u.name: u for u in todo}
    t0 = time.perf_counter()
    try:
        for unit in _probe_order(todo):
            probes[unit.name] = {**probe(unit.spec, data, protocol, device, config.init_seeds), "measure_s": None}
            if probes[unit.name]["probe_s"] > MORE_PROBES_BELOW_S:  # a large net: one probe is enough to wait for
                break
            if len(probes) == 1:
                _time_measures(config, data, by_name, probes, device)
            if len(probes) >= 3 and time.perf_counter() - t0 > PROBE_BUDGET_S:
                break
        measured = probes[next(iter(probes))].get("measure_s")
    finally:
        torch.set_num_threads(threads)
    probed = {name: cast(float, Forecast(todo=1, probes=probes).probed_s(name)) for name in probes}
    per_layer = sum(probed.values()) / sum(relative_cost(by_name[n].spec) for n in probed)
    seconds = {u.name: probed.get(u.name, per_layer * relative_cost(u.spec)) for u in todo}
    # weights in seconds: the probes' seconds per unit of weight are 1, so each architecture costs its own
    forecast = Forecast(todo=len(todo), slots=min(slots, len(todo)), probes=probes, weights=seconds)
    total = float(forecast.eta(0, 0, 0)[0] or 0.0)
    depths = sorted({by_name[name].spec.depth for name in probes})
    shown = ", ".join(map(str, depths[:6])) + (", ..." if len(depths) > 6 else "")
    steps = sum(int(p["timed_steps"]) for p in probes.values())
    load = f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
    n = len(todo)
    return (
        f"estimated {duration(total)} for {n:,} architecture{'s' if n != 1 else ''} ({min(slots, n)} at a time, "
        f"about {duration(total * min(slots, n) / n)} each), "
        + (
            "the metrics at initialization and the NLC after training included (timed on one: "
            f"{duration(measured + probes[next(iter(probes))]['after_s'])}); "
            if measured is not None  # timed: a small net (_time_measures)
            else "training alone (a large net: its metrics at initialization are small beside it); "
        )
        + f"from {steps} timed training steps of {len(probes)} of them (depth {shown}) on this machine"
        f"{f' ({load})' if load else ''}; the progress line updates it from the architectures that finish",
        total,
        seconds,
    )


def _time_measures(config, data, by_name: dict, probes: dict, device: str) -> float | None:
    """The metrics at initialization (``study.metrics.measurement.measure``, the study's options) and the NLC the
    trainer measures on the selected network after training (``study.metrics.nlc.nlc``, as long as the one at
    initialization) timed on the first probed architecture, written into its probe (``measure_s``, ``after_s``:
    ``Forecast`` adds them to every architecture's training), where its probe was quick (``MORE_PROBES_BELOW_S``: a
    small net, whose metrics cost as much as its training); None for a larger one, whose training dominates (the
    driver adds the metrics from the first units)."""
    first = next(iter(probes), None)
    if first is None or probes[first]["probe_s"] > MORE_PROBES_BELOW_S:
        return None
    from ..experiment.metric_options import MetricOptions
    from ..metrics.measurement import measure, nlc_seed
    from ..metrics.nlc import nlc
    from ..nn.network import build_network

    unit = by_name[first]
    t0 = time.perf_counter()
    net = build_network(unit.spec, seed=unit.seed, device=device)
    measure(net, data, unit.spec, options=MetricOptions.from_dict(config.metrics), seed=unit.seed)
    probes[first]["measure_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nlc(net, data.train.x.to(device), seed=nlc_seed(unit.seed))
    probes[first]["after_s"] = time.perf_counter() - t0
    return float(probes[first]["measure_s"])


def report_path(store) -> str:
    """Where `run --report` (and the example) writes the report: beside the study's files when it is local, in the
    current directory for an s3:// or gs:// study."""
    return os.path.join(store.root, REPORT_NAME) if store.local else REPORT_NAME


def report_problem(path: str) -> str | None:
    """Why the report could not be written at ``path`` (checked in the plan, before any training), or None: a
    directory or something else that is no file there, or a folder that does not take new files."""
    if os.path.lexists(path) and not os.path.isfile(path):
        return f"{path} is not a file (a directory?): move it away"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else f"{path} is not writable"
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):  # a new study: its directory is created where the nearest parent is
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write {path} ({folder} is not a writable directory)"
    return None


def make_preview(keys: dict, out: str, args, say, example: bool = False) -> Preview:
    """The plan `run` says before it starts anything (read-only: nothing is written, Ray is not started): the
    driver's own (``prepare_study``, which ``run_prepared`` then runs), refused in its one line where the driver would
    refuse, before anything costly (the timed steps) runs; and where the report goes, when one is asked."""
    from ..execution.costs import launch_line
    from ..execution.driver import prepare_study
    from ..execution.memory import size

    study = prepare_study(
        keys,
        out,
        address=args.address,
        force_config=args.force_config,
        max_in_flight=args.max_in_flight,
        connect_timeout_s=args.connect_timeout_s,
        say=say,
        **execution_of(args),
    )
    study.check()
    store, config = study.store, study.config
    if args.report or example:
        problem = report_problem(report_path(store))
        if problem:
            asked = "--report" if args.report else "the example (it ends with its report)"
            raise UserError(f"{asked}: the report cannot be written: {problem}; nothing was run")
    todo, units = study.todo, study.units
    slots = _slots(config, args.address, args.max_in_flight)
    if not todo:
        done = f"plan: {store.location}: all {len(units):,} architectures are finished"
        return Preview([done], config, study.data, todo, slots, study=study)
    line = launch_line(config, study.data, units, todo, slots or 1, store.location, len(study.state.finished))
    if slots is None:
        line = line.rsplit("; ", 1)[0] + "; as many at a time as the cluster runs"
    lines = [f"plan: {line}"]
    memory = None
    if study.needs is not None:
        needs = study.needs
        memory = float(needs[1].bytes)
        lines.append(f"memory: the most an architecture needs is about {size(needs[1].bytes)} ({needs[1].terms()})")
    return Preview(lines, config, study.data, todo, slots, study=study, memory_bytes=memory)


def confirmed(plan: Preview, args) -> bool:
    """Whether the study may start: at most ``CONFIRM_ABOVE_S`` estimated, --yes, or a yes on the terminal; without
    a terminal a longer study is refused in one line naming the estimate and the flag."""
    from ..execution.costs import duration

    if plan.estimate_s is None or plan.estimate_s <= CONFIRM_ABOVE_S or args.yes:
        return True
    above = f"estimated {duration(plan.estimate_s)}, above {duration(CONFIRM_ABOVE_S)}"
    if not sys.stdin.isatty():
        raise UserError(f"the study is {above}: pass --yes to start it (--dry-run prints the plan only)")
    print(f"archstudy: the study is {above}; start it? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("archstudy: not started (--dry-run prints the plan only; --yes starts it without asking)", file=sys.stderr)
    return False


class Status:
    """Lines on stderr before the plan. On a terminal the first comes at once (the start-up takes seconds: torch,
    the data) as a transient line, rewritten by the next and erased if the command stops with an error; in a log
    (not a terminal) lines are printed once the checks have passed, so a refused command stays one line."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.transient = False

    def now(self, line: str) -> None:
        """Say ``line`` at once, where it cannot come before an error (a terminal: transient)."""
        if self.tty:
            self.stream.write(f"\r\x1b[Karchstudy: {line}")
            self.stream.flush()
            self.transient = True

    def say(self, line: str) -> None:
        self.clear()
        print(f"archstudy: {line}", file=self.stream, flush=True)

    def clear(self) -> None:
        if self.transient:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.transient = False


def command(args) -> int:
    if args.json and not args.dry_run:
        raise UserError("--json prints the plan only: it needs --dry-run (run --dry-run --json)")
    keys, out, example = config_of(args)
    if "dataset" not in keys:
        raise SpecError("study", "dataset", None, "is required (--dataset or the config file)")
    if "architectures" not in keys:
        raise SpecError("study", "architectures", None, "is required (--architectures or the config file)")
    status = Status()
    # At once on a terminal, before the heavy imports (torch, Ray) and the data.
    status.now(f"planning {out}: loading {keys['dataset']} and sampling the architectures ...")
    try:
        plan = make_preview(keys, out, args, status.say, example)
    finally:
        status.clear()
    intro = defaults_line(keys, example)
    for line in ([intro] if intro else []) + plan.lines:
        status.say(line)
    from ..experiment.terminal import phase

    timing = bool(plan.todo) and plan.slots is not None  # else there is nothing to time here
    with phase(sys.stderr if timing else None, "timing a few training steps on this machine for the estimate"):
        estimate = plan.estimate()
    if estimate:
        status.say(estimate)
    if args.dry_run:
        status.say("--dry-run: nothing was run or written")
        if args.json:
            print(json.dumps(plan.to_dict(), indent=1))
        return 0
    if not confirmed(plan, args):
        return 1

    from ..execution.driver import run_prepared

    # The plan said above is the one that runs (the driver surveys the study again once it holds the lock).
    result = run_prepared(plan.study, progress=sys.stderr, announced=True)
    return finish(result, out, args, example)
