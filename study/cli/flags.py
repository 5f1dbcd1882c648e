"""Flags from declarations: a declared field's ``Flag`` (``sampling.constraints``) as an argparse argument, and a
default as help texts write it.

A help text never writes a default by hand: it is the declared one (``shown(StudyConfig.default(key))``, a
``Flag``'s ``{default}``) or argparse's own (``%(default)s``) for a flag that sets no declared field.
"""

from __future__ import annotations

import argparse
from typing import Any

from archstudy.sampling.constraints import Constraint, Declared, Integer, Maybe, Real


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
    while isinstance(constraint, Maybe):
        constraint = constraint.inner
    if isinstance(constraint, Integer):
        return int
    if isinstance(constraint, Real):
        return float
    return str


def add_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, owner: type[Declared], name: str) -> None:
    """The flag ``owner`` declares for its field ``name`` (dest ``name``; no default: an absent flag is None)."""
    declared = owner.declaration(name)
    flag = declared.flag
    if flag is None:
        raise ValueError(f"{owner.__name__}.{name} declares no flag")
    parser.add_argument(flag.option(name), type=flag.type or _text_type(declared.constraint), metavar=flag.metavar,
                        dest=name, help=flag.help.format(default=shown(owner.default(name))))
