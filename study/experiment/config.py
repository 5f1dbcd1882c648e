"""``StudyConfig``: everything that defines a study, written once into ``<study>/study.yaml``.

A study is self-describing: its file holds the full architecture space (not only the preset's name), the
full training protocol and metric options, the dataset and its seed, the study seed, the parameter
budget, the sibling axes, the resources per architecture, the package version and when it was created.
Presets may change between versions of the package; a study's file does not.

Two kinds of keys:

* science keys decide what the results are (``SCIENCE_KEYS``): a resumed study must use the same ones,
  or the rows would mix two experiments. ``differences`` lists the ones that differ;
* execution keys (``root``, ``resources``, ``max_retries``, ``checkpoint_every_s``) decide only where the
  data is read from and how the work is spread and retried; a resume may override them for its own
  session (they are not rewritten), and the rows record the host and device that computed them. The data
  itself is pinned by ``data_fingerprint`` (a hash of the loaded splits): a resume whose data differs is
  refused, wherever it was read from.

Every value is validated with the declared constraints of ``sampling.constraints``, so a mistake reads
``study.<key> = <value>: <what is allowed>`` in one line.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
from dataclasses import MISSING, dataclass, field, fields, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from archstudy.sampling import (
    DEFAULT_PARAM_BUDGET, DEFAULT_PRESET, PRESETS, SIBLING_AXES, SpecError, Space, UserError, config_yaml, get_space,
)
from archstudy.sampling.constraints import SEED, Choice, Constraint, Integer, Real, Text, bounded_repr, check
from archstudy.sampling.spec import canonical_json, content_hash
from archstudy.sampling.unit_names import MAX_ARCHITECTURES

from .datasets import DATASET_NAMES
from .metric_options import MetricOptions
from .protocol import Protocol

WHERE = "study"
CONFIG_NAME = "study.yaml"
REPORT_NAME = "report.html"  # the one file a report may write inside a study (``archstudy run --report``)
EXECUTION_KEYS = ("root", "resources", "max_retries", "checkpoint_every_s")
PROVENANCE_KEYS = ("package_version", "created")
# What archstudy records when it creates a study (from the data and the installation), never a user's choice.
RECORDED_KEYS = ("d_in", "d_out", "data_fingerprint") + PROVENANCE_KEYS
# How long a driver waits for a cluster's address to answer (--connect-timeout; a session's setting, not stored).
CONNECT_TIMEOUT_S = 60.0


def package_version() -> str:
    """The installed archstudy version, or the source tree's ``pyproject.toml`` version when not installed."""
    try:
        return metadata.version("archstudy")
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        m = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M) if pyproject.is_file() else None
        return f"{m.group(1)}+source" if m else "unknown"


def utc_now() -> str:
    """ISO 8601 UTC time to the second, e.g. ``2026-01-31T12:00:00Z``."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plain(value: Any) -> Any:
    """A YAML/JSON-able copy: tuples to lists, numpy scalars to Python, mappings to dicts (recursively)."""
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- constraints the study needs beyond sampling's -------------------------------------------------------
@dataclass(frozen=True)
class _OptionalText(Constraint):
    def normalize(self, value):
        if value is None:
            return None
        if isinstance(value, Path):
            value = str(value)
        return Text().normalize(value)

    def describe(self):
        return "must be a path (a non-empty one-line string) or null"


@dataclass(frozen=True)
class _Options(Constraint):
    """A mapping with string keys and YAML-able values (passed on as keyword options)."""

    def normalize(self, value):
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in value):
            self.fail()
        return plain(dict(value))

    def describe(self):
        return "must be a mapping of option names to values"

    def invalid_examples(self):
        return ([1, 2], {3: "x"})


@dataclass(frozen=True)
class _NameOrOptions(Constraint):
    """A preset's name, or a mapping of its fields (the training protocol)."""

    def normalize(self, value):
        if isinstance(value, str):
            return Text().normalize(value)
        return _Options().normalize(value)

    def describe(self):
        return "must be a name or a mapping of fields"

    def invalid_examples(self):
        return (3, [1, 2])


@dataclass(frozen=True)
class _Axes(Constraint):
    """Sibling axes: a list of distinct names among ``SIBLING_AXES``; ``all``/``true`` = every axis,
    ``none``/``false``/empty = off."""

    def normalize(self, value):
        if value is None or value is False or value == "none" or value == "":
            return ()
        if value is True or value == "all":
            return SIBLING_AXES
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        try:
            out = tuple(Choice(SIBLING_AXES).normalize(v) for v in value)
        except (TypeError, ValueError):
            self.fail()
        if len(set(out)) != len(out):
            self.fail()
        return tuple(a for a in SIBLING_AXES if a in out)  # canonical order

    def describe(self):
        return "must be a list of distinct sibling axes among " + ", ".join(SIBLING_AXES) + " (or 'all', or empty)"

    def invalid_examples(self):
        return (["colour"], ["norm", "norm"], 7)


@dataclass(frozen=True)
class _Window(Constraint):
    """The NLC window of pruning at launch: null (off), ``auto`` (from the pilot) or two numbers 0 <= lo < hi,
    as a list or as the command line's ``LO,HI``; held as a tuple."""

    def normalize(self, value):
        if value is None or value == "auto":
            return value
        if isinstance(value, str):
            parts = value.split(",")
            try:
                value = [float(p) for p in parts]
            except ValueError:
                self.fail()
        if isinstance(value, (bytes, Mapping)) or not isinstance(value, (list, tuple)) or len(value) != 2:
            self.fail()
        try:
            lo, hi = (Real(0.0).normalize(v) for v in value)
        except ValueError:
            self.fail()
        if not lo < hi:
            self.fail()
        return (lo, hi)

    def describe(self):
        return "must be null, 'auto' or two numbers lo < hi (lo >= 0), as [lo, hi] or 'LO,HI'"

    def invalid_examples(self):
        return ("automatic", [3.0, 1.0], [1.0], "1,x", [-1.0, 2.0], [1.0, float("inf")])


DEFAULT_PILOT = 100  # the NLC window's stability rule held on 8 of 8 synthetic populations from 90 on (analysis)


@dataclass(frozen=True)
class _GPUs(Constraint):
    """GPUs per architecture: 0 (CPU), a fraction in (0, 1] (several architectures share a GPU), or a whole number."""

    def normalize(self, value):
        v = Real(0.0).normalize(value)
        if v > 1 and v != int(v):
            self.fail()
        return v

    def describe(self):
        return "must be 0, a fraction in (0, 1], or a whole number of GPUs"

    def invalid_examples(self):
        return (-1, 1.5, "1")


def _f(constraint: Constraint, default=None, *, doc: str, factory=None):
    meta = {"constraint": constraint, "doc": doc}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Resources:
    """What one architecture gets: CPUs (torch's thread count is set to this) and GPUs (fractions share a GPU)."""

    cpus_per_arch: float = _f(Real(0.0, lo_open=True), 1.0, doc="CPUs per architecture (Ray num_cpus; torch threads)")
    gpus_per_arch: float = _f(_GPUs(), 0.0, doc="GPUs per architecture (Ray num_gpus); > 0 runs on an actor pool")

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, check(f"{WHERE}.resources", f.name, f.metadata["constraint"],
                                                   getattr(self, f.name)))

    @property
    def threads(self) -> int:
        """torch's intra-op thread count for one architecture: its whole CPUs, at least 1."""
        return max(1, int(math.floor(self.cpus_per_arch)))

    def to_dict(self) -> dict:
        return {"cpus_per_arch": self.cpus_per_arch, "gpus_per_arch": self.gpus_per_arch}

    @classmethod
    def of(cls, value: "Resources | Mapping | None") -> "Resources":
        if value is None:
            return cls()
        if isinstance(value, Resources):
            return value
        if not isinstance(value, Mapping):
            raise SpecError(WHERE, "resources", value, "must be a mapping with cpus_per_arch and gpus_per_arch")
        names = {f.name for f in fields(cls)}
        for k in value:
            if k not in names:
                raise SpecError(f"{WHERE}.resources", k, value[k],
                                "is not a resource; allowed: " + ", ".join(sorted(names)))
        return cls(**value)


def _protocol(value: Any) -> dict:
    return plain(Protocol.of(value).to_dict())


def _metric_options(value: Any) -> dict:
    if value is None:
        return plain(MetricOptions().to_dict())
    if isinstance(value, MetricOptions):
        return plain(value.to_dict())
    if not isinstance(value, Mapping):
        raise SpecError(WHERE, "metrics", value, "must be a mapping of metric options")
    return plain(MetricOptions.from_dict(dict(value)).to_dict())


@dataclass(frozen=True)
class StudyConfig:
    """A study: what to sample, on which data, how to train and measure, with what resources.

    ``space`` and ``protocol`` and ``metrics`` may be given by name (``preset``, ``"quick"``) or as full
    dicts; they are stored in full. ``d_in``/``d_out`` are the dataset's, filled in when the study is
    created (the sampler needs them; a resume checks them).
    """

    dataset: str = _f(Text(), doc="dataset name (study.experiment.datasets.DATASET_NAMES)")
    architectures: int = _f(Integer(1, MAX_ARCHITECTURES), doc="number of sampled architectures (indices 0 .. n-1; "
                            "at most what the unit names hold, sampling.unit_names)")
    root: str | None = _f(_OptionalText(), None, doc="directory of the dataset's files (mnist, cifar10)")
    dataset_options: dict = _f(_Options(), doc="keyword options for study.load_dataset", factory=dict)
    dataset_seed: int = _f(SEED, 0, doc="seed of the dataset's generation/split/projection; fixed across "
                           "studies by default so studies with different seeds see the same data")
    seed: int = _f(SEED, 0, doc="study seed: architecture i is sample_spec(seed, i, ...)")
    preset: str = _f(Text(), DEFAULT_PRESET, doc="name of the architecture space (its full dict is `space`)")
    space: dict = _f(_Options(), doc="the full architecture space (sampling.Space fields)", factory=dict)
    param_budget: int = _f(Integer(1), DEFAULT_PARAM_BUDGET, doc="trainable parameters each architecture is solved "
                           "for")
    protocol: dict = _f(_NameOrOptions(), "paper", doc="the training protocol: a name of study.PROTOCOLS or its "
                        "fields; stored in full")
    metrics: dict = _f(_Options(), doc="metric options (study.MetricOptions fields)", factory=dict)
    siblings: tuple = _f(_Axes(), (), doc="sibling axes; each architecture also runs its siblings along these")
    nlc_window: Any = _f(_Window(), None, doc="prune at launch: train only the architectures whose NLC at "
                         "initialization lies in [lo, hi]; auto: the NLC good range of the pilot; null: train all")
    nlc_pilot: int = _f(Integer(1), DEFAULT_PILOT, doc="with nlc_window auto: the architectures of indices 0 .. "
                        "N-1 (with their siblings), all trained, whose NLC good range is the window")
    resources: Resources = _f(None, doc="per-architecture CPUs and GPUs", factory=Resources)
    max_retries: int = _f(Integer(0), 2, doc="retries of a failing architecture before it is recorded as failed")
    checkpoint_every_s: float = _f(Real(0.0, lo_open=True), 300.0, doc="seconds between trainer checkpoints")
    d_in: int | None = _f(None, None, doc="input dimension of the dataset")
    d_out: int | None = _f(None, None, doc="number of classes of the dataset")
    data_fingerprint: str | None = _f(None, None, doc="sha256 (16 hex digits) of the loaded train/val/test "
                                      "tensors: a resume must see the same data")
    package_version: str = _f(Text(), doc="archstudy version that created the study", factory=package_version)
    created: str = _f(Text(), doc="creation time, ISO 8601 UTC", factory=utc_now)

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen dataclass)
        for f in fields(self):
            constraint = f.metadata["constraint"]
            if constraint is not None:
                set_(f.name, check(WHERE, f.name, constraint, getattr(self, f.name)))
        set_("dataset", check(WHERE, "dataset", Choice(DATASET_NAMES), self.dataset))
        # The space: a full dict wins and names the preset (``preset`` is then its name); else the named preset.
        if self.space:
            space = get_space(dict(self.space))
        else:
            if self.preset not in PRESETS:
                raise SpecError(WHERE, "preset", self.preset, "must be one of " + ", ".join(map(repr, PRESETS)))
            space = get_space(self.preset)
        set_("preset", space.name)
        set_("space", plain(space.to_dict()))
        set_("protocol", _protocol(self.protocol))
        set_("metrics", _metric_options(self.metrics or None))
        set_("resources", Resources.of(self.resources))
        if self.nlc_pilot != DEFAULT_PILOT and self.nlc_window != "auto":
            raise SpecError(WHERE, "nlc_pilot", self.nlc_pilot, f"must stay {DEFAULT_PILOT} unless nlc_window = 'auto'")
        for name in ("d_in", "d_out"):
            if getattr(self, name) is not None:
                set_(name, check(WHERE, name, Integer(1), getattr(self, name)))
        if self.data_fingerprint is not None:
            set_("data_fingerprint", check(WHERE, "data_fingerprint", Text(), self.data_fingerprint))

    # -- derived -------------------------------------------------------------------------------------
    @property
    def space_obj(self) -> Space:
        return get_space(self.space)

    # -- the declarations, for readers of a study.yaml (``analysis``) ------------------------------------
    @classmethod
    def default(cls, name: str) -> Any:
        """The declared default of key ``name``: what a study.yaml without the key means."""
        f = _declared(name)
        return f.default_factory() if f.default is MISSING else f.default

    @classmethod
    def normalize(cls, name: str, value: Any) -> Any:
        """``value`` of key ``name`` as a StudyConfig holds it, under the key's declared constraint
        (``SpecError`` when it is not allowed)."""
        return check(WHERE, name, _declared(name).metadata["constraint"], value)

    # -- serialization ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_dict() if isinstance(v, Resources) else plain(v)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StudyConfig":
        if not isinstance(d, Mapping):
            raise SpecError(WHERE, "config", d, "must be a mapping of study keys")
        names = [f.name for f in fields(cls)]
        for k in d:
            if k not in names:
                raise SpecError(WHERE, str(k), d[k], "is not a study key; allowed: " + ", ".join(names))
        for k in ("dataset", "architectures"):
            if k not in d:
                raise SpecError(WHERE, k, None, "is required")
        return cls(**d)

    def to_yaml(self) -> str:
        header = ("# archstudy study config: written once when the study was created; `archstudy resume` reads it.\n"
                  "# Science keys must not change on resume; root, resources, max_retries and checkpoint_every_s\n"
                  "# may be overridden for one session on the command line. data_fingerprint pins the data.\n")
        return header + config_yaml.dump(self.to_dict())

    @classmethod
    def from_yaml(cls, text: str | bytes, where: str = CONFIG_NAME) -> "StudyConfig":
        """The config in ``text`` (a study.yaml), read with the bounds of ``sampling.config_yaml``."""
        data = config_yaml.parse(text, WHERE, "config", where)
        if not isinstance(data, Mapping):
            raise SpecError(WHERE, "config", where, "must be a YAML mapping of study keys")
        return cls.from_dict(data)

    # -- comparison ------------------------------------------------------------------------------------
    def science(self) -> dict[str, Any]:
        """The science keys every row of the study is computed under (``ROW_SCIENCE_KEYS``), as plain values."""
        d = self.to_dict()
        return {k: d[k] for k in ROW_SCIENCE_KEYS}

    @property
    def science_json(self) -> str:
        """``science()`` as canonical JSON (sorted keys, no spaces): what each result file records."""
        return science_json(self.science())

    @property
    def science_fingerprint(self) -> str:
        """16 hex digits of the sha256 of ``science_json``: equal for two configs exactly when every row of one
        could be a row of the other."""
        return science_fingerprint(self.science_json)

    def differences(self, other: "StudyConfig") -> list[str]:
        """Science keys whose values differ (execution and provenance keys are ignored)."""
        a, b = self.to_dict(), other.to_dict()
        return [k for k in SCIENCE_KEYS if a[k] != b[k]]

    def replace(self, **changes) -> "StudyConfig":
        return replace(self, **changes)

    def with_execution(self, *, root=None, cpus_per_arch=None, gpus_per_arch=None, max_retries=None,
                       checkpoint_every_s=None) -> "StudyConfig":
        """This config with the given execution settings changed (None keeps the stored value)."""
        res = self.resources.to_dict()
        if cpus_per_arch is not None:
            res["cpus_per_arch"] = cpus_per_arch
        if gpus_per_arch is not None:
            res["gpus_per_arch"] = gpus_per_arch
        changes: dict[str, Any] = {"resources": Resources.of(res)}
        if max_retries is not None:
            changes["max_retries"] = max_retries
        if checkpoint_every_s is not None:
            changes["checkpoint_every_s"] = checkpoint_every_s
        if root is not None:
            changes["root"] = root
        return replace(self, **changes)


SCIENCE_KEYS = tuple(f.name for f in fields(StudyConfig) if f.name not in EXECUTION_KEYS + PROVENANCE_KEYS)
# What every row of a study shares: the science keys but ``architectures`` (a larger count extends a study,
# and architecture i does not depend on the count). Each result file records them (study.run.store).
ROW_SCIENCE_KEYS = tuple(k for k in SCIENCE_KEYS if k != "architectures")


def science_json(science: Mapping[str, Any]) -> str:
    """The science keys as a result file records them (``sampling.spec.canonical_json``)."""
    return canonical_json(plain(science))


science_fingerprint = content_hash  # of ``science_json``


@functools.lru_cache(maxsize=64)
def read_science_fingerprint(science_text: str) -> str | None:
    """The fingerprint of a file's science record (``archstudy.science``, canonical JSON) as this version reads
    it: the record parsed as a StudyConfig, so that keys a later version added (at their defaults: a new
    protocol option, say) compare equal to the record an earlier version wrote. None when this version
    cannot read the record."""
    try:
        recorded = _numeric_keys(json.loads(science_text))
        return StudyConfig.from_dict({**recorded, "architectures": 1}).science_fingerprint
    except (UserError, TypeError, ValueError, AttributeError):
        return None


def _numeric_keys(value: Any) -> Any:
    """JSON's mapping keys are strings: the space's numeric choices (dilation 0.8, skip length 2) come back
    as "0.8" and "2"; give them their numbers again (a config's other keys are names, never numerals)."""
    if isinstance(value, list):
        return [_numeric_keys(v) for v in value]
    if not isinstance(value, dict):
        return value

    def key(k):
        if isinstance(k, str) and re.fullmatch(r"-?\d+", k):
            return int(k)
        if isinstance(k, str) and re.fullmatch(r"-?(\d+\.\d*|\.\d+)(e-?\d+)?|-?\d+e-?\d+", k):
            return float(k)
        return k

    return {key(k): _numeric_keys(v) for k, v in value.items()}


def same_science(recorded_fingerprint: str | None, recorded_text: str | None, fingerprint: str) -> bool:
    """Whether a result file recording (``recorded_fingerprint``, ``recorded_text``) holds rows of the study whose
    science fingerprint is ``fingerprint``: the same record, or a record this version reads as the same config.
    A file recording neither was written before archstudy recorded the science config of its rows (version
    0.1.0): it is the study's own, as the study.yaml it was written under says (what that version assumed)."""
    if recorded_fingerprint is None and recorded_text is None:
        return True
    if recorded_fingerprint == fingerprint:
        return True
    return recorded_text is not None and read_science_fingerprint(recorded_text) == fingerprint


def science_differences(recorded: Mapping[str, Any] | None, science: Mapping[str, Any], limit: int = 3) -> str:
    """The keys where a file's recorded science (parsed JSON) differs from ``science``, as one short phrase:
    ``seed (11 in the results, 12 here)``; what a file without a record lacks when ``recorded`` is None."""
    if recorded is None:
        return "they do not record the config they were computed under"
    science = json.loads(science_json(science))  # as JSON reads it back (mapping keys become strings)

    def flat(d: Mapping, prefix: str = "") -> dict:  # nested mappings as dotted keys: protocol.lr_factor
        out = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, Mapping) and v else {f"{prefix}{k}": v})
        return out

    a, b = flat(recorded), flat(science)
    diff = [k for k in sorted(set(a) | set(b)) if a.get(k, ...) != b.get(k, ...)]
    missing = lambda d, k: "(none)" if k not in d else bounded_repr(d[k], 40)  # noqa: E731
    shown = [f"{k} ({missing(a, k)} in the results, {missing(b, k)} here)" for k in diff[:limit]]
    more = f" and {len(diff) - limit} more key(s)" if len(diff) > limit else ""
    return ", ".join(shown) + more if shown else "the same keys, another fingerprint"


def _declared(name: str):
    for f in fields(StudyConfig):
        if f.name == name:
            return f
    raise KeyError(f"{name!r} is not a study key")
