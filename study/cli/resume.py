"""``archstudy resume STUDY``: continue a study from its own ``study.yaml``.

Finished architectures (both result files there and valid) are skipped; truncated or unreadable files are
reported, removed and redone; the rest run, long ones from their checkpoints. Failed architectures are
tried again unless ``--skip-failed``. Resuming a finished study does nothing and says so.
"""

from __future__ import annotations

import sys

from .run import Status, add_execution_arguments, execution_of, finish
from .commands import subcommand


@subcommand("resume", order=20, activity="resuming the study")
def register(sub) -> None:
    p = sub.add_parser(
        "resume",
        help="continue a study after a crash, a kill or a lost node",
        description="Continue the study in STUDY with its own study.yaml: skip every architecture whose result "
        "files are there and valid, redo truncated or unreadable ones, run the rest (from their checkpoints). "
        "Execution settings (--address, --cpus-per-arch, --gpus-per-arch, ...) may differ from the first run.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("--skip-failed", action="store_true", help="do not try the failed architectures again")
    p.add_argument(
        "--root",
        metavar="DIR",
        help="read the dataset's files from DIR this time (the data must be the study's: its fingerprint is checked)",
    )
    add_execution_arguments(p)
    p.set_defaults(func=command)


def command(args) -> int:
    status = Status()
    # At once on a terminal, before the heavy imports (torch, Ray) and the data: the driver's first line takes seconds.
    status.now(f"resuming {args.study}: reading the study, loading its data ...")
    try:
        from ..execution.driver import resume_study
    finally:
        status.clear()
    result = resume_study(
        args.study,
        address=args.address,
        retry_failed=not args.skip_failed,
        max_in_flight=args.max_in_flight,
        progress=sys.stderr,
        root=args.root,
        connect_timeout_s=args.connect_timeout_s,
        **execution_of(args),
    )
    return finish(result, args.study, args, example=False)
