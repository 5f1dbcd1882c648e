"""``archstudy``: the command line. One module per subcommand, each with ``register(subparsers)``.

A user's mistake (``sampling.UserError``: bad input, missing files, a non-study directory) is printed as
one line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from sampling import UserError

COMMANDS = ("run", "resume", "status", "report", "sample", "datasets", "bench", "reproduce")


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Argument errors (``--architectures abc``) as one line, like every other error, not usage + error."""
    def error(message: str):
        parser.exit(2, f"{parser.prog}: error: {message}\n")

    parser.error = error
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="archstudy",
        description="Random-architecture studies of fully-connected networks: sample architectures, measure "
        "them at initialization (NLC, bias, ...), train each at many learning rates in float64, report.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    for p in (parser, *sub.choices.values()):  # every argument error is one line, as every other error
        one_line_errors(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"archstudy {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"archstudy {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `archstudy sample | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
