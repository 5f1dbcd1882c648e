"""Registries: the things of one kind that the code finds by name (the command line's commands, the report's figures,
the metric functions of ``measure``, the datasets' loaders, the layer families, the reproductions), each registered
beside its definition and found by importing every module of its package.

A registry is a mapping of name to value owned by one package. A definition registers itself where it is written
(a decorator, or a ``register(...)`` call beside it, which names the module it is in); the first read of the
registry imports every module of the package (``pkgutil``; a module whose name starts with ``_``, such as
``__main__``, is left out), so a new module registers by being in the package and no second list names it:

    COMMANDS: Registry[Command] = Registry("command", __package__)        # in study/cli/commands.py
    COMMANDS.register("top", Command(...), module=__name__, order=50)     # @subcommand in study/cli/top.py
    list(COMMANDS)                                                         # every module of study.cli imported first

The order of the entries is declared where they are defined, never by which module happened to be imported first:
``by_order`` (the default) sorts by the declared ``order`` (an integer: the place in a listing a user sees, with
gaps so that a new entry can go between two), then by name; ``as_defined`` sorts by module, then by the place
of the registration in its module (the report draws a section's figures in the order its topic module defines
them). So a registry holds the same entries in the same order whatever the order its modules were imported in.

A name is registered once: a second registration is refused at import, naming both modules. Item assignment and
deletion replace or remove an entry, as a test puts a stand-in in place (``monkeypatch.setitem``).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, MutableMapping, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registration: ``name`` -> ``value``, by the module ``module`` (its ``sequence``-th registration in this
    registry, from 0), at the declared place ``order``."""

    name: str
    value: T
    module: str
    order: int
    sequence: int


def by_order(entry: Entry[Any]) -> tuple[int, str]:
    """The declared order, then the name."""
    return (entry.order, entry.name)


def as_defined(entry: Entry[Any]) -> tuple[str, int]:
    """The module, then the place of the registration in it."""
    return (entry.module, entry.sequence)


class Registry(MutableMapping[str, T]):
    """The ``kind`` things (the word its errors use) that the modules of the package ``package`` (its dotted name)
    register, in the order ``order`` gives (``by_order`` or ``as_defined``)."""

    def __init__(self, kind: str, package: str | None, order: Callable[[Entry[Any]], Any] = by_order) -> None:
        if not package:
            raise TypeError(f"the {kind} registry needs the package whose modules register (a module's __package__)")
        self.kind = kind
        self.package = package
        self._order = order
        self._entries: dict[str, Entry[T]] = {}
        self._removed: dict[str, Entry[T]] = {}  # deleted entries, whose place a stand-in put back takes again
        self._sorted: list[str] | None = None
        self._scanned = False
        self._scanning = False
        self._lock = threading.RLock()

    def register(self, name: str, value: T, *, module: str, order: int = 0) -> T:
        """Registers ``value`` as the ``kind`` ``name``, defined in ``module`` at the place ``order``; returns
        ``value``. A name registered before is refused (ValueError), naming both modules."""
        if name in self._entries:
            first = self._entries[name].module
            raise ValueError(f"{self.kind} {name!r} is declared twice: in {first} and in {module}")
        sequence = sum(e.module == module for e in self._entries.values())
        self._entries[name] = Entry(name, value, module, order, sequence)
        self._removed.pop(name, None)
        self._sorted = None
        return value

    def scan(self) -> Registry[T]:
        """Imports every module of the package, once (the first read of the registry does it); returns the registry.
        A read from a module that the scan itself imports sees what is registered so far."""
        if self._scanned:
            return self
        with self._lock:
            if self._scanned or self._scanning:
                return self
            self._scanning = True
            try:
                package = importlib.import_module(self.package)
                for found in pkgutil.iter_modules(package.__path__):
                    if not found.name.startswith("_"):
                        importlib.import_module(f"{self.package}.{found.name}")
                self._scanned = True
            finally:
                self._scanning = False
        return self

    def entries(self) -> tuple[Entry[T], ...]:
        """Every registration, in the registry's order."""
        self.scan()
        return tuple(self._entries[name] for name in self._names())

    def _names(self) -> list[str]:
        if self._sorted is None:
            self._sorted = [e.name for e in sorted(self._entries.values(), key=self._order)]
        return self._sorted

    def __getitem__(self, name: str) -> T:
        self.scan()
        return self._entries[name].value

    def __iter__(self) -> Iterator[str]:
        self.scan()
        return iter(list(self._names()))

    def __len__(self) -> int:
        self.scan()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self.scan()
        return name in self._entries

    def __setitem__(self, name: str, value: T) -> None:
        """Replaces the entry ``name`` by ``value`` in its place (that of a deleted entry of the name too), or adds
        it as its module's next registration (a stand-in)."""
        self.scan()
        old = self._entries.get(name) or self._removed.pop(name, None)
        if old is None:
            self.register(name, value, module=getattr(value, "__module__", ""))
        else:
            self._entries[name] = Entry(name, value, old.module, old.order, old.sequence)
            self._sorted = None

    def __delitem__(self, name: str) -> None:
        self.scan()
        self._removed[name] = self._entries.pop(name)
        self._sorted = None

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.package!r}: {', '.join(self)})"
