"""``archstudy run``: start a study (or continue it: the same command on the same directory).

With no arguments at all it runs the README's small example: 8 architectures on waveform-noise with a
small parameter budget and the quick protocol, into ``studies/example``, and ends by writing the report.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

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

# Every study key that declares a flag is one of `run` (``StudyConfig``: ``declare(..., flag=Flag(...))``), generated
# from the declarations; beside them, the flags that set no declared key alone: --config, --out, and --root (an
# execution key, which each command names beside its data: run, a study key like --dataset; resume, the data read
# this time). Any of them makes `run` a study of its own (without any: the example).
_OTHER_STUDY_FLAGS = ("config", "out", "root")


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
    add_execution_arguments(p)
    p.set_defaults(func=command)


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
        # Beside the study's files when it is local; in the current directory for an s3:// or gs:// study.
        path = os.path.join(store.root, REPORT_NAME) if store.local else REPORT_NAME
        print(write_report([store.uri], path))
    elif args.report:
        print(
            f"archstudy: no report: {result.total - result.finished_before - result.finished} architectures are "
            "not finished",
            file=sys.stderr,
        )
    return 0 if result.complete else 1


@dataclass
class Plan:
    """What `run` will do, said before anything starts: its lines (what will run, the memory), what the estimate
    needs, and once made the estimated seconds of the session (None when none can be made here, or nothing is
    left to run)."""

    lines: list[str]
    config: StudyConfig
    data: Any
    todo: list
    slots: int | None  # architectures at once; None: on a cluster, not known here
    estimate_s: float | None = None

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
        text, self.estimate_s = estimate_line(self.config, self.data, self.todo, self.slots)
        return text


def _planned_config(store, keys: dict, args):
    """The config the driver would run (``run_study``'s own reconciliation): a new study's, or on an existing one
    the stored config, extended or replaced (--force-config) as asked; a command the driver refuses is refused
    here, before anything is planned, with its line."""
    from ..execution.driver import _check_new_location, _check_not_inside_a_study, _named_execution, _reconcile

    execution = execution_of(args)
    config = StudyConfig.from_dict(keys)
    config = config.with_execution(**{k: v for k, v in execution.items() if v is not None})
    _check_not_inside_a_study(store)
    if not store.is_study():
        _check_new_location(store)
        return config
    stored = store.read_config()
    planned, rewrite, _ = _reconcile(store, stored, config, args.force_config)
    return planned if rewrite else stored.with_execution(**_named_execution(keys, execution))


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
    """The units the estimate may time, in order: the one of median depth, then the shallowest and the deepest
    (the step time at a fixed parameter budget depends mostly on depth)."""
    ordered = sorted(todo, key=lambda u: (u.spec.depth, u.index))
    picks = dict.fromkeys([len(ordered) // 2, 0, len(ordered) - 1])
    return [ordered[i] for i in picks]


def estimate_line(config, data, todo: list, slots: int) -> tuple[str, float]:
    """The session's estimate from a few timed steps on this machine (``study.execution.costs.probe``, with the
    worker's torch threads), as the driver's ``Forecast`` makes it from its first units: work over the
    architectures at once, ``n x t_unit / min(slots, n)``, ``t_unit`` the mean of the probed ones (``_probe_order``,
    ``MORE_PROBES_BELOW_S``)."""
    import torch

    from ..execution.costs import Forecast, duration, probe
    from ..experiment.protocol import Protocol

    protocol = Protocol.from_dict(config.protocol)
    device = "cuda" if config.resources.gpus_per_arch > 0 else "cpu"
    threads = torch.get_num_threads()
    torch.set_num_threads(config.resources.threads)
    probes: dict[str, dict] = {}
    try:
        for unit in _probe_order(todo):
            probes[unit.name] = {**probe(unit.spec, data, protocol, device), "measure_s": None}
            if probes[unit.name]["probe_s"] > MORE_PROBES_BELOW_S:  # a large net: one probe is enough to wait for
                break
    finally:
        torch.set_num_threads(threads)
    forecast = Forecast(todo=len(todo), slots=min(slots, len(todo)), probes=probes)
    total = float(forecast.eta(0, 0, 0)[0] or 0.0)
    by_name = {u.name: u for u in todo}
    depths = ", ".join(str(by_name[name].spec.depth) for name in probes)
    steps = sum(int(p["timed_steps"]) for p in probes.values())
    load = f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
    n = len(todo)
    return (
        f"estimated {duration(total)} for {n:,} architecture{'s' if n != 1 else ''} ({min(slots, n)} at a time, "
        f"about {duration(total * min(slots, n) / n)} each), training alone: the metrics at initialization add "
        f"to it; from {steps} timed training steps of {len(probes)} of them (depth {depths}) on this machine"
        f"{f' ({load})' if load else ''}; the progress line updates it from the architectures that finish",
        total,
    )


def make_plan(keys: dict, out: str, args, say) -> Plan:
    """The plan `run` says before it starts anything (read-only: nothing is written, Ray is not started), after the
    driver's own checks, in its order (``run_study``): a command it refuses is refused here, in its one line,
    before anything costly (the timed steps) runs."""
    from ..execution.costs import plan_line
    from ..execution.driver import (
        _check_memory,
        _check_pilot,
        _load_data,
        _memory_needed,
        _refuse_mixed,
        data_fingerprint,
    )
    from ..execution.memory import size
    from ..execution.progress import Progress
    from ..execution.ray_session import check_address
    from ..execution.state import plan_with_progress, survey
    from ..execution.store import Store

    from archstudy.sampling.constraints import Real, check
    from archstudy.sampling.width import check_budget

    store = Store(out)
    store.reach()
    existing = store.is_study()
    config = _planned_config(store, keys, args)
    # The driver's first checks (``_drive``), made as it makes them.
    if args.max_in_flight is not None and args.max_in_flight < 1:
        raise UserError(f"max_in_flight = {args.max_in_flight!r}: must be an integer >= 1")
    check("run", "connect_timeout", Real(0.0, lo_open=True), args.connect_timeout_s)
    problem = store.write_problem()
    if problem:
        raise UserError(f"{store.location}: {problem}")
    check_address(args.address, args.connect_timeout_s)
    data = _load_data(config)
    config = config.replace(d_in=int(data.d_in), d_out=int(data.n_classes), data_fingerprint=data_fingerprint(data))
    units = plan_with_progress(config, say)
    new_config = not existing or args.force_config or config.architectures != store.read_config().architectures
    if new_config:
        where = f"{config.dataset} (d_in {config.d_in}, {config.d_out} classes)"
        check_budget("study", (u.spec for u in units), config.param_budget, where)
        _check_pilot(config)
    finished: set[str] = set()
    if existing:  # the driver's refusals of what the study holds (``_drive``, with its lock: here, read-only)
        state = survey(store, config, units, driver=False)
        if state.foreign:
            name, problem = next(iter(state.foreign.items()))
            raise UserError(f"{store.location}: {name}: {problem}; resume it with the archstudy version that wrote it")
        _refuse_mixed(store, state, config)
        finished = set(state.finished)
    todo = [u for u in units if u.name not in finished]
    slots = _slots(config, args.address, args.max_in_flight)
    needs = _memory_needed(config, units, data, store) if todo else None
    if slots is not None:  # an embedded Ray: this machine's memory, as the driver checks it before Ray starts
        _check_memory(
            needs,
            engine_nodes=[{"Alive": True, "Resources": {"CPU": float(os.cpu_count() or 1)}}],
            cpus=config.resources.cpus_per_arch,
            gpus=config.resources.gpus_per_arch,
            max_in_flight=args.max_in_flight,
            embedded=True,
            shown=Progress(None, 0, 0),
        )
    if not todo:
        done = f"plan: {store.location}: all {len(units):,} architectures are finished"
        return Plan([done], config, data, todo, slots)
    line = plan_line(config, data, units, todo, slots or 1, store.location, len(finished))
    if slots is None:
        line = line.rsplit("; ", 1)[0] + "; as many at a time as the cluster runs"
    lines = [f"plan: {line}"]
    if needs is not None:
        lines.append(f"memory: the largest architecture needs about {size(needs[1].bytes)} ({needs[1].terms()})")
    return Plan(lines, config, data, todo, slots)


def confirmed(plan: Plan, args) -> bool:
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
    keys, out, example = config_of(args)
    if "dataset" not in keys:
        raise SpecError("study", "dataset", None, "is required (--dataset or the config file)")
    if "architectures" not in keys:
        raise SpecError("study", "architectures", None, "is required (--architectures or the config file)")
    status = Status()
    # At once on a terminal, before the heavy imports (torch, Ray) and the data.
    status.now(f"planning {out}: loading {keys['dataset']} and sampling the architectures ...")
    try:
        plan = make_plan(keys, out, args, status.say)
    finally:
        status.clear()
    intro = defaults_line(keys, example)
    for line in ([intro] if intro else []) + plan.lines:
        status.say(line)
    status.now("timing a few training steps on this machine for the estimate ...")
    try:
        estimate = plan.estimate()
    finally:
        status.clear()
    if estimate:
        status.say(estimate)
    if args.dry_run:
        status.say("--dry-run: nothing was run or written")
        return 0
    if not confirmed(plan, args):
        return 1

    from ..execution.driver import run_study

    # The keys as given (not a StudyConfig): on an existing study, execution settings they do not name stay
    # the study's own.
    result = run_study(
        keys,
        out,
        address=args.address,
        force_config=args.force_config,
        max_in_flight=args.max_in_flight,
        progress=sys.stderr,
        connect_timeout_s=args.connect_timeout_s,
        announced=True,  # the plan above said what will run and its memory
        **execution_of(args),
    )
    return finish(result, out, args, example)
