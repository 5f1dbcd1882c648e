"""Declared constraints, declared fields, and the one error every user mistake turns into.

A plain object (``ArchSpec``, ``Space``, the study config and its resources, the training protocol, the
metric options) is a frozen dataclass of ``Declared`` whose every field is declared once, with ``declare``:
its constraint, default, meaning, the schema version that added it, and what a reader of it needs besides
(whether it is an execution setting of a study, the command-line flag that sets it)::

    max_retries: int = declare(Integer(0), 2, doc="retries of a failing architecture", execution=True,
                               flag=Flag("retries of a failing architecture (default {default})", "N"))

Everything else is derived from the declarations: validation (``Declared.__post_init__``: each field
normalized under its constraint, then the class's own ``_validate`` for relations between fields), the dict
form and its reading (``to_dict``, ``from_dict``: unknown keys and missing required ones refused), the
canonical form (``canonical``: fields added later left out at their default), the defaults
(``default``), the command line's flags (``study.cli``), the docs' tables (``sampling.doc_tables``), and
the tests' negative cases (``Constraint.invalid_examples``). ``check`` is the one place a constraint is
enforced, and every failure reads the same way::

    ArchSpec.depth = 1: must be an integer >= 2

so a user sees the field, the value and what is allowed, in one line.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import reprlib
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, NoReturn

import numpy as np

if TYPE_CHECKING:  # Python 3.11's typing.Self
    from typing_extensions import Self


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
    return text[:half] + "..." + text[len(text) - (limit - 3 - half) :]


_CREDENTIAL = re.compile(r"(?i)(key|secret|token|password|passwd|credential)")


def redact(text: str) -> str:
    """``text`` with the credentials of every URI in it starred: the user information before a host
    (``s3://KEY:SECRET@bucket`` -> ``s3://***@bucket``) and the value of a query key that names a key, secret, token,
    password or credential (``?secret_key=...`` -> ``?secret_key=***``)."""
    text = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'\"]+@", r"\1***@", text)
    return re.sub(
        r"([?&;])([^=&\s'\"#]+)=([^&\s'\"#]*)",
        lambda m: f"{m[1]}{m[2]}=***" if _CREDENTIAL.search(m[2]) else m[0],
        text,
    )


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
for _name, _n in (
    ("maxlevel", 3),
    ("maxtuple", 8),
    ("maxlist", 8),
    ("maxarray", 8),
    ("maxdict", 8),
    ("maxset", 8),
    ("maxfrozenset", 8),
    ("maxdeque", 8),
    ("maxstring", 160),
    ("maxlong", 160),
    ("maxother", 160),
):
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

    def invalid_examples(self) -> tuple[Any, ...]:  # values that must be rejected
        return ()

    def fail(self) -> NoReturn:
        raise ValueError(self.describe())


@dataclass(frozen=True)
class Choice(Constraint):
    values: tuple[Any, ...]

    def normalize(self, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, Iterable):
            for v in self.values:
                if type(v) is type(value) and v == value:
                    return v
                if is_real(v) and is_real(value) and v == value:
                    return v
        self.fail()

    def describe(self) -> str:
        if len(self.values) == 1:  # a literal among alternatives (``OneOf``): "null, 'auto', or ..."
            return f"must be {self.values[0]!r}"
        return "must be one of " + ", ".join(repr(v) for v in self.values)

    def invalid_examples(self) -> tuple[Any, ...]:
        return ("no-such-choice",) if all(isinstance(v, str) for v in self.values) else (-12345,)


@dataclass(frozen=True)
class Boolean(Constraint):
    def normalize(self, value: Any) -> Any:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if is_int(value) and value in (0, 1):  # numpy/pyarrow booleans arrive as 0/1 sometimes
            return bool(value)
        self.fail()

    def describe(self) -> str:
        return "must be true or false"

    def invalid_examples(self) -> tuple[Any, ...]:
        return ("yes", 2)


@dataclass(frozen=True)
class Integer(Constraint):
    lo: int | None = None
    hi: int | None = None

    def normalize(self, value: Any) -> Any:
        if not is_int(value) or (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            self.fail()
        return int(value)

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"must be an integer in [{self.lo}, {self.hi}]"
        if self.lo is not None:
            return f"must be an integer >= {self.lo}"
        if self.hi is not None:
            return f"must be an integer <= {self.hi}"
        return "must be an integer"

    def invalid_examples(self) -> tuple[Any, ...]:
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

    def normalize(self, value: Any) -> Any:
        if not is_real(value) or not math.isfinite(value):
            self.fail()
        v = float(value)
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            self.fail()
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            self.fail()
        return v

    def describe(self) -> str:
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

    def invalid_examples(self) -> tuple[Any, ...]:
        out = [float("nan"), "1.0"]
        if self.lo is not None:
            out.append(self.lo - 1.0 if not self.lo_open else self.lo)
        if self.hi is not None:
            out.append(self.hi + 1.0 if not self.hi_open else self.hi)
        return tuple(out)


@dataclass(frozen=True)
class Text(Constraint):
    """A non-empty one-line string; with ``path``, a path (an ``os.PathLike`` is held as its string)."""

    path: bool = False

    def normalize(self, value: Any) -> Any:
        if self.path and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value or "\n" in value:
            self.fail()
        return value

    def describe(self) -> str:
        return "must be a path (a non-empty one-line string)" if self.path else "must be a non-empty one-line string"

    def invalid_examples(self) -> tuple[Any, ...]:
        return ("", 3)


@dataclass(frozen=True)
class OneOf(Constraint):
    """A value under any of ``alternatives``, the first that takes it; ``None`` among them allows null (the
    alternatives of scikit-learn's parameter validation, ``[Interval(...), StrOptions(...), None]``). What is
    allowed reads as the alternatives in order: "must be null, 'auto', or two finite numbers 0 <= lo < hi"."""

    alternatives: tuple[Constraint | None, ...]

    def __init__(self, *alternatives: Constraint | None):
        if not alternatives:
            raise ValueError("OneOf(): at least one alternative")
        object.__setattr__(self, "alternatives", alternatives)

    def normalize(self, value: Any) -> Any:
        for alternative in self.alternatives:
            if alternative is None:
                if value is None:
                    return None
                continue
            try:
                return alternative.normalize(value)
            except ValueError:
                pass
        self.fail()

    def describe(self) -> str:
        words = ["null" if a is None else a.describe().removeprefix("must be ") for a in self.alternatives]
        return "must be " + (", ".join(words[:-1]) + ", or " + words[-1] if len(words) > 1 else words[0])

    def invalid_examples(self) -> tuple[Any, ...]:
        """Each alternative's invalid examples that every alternative refuses."""
        out: list[Any] = []
        for alternative in self.alternatives:
            for bad in () if alternative is None else alternative.invalid_examples():
                if bad is not None and not any(_takes(a, bad) for a in self.alternatives if a is not None):
                    out.append(bad)
        return tuple(out)


def _takes(constraint: Constraint, value: Any) -> bool:
    try:
        constraint.normalize(value)
    except ValueError:
        return False
    return True


def Maybe(inner: Constraint) -> OneOf:  # noqa: N802 - a constraint's name, read as the others are
    """``None`` or a value under ``inner``: "must be an integer >= 0, or null"."""
    return OneOf(inner, None)


def numbers_of(text: str) -> tuple[float, ...]:
    """The numbers of ``text``, separated by a comma or by spaces: ``"1,3"`` and ``"1 3"`` are (1.0, 3.0). The one
    reading of a pair written as text (``Bounds``: a YAML string, a flag's value, ``--nlc-window 1 3`` or
    ``--nlc-window 1,3``); ``ValueError`` ("invalid float value: 'x'") names the first word that is no number."""
    out: list[float] = []
    for word in re.split(r"\s*,\s*|\s+", text.strip()):
        try:
            out.append(float(word))
        except ValueError:
            raise ValueError(f"invalid float value: {word!r}") from None
    return tuple(out)


@dataclass(frozen=True)
class Bounds(Constraint):
    """Two finite numbers lo < hi, each in [``lower``, ``upper``] where given (a window, a range): a pair, or the
    text "LO,HI" or "LO HI" (``numbers_of``); held as a tuple of two floats."""

    lower: float | None = None
    upper: float | None = None

    def normalize(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = numbers_of(value)
            except ValueError:
                self.fail()
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            self.fail()
        end = Real(self.lower, self.upper)
        try:
            lo, hi = (end.normalize(v) for v in value)
        except ValueError:
            self.fail()
        if not lo < hi:
            self.fail()
        return (lo, hi)

    def describe(self) -> str:
        lower = "" if self.lower is None else f"{self.lower:g} <= "
        upper = "" if self.upper is None else f" <= {self.upper:g}"
        return f"must be two finite numbers {lower}lo < hi{upper}"

    def invalid_examples(self) -> tuple[Any, ...]:
        out = [[3.0, 1.0], [1.0], "1,x", [1.0, float("inf")], {"lo": 1.0}]
        if self.lower is not None:
            out.append([self.lower - 1.0, self.lower + 1.0])
        if self.upper is not None:
            out.append([self.upper - 1.0, self.upper + 1.0])
        return tuple(out)


@dataclass(frozen=True)
class Options(Constraint):
    """Keyword options: a mapping of identifiers to YAML-able values (null: none), held as a plain dict."""

    def normalize(self, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in value):
            self.fail()
        return plain(dict(value))

    def describe(self) -> str:
        return "must be a mapping of option names to values"

    def invalid_examples(self) -> tuple[Any, ...]:
        return ([1, 2], {3: "x"})


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

    def normalize(self, value: Any) -> Any:
        items = value.items() if isinstance(value, dict) else value
        try:
            pairs = [(k, p) for k, p in items]
        except (TypeError, ValueError):
            self.fail()
        if not pairs:
            self.fail()
        out: list[tuple[Any, float]] = []
        seen: set[Any] = set()
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

    def describe(self) -> str:
        return (
            "must map each choice to a probability in [0, 1], the probabilities summing to 1; choices "
            + self.choices.describe().replace("must be ", "")
        )

    def invalid_examples(self) -> tuple[Any, ...]:
        bad = self.choices.invalid_examples()
        out: list[dict[Any, float]] = [{}]
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
# it (``declare(..., since=N)``; ``since`` in its metadata), and the canonical form leaves it out while it holds
# its default, which is the behaviour every object had before the field existed. With any other value it is
# written, so objects that differ always have different canonical forms.
FIRST_SCHEMA = 1


def added(since: int) -> dict[str, int]:
    """Field metadata declaring that the field was added in schema version ``since`` (> FIRST_SCHEMA)."""
    if not (is_int(since) and since > FIRST_SCHEMA):
        raise ValueError(f"added(since={since!r}): a field added later has a schema version > {FIRST_SCHEMA}")
    return {"since": since}


def added_later(f: Field[Any]) -> bool:
    """Whether the dataclass field ``f`` was declared as added later (it is absent from older objects)."""
    return int(f.metadata.get("since", FIRST_SCHEMA)) > FIRST_SCHEMA


def canonical(obj: Any, d: dict[str, Any]) -> dict[str, Any]:
    """``d`` (the dict form of the dataclass ``obj``) without the fields added after the first schema that
    hold their default: the dict an older version wrote for the same object."""
    out = dict(d)
    for f in fields(obj):
        if added_later(f) and getattr(obj, f.name) == f.default:
            out.pop(f.name, None)
    return out


_SCALARS = frozenset({int, float, str, bool, type(None)})


def plain(value: Any) -> Any:
    """A YAML/JSON-able copy: tuples to lists, numpy scalars to Python, mappings to dicts (recursively)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- declared fields -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flag:
    """The command-line flag that sets a declared field (``study.cli`` builds it, its dest the field's name).
    ``help`` may hold ``{default}``: the field's declared default, written as help texts write values."""

    help: str
    metavar: str | None = None
    name: str | None = None  # the option; by default ``--`` and the field's name with dashes
    type: Callable[[str], Any] | None = None  # by default int under an Integer, float under a Real, else str
    # "?": the value may be left out, the flag alone meaning ``const`` (``--siblings``: all); "+": the value may be
    # spelled in several words, joined by a space into one text (``--nlc-window 1 3``, read as ``1,3`` is)
    nargs: str | None = None
    const: Any = None

    def option(self, field_name: str) -> str:
        return self.name or "--" + field_name.replace("_", "-")


@dataclass(frozen=True)
class Declaration:
    """The declaration of one field (``declare`` makes it)."""

    constraint: Constraint | None  # None: the class normalizes the value itself (``_validate``: a nested object)
    doc: str  # what the field means, one line
    default: Any = MISSING
    factory: Callable[[], Any] | None = None  # computes the default when an object is made
    since: int = FIRST_SCHEMA  # the schema version that added the field
    required: bool = False  # a dict form must hold it (always so for a field without a default)
    shown: str | None = None  # the default as the docs say it, where a factory computes it (a version, a time)
    execution: bool = False  # how a study runs, not what it computes (``study.experiment.config``)
    flag: Flag | None = None  # the command-line flag that sets it

    @property
    def added_later(self) -> bool:
        return self.since > FIRST_SCHEMA

    @property
    def has_default(self) -> bool:
        return self.factory is not None or self.default is not MISSING

    def default_value(self) -> Any:
        """The default (a factory's value made now; MISSING for a field without one)."""
        return self.factory() if self.factory is not None else self.default


def declare(
    constraint: Constraint | None,
    default: Any = MISSING,
    *,
    doc: str,
    factory: Callable[[], Any] | None = None,
    since: int | None = None,
    required: bool = False,
    shown: str | None = None,
    execution: bool = False,
    flag: Flag | None = None,
) -> Any:
    """A dataclass field of a ``Declared`` class, declared once (see ``Declaration``): the declaration is in the
    field's metadata under "declaration", and its constraint, doc and since also under their own names for
    readers of plain dataclass metadata (``added_later``, the results schema)."""
    if default is not MISSING and factory is not None:
        raise ValueError("declare(): a default or a factory, not both")
    since = FIRST_SCHEMA if since is None else added(since)["since"]
    required = required or (default is MISSING and factory is None)
    declared = Declaration(constraint, doc, default, factory, since, required, shown, execution, flag)
    meta = {"declaration": declared, "constraint": constraint, "doc": doc, "since": since}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


class Declared:
    """Base of a frozen dataclass whose fields are all declared with ``declare``: validation, the dict form,
    unknown-key refusal, the canonical form and the defaults, from the declarations.

    Class keywords say how its messages name it: ``where``, the prefix of its errors (``where.field = value:
    what is allowed``; the class name by default); ``key``, what one of its keys is ("is not a study key");
    ``keys``, what a mapping of them is ("must be a mapping of study keys"); ``whole``, the name a dict form
    that is no mapping at all is reported under. A class says what its fields' constraints cannot say
    (relations between fields, nested objects) in ``_validate``."""

    _where: ClassVar[str]
    _key: ClassVar[str]
    _keys: ClassVar[str]
    _whole: ClassVar[str]
    _declared: ClassVar[Mapping[str, Declaration]]

    def __init_subclass__(
        cls,
        *,
        where: str | None = None,
        key: str | None = None,
        keys: str | None = None,
        whole: str = "fields",
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls._where = where or cls.__name__
        cls._key = key or f"a field of {cls.__name__}"
        cls._keys = keys or f"{cls.__name__} fields"
        cls._whole = whole

    @classmethod
    def declarations(cls) -> Mapping[str, Declaration]:
        """Each field's declaration, in the fields' order."""
        found = cls.__dict__.get("_declared")
        if found is None:
            every = fields(cls)  # type: ignore[arg-type]  # every subclass is a dataclass
            undeclared = [f.name for f in every if "declaration" not in f.metadata]
            if undeclared:
                raise TypeError(f"{cls.__name__}.{undeclared[0]} is not declared with declare()")
            found = {f.name: f.metadata["declaration"] for f in every}
            cls._declared = found
        return found

    @classmethod
    def declaration(cls, name: str) -> Declaration:
        try:
            return cls.declarations()[name]
        except KeyError:
            raise KeyError(f"{name!r} is not {cls._key}") from None

    def __post_init__(self) -> None:
        for name, declared in self.declarations().items():
            if declared.constraint is not None:
                object.__setattr__(self, name, check(self._where, name, declared.constraint, getattr(self, name)))
        self._validate()

    def _validate(self) -> None:
        """Relations between fields and nested objects: raise ``SpecError``, normalize with ``object.__setattr__``."""

    # -- the declarations, for readers of a dict form ------------------------------------------------------
    @classmethod
    def default(cls, name: str) -> Any:
        """The declared default of ``name``: what a dict form without it means."""
        declared = cls.declaration(name)
        if not declared.has_default:
            raise KeyError(f"{name!r} has no default: it is required")
        return declared.default_value()

    @classmethod
    def normalize(cls, name: str, value: Any) -> Any:
        """``value`` of ``name`` as an object holds it, under the declared constraint (``SpecError`` when it is
        not allowed)."""
        constraint = cls.declaration(name).constraint
        return value if constraint is None else check(cls._where, name, constraint, value)

    # -- the dict form -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field as plain values (``plain``; a distribution as a mapping, a nested object as its dict)."""
        return {name: plain_value(declared, getattr(self, name)) for name, declared in self.declarations().items()}

    def canonical(self) -> dict[str, Any]:
        """``to_dict`` without the fields added after the first schema that hold their default (``canonical``):
        what an older version wrote for the same object (a content id, a checkpoint key)."""
        return canonical(self, self.to_dict())

    @classmethod
    def known(cls, d: Any) -> dict[str, Any]:
        """``d`` as a dict, refused in one line unless it is a mapping of declared names that holds every
        required one."""
        if not isinstance(d, Mapping):
            raise SpecError(cls._where, cls._whole, d, f"must be a mapping of {cls._keys}")
        declared = cls.declarations()
        for k in d:
            if k not in declared:
                raise SpecError(cls._where, str(k), d[k], f"is not {cls._key}; allowed: {', '.join(declared)}")
        for name, p in declared.items():
            if p.required and name not in d:
                raise SpecError(cls._where, name, None, "is required")
        return dict(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        return cls(**cls.known(d))

    def replace(self, **changes: Any) -> Self:
        return replace(self, **changes)  # type: ignore[type-var]  # every subclass is a dataclass


def plain_value(declared: Declaration, value: Any) -> Any:
    """A field's value as its object's dict form holds it."""
    if isinstance(value, Declared):
        return value.to_dict()
    if isinstance(declared.constraint, Distribution):
        return {plain(k): plain(p) for k, p in value}
    return plain(value)
