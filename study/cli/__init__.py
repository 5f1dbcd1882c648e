"""``archstudy``: the command line. One module per subcommand, each declaring itself (``commands.subcommand``).

Each command's module declares it above its ``register(subparsers)``: its place in ``--help``, what it is doing,
the study locations it reads; ``COMMANDS`` finds them by importing every module of this package.

A user's mistake (``sampling.UserError``: bad input, missing files, a non-study directory) is printed as
one line on stderr with exit code 2, never as a traceback; so is an argument error (``OneLineParser``). ``main``
is the one error boundary of every command: an error of the operating system, of pyarrow or of the object store
that reaches it (a name over 255 bytes, a file where the study keeps a directory, a read-only or full disk) is one
line too, naming the path, what was being done and why (``system_error_line``), exit code 2; ``--debug`` (before
or after the command's name) prints the traceback as well. Every study location a command reads is opened, and
object storage asked once whether it answers, before the command starts (``open_locations``).

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
import errno
import os
import re
import signal
import sys
import traceback
import warnings

from archstudy.sampling import UserError
from archstudy.sampling.constraints import shorten

from ..execution.lifetime import children_die_with_the_command
from .commands import COMMANDS
from .flags import GIVEN, StoreOnce


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
    for command in COMMANDS.values():  # in their declared order: that of --help
        command.add_parser(sub)
        if command.name not in sub.choices:
            raise LookupError(
                f"{command.add_parser.__module__} declares the command {command.name!r} but adds no parser of it"
            )
    for command_parser in (parser, *sub.choices.values()):
        command_parser.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,  # a subcommand's default would overwrite `archstudy --debug COMMAND`
            help="on an error, print the traceback too",
        )
    return parser


# pyarrow's own words for the operation (its errors carry no ``filename``; the path is quoted in the message).
_ARROW_OPERATION = (
    ("Failed stat()ing", "looking it up"),
    ("Cannot list directory", "listing it"),
    ("Cannot create directory", "creating it"),
    ("Failed to open local file", "opening it"),
    ("Failed to open", "opening it"),
    ("Cannot delete", "deleting it"),
    ("Failed renaming", "renaming it"),
    ("Failed to rename", "renaming it"),
    ("When getting information for key", "asking the object store for it"),
    ("When listing objects", "listing it in the object store"),
    ("When reading information", "asking the object store for it"),
    ("When uploading", "writing it to the object store"),
    ("When deleting", "deleting it from the object store"),
)

# Why, in a user's words, beside the system's own (os.strerror).
_WHY = {
    errno.ENAMETOOLONG: "a name in the path is over 255 bytes, or the whole path over 4096",
    errno.ENOTDIR: "a file stands where a directory is expected",
    errno.EISDIR: "a directory stands where a file is expected",
    errno.EROFS: "the file system is mounted read-only",
    errno.EACCES: "not allowed to this user",
    errno.EPERM: "not allowed (an immutable file or directory?)",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.ENOENT: "it does not exist",
    errno.ELOOP: "a symbolic link where none may be, or a loop of links",
    errno.ENXIO: "a FIFO or device with no one at the other end",
}


def is_system_error(error: BaseException) -> bool:
    """An error of the operating system, of pyarrow or of the object store (pyarrow's are ``ArrowException``s;
    pyarrow is looked up only if the command loaded it)."""
    if isinstance(error, (OSError, MemoryError)):
        return True
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(error, arrow.ArrowException)


def system_error_line(error: BaseException, command: str) -> str:
    """One line for an error of the operating system, pyarrow or the object store: the path it names (the
    error's ``filename``, or the first quoted path of pyarrow's message), what was being done (pyarrow's
    operation where it says one, and the command's activity) and why (the system's words, and a user's)."""
    activity = COMMANDS[command].activity if command in COMMANDS else f"running {command}"
    if isinstance(error, MemoryError):
        return f"out of memory while {activity} ({type(error).__name__}: {error or 'no detail'})"
    text = " ".join(str(error).split())
    path = getattr(error, "filename", None)
    if path is None:
        quoted = re.search(r"'(/[^']*|[a-z0-9]+://[^']*|[^' ]+/[^']*)'", text)
        path = quoted[1] if quoted else None
    number = getattr(error, "errno", None)
    if number is None:  # pyarrow: "... Detail: [errno 20] Not a directory"
        found = re.search(r"\[errno (\d+)\]", text, re.IGNORECASE)
        number = int(found[1]) if found else None
    operation = next((words for prefix, words in _ARROW_OPERATION if prefix in text), None)
    if number is not None and number in errno.errorcode:
        why = os.strerror(number)
        if number in _WHY:
            why = f"{why}: {_WHY[number]}"
    else:
        why = re.sub(r"^\[Errno \d+\]\s*", "", text) or type(error).__name__
    doing = f"{operation}, while {activity}" if operation else f"while {activity}"
    where = f"{path}: " if path else ""
    if path and getattr(error, "filename2", None):
        where = f"{path} -> {error.filename2}: "  # type: ignore[attr-defined]
    return f"{where}{why} ({doing})"


def open_locations(args: argparse.Namespace) -> None:
    """Open every study location the command reads (its declared ``reads``) and ask object storage once whether it
    answers (``study.execution.location``): a malformed URI (``s3:bucket/x``, ``s3://``) or an endpoint that does not
    answer is one ``UserError`` line before the command starts, as ``run``, ``resume`` and ``status`` do."""
    from ..execution.location import names_a_uri, open_location, reach

    for name in COMMANDS[args.command].reads:
        value = getattr(args, name, None)
        for location in value if isinstance(value, list) else [value]:
            if isinstance(location, str) and names_a_uri(location):
                fs, root = open_location(location)
                reach(fs, root, location)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # archstudy's own files


@contextlib.contextmanager
def warnings_as_lines(command: str, debug: bool):
    """A warning while the command runs: archstudy's own (a ``UserWarning`` warned from a file of the package, such as
    a cache file that could not be written) as one line ``archstudy COMMAND: warning: ...`` on stderr; any other
    (Python's, numpy's floating-point ``RuntimeWarning``s, Ray's, scikit-learn's) not at all, with ``--debug`` as
    Python shows it. Processes the command starts
    meanwhile (``reproduce all``'s workers, Ray's) inherit ``PYTHONWARNINGS=ignore`` unless ``--debug``. Everything is
    put back afterwards."""
    environ = os.environ.get("PYTHONWARNINGS")

    def show(message, category, filename, lineno, file=None, line=None):
        if category is UserWarning and os.path.abspath(filename).startswith(_PACKAGE + os.sep):
            print(f"archstudy {command}: warning: {one_line(message)}", file=sys.stderr)
        elif debug:
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.showwarning = show
        if not debug:
            os.environ["PYTHONWARNINGS"] = "ignore"
        try:
            yield
        finally:
            if environ is None:
                os.environ.pop("PYTHONWARNINGS", None)
            else:
                os.environ["PYTHONWARNINGS"] = environ


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


_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d)")  # "-1,3", "-0.5": a value, never one of archstudy's options
_PLAIN_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's own rule: these it already reads as values


def _valued_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, of the parser and its subcommands, that takes a value."""
    out: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _valued_options(sub)
        elif action.option_strings and action.nargs != 0:
            out.update(o for o in action.option_strings if o.startswith("--"))
    return out


def _attached_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--nlc-window -1,3`` as ``--nlc-window=-1,3``: argparse reads a word starting with "-" as an option unless
    it is one plain negative number, so a negative window bound was refused as "expected one argument" instead of
    by the window's own check, which names the value and what is allowed."""
    valued, out = _valued_options(parser), list(argv)
    i = 0
    while i < len(out) - 1:
        if out[i] in valued and _NEGATIVE_VALUE.match(out[i + 1]) and not _PLAIN_NEGATIVE.match(out[i + 1]):
            out[i : i + 2] = [f"{out[i]}={out[i + 1]}"]
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_attached_negative_values(parser, sys.argv[1:] if argv is None else argv))
    children_die_with_the_command()
    try:
        with sigterm_as_interrupt(), warnings_as_lines(args.command, getattr(args, "debug", False)):
            open_locations(args)
            return int(args.func(args) or 0)
    except UserError as e:
        from .datasets import on_the_command_line

        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"archstudy {args.command}: error: {on_the_command_line(one_line(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"archstudy {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `archstudy sample | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        if not is_system_error(e):
            raise
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"archstudy {args.command}: error: {one_line(system_error_line(e, args.command))}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
