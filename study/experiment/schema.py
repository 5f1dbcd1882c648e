"""The results schema: every column of every table a study writes, declared once.

A study's results are three tables, one Parquet file per architecture each (``docs/results.md``):
``architectures`` (one row per architecture), ``runs`` (one row per starting learning rate of it) and
``curves`` (one row per learning rate and epoch: the training curves, ``study.training.curves``).
Each column is one ``Column`` below: name, type, unit, meaning, table and group, and a column that may predict
test error says how the analysis treats it (``predictor``: label, kind, log scale, the report's figure it joins).
Everything else is derived from this declaration: the store's pyarrow schemas (``study.execution.store``), the
columns ``measure`` returns (``MEASURE_ROW``: each function computing some of them names them at its definition,
``@measures`` in ``study.metrics``, and ``study.metrics.registry`` checks that each is computed by exactly one),
the analysis' pandas dtypes, required columns and predictors (``analysis.columns``), the report's scatter
grids (``analysis.figures``) and the column tables of ``docs/results.md`` (``update_doc``; ``python -m
archstudy.study.experiment.schema docs/results.md`` rewrites them, and a test fails while the file differs).

Adding a column is one line in its group below (plus the code that computes its value); the store then
refuses rows without it. A metric at initialization is its ``Column`` here (in the "init metrics", "proxies"
or "optional" group), with its ``AsPredictor`` if it predicts test error, and its function in its metric module
(``study.metrics``), whose ``@measures`` names the column: ``measure``, the correlations, good ranges, window
scores, the ranking and the figure grid follow. A column added after files of this schema version exist is declared
``added=True`` (older files lack it and stay valid; ``analysis.results`` fills it with what the older rows
were). Adding a table is a name in ``TABLES``, its columns and an entry of ``COLUMNS`` (the store, the
generated docs and the analysis' dtypes follow); the store and ``study.execution.state`` decide which of a unit's
files its commit needs. Changing or removing a column, or how a type is stored, changes the files: raise
``RESULTS_SCHEMA_VERSION`` and say what changed in ``RESULTS_SCHEMA_VERSIONS`` (the readers keep reading the older
versions).

Types are a small vocabulary (``TYPES``): ``int64``, ``float64`` (NaN where not computed), ``bool``,
``str`` and ``timestamp`` (a Parquet timestamp in microseconds, UTC, since schema version 2; ISO 8601 UTC text
in version 1 files; ``datetime64[ns, UTC]`` in the analysis).

Imports only the standard library, ``sampling`` and the declared datasets (no torch, no pyarrow, no pandas).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, fields, replace
from typing import Mapping, Sequence

from archstudy.sampling import BASE, SIBLING_AXES, ArchSpec
from archstudy.sampling.constraints import Choice, Constraint, Integer, Real, Text, added_later
from archstudy.sampling.doc_tables import rewrite_doc
from archstudy.sampling.unit_names import MAX_ARCHITECTURES

from .datasets import DATASET_NAMES

RESULTS_SCHEMA_VERSION = "2"  # every Parquet file's key-value metadata carries it (``SCHEMA_KEY``)
# Every schema version this archstudy reads, and what it changed. A file of an older version stays valid: a study
# created before a change resumes without redoing anything (its new files are of this version, so one study may
# hold both) and reads whole (``study.execution.store`` and ``analysis.results`` give every file this version's types).
RESULTS_SCHEMA_VERSIONS: dict[str, str] = {
    "1": "the first layout; `timestamp` columns stored as ISO 8601 UTC text",
    "2": "`timestamp` columns stored as Parquet timestamps (microseconds, UTC)",
}
TIMESTAMP_UNIT = "us"  # a stored timestamp's resolution (schema version 2 on)


def timestamps_as_text(version: str) -> bool:
    """Whether the files of schema ``version`` store the ``timestamp`` columns as ISO 8601 UTC text."""
    return version == "1"


SCHEMA_KEY = "archstudy.schema_version"
TABLE_KEY = "archstudy.table"  # the table a file belongs to: one of ``TABLES``
# The science config a file's rows were computed under (``StudyConfig.science_json``: canonical JSON of the
# science keys but ``architectures``) and its fingerprint: a study holds one science config (study.execution.driver).
SCIENCE_KEY, SCIENCE_FINGERPRINT_KEY = "archstudy.science", "archstudy.science_fingerprint"
# An architectures file's: the tables of its unit written before it (comma-separated; "" for none), so that a
# finished architecture is checked table by table (``study.execution.store.FileCheck.requires``).
UNIT_TABLES_KEY = "archstudy.unit_tables"
ARCHITECTURES, RUNS, CURVES = "architectures", "runs", "curves"
TABLES = (ARCHITECTURES, RUNS, CURVES)
TYPES = ("int64", "float64", "bool", "str", "timestamp")

# The groups of each table, in their order, with the title docs/results.md gives them.
GROUPS: dict[str, str] = {
    "identity": "identity",
    "spec": "spec (every `ArchSpec` field under its own name)",
    "baselines": "trivial baselines",
    "init metrics": "init metrics (`study.measure`)",
    "proxies": "zero-cost proxies at init",
    "optional": "optional (flag-controlled; NaN when off)",
    "selected run": "selected run",
    "summary": "runs summary",
    "health": "health",
    "timings": "timings",
    "provenance": "provenance",
    "run": "the run",
    "point": "the point (one run, one epoch)",
}

NLC_PAPER = "Philipp and Carbonell, *The Nonlinearity Coefficient*"
ERROR = "fraction in [0, 1]"
# The zero-cost proxies' papers.
ABDELFATTAH = "Abdelfattah et al., *Zero-Cost Proxies for Lightweight NAS*, 2021"
LEE = "Lee et al., *SNIP: Single-shot Network Pruning based on Connection Sensitivity*, 2019"
TANAKA = "Tanaka et al., *Pruning Neural Networks without Any Data by Iteratively Conserving Synaptic Flow*, 2020"
MELLOR = "Mellor et al., *Neural Architecture Search without Training*, 2021"
# The NLC paper's "very biased output, i.e. 1000 Q_j(S_x f(x,j)) < Q_{j,x} f(x,j)" (figure 2): ``high_bias``.
HIGH_BIAS = 1000.0
# A network whose input gradient vanished, no signal back through it: its NLC lies below this (a linear map's is 1,
# NLC paper section 3: the Jacobian is 10,000 times smaller than the output's spread implies, the output moving by
# jumps between saturated regions or the gradient lost to float64's round-off), and the measures made of that
# gradient (``AsPredictor.gradient``) say how small it became, not how the function bends. The analysis leaves
# them out of every fit and the report says so (``analysis.degenerate``).
VANISHED_NLC = 1e-4


# How the analysis uses a predictor: the kinds, in the order its tables list them, and the report's scatter
# grids a predictor may join (``analysis.figures``: one panel per predictor against test error).
PREDICTOR_KINDS = ("metric", "proxy", "baseline")
PREDICTOR_FIGURES = ("metrics", "proxies", "baselines")


@dataclass(frozen=True)
class AsPredictor:
    """How the analysis treats a column that may predict test error (``analysis.columns.PREDICTORS``).

    ``label``: its name in the report's tables and figures. ``kind``: "metric" (init metrics of
    ``study.measure``), "proxy" (zero-cost proxies) or "baseline" (the trivial baselines every predictor must
    beat). ``log``: correlate (Pearson) and plot on log10 scale; the NLC paper: "if any quantity is plotted in
    log-scale, the correlation is also using the log of that quantity" (section 4); it plots NLC, bias and
    learning rate on log axes; for the other columns the choice is ours and ``why`` says it. ``figure``: the
    report's scatter grid it joins (one of ``PREDICTOR_FIGURES``), or "" where a figure of its own shows it
    (the NLC paper's figures: NLC, bias, depth, region diameter). ``rank``: its place among the predictors of
    its kind (lower first; equal ranks in column order): the analysis' tables, its good ranges and window
    scores list the predictors kind by kind in this order. ``gradient``: made of the network's input gradient at
    initialization, so degenerate with it where that gradient vanished (``VANISHED_NLC``). ``silent_at_zero``: 0
    means the network passes no signal where it was measured (its output constant or linear there), a value no log
    axis can place: degenerate too (``analysis.degenerate``)."""

    label: str
    kind: str
    log: bool
    why: str
    figure: str = ""
    rank: int = 0
    gradient: bool = False
    silent_at_zero: bool = False


# Where a numeric column may hold NaN (``Numbers.nan``): never; in the row of an architecture that was not trained (the
# columns of its selected run: ``trained`` false); or anywhere (a measurement that could not be made, or is off).
NEVER, UNTRAINED, ALWAYS = "never", "untrained", "always"


@dataclass(frozen=True)
class Numbers:
    """The values a numeric column may hold: ``lo`` <= v <= ``hi`` (``lo_open``: ``lo`` < v), NaN where ``nan`` says
    (``NEVER``, ``UNTRAINED``, ``ALWAYS``), and an infinity within the bounds only with ``infinite`` (a measurement
    that overflowed float64: a network's output or gradient at initialization)."""

    lo: float = -math.inf
    hi: float = math.inf
    nan: str = NEVER
    infinite: bool = False
    lo_open: bool = False

    def describe(self) -> str:
        """``[0, 1]``, ``[0, inf]`` (infinity allowed), ``(0, inf)``, with "or NaN" where NaN may stand."""
        opened = self.lo_open or (self.lo == -math.inf and not self.infinite)
        closed = not (self.hi == math.inf and not self.infinite)
        text = f"{'(' if opened else '['}{_bound(self.lo)}, {_bound(self.hi)}{']' if closed else ')'}"
        return text + {NEVER: "", ALWAYS: " or NaN", UNTRAINED: " (NaN when not trained)"}[self.nan]


@dataclass(frozen=True)
class Labels:
    """The values a text column may hold: one of ``choices`` where given; else a full match of ``pattern`` where
    given; else any one-line text without control characters."""

    choices: tuple[str, ...] = ()
    pattern: str = ""

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(f"`{c}`" for c in self.choices)
        return f"matches `{self.pattern}`" if self.pattern else "text without control characters"

    def allows(self, value: str) -> bool:
        if self.choices:
            return value in self.choices
        if self.pattern:
            return re.fullmatch(self.pattern, value) is not None
        return bool(value) and not CONTROL.search(value)


def _bound(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # the C0 and C1 control characters (terminal escapes begin with one)


def printable(text: str) -> str:
    """``text`` with every control character (``CONTROL``) written as its Python escape (``\\x1b``), as a stored
    string is printed to a terminal: a string read from a study's files may hold a terminal escape."""
    return CONTROL.sub(lambda m: repr(m[0])[1:-1], text)


SPLITS = ("val", "train", "test")
ARCH_ID = Labels(pattern="[0-9a-f]{16}")  # ``ArchSpec.content_id``
INDEX = Numbers(0, MAX_ARCHITECTURES - 1)
VARIANT = Labels((BASE, *SIBLING_AXES))
DATASET = Labels(DATASET_NAMES)
SEED_VALUES = Numbers(0, 2**63 - 1)  # ``sampling.constraints.SEED``
TEXT = Labels()
SECONDS = Numbers(0)
# A fraction of a split misclassified; the selected run's is NaN only where the architecture was not trained.
ERROR_VALUES = Numbers(0, 1)
SELECTED_ERROR = Numbers(0, 1, nan=UNTRAINED)
# A learning rate: NaN where the architecture was not trained, or where its lr_min could not be derived (an output
# that is not finite at initialization: every run is recorded diverged at its initial state); infinite likewise.
RATE = Numbers(0, nan=ALWAYS, infinite=True)
# A nonnegative measurement of a network (a norm, a quadratic mean, a ratio of them): NaN where it overflowed or is
# off, infinite where float64 overflowed.
MEASURED_SIZE = Numbers(0, nan=ALWAYS, infinite=True)


def spec_values(constraint: Constraint | None) -> "Numbers | Labels | None":
    """The values of a spec column, as ``ArchSpec`` declares its field (``sampling.constraints``)."""
    if isinstance(constraint, Integer):
        return Numbers(
            -math.inf if constraint.lo is None else constraint.lo, math.inf if constraint.hi is None else constraint.hi
        )
    if isinstance(constraint, Real):
        return Numbers(
            -math.inf if constraint.lo is None else constraint.lo,
            math.inf if constraint.hi is None else constraint.hi,
            lo_open=constraint.lo_open,
        )
    if isinstance(constraint, Choice):
        return Labels(tuple(str(v) for v in constraint.values))
    if isinstance(constraint, Text):
        return TEXT
    return None


@dataclass(frozen=True)
class Column:
    """One column: ``name``, ``type`` (one of ``TYPES``), ``unit`` ("" for a plain number or a label),
    ``meaning`` (one sentence, with the paper it comes from), ``table`` and ``group`` (set by ``_group``),
    ``required``: an analysis cannot read a table without it (every other column may be missing from an
    older file and is then read as NaN), and ``added``: declared after files of this schema version were
    written, so a file without it is an older file of the same study, whole and valid (a study created
    before it must resume without redoing its finished units); readers fill it (``analysis.results``).
    ``predictor``: how the analysis uses it, for a column that may predict test error (``AsPredictor``), else
    None. ``values``: what the science allows in it (``Numbers`` for a numeric column, ``Labels`` for a text one; a
    boolean or a timestamp column holds any of its type): a file holding anything else is corrupt
    (``study.experiment.value_checks``)."""

    name: str
    type: str
    unit: str
    meaning: str
    required: bool = False
    added: bool = False
    table: str = ""
    group: str = ""
    predictor: AsPredictor | None = None
    values: "Numbers | Labels | None" = None


def _group(table: str, group: str, *columns: Column) -> tuple[Column, ...]:
    return tuple(replace(c, table=table, group=group) for c in columns)


_SPEC_TYPES = {"int": "int64", "float": "float64", "bool": "bool", "str": "str"}
# The spec fields the analysis takes as trivial baselines.
_SPEC_PREDICTORS = {
    "depth": AsPredictor("depth", "baseline", False, "NLC paper figure 4 (linear axis)", rank=1),
    "width": AsPredictor("width", "baseline", True, "a count spanning orders of magnitude", figure="baselines", rank=2),
}
_GRADIENT_MAGNITUDE = "a gradient magnitude: scales multiplicatively (NLC paper section 6)"
_COUNT = "a count spanning orders of magnitude"

ARCHITECTURE_COLUMNS: tuple[Column, ...] = (
    *_group(
        ARCHITECTURES,
        "identity",
        Column(
            "arch_id",
            "str",
            "",
            "`ArchSpec.content_id` (16 hex digits); the files are `<index>-<arch_id>`",
            required=True,
            values=ARCH_ID,
        ),
        Column(
            "index",
            "int64",
            "",
            "index of the architecture in the study (0-based); siblings share it",
            required=True,
            values=INDEX,
        ),
        Column(
            "variant",
            "str",
            "",
            "`base` (the random draw) or the sibling axis it differs along: `weights`, `param`, `norm`, `skip`, `imn`, "
            "`width`",
            values=VARIANT,
        ),
        Column("dataset", "str", "", "dataset name", values=DATASET),
        Column(
            "study_seed",
            "int64",
            "",
            "the study seed: architecture `index` is drawn from `SeedSequence([study_seed, index])`",
            values=SEED_VALUES,
        ),
        Column(
            "seed",
            "int64",
            "",
            "initialization and data-order seed (`sampling.init_seed`), shared by siblings",
            values=SEED_VALUES,
        ),
    ),
    *_group(
        ARCHITECTURES,
        "spec",
        *(
            Column(
                f.name,
                _SPEC_TYPES[str(f.type)],
                "",
                f.metadata["doc"],
                added=added_later(f),
                predictor=_SPEC_PREDICTORS.get(f.name),
                values=spec_values(ArchSpec.declaration(f.name).constraint),
            )
            for f in fields(ArchSpec)
        ),
    ),
    *_group(
        ARCHITECTURES,
        "baselines",
        Column(
            "num_params",
            "int64",
            "parameters",
            "trainable parameters (exact count)",
            predictor=AsPredictor("parameters", "baseline", True, _COUNT, figure="baselines", rank=0),
            values=Numbers(1),
        ),
        Column("activation_units", "int64", "units", "activation units (width x hidden layers)", values=Numbers(0)),
        Column(
            "flops",
            "float64",
            "FLOP per example",
            "2 x multiply-adds of one forward pass",
            predictor=AsPredictor("FLOPs", "baseline", True, _COUNT, figure="baselines", rank=3),
            values=Numbers(0),
        ),
    ),
    *_group(
        ARCHITECTURES,
        "init metrics",
        Column(
            "nlc",
            "float64",
            "",
            f"nonlinearity coefficient at initialization ({NLC_PAPER}, section 3 and appendix G)",
            predictor=AsPredictor("NLC", "metric", True, "NLC paper figure 2 (log axis)", gradient=True),
            values=MEASURED_SIZE,
        ),
        Column(
            "nlc_jacobian_q",
            "float64",
            "",
            "Q_x of the Frobenius norm of the input-output Jacobian: the NLC's numerator factor",
            values=MEASURED_SIZE,
        ),
        Column("nlc_input_sd_q", "float64", "", "Q_i S_x x(i): the NLC's input factor", values=MEASURED_SIZE),
        Column("nlc_output_sd_q", "float64", "", "Q_j S_x f(x,j): the NLC's output factor", values=MEASURED_SIZE),
        Column(
            "bias",
            "float64",
            "",
            f"output bias Q_(x,j) f(x,j) / Q_j S_x f(x,j) ({NLC_PAPER}, figure 2)",
            predictor=AsPredictor("output bias", "metric", True, "NLC paper figure 3A (log axis)"),
            values=MEASURED_SIZE,
        ),
        Column("output_q", "float64", "", "Q_(x,j) f(x,j), the quadratic mean of the output", values=MEASURED_SIZE),
        Column("high_bias", "bool", "", f"bias > {HIGH_BIAS:g} ({NLC_PAPER}, figure 2)"),
        Column(
            "ar",
            "float64",
            "",
            "activation ratio: activation units / trainable parameters (the variability paper, eq. 5)",
            predictor=AsPredictor(
                "activation ratio AR",
                "metric",
                True,
                "a ratio of counts spanning orders of magnitude (Householder layers raise it by O(width))",
                figure="metrics",
            ),
            values=Numbers(0),
        ),
        Column(
            "variability",
            "float64",
            "",
            "variability of the squared output norm on 2-D planes through the "
            "data, geometric mean over planes (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3)",
            predictor=AsPredictor(
                "variability V",
                "metric",
                True,
                "a geometric mean over planes: multiplicative",
                figure="metrics",
                silent_at_zero=True,
            ),
            values=MEASURED_SIZE,
        ),
        Column(
            "gvcs",
            "float64",
            "",
            f"gradient vector component size of the loss' input gradient ({NLC_PAPER}, section 6)",
            predictor=AsPredictor(
                "gradient vector component size", "metric", True, _GRADIENT_MAGNITUDE, figure="metrics", gradient=True
            ),
            values=MEASURED_SIZE,
        ),
        Column(
            "grad_length",
            "float64",
            "",
            f"length of the loss' input gradient ({NLC_PAPER}, section 6)",
            predictor=AsPredictor(
                "gradient length",
                "metric",
                True,
                "a gradient magnitude (NLC paper section 6)",
                figure="metrics",
                gradient=True,
            ),
            values=MEASURED_SIZE,
        ),
        Column(
            "nlc_tau",
            "float64",
            "",
            f"NLC_tau(1) of the activation ({NLC_PAPER}, Table 1 line A)",
            predictor=AsPredictor(
                "NLC_tau(1) of the activation",
                "metric",
                True,
                "per-layer NLC; the network's compounds multiplicatively (NLC paper Table 1)",
                figure="metrics",
            ),
            values=Numbers(0),
        ),
        Column(
            "linear_approx_error",
            "float64",
            "",
            f"linear approximation error of the activation ({NLC_PAPER}, Table 1 line E)",
            predictor=AsPredictor(
                "linear-approximation error",
                "metric",
                True,
                "spans 0.0024 to 2 over the activations (NLC paper Table 1 line E)",
                figure="metrics",
            ),
            values=Numbers(0),
        ),
        Column(
            "c_out",
            "float64",
            "",
            f"the trainer's output scale Q_(x,j) f(x,j): the loss divides the output by it ({NLC_PAPER}, appendix C)",
            values=MEASURED_SIZE,
        ),
    ),
    *_group(
        ARCHITECTURES,
        "proxies",
        Column(
            "grad_norm",
            "float64",
            "",
            f"sum over trainable tensors of the loss gradient's 2-norm ({ABDELFATTAH})",
            predictor=AsPredictor("grad_norm", "proxy", True, "a gradient magnitude", figure="proxies"),
            values=MEASURED_SIZE,
        ),
        Column(
            "snip",
            "float64",
            "",
            f"sum of the absolute values of parameter x loss gradient ({LEE})",
            predictor=AsPredictor("snip", "proxy", True, "a sum of |gradient x weight|: a magnitude", figure="proxies"),
            values=MEASURED_SIZE,
        ),
        Column(
            "synflow",
            "float64",
            "",
            f"sum of parameter x gradient of the all-positive network's output on an all-ones input ({TANAKA})",
            predictor=AsPredictor(
                "synflow", "proxy", True, "a product of weight magnitudes: spans hundreds of decades", figure="proxies"
            ),
            # any sign: an activation that decreases somewhere on the positive axis gives the all-positive
            # network a negative gradient there
            values=Numbers(nan=ALWAYS, infinite=True),
        ),
        Column(
            "jacob_cov",
            "float64",
            "",
            f"the Jacobian covariance score ({MELLOR}, v1)",
            predictor=AsPredictor(
                "jacob_cov", "proxy", False, "already a sum of logs, and may be negative", figure="proxies"
            ),
            values=Numbers(nan=ALWAYS, infinite=True),
        ),
        Column(
            "nwot",
            "float64",
            "",
            f"log-determinant of the activation-code kernel ({MELLOR}, v2)",
            predictor=AsPredictor("NWOT", "proxy", False, "already a log-determinant", figure="proxies"),
            values=Numbers(nan=ALWAYS, infinite=True),
        ),
    ),
    *_group(
        ARCHITECTURES,
        "optional",
        Column(
            "lar_diameter",
            "float64",
            "data diameters",
            "relative diameter of the linearly approximable "
            f"regions at initialization ({NLC_PAPER}, appendix E.1); `metrics: {{lar: true}}`",
            predictor=AsPredictor(
                "linearly approximable region diameter", "metric", True, "NLC paper figure 1 (log axis)"
            ),
            values=MEASURED_SIZE,
        ),
        Column(
            "error_perturbation",
            "float64",
            "data diameters",
            "largest error-preserving perturbation of the "
            f"selected run's trained network, on the test set ({NLC_PAPER}, appendix E.3); "
            "`metrics: {perturbation: true}`",
            values=MEASURED_SIZE,
        ),
    ),
    *_group(
        ARCHITECTURES,
        "selected run",
        Column(
            "lr_min",
            "float64",
            "learning rate",
            f"smallest starting rate, from one epoch without updates ({NLC_PAPER}, appendix E.2)",
            values=RATE,
        ),
        Column("lr", "float64", "learning rate", "starting rate of the selected run", values=RATE),
        Column(
            "lr_index",
            "int64",
            "",
            "index of the selected run's starting rate (0-based, increasing rate)",
            values=Numbers(-1),
        ),
        Column("epochs", "int64", "epochs", "epochs the selected run trained", values=Numbers(0)),
        Column("divisions", "int64", "", "learning-rate divisions of the selected run", values=Numbers(0)),
        Column(
            "val_error",
            "float64",
            ERROR,
            "validation error of the selected run (the lowest of all runs)",
            values=SELECTED_ERROR,
        ),
        Column("train_error", "float64", ERROR, "training error of the selected run", values=SELECTED_ERROR),
        Column("test_error", "float64", ERROR, "test error of the selected run", required=True, values=SELECTED_ERROR),
        Column(
            "nlc_after",
            "float64",
            "",
            "NLC of the selected run after training (the same draws as `nlc`)",
            values=MEASURED_SIZE,
        ),
        Column("bias_after", "float64", "", "output bias of the selected run after training", values=MEASURED_SIZE),
        Column(
            "lr_edge",
            "bool",
            "",
            "the selected rate is among the protocol's `edge_runs` lowest or highest (five in the paper protocol)",
        ),
        Column(
            "selected_by",
            "str",
            "",
            "the split whose error selected the run: `val` (appendix E.2), `train` "
            "(the long protocol of figure 3D) or `test` (only to reproduce papers that selected so)",
            added=True,
            values=Labels(SPLITS + ("none",)),
        ),
    ),
    *_group(
        ARCHITECTURES,
        "summary",
        Column(
            "n_runs",
            "int64",
            "runs",
            "runs trained (one per starting rate and initialization)",
            values=Numbers(0),
        ),
        Column(
            "inits",
            "int64",
            "",
            "initializations the rates were trained from (the study's `init_seeds`; 0: not trained); the selected "
            "run is the first one's",
            added=True,
            values=Numbers(0),
        ),
        Column(
            "test_error_mean",
            "float64",
            ERROR,
            "mean over the `inits` initializations of each one's selected run's test error (each selected as the "
            "selected run is)",
            added=True,
            values=SELECTED_ERROR,
        ),
        Column(
            "test_error_sd",
            "float64",
            ERROR,
            "their standard deviation (n - 1; NaN with one initialization)",
            added=True,
            values=Numbers(0, 1, nan=ALWAYS),
        ),
        Column("n_diverged", "int64", "runs", "runs whose loss was not finite at least once", values=Numbers(0)),
        Column(
            "trained",
            "bool",
            "",
            "trained at its learning rates; false: pruned at launch, its NLC at "
            "initialization outside the study's `nlc_window`, or measured only (`measure_only`: `archstudy "
            "rank`): the row holds what was measured at initialization "
            "(the selected-run columns NaN, `lr_index` -1, `epochs`, `divisions`, `n_runs`, `inits`, `n_diverged` 0, "
            "`selected_by` `none`, `lr_edge` and `all_diverged` false, `train_s` 0) and it has no runs or curves "
            "file",
            added=True,
        ),
    ),
    *_group(
        ARCHITECTURES,
        "health",
        Column(
            "nonfinite_init",
            "bool",
            "",
            "one of `nlc`, `bias`, `output_q`, `c_out` is NaN: the output or its "
            "statistics overflowed at initialization",
        ),
        Column("all_diverged", "bool", "", "every run diverged"),
    ),
    *_group(
        ARCHITECTURES,
        "timings",
        Column("build_s", "float64", "s", "building the network", values=SECONDS),
        Column(
            "measure_s",
            "float64",
            "s",
            "the metrics at initialization, plus E.3 after training when on",
            values=SECONDS,
        ),
        Column("train_s", "float64", "s", "training all runs", values=SECONDS),
        Column("total_s", "float64", "s", "the whole architecture", values=SECONDS),
    ),
    *_group(
        ARCHITECTURES,
        "provenance",
        Column("package_version", "str", "", "archstudy version that computed the row", values=TEXT),
        Column("host", "str", "", "host name of the worker", values=TEXT),
        Column("device", "str", "", "torch device: `cpu` or `cuda:<name>`", values=TEXT),
        Column("finished_at", "timestamp", "UTC", "when the architecture finished"),
        Column("attempt", "int64", "", "the attempt that computed the row (1: the first)", values=Numbers(1)),
    ),
)


def _of_architecture(table: str) -> tuple[Column, ...]:
    """The identity columns of a table of one architecture's rows (runs, curves): whose rows they are."""
    return _group(
        table,
        "identity",
        Column("arch_id", "str", "", "the architecture's `arch_id`", required=True, values=ARCH_ID),
        Column("index", "int64", "", "the architecture's `index`", values=INDEX),
        Column("variant", "str", "", "the architecture's `variant`", values=VARIANT),
    )


RUN_COLUMNS: tuple[Column, ...] = (
    *_of_architecture(RUNS),
    *_group(
        RUNS,
        "run",
        Column(
            "init_index",
            "int64",
            "",
            "the run's initialization: 0 the architecture's `seed`, j the j-th of `sampling.replicate_seeds` "
            "(the study's `init_seeds`)",
            added=True,
            values=Numbers(0),
        ),
        Column(
            "lr_index",
            "int64",
            "",
            "index of the run's starting rate (0-based, increasing rate)",
            required=True,
            values=Numbers(0),
        ),
        Column("lr", "float64", "learning rate", "starting rate of the run", values=RATE),
        Column("epochs", "int64", "epochs", "epochs the run trained", values=Numbers(0)),
        Column("divisions", "int64", "", "learning-rate divisions of the run", values=Numbers(0)),
        Column(
            "val_error",
            "float64",
            ERROR,
            "validation error at the run's best state (under a `steps` schedule: its final state)",
            values=ERROR_VALUES,
        ),
        Column(
            "train_error",
            "float64",
            ERROR,
            "training error at the run's best state (under a `steps` schedule: its final state)",
            values=ERROR_VALUES,
        ),
        Column(
            "test_error",
            "float64",
            ERROR,
            "test error at the run's best state (under a `steps` schedule: its final state)",
            values=ERROR_VALUES,
        ),
        Column("diverged", "bool", "", "the run's loss was not finite at least once"),
        Column("wall_s", "float64", "s", "the run's share of the training time", values=SECONDS),
        Column(
            "selected",
            "bool",
            "",
            "the selected run of its initialization (exactly one per architecture and `init_index`; that of "
            "`init_index` 0 is the architecture's)",
        ),
    ),
)

CURVE_COLUMNS: tuple[Column, ...] = (
    *_of_architecture(CURVES),
    *_group(
        CURVES,
        "point",
        Column(
            "lr_index",
            "int64",
            "",
            "the run: index of its starting rate (as in `runs`)",
            required=True,
            values=Numbers(0),
        ),
        Column(
            "epoch",
            "int64",
            "epochs",
            "epochs the run had trained (rewound ones included, as `epochs`); 0: the initialization",
            required=True,
            values=Numbers(0),
        ),
        Column(
            "lr",
            "float64",
            "learning rate",
            "the rate of the epoch's last step (epoch 0: the starting rate)",
            values=RATE,
        ),
        Column(
            "train_loss",
            "float64",
            "",
            "mean of the run's minibatch losses over the epoch (the loss it minimized; NaN at epoch 0)",
            values=Numbers(0, nan=ALWAYS, infinite=True),
        ),
        Column(
            "monitored_error",
            "float64",
            ERROR,
            "the error of the split E.2's schedule monitors (`monitored`) at "
            "the end of the epoch, before the schedule rewinds; under a `steps` schedule the test error every "
            "`test_every` epochs and after the last, NaN at the others (and at all without `test_every`)",
            values=Numbers(0, 1, nan=ALWAYS),
        ),
        Column(
            "monitored",
            "str",
            "",
            "that split: `val` (appendix E.2), `train` (the long protocol), `test` (a "
            "`steps` schedule with `test_every`) or `none` (one without)",
            values=Labels(SPLITS + ("none",)),
        ),
        Column(
            "nlc",
            "float64",
            "",
            f"NLC of the run's network on the training set at the epochs of "
            f"`metrics: {{nlc_trajectory: [...]}}` (the draws of `nlc`), NaN at the others ({NLC_PAPER}, "
            "section 3)",
            values=MEASURED_SIZE,
        ),
    ),
)

COLUMNS: dict[str, tuple[Column, ...]] = {ARCHITECTURES: ARCHITECTURE_COLUMNS, RUNS: RUN_COLUMNS, CURVES: CURVE_COLUMNS}


def columns(table: str, *groups: str) -> tuple[Column, ...]:
    """The columns of ``table`` in file order; only those of ``groups`` when given."""
    return tuple(c for c in COLUMNS[table] if not groups or c.group in groups)


def names(table: str, *groups: str) -> tuple[str, ...]:
    return tuple(c.name for c in columns(table, *groups))


# Columns a file of this schema version may lack (``Column.added``), per table.
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {t: tuple(c.name for c in cols if c.added) for t, cols in COLUMNS.items()}

# What ``study.measure`` returns besides ``flops`` and ``measure_s``: the metrics at initialization.
MEASURED = names(ARCHITECTURES, "init metrics", "proxies", "optional")
# The columns of the ``measure`` row: computed by the ``@measures`` functions of ``study.metrics``, each column by
# exactly one (``study.metrics.registry.metric_functions`` checks it).
MEASURE_ROW = MEASURED + ("flops",)


def runs_required(trained: bool, curves: bool = False) -> tuple[str, ...]:
    """The tables whose file a committed unit must have besides its ``architectures`` file: ``runs`` (and
    ``curves`` with ``curves``) for a trained architecture, nothing for one pruned at launch."""
    return ((RUNS, CURVES) if curves else (RUNS,)) if trained else ()


def unit_tables(meta: Mapping[bytes, bytes], columns: Sequence[str], trained: bool) -> tuple[str, ...] | str:
    """The tables a valid architectures file says its unit has (its metadata ``UNIT_TABLES_KEY``; a file from before
    that key: what its writer always wrote, ``runs`` and ``curves`` when it has the ``trained`` column, else ``runs``),
    or why its record does not fit. ``meta``: the file's Parquet key-value metadata."""
    recorded = meta.get(UNIT_TABLES_KEY.encode())
    if recorded is None:  # a writer from before the key: what it always wrote
        return runs_required(trained, curves="trained" in columns)
    text = recorded.decode(errors="replace")
    tables = tuple(t for t in text.split(",") if t)
    if tables not in (runs_required(trained), runs_required(trained, curves=True)):
        return (
            f"metadata {UNIT_TABLES_KEY} = {text!r} does not fit trained = {trained} "
            f"(a trained architecture has {RUNS!r} or {f'{RUNS},{CURVES}'!r}, a pruned one none)"
        )
    return tables


def predictor_columns() -> tuple[Column, ...]:
    """The columns that may predict test error (``Column.predictor``), in the analysis' order: kind by kind
    (``PREDICTOR_KINDS``), by ``rank`` within a kind, equal ranks in column order."""
    declared = [(c, c.predictor) for c in ARCHITECTURE_COLUMNS if c.predictor is not None]
    return tuple(c for c, p in sorted(declared, key=lambda cp: (PREDICTOR_KINDS.index(cp[1].kind), cp[1].rank)))


def _check() -> None:
    assert list(RESULTS_SCHEMA_VERSIONS)[-1] == RESULTS_SCHEMA_VERSION, "RESULTS_SCHEMA_VERSIONS must end with it"
    for table, cols in COLUMNS.items():
        seen = [c.name for c in cols]
        assert len(set(seen)) == len(seen), f"{table}: a column is declared twice"
        assert all(c.type in TYPES and c.group in GROUPS and c.table == table for c in cols), table
        order = list(dict.fromkeys(c.group for c in cols))
        assert [c.group for c in cols] == [g for g in order for c in cols if c.group == g], f"{table}: groups split"
        for c in cols:
            kind = {"int64": Numbers, "float64": Numbers, "str": Labels}.get(c.type, type(None))
            assert isinstance(c.values, kind), f"{table}.{c.name}: its values must be declared as a {kind.__name__}"
            p = c.predictor
            assert p is None or (
                table == ARCHITECTURES
                and c.type in ("int64", "float64")
                and p.label
                and p.why
                and p.kind in PREDICTOR_KINDS
                and p.figure in ("", *PREDICTOR_FIGURES)
            ), c.name


_check()


# -- docs/results.md ------------------------------------------------------------------------------------------
def markdown(table: str) -> str:
    """The Markdown table of ``table``'s columns: group, column, type, unit, meaning."""
    lines = ["| group | column | type | unit | values | meaning |", "|---|---|---|---|---|---|"]
    previous = None
    for c in COLUMNS[table]:
        group = GROUPS[c.group] if c.group != previous else ""
        previous = c.group
        cells = [
            group,
            f"`{c.name}`",
            c.type,
            c.unit,
            c.values.describe() if c.values is not None else "",
            c.meaning
            + (" (required)" if c.required else "")
            + (" (added later: older files lack it)" if c.added else ""),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


REGENERATE = "python -m archstudy.study.experiment.schema docs/results.md"
# A generated block: its first line, the table (no other "<!--" inside), the end line.
_BLOCK = re.compile(
    r"<!-- columns of (\w+): generated by `[^`]*` from study/experiment/schema.py -->\n"
    r"(?:(?!<!--).)*?<!-- end -->",
    re.S,
)


def update_doc(text: str) -> str:
    """``text`` (docs/results.md) with every generated column table replaced by the current one. A block is
    ``<!-- columns of TABLE: generated by `...` from study/experiment/schema.py -->``, the table, ``<!-- end -->``."""

    def block(m: re.Match[str]) -> str:
        table = m.group(1)
        if table not in COLUMNS:
            raise ValueError(f"docs/results.md: no table {table!r}; tables: {', '.join(TABLES)}")
        return (
            f"<!-- columns of {table}: generated by `{REGENERATE}` from study/experiment/schema.py -->\n"
            + markdown(table)
            + "\n<!-- end -->"
        )

    out, n = _BLOCK.subn(block, text)
    if n != len(TABLES):
        raise ValueError(f"docs/results.md has {n} generated column tables; expected one per table ({len(TABLES)})")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m archstudy.study.experiment.schema PATH``: rewrite the generated column tables of PATH
    (docs/results.md)."""
    return rewrite_doc(argv, update_doc, REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
