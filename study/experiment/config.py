"""``StudyConfig``: everything that defines a study, written once into ``<study>/study.yaml``.

A study is self-describing: its file holds the full architecture space (not only the preset's name), the
full training protocol and metric options, the dataset and its seed, the study seed, the parameter
budget, the sibling axes, the resources per architecture, the package version and when it was created.
Presets may change between versions of the package; a study's file does not.

Two kinds of keys:

* science keys decide what the results are (``SCIENCE_KEYS``): a resumed study must use the same ones,
  or the rows would mix two experiments. ``differences`` lists the ones that differ;
* execution keys (``EXECUTION_KEYS``: declared ``execution=True``; ``root``, ``resources``, ``max_retries``,
  ``checkpoint_every_s``) decide only where the data is read from and how the work is spread and retried; a
  resume may override their settings (``EXECUTION_SETTINGS``: the resources' own fields stand for
  ``resources``) for its own session (they are not rewritten), and the rows record the host and device that
  computed them. The data itself is pinned by ``data_fingerprint`` (a hash of the loaded splits): a resume
  whose data differs is refused, wherever it was read from.

Every key is declared once (``sampling.constraints.declare``): its constraint, default, meaning, whether it
is an execution setting and the command-line flag of one a session may override. A mistake reads
``study.<key> = <value>: <what is allowed>`` in one line; ``docs/config.md`` lists every key, with the
protocol's fields, the metric options and the architecture space, generated from the declarations
(``python -m archstudy.study.experiment.config docs/config.md``; a test fails while the file differs).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
import sys
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping, cast

from archstudy.sampling import (
    DEFAULT_PARAM_BUDGET,
    DEFAULT_PRESET,
    PRESETS,
    BUDGET_AXES,
    SIBLING_AXES,
    ArchSpec,
    SpecError,
    Space,
    UserError,
    config_yaml,
    get_space,
)
from archstudy.sampling.constraints import (
    SEED,
    Boolean,
    Choice,
    Constraint,
    Declaration,
    Declared,
    Flag,
    Integer,
    Maybe,
    OneOf,
    Options,
    Real,
    Text,
    bounded_repr,
    declare,
    plain,
)
from archstudy.sampling.doc_tables import markdown, presets_column, rewrite_doc, update_blocks
from archstudy.sampling.plan import INDICES, MAX_INIT_SEEDS, check_indices
from archstudy.sampling.spec import canonical_json, content_hash
from archstudy.sampling.unit_names import MAX_ARCHITECTURES

from .datasets import DATASET_NAMES
from .metric_options import MetricOptions
from .window_rule import WINDOW
from .protocol import PROTOCOLS, Protocol
from .rate_window import WindowSpec

WHERE = "study"
CONFIG_NAME = "study.yaml"
REPORT_NAME = "report.html"  # the one file a report may write inside a study (``archstudy run --report``)

# Bootstrap resamples per statistic, at most (``write_report``'s ``n_boot``, the command's ``--n-boot``): the bootstrap
# holds ``n_boot`` resamples of every statistic's sample at once (10**12 asked numpy for 21.8 TiB), and the Monte
# Carlo error of a percentile interval's level, the binomial standard error sqrt(p (1 - p) / n_boot) of the share p
# of resamples below its end, is already below 0.001 at 100,000 resamples (p = 0.025: 0.00049).
N_BOOT_MAX = 100_000

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


# -- constraints the study needs beyond sampling's -------------------------------------------------------
@dataclass(frozen=True)
class _Axes(Constraint):
    """Sibling axes: a list of distinct names among ``SIBLING_AXES``; ``all``/``true`` = every axis that keeps the
    parameter budget (``BUDGET_AXES``: width siblings are named explicitly), ``none``/``false``/empty = off."""

    def normalize(self, value: Any) -> tuple[str, ...]:
        if value is None or value is False or value == "none" or value == "":
            return ()
        if value is True or value == "all":
            return BUDGET_AXES
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        try:
            out = tuple(Choice(SIBLING_AXES).normalize(v) for v in value)
        except (TypeError, ValueError):
            self.fail()
        if len(set(out)) != len(out):
            self.fail()
        return tuple(a for a in SIBLING_AXES if a in out)  # canonical order

    def describe(self) -> str:
        return "must be a list of distinct sibling axes among " + ", ".join(SIBLING_AXES) + " (or 'all', or empty)"

    def invalid_examples(self) -> tuple[Any, ...]:
        return (["colour"], ["norm", "norm"], 7)


@dataclass(frozen=True)
class _Indices(Constraint):
    """Chosen draws of the study seed (``sampling.plan_study``'s ``indices``): null (the draws 0 .. n-1) or a
    non-empty list of distinct indices, held as a tuple."""

    def normalize(self, value: Any) -> tuple[int, ...] | None:
        if value is None:
            return None
        try:
            return check_indices(WHERE, value)
        except SpecError:
            self.fail()

    def describe(self) -> str:
        return INDICES + ", or null"

    def invalid_examples(self) -> tuple[Any, ...]:
        return ([], [3, 3], [-1], "1,2", [1.5])


DEFAULT_PILOT = 100  # the NLC window's stability rule held on 8 of 8 synthetic populations from 90 on (analysis)


@dataclass(frozen=True)
class _GPUs(Constraint):
    """GPUs per architecture: 0 (CPU), a fraction in (0, 1] (several architectures share a GPU), or a whole number."""

    def normalize(self, value: Any) -> float:
        try:
            v: float = Real(0.0).normalize(value)
        except ValueError:
            self.fail()
        if v > 1 and v != int(v):
            self.fail()
        return v

    def describe(self) -> str:
        return "must be 0, a fraction in (0, 1], or a whole number of GPUs"

    def invalid_examples(self) -> tuple[Any, ...]:
        return (-1, 1.5, "1")


@dataclass(frozen=True)
class Resources(Declared, where=f"{WHERE}.resources", key="a resource", keys="resources"):
    """What one architecture gets: CPUs (torch's thread count is set to this) and GPUs (fractions share a GPU)."""

    cpus_per_arch: float = declare(
        Real(0.0, lo_open=True),
        1.0,
        doc="CPUs per architecture (Ray num_cpus; torch threads)",
        flag=Flag("CPUs per architecture (torch threads; default {default}, or the study's own)", "N"),
    )
    gpus_per_arch: float = declare(
        _GPUs(),
        0.0,
        doc="GPUs per architecture (Ray num_gpus); > 0 runs on an actor pool",
        flag=Flag(
            "GPUs per architecture: 0, a fraction such as 0.25 (four per GPU), or a whole number (default "
            "{default}, or the study's own)",
            "G",
            type=float,
        ),
    )

    @property
    def threads(self) -> int:
        """torch's intra-op thread count for one architecture: its whole CPUs, at least 1."""
        return max(1, int(math.floor(self.cpus_per_arch)))

    @classmethod
    def of(cls, value: "Resources | Mapping[str, Any] | None") -> "Resources":
        if value is None:
            return cls()
        if isinstance(value, Resources):
            return value
        if not isinstance(value, Mapping):
            raise SpecError(WHERE, "resources", value, "must be a mapping with cpus_per_arch and gpus_per_arch")
        return cls.from_dict(value)


# ``plain`` (typed Any: it takes any value) of a dict form is a dict.
def _protocol(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], plain(Protocol.of(value).to_dict()))


def _metric_options(value: Any) -> dict[str, Any]:
    if value is None:
        return cast(dict[str, Any], plain(MetricOptions().to_dict()))
    if isinstance(value, MetricOptions):
        return cast(dict[str, Any], plain(value.to_dict()))
    if not isinstance(value, Mapping):
        raise SpecError(WHERE, "metrics", value, "must be a mapping of metric options")
    return cast(dict[str, Any], plain(MetricOptions.from_dict(dict(value)).to_dict()))


@dataclass(frozen=True)
class StudyConfig(Declared, where=WHERE, key="a study key", keys="study keys", whole="config"):
    """A study: what to sample, on which data, how to train and measure, with what resources.

    ``space`` and ``protocol`` and ``metrics`` may be given by name (``preset``, ``"quick"``) or as full
    dicts; they are stored in full. ``d_in``/``d_out`` are the dataset's, filled in when the study is
    created (the sampler needs them; a resume checks them).
    """

    dataset: str = declare(
        Choice(DATASET_NAMES),
        None,
        required=True,
        doc="dataset name (`archstudy datasets`)",
        flag=Flag("dataset name (see `archstudy datasets`)"),
    )
    architectures: int = declare(
        Integer(1, MAX_ARCHITECTURES),
        None,
        required=True,
        doc="number of sampled architectures (indices 0 .. n-1; at most what the unit names hold, sampling.unit_names)",
        flag=Flag("number of architectures to sample", "N"),
    )
    root: str | None = declare(
        Maybe(Text(path=True)), None, execution=True, doc="directory of the dataset's files (mnist, cifar10)"
    )
    dataset_options: dict[str, Any] = declare(Options(), factory=dict, doc="keyword options for study.load_dataset")
    dataset_seed: int = declare(
        SEED,
        0,
        doc="seed of the dataset's generation/split/projection; fixed across "
        "studies by default so studies with different seeds see the same data",
    )
    seed: int = declare(
        SEED,
        0,
        doc="study seed: architecture i is sample_spec(seed, i, ...)",
        flag=Flag("study seed (default {default})"),
    )
    preset: str = declare(
        Text(),
        DEFAULT_PRESET,
        doc="name of the architecture space (its full dict is `space`)",
        flag=Flag(f"architecture space: {', '.join(PRESETS)} (default {{default}})"),
    )
    space: dict[str, Any] = declare(
        Options(), factory=dict, doc="the full architecture space (Space fields, below); empty: the preset's"
    )
    param_budget: int = declare(
        Integer(1),
        DEFAULT_PARAM_BUDGET,
        doc="trainable parameters each architecture is solved for",
        flag=Flag("trainable parameters per architecture (default {default})", "N"),
    )
    protocol: dict[str, Any] = declare(
        OneOf(Text(), Options()),
        "paper",
        doc="the training protocol: a name of study.PROTOCOLS or its fields (below); stored in full",
        flag=Flag("training protocol: a name (paper, quick, ...) or a YAML file of its fields (default {default})"),
    )
    metrics: dict[str, Any] = declare(Options(), factory=dict, doc="metric options (MetricOptions fields, below)")
    siblings: tuple[str, ...] = declare(
        _Axes(),
        (),
        doc="sibling axes; each architecture also runs its siblings along these",
        flag=Flag(
            "also run each architecture's siblings along AXES (comma-separated among "
            f"{', '.join(SIBLING_AXES)}; alone: all but width, whose siblings change the parameter budget)",
            "AXES",
            nargs="?",
            const="all",
        ),
    )
    nlc_window: Any = declare(
        OneOf(None, Choice(("auto",)), WINDOW),
        None,
        doc="prune at launch: train only the architectures whose NLC at initialization lies in [lo, hi] (`[lo, hi]`, "
        "'LO,HI' or 'LO HI'); auto: the NLC good range of the pilot; null: train all",
        flag=Flag(
            "prune at launch: measure every architecture at initialization and train only those whose NLC lies "
            "in [LO, HI] (LO,HI or LO HI); 'auto': the NLC good range of a pilot (the first --nlc-pilot "
            "architectures, all trained); the others are stored untrained (default: train all)",
            "LO,HI|auto",
            nargs="+",
        ),
    )
    nlc_pilot: int = declare(
        Integer(1),
        DEFAULT_PILOT,
        doc="with nlc_window auto: the architectures of indices 0 .. "
        "N-1 (with their siblings), all trained, whose NLC good range is the window",
        flag=Flag("with --nlc-window auto: the pilot's size in architectures (default {default})", "N"),
    )
    indices: tuple[int, ...] | None = declare(
        _Indices(),
        None,
        since=2,
        doc="the draws of the study seed this study holds, in this order, instead of 0 .. architectures-1 (each as "
        "the study of all draws holds it: `archstudy rank` writes its top K so); `architectures` counts how many "
        "of them, at most all",
    )
    measure_only: bool = declare(
        Boolean(),
        False,
        since=2,
        doc="measure every architecture at initialization and train none (`archstudy rank`): each row holds what "
        "was measured, with `trained` false",
    )
    init_seeds: int = declare(
        Integer(1, MAX_INIT_SEEDS),
        1,
        since=2,
        doc="initializations each architecture is trained from, stacked with its rates in one model: its own seed, "
        "then k - 1 more (`sampling.replicate_seeds`); 1: the paper's protocol. The row's selected run is the first "
        "initialization's; the others measure the seed-noise ceiling of every predictor (docs/analysis.md)",
        flag=Flag("initializations each architecture is trained from (default {default}, the paper's protocol)", "K"),
    )
    lr_window: Any = declare(
        WindowSpec(),
        None,
        since=2,
        doc="train only a window of m of the protocol's rates around a predicted best rate (`{size: m, centre: "
        "...}`, study/experiment/rate_window.py; `archstudy run --lr-window M --lr-window-from STUDY` resolves it "
        "from a finished study); null: every rate, the paper's protocol",
    )
    resources: Resources = declare(
        None, factory=Resources, execution=True, doc="per-architecture CPUs and GPUs (Resources fields, below)"
    )
    max_retries: int = declare(
        Integer(0),
        2,
        execution=True,
        doc="retries of a failing architecture before it is recorded as failed",
        flag=Flag("retries of a failing architecture (default {default}, or the study's own)", "N"),
    )
    checkpoint_every_s: float = declare(
        Real(0.0, lo_open=True),
        300.0,
        execution=True,
        doc="seconds between trainer checkpoints",
        flag=Flag(
            "seconds between trainer checkpoints of a long architecture (default {default}, or the study's own)",
            "S",
            name="--checkpoint-every",
        ),
    )
    d_in: int | None = declare(Maybe(Integer(1)), None, doc="input dimension of the dataset")
    d_out: int | None = declare(Maybe(Integer(1)), None, doc="number of classes of the dataset")
    data_fingerprint: str | None = declare(
        Maybe(Text()),
        None,
        doc="sha256 (16 hex digits) of the loaded train/val/test tensors: a resume must see the same data",
    )
    package_version: str = declare(
        Text(), factory=package_version, shown="the installed version", doc="archstudy version that created the study"
    )
    created: str = declare(Text(), factory=utc_now, shown="the creation time", doc="creation time, ISO 8601 UTC")

    def _validate(self) -> None:
        set_: Callable[[str, Any], None] = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen dataclass)
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
        if self.indices is not None and self.architectures > len(self.indices):
            raise SpecError(
                WHERE, "architectures", self.architectures, f"must be at most the {len(self.indices)} indices listed"
            )
        if self.measure_only and self.init_seeds != 1:
            raise SpecError(
                WHERE, "init_seeds", self.init_seeds, "must be 1 when measure_only is true (nothing is trained)"
            )
        if self.lr_window is not None:
            n = Protocol.from_dict(self.protocol).num_lrs
            if self.lr_window["size"] > n:
                raise SpecError(WHERE, "lr_window", self.lr_window, f"must have size at most the protocol's {n} rates")
            if self.measure_only:
                raise SpecError(WHERE, "lr_window", self.lr_window, "must be null when measure_only is true")
        if self.measure_only and self.nlc_window is not None:
            raise SpecError(
                WHERE, "nlc_window", self.nlc_window, "must be null when measure_only is true (nothing is trained)"
            )

    # -- derived -------------------------------------------------------------------------------------
    @property
    def space_obj(self) -> Space:
        return get_space(self.space)

    @property
    def rates_trained(self) -> int:
        """The starting rates each initialization of an architecture trains: the window's size m
        (``lr_window``), else every rate of the protocol."""
        return int(self.lr_window["size"]) if self.lr_window is not None else Protocol.from_dict(self.protocol).num_lrs

    @property
    def counted_protocol(self) -> Protocol:
        """The protocol as the run machinery counts and costs it (the plan, the probe, the memory estimate, the live
        view): the study's own, with ``num_lrs`` the rates trained (a rate window's m, ``lr_window``)."""
        protocol = Protocol.from_dict(self.protocol)
        if self.lr_window is None:
            return protocol
        m = self.rates_trained
        return replace(protocol, num_lrs=m, lrs=None if protocol.lrs is None else protocol.lrs[:m])

    @property
    def runs_per_architecture(self) -> int:
        """The runs of one architecture's stack: every trained rate from each initialization (``init_seeds``)."""
        return self.rates_trained * self.init_seeds

    # -- serialization (to_dict, from_dict, and the declarations for a reader of a study.yaml, ``default`` and
    # ``normalize``: ``Declared``) ---------------------------------------------------------------------------
    def to_yaml(self) -> str:
        execution = ", ".join(EXECUTION_KEYS[:-1]) + " and " + EXECUTION_KEYS[-1]
        header = (
            "# archstudy study config: written once when the study was created; `archstudy resume` reads it.\n"
            f"# Science keys must not change on resume; {execution}\n"
            "# may be overridden for one session on the command line. data_fingerprint pins the data.\n"
        )
        return header + config_yaml.dump(self.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StudyConfig":
        """The config of the dict form ``d``; a ``preset`` given beside a ``space`` dict that names another space is
        refused (the dict wins, so the preset named would be silently dropped)."""
        known = cls.known(d)
        space = known.get("space")
        if "preset" in known and isinstance(space, Mapping) and "name" in space and space["name"] != known["preset"]:
            raise SpecError(
                WHERE,
                "preset",
                known["preset"],
                f"contradicts space.name = {space['name']!r}: give the preset's name or the space's dict, not both",
            )
        return cls(**known)

    @classmethod
    def from_yaml(cls, text: str | bytes, where: str = CONFIG_NAME) -> "StudyConfig":
        """The config in ``text`` (a study.yaml), read with the bounds of ``sampling.config_yaml``."""
        data = config_yaml.parse(text, WHERE, "config", where)
        if not isinstance(data, Mapping):
            raise SpecError(WHERE, "config", where, "must be a YAML mapping of study keys")
        return cls.from_dict(data)

    # -- comparison ------------------------------------------------------------------------------------
    def science(self) -> dict[str, Any]:
        """The science keys every row of the study is computed under (``ROW_SCIENCE_KEYS``), as plain values; a
        key added later (``since``) only where it is not at its default, so the record and fingerprint of every
        study that leaves it there are those it had before the key existed (``Declared.canonical``)."""
        d = self.canonical()
        return {k: d[k] for k in ROW_SCIENCE_KEYS if k in d}

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

    def with_execution(self, **settings: Any) -> "StudyConfig":
        """This config with the given execution settings (``EXECUTION_SETTINGS``) changed; None keeps the stored
        value."""
        changes: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {key: {} for key in dict.fromkeys(EXECUTION_SETTINGS.values()) if key}
        for name, value in settings.items():
            if name not in EXECUTION_SETTINGS:
                raise TypeError(f"with_execution() got an unexpected keyword argument {name!r}")
            key = EXECUTION_SETTINGS[name]
            if value is not None:
                (nested[key] if key else changes)[name] = value
        for key, values in nested.items():  # first: as Resources.of did, before the other settings are checked
            changes[key] = getattr(self, key).replace(**values)
        return replace(self, **changes)


# The keys a session may change (declared ``execution=True``) and their settings, by name: the fields of a nested
# declared object (``resources``: cpus_per_arch, gpus_per_arch) stand for it. Each setting -> the key holding it
# (None: the key is the setting).
EXECUTION_KEYS = tuple(name for name, declared in StudyConfig.declarations().items() if declared.execution)


def _execution_settings() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for key in EXECUTION_KEYS:
        nested = StudyConfig.default(key)
        out.update(dict.fromkeys(nested.declarations(), key) if isinstance(nested, Declared) else {key: None})
    return out


EXECUTION_SETTINGS = _execution_settings()  # root, cpus_per_arch, gpus_per_arch, max_retries, checkpoint_every_s


def execution_declaration(name: str) -> tuple[type[Declared], Declaration]:
    """The class that declares execution setting ``name`` and its declaration."""
    key = EXECUTION_SETTINGS[name]
    owner = StudyConfig if key is None else type(StudyConfig.default(key))
    return owner, owner.declaration(name)


def execution_settings(config: "StudyConfig | Mapping[str, Any]") -> dict[str, Any]:
    """The execution settings ``config`` names: every one of a StudyConfig; those a mapping of study keys holds
    (a nested mapping's entries for its key)."""
    d = config.to_dict() if isinstance(config, StudyConfig) else config
    named: dict[str, Any] = {}
    for key in EXECUTION_KEYS:
        if key in EXECUTION_SETTINGS and key in d:
            named[key] = d[key]
        elif isinstance(d.get(key), Mapping):
            named.update(d[key])
    return named


SCIENCE_KEYS = tuple(name for name in StudyConfig.declarations() if name not in EXECUTION_KEYS + PROVENANCE_KEYS)
# What every row of a study shares: the science keys but ``architectures`` and ``indices`` (a larger count extends
# a study, and architecture i depends neither on the count nor on which other draws the study holds). Each result
# file records them (study.execution.store).
ROW_SCIENCE_KEYS = tuple(k for k in SCIENCE_KEYS if k not in ("architectures", "indices"))


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

    def key(k: Any) -> Any:
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

    # nested mappings as dotted keys: protocol.lr_factor
    def flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, Mapping) and v else {f"{prefix}{k}": v})
        return out

    a, b = flat(recorded), flat(science)
    diff = [k for k in sorted(set(a) | set(b)) if a.get(k, ...) != b.get(k, ...)]
    missing: Callable[[dict[str, Any], str], str] = lambda d, k: "(none)" if k not in d else bounded_repr(d[k], 40)  # noqa: E731
    shown = [f"{k} ({missing(a, k)} in the results, {missing(b, k)} here)" for k in diff[:limit]]
    more = f" and {len(diff) - limit} more key(s)" if len(diff) > limit else ""
    return ", ".join(shown) + more if shown else "the same keys, another fingerprint"


# -- docs/config.md: every key, field and option, generated from the declarations ------------------------------
REGENERATE = "python -m archstudy.study.experiment.config docs/config.md"


def _kind(name: str) -> str:
    """How a study key counts for a resume (the module docstring)."""
    if name in EXECUTION_KEYS:
        return "execution"
    if name in PROVENANCE_KEYS:
        return "provenance"
    return "science, recorded" if name in RECORDED_KEYS else "science"


def doc_tables() -> dict[str, str]:
    """The generated tables of docs/config.md, by block name."""
    return {
        "StudyConfig": markdown(StudyConfig, {"kind": _kind}),
        "Resources": markdown(Resources),
        "Protocol": markdown(Protocol, {"presets": presets_column(PROTOCOLS, Protocol())}),
        "MetricOptions": markdown(MetricOptions),
        "Space": markdown(Space, {"presets": presets_column(PRESETS, Space())}),
        "ArchSpec": markdown(ArchSpec),
    }


def update_doc(text: str) -> str:
    """``text`` (docs/config.md) with every generated table replaced by the current one."""
    return update_blocks(text, doc_tables(), REGENERATE, "docs/config.md")


def main(argv: list[str] | None = None) -> int:
    """``python -m archstudy.study.experiment.config PATH``: rewrite the generated tables of PATH (docs/config.md)."""
    return rewrite_doc(argv, update_doc, REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
