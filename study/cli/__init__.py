"""``archstudy``: the command line. One module per subcommand, each with ``register(subparsers)``.

A user's mistake (``sampling.UserError``: bad input, missing files, a non-study directory) is printed as
one line on stderr with exit code 2, never as a traceback; so is an argument error (``OneLineParser``).

``main`` is the command line's entry point, and the one place that changes the process for the command's
duration: SIGTERM (``kill``, ``ray job stop``) is turned into Ctrl-C (``sigterm_as_interrupt``), so a
study driver shuts Ray down cleanly and every command says "interrupted". The other process-wide settings
belong to the entry points that need them: a study worker (``study.execution.unit.prepare_worker``: torch threads,
glibc malloc) and ``archstudy bench`` (the same). The report needs no matplotlib backend: its figures are
``matplotlib.figure.Figure`` objects rendered straight to PNG, never through pyplot.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys

from archstudy.sampling import UserError
from archstudy.sampling.constraints import shorten

from .flags import GIVEN, StoreOnce

COMMANDS = ("run", "resume", "status", "top", "report", "rank", "sample", "datasets", "bench", "reproduce", "cluster")


class OneLineParser(argparse.ArgumentParser):
    """Argument errors (``--architectures abc``) as one line, like every other error, not usage + error; an option
    repeated with another value is one of them (``flags.StoreOnce``). Subcommand parsers are of the same class
    (``add_subparsers`` builds them with the parent's)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):  # every plain option of every parser and argument group
            self.register("action", name, StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        namespace.__dict__.pop(GIVEN, None)
        return namespace, extras

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def one_line(message: object, limit: int = 1000) -> str:
    """An error message as one line of at most ``limit`` characters, whatever it echoes (a value the user
    typed, a path): the last guard of "one line, no traceback"."""
    return shorten(" ".join(str(message).splitlines()), limit)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="archstudy",
        description="Random-architecture studies of fully-connected networks: sample architectures, measure "
        "them at initialization (NLC, bias, ...), train each at many learning rates in float64, report.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Treat SIGTERM (``ray job stop``, ``kill``) like Ctrl-C while the command runs, and never lose either
    (``study.execution.interrupts``); the previous handlers are put back afterwards."""
    from ..execution import interrupts

    interrupts.clear()
    try:
        previous = {s: signal.signal(s, interrupts.handler) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        interrupts.clear()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with sigterm_as_interrupt():
            return int(args.func(args) or 0)
    except UserError as e:
        from .datasets import on_the_command_line

        print(f"archstudy {args.command}: error: {on_the_command_line(one_line(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"archstudy {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `archstudy sample | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
