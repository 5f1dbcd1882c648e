"""Declared constraints and the one error every user mistake turns into.

A plain spec (``ArchSpec``, ``Space``, the study config, the training protocol) declares each field's
constraint once, next to the field; ``check`` is the one place that enforces them, and every failure
reads the same way::

    ArchSpec.depth = 1: must be an integer >= 2

so a user sees the field, the value and what is allowed, in one line. The tests generate their
negative cases from the same declarations (``Constraint.invalid_examples``).
"""

from __future__ import annotations

import math
import numbers
import reprlib
from dataclasses import dataclass, fields
from typing import Any, Iterable

import numpy as np


class UserError(Exception):
    """A mistake of the user's (bad input, a missing file): the command line prints its one-line message,
    without a traceback, and exits non-zero."""


class SpecError(UserError, ValueError):
    """A user-facing, one-line error: ``<where>.<field> = <value>: <what is allowed>``."""

    def __init__(self, where: str, field: str, value: Any, allowed: str):
        self.where, self.field, self.value, self.allowed = where, field, value, allowed
        super().__init__(f"{where}.{shorten(str(field), 80)} = {bounded_repr(value)}: {allowed}")


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters (with "..." in the middle), so an error that echoes a user's value
    stays one short line whatever the value."""
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return text[:half] + "..." + text[len(text) - (limit - 3 - half):]


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
for _name, _n in (("maxlevel", 3), ("maxtuple", 8), ("maxlist", 8), ("maxarray", 8), ("maxdict", 8), ("maxset", 8),
                  ("maxfrozenset", 8), ("maxdeque", 8), ("maxstring", 160), ("maxlong", 160), ("maxother", 160)):
    setattr(_REPR, _name, _n)


def bounded_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` of at most ``limit`` characters, computed without ever building the whole repr (a
    value of shared references can stand for billions of elements); small values read as ``repr``."""
    try:
        return shorten(_REPR.repr(value), limit)
    except ValueError:  # an int of more than 4300 digits has no repr (sys.set_int_max_str_digits)
        return f"<{type(value).__name__} of {value.bit_length() if isinstance(value, int) else '?'} bits>"


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class Constraint:
    """Base: ``normalize`` returns the canonical value or raises ``ValueError`` with what is allowed."""

    def normalize(self, value: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def invalid_examples(self) -> tuple:  # values that must be rejected
        return ()

    def fail(self) -> None:
        raise ValueError(self.describe())


@dataclass(frozen=True)
class Choice(Constraint):
    values: tuple

    def normalize(self, value):
        if isinstance(value, str) or not isinstance(value, Iterable):
            for v in self.values:
                if type(v) is type(value) and v == value:
                    return v
                if is_real(v) and is_real(value) and v == value:
                    return v
        self.fail()

    def describe(self):
        return "must be one of " + ", ".join(repr(v) for v in self.values)

    def invalid_examples(self):
        return ("no-such-choice",) if all(isinstance(v, str) for v in self.values) else (-12345,)


@dataclass(frozen=True)
class Boolean(Constraint):
    def normalize(self, value):
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if is_int(value) and value in (0, 1):  # numpy/pyarrow booleans arrive as 0/1 sometimes
            return bool(value)
        self.fail()

    def describe(self):
        return "must be true or false"

    def invalid_examples(self):
        return ("yes", 2)


@dataclass(frozen=True)
class Integer(Constraint):
    lo: int | None = None
    hi: int | None = None

    def normalize(self, value):
        if not is_int(value) or (self.lo is not None and value < self.lo) or (
            self.hi is not None and value > self.hi
        ):
            self.fail()
        return int(value)

    def describe(self):
        if self.lo is not None and self.hi is not None:
            return f"must be an integer in [{self.lo}, {self.hi}]"
        if self.lo is not None:
            return f"must be an integer >= {self.lo}"
        if self.hi is not None:
            return f"must be an integer <= {self.hi}"
        return "must be an integer"

    def invalid_examples(self):
        out = [2.5, "3"]
        if self.lo is not None:
            out.append(self.lo - 1)
        if self.hi is not None:
            out.append(self.hi + 1)
        return tuple(out)


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number in an interval; ``lo_open`` / ``hi_open`` exclude the ends."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def normalize(self, value):
        if not is_real(value) or not math.isfinite(value):
            self.fail()
        v = float(value)
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            self.fail()
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            self.fail()
        return v

    def describe(self):
        if self.lo is None and self.hi is None:
            return "must be a finite number"
        lo = "(" if self.lo_open else "["
        hi = ")" if self.hi_open else "]"
        a = "-inf" if self.lo is None else repr(self.lo)
        b = "inf" if self.hi is None else repr(self.hi)
        if self.lo is None:
            lo = "("
        if self.hi is None:
            hi = ")"
        return f"must be a finite number in {lo}{a}, {b}{hi}"

    def invalid_examples(self):
        out = [float("nan"), "1.0"]
        if self.lo is not None:
            out.append(self.lo - 1.0 if not self.lo_open else self.lo)
        if self.hi is not None:
            out.append(self.hi + 1.0 if not self.hi_open else self.hi)
        return tuple(out)


@dataclass(frozen=True)
class Text(Constraint):
    def normalize(self, value):
        if not isinstance(value, str) or not value or "\n" in value:
            self.fail()
        return value

    def describe(self):
        return "must be a non-empty one-line string"

    def invalid_examples(self):
        return ("", 3)


PROBABILITY = Real(0.0, 1.0)
# A seed: what numpy's SeedSequence takes (any int >= 0) and a Parquet int64 column (study_seed, seed) holds.
SEED = Integer(0, 2**63 - 1)


@dataclass(frozen=True)
class Distribution(Constraint):
    """A discrete distribution: a mapping choice -> probability, probabilities in [0, 1] summing to 1.

    The canonical form is a tuple of ``(choice, probability)`` pairs sorted by choice: the sampler turns
    one uniform number into a choice by the cumulative sum, so the order is part of the space and must not
    depend on how a user or a YAML dump happened to order the mapping."""

    choices: Constraint

    def normalize(self, value):
        items = value.items() if isinstance(value, dict) else value
        try:
            pairs = [(k, p) for k, p in items]
        except (TypeError, ValueError):
            self.fail()
        if not pairs:
            self.fail()
        out, seen = [], set()
        for k, p in pairs:
            try:
                k = self.choices.normalize(k)
                p = PROBABILITY.normalize(p)
            except ValueError:
                self.fail()
            if k in seen:
                self.fail()
            seen.add(k)
            out.append((k, p))
        if abs(sum(p for _, p in out) - 1.0) > 1e-9:
            self.fail()
        return tuple(sorted(out, key=lambda kp: kp[0]))

    def describe(self):
        return (
            "must map each choice to a probability in [0, 1], the probabilities summing to 1; choices "
            + self.choices.describe().replace("must be ", "")
        )

    def invalid_examples(self):
        bad = self.choices.invalid_examples()
        out = [{}]
        if bad:
            out.append({bad[0]: 1.0})
        return tuple(out)


def check(where: str, field: str, constraint: Constraint, value: Any) -> Any:
    """Normalize ``value`` under ``constraint`` or raise the uniform ``SpecError``."""
    try:
        return constraint.normalize(value)
    except ValueError as e:
        raise SpecError(where, field, value, str(e)) from None


# -- fields added after an object's first schema ------------------------------------------------------------
# A plain spec's canonical form (the JSON an id is hashed from, a checkpoint key) must not change when a
# later version adds a field: a study's file names hold its architectures' ids, and a study created before
# the field existed must still resume. So a field added later is declared with the schema version that added
# it (``since`` in its metadata; ``added`` below), and the canonical form leaves it out while it holds its
# default, which is the behaviour every object had before the field existed. With any other value it is
# written, so objects that differ always have different canonical forms.
FIRST_SCHEMA = 1


def added(since: int) -> dict:
    """Field metadata declaring that the field was added in schema version ``since`` (> FIRST_SCHEMA)."""
    if not (is_int(since) and since > FIRST_SCHEMA):
        raise ValueError(f"added(since={since!r}): a field added later has a schema version > {FIRST_SCHEMA}")
    return {"since": since}


def added_later(f) -> bool:
    """Whether the dataclass field ``f`` was declared with ``added`` (it is absent from older objects)."""
    return f.metadata.get("since", FIRST_SCHEMA) > FIRST_SCHEMA


def canonical(obj, d: dict) -> dict:
    """``d`` (the dict form of the dataclass ``obj``) without the fields added after the first schema that
    hold their default: the dict an older version wrote for the same object."""
    out = dict(d)
    for f in fields(obj):
        if added_later(f) and getattr(obj, f.name) == f.default:
            out.pop(f.name, None)
    return out
