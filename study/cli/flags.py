"""Flags from declarations: a declared field's ``Flag`` (``sampling.constraints``) as an argparse argument, a
default as help texts write it, and how every option stores its value (once: ``StoreOnce``; in several words:
``Words``); and ``--wide``, the flag of the commands that print for a terminal, with the width it lifts (``WIDTH``,
``fit``).

A help text never writes a default by hand: it is the declared one (``shown(StudyConfig.default(key))``, a
``Flag``'s ``{default}``) or argparse's own (``%(default)s``) for a flag that sets no declared field.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from archstudy.sampling.constraints import Constraint, Declared, Integer, OneOf, Real, shorten


GIVEN = "_archstudy_given"  # the values of the options given so far, on the namespace while it is parsed


# The characters no path, URI, name or number given on the command line may hold: C0 controls and DEL (a newline in
# --out split the last line of every message that names the path, and made a file name no shell lists plainly).
_CONTROL = {chr(c) for c in range(0x20)} | {"\x7f"}
_CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL"}


def argument_name(action: argparse.Action) -> str:
    """How an argument error names the argument: its options (``--out``), or a positional's metavar or name."""
    if action.option_strings:
        return "/".join(action.option_strings)
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return metavar or action.dest


def refuse_control_characters(parser: argparse.ArgumentParser, action: argparse.Action, values: Any) -> None:
    """An argument error, one line, for a value (or one of a list of values) holding a control character (``_CONTROL``):
    it names the argument, the value as Python writes it (``'a\\nb'``) and the character."""
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if not isinstance(value, str):
            continue
        bad = next((c for c in value if c in _CONTROL), None)
        if bad is not None:
            what = _CONTROL_NAMES.get(bad, f"the control character {bad!r}")
            parser.error(
                f"argument {argument_name(action)}: {shorten(repr(value), 120)} holds {what}; a path, URI, name or "
                "number here is printable text"
            )


class StoreOnce(argparse.Action):
    """argparse's ``store`` (built on its public ``Action``), but an option given twice with different values
    (``--dataset waveform-noise --dataset digits``) is refused instead of silently keeping the last one; the same
    value twice is the same command."""

    def __init__(self, option_strings, dest, nargs=None, **kwargs):
        if nargs == 0:  # as argparse's own store: an option that takes no value is store_true / store_const
            raise ValueError(
                "nargs for store actions must be != 0; if you have nothing to store, actions such as "
                "store true or store const may be more appropriate"
            )
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        refuse_control_characters(parser, self, values)
        given = namespace.__dict__.setdefault(GIVEN, {})
        if self.dest in given and given[self.dest] != values and self.option_strings:
            parser.error(
                f"argument {'/'.join(self.option_strings)}: given twice "
                f"({shorten(str(given[self.dest]), 80)}, then {shorten(str(values), 80)}); give it once"
            )
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def shown(value: Any) -> str:
    """A default as help texts write it: 1,000,000 (an integer), 300 or 0.25 (a number), paper (a name)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _text_type(constraint: Constraint | None):
    """How a flag's text becomes a value for ``constraint`` (which then checks it): int, float or the text."""
    while isinstance(constraint, OneOf):  # null and one other (``Maybe``): the other's
        others = [a for a in constraint.alternatives if a is not None]
        constraint = others[0] if len(others) == 1 else None
    if isinstance(constraint, Integer):
        return int
    if isinstance(constraint, Real):
        return float
    return str


class Words(StoreOnce):
    """A value that may be spelled in several words (``--nlc-window 1 3`` as ``--nlc-window 1,3``): the words are
    joined by a space into one text, read by ``read`` (``str``: kept as text, for a declared constraint to read);
    a ``ValueError`` of ``read`` is an argument error."""

    def __init__(self, option_strings, dest, read=str, **kwargs):
        super().__init__(option_strings, dest, nargs="+", **kwargs)
        self.read = read

    def __call__(self, parser, namespace, values, option_string=None):
        refuse_control_characters(parser, self, values)
        try:
            value = self.read(" ".join(values))
        except ValueError as e:
            parser.error(f"argument {'/'.join(self.option_strings)}: {e}")
        super().__call__(parser, namespace, value, option_string)


def declared_flags(owner: type[Declared], execution: bool = False) -> tuple[str, ...]:
    """The fields of ``owner`` that declare a flag: its science keys' (``execution`` False) or its execution
    settings' (True)."""
    return tuple(
        name
        for name, declared in owner.declarations().items()
        if declared.flag is not None and declared.execution == execution
    )


def add_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, owner: type[Declared], name: str) -> None:
    """The flag ``owner`` declares for its field ``name`` (dest ``name``; no default: an absent flag is None)."""
    declared = owner.declaration(name)
    flag = declared.flag
    if flag is None:
        raise ValueError(f"{owner.__name__}.{name} declares no flag")
    text = flag.type or _text_type(declared.constraint)
    how: dict[str, Any] = (
        {"action": Words, "read": text}
        if flag.nargs == "+"
        else {"type": text, **({"nargs": flag.nargs, "const": flag.const} if flag.nargs else {})}
    )
    parser.add_argument(
        flag.option(name),
        metavar=flag.metavar,
        dest=name,
        help=flag.help.format(default=shown(owner.default(name))),
        **how,
    )


WIDTH = 100  # columns of a command's output on a terminal, unless --wide


def add_wide(parser: argparse.ArgumentParser) -> None:
    """``--wide``: print every column and every line in full, however wide."""
    parser.add_argument(
        "--wide",
        action="store_true",
        help=f"every column, and lines as long as they are (default on a terminal: at most {WIDTH} columns, long "
        "lines wrapped; into a pipe or a file: as with --wide)",
    )


def output_width(wide: bool) -> int | None:
    """The width a command's output keeps to: ``WIDTH`` on a terminal, None (no limit) with --wide or into a pipe or
    a file (where a reader greps whole lines)."""
    return None if wide or not stdout_is_terminal() else WIDTH


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


# Joins words that a line must not break apart ("archstudy 0.1.0"): ``fit`` never breaks there and prints a space.
KEEP = "\u00a0"


def fit(line: str, width: int | None, hang: int | None = None) -> list[str]:
    """``line`` as lines of at most ``width`` columns (None: as it is), broken at spaces but not at ``KEEP``; a
    continuation is indented by the line's own indent plus 4, or by ``hang`` columns; a word longer than the width
    is broken."""
    if width is None or len(line) <= width:
        return [line.replace(KEEP, " ")]
    indent = len(line) - len(line.lstrip(" "))
    wrapper = textwrap.TextWrapper(
        width,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + 4 if hang is None else hang),
        break_on_hyphens=False,
    )
    return [part.replace(KEEP, " ") for part in wrapper.wrap(line.lstrip(" "))]
