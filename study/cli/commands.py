"""The commands of ``archstudy``, each declared by its own module of this package above the function that adds its
parser (``sampling.registry``: a new command module is found by being here):

    @subcommand("top", order=50, activity="reading the study", reads=("study",))
    def register(sub) -> None:
        p = sub.add_parser("top", help=...)
        ...
        p.set_defaults(func=command)

``order``: the command's place in ``archstudy --help`` (gaps of 10, so a new command can go between two);
``activity``: what it is doing when the system refuses it, the "while ..." of an error line
(``study.cli.system_error_line``); ``reads``: its arguments that name study locations, opened (and object storage
asked once whether it answers) before it starts (``study.cli.open_locations``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from archstudy.sampling.registry import Registry

AddParser = Callable[[Any], None]  # register(subparsers): adds the command's parser
F = TypeVar("F", bound=AddParser)


@dataclass(frozen=True)
class Command:
    """One command as its module declares it (see the module docstring)."""

    name: str
    add_parser: AddParser
    activity: str
    reads: tuple[str, ...] = ()


COMMANDS: Registry[Command] = Registry("command", __package__)


def subcommand(name: str, *, order: int, activity: str | None = None, reads: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Declares the decorated ``register(subparsers)`` as the one that adds the parser of the command ``name``, at
    the place ``order`` of ``--help``; ``activity`` defaults to "running NAME". The function itself is unchanged."""

    def declare(add_parser: F) -> F:
        command = Command(name, add_parser, activity or f"running {name}", tuple(reads))
        COMMANDS.register(name, command, module=add_parser.__module__, order=order)
        return add_parser

    return declare
