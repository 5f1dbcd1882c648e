"""Config files as YAML, bounded: what ``--config``, ``--protocol`` and a study's ``study.yaml`` are read with.

A config is a small tree of plain values, so its reader refuses what only an attacker's file needs:
more than ``MAX_BYTES``, YAML aliases (``*name``: a few hundred bytes of nested aliases expand to
hundreds of millions of values, the "billion laughs"), nesting deeper than ``MAX_DEPTH``, and a key
given twice in one mapping (PyYAML would keep the last one without a word). Every refusal is the one-line
``SpecError``, at once. ``dump`` writes a tree without anchors or aliases (PyYAML would otherwise emit them
for a list that appears twice), so every file archstudy writes reads back under these rules.

A number in exponent form (``1e-8``, ``3E5``, ``1.5e8``) is a float, as YAML 1.2's core schema reads it (YAML
1.2.2, section 10.3.2); PyYAML follows YAML 1.1, whose float needs a point and a signed exponent, and would hand
such a number on as the string "1e-8". The writer quotes a string of that form, so it reads back as a string.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import yaml

from .constraints import SpecError

MAX_BYTES = 1 << 20  # 1 MiB: a study.yaml is a few kilobytes
MAX_DEPTH = 64  # a study.yaml nests 4 levels (study, space, a distribution, a pair)


FLOAT_TAG = "tag:yaml.org,2002:float"
# YAML 1.2's float in exponent form (YAML 1.1's needs a point and a signed exponent: 1e-8 and 1.5e8 were strings).
EXPONENT_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")


class _Refused(Exception):
    """What the loader refuses, and why (one line)."""


# PyYAML ships no type stubs here (no types-PyYAML), so its classes are Any to mypy.
class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader that refuses aliases and bounds the nesting (the composer recurses per level)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                f"uses a YAML alias (*{event.anchor}) at line {event.start_mark.line + 1}; an archstudy "
                "config takes none"
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nests deeper than {MAX_DEPTH} levels; an archstudy config is a small tree")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # an unhashable key: PyYAML's own constructor refuses it
                    continue
                if first is not key_node.start_mark:
                    again = key_node.start_mark
                    at = (
                        f"lines {first.line + 1} and {again.line + 1}"
                        if first.line != again.line
                        else f"line {again.line + 1} (columns {first.column + 1} and {again.column + 1})"
                    )
                    raise _Refused(f"gives the key {key!r} twice, at {at}; each key once")
        return super().construct_mapping(node, deep=deep)


class _PlainDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML: no stubs, as above
    def ignore_aliases(self, data: Any) -> bool:
        return True


for _kind in (_BoundedLoader, _PlainDumper):  # read as floats, and a string of that form written quoted
    _kind.add_implicit_resolver(FLOAT_TAG, EXPONENT_FLOAT, list("-+0123456789"))


def parse(text: str | bytes, where: str, field: str, shown: str) -> Any:
    """The YAML document ``text`` (of the file ``shown``) as plain values, or ``SpecError(where, field, shown,
    ...)`` saying in one line why not: too large, not UTF-8, not YAML, an alias, too deep."""
    if len(text) > MAX_BYTES:
        raise SpecError(where, field, shown, f"is larger than 1 MiB ({MAX_BYTES} bytes); a config is small")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise SpecError(where, field, shown, "is not a UTF-8 text (YAML) file") from None
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except _Refused as e:
        raise SpecError(where, field, shown, str(e)) from None
    except ValueError as e:  # a value PyYAML's constructors cannot build (an int of more than 4300 digits)
        raise SpecError(where, field, shown, f"holds a value that cannot be read ({str(e)[:100]})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise SpecError(where, field, shown, f"is not valid YAML{at}") from None


def read(path: str | os.PathLike[str], where: str, field: str) -> Any:
    """``parse`` of the local file ``path`` (at most ``MAX_BYTES`` + 1 bytes are read); a missing, unreadable
    or directory path, or one that is not a regular file (a FIFO, a device: reading one could wait forever), is
    the same one-line ``SpecError``."""
    shown = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise SpecError(
                    where,
                    field,
                    shown,
                    "is not a regular file (a FIFO, a device or a socket); a config is read from one",
                )
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(where, field, shown, "no such file") from None
    except IsADirectoryError:
        raise SpecError(where, field, shown, "is a directory, not a YAML file") from None
    except OSError as e:
        raise SpecError(where, field, shown, f"cannot be read ({e.strerror or e})") from None
    return parse(data, where, field, shown)


def dump(data: Any) -> str:
    """``data`` (plain values) as block YAML without anchors or aliases, in the given key order."""
    text: str = yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=100)
    return text
