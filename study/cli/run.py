"""``archstudy run``: start a study (or continue it: the same command on the same directory).

With no arguments at all it runs the README's small example: 8 architectures on waveform-noise with a
small parameter budget and the quick protocol, into ``studies/example``, and ends by writing the report.
"""

from __future__ import annotations

import argparse
import os
import sys
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


def command(args) -> int:
    from ..execution.driver import run_study

    keys, out, example = config_of(args)
    if "dataset" not in keys:
        raise SpecError("study", "dataset", None, "is required (--dataset or the config file)")
    if "architectures" not in keys:
        raise SpecError("study", "architectures", None, "is required (--architectures or the config file)")
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
        intro=defaults_line(keys, example),
        **execution_of(args),
    )
    return finish(result, out, args, example)
