"""The columns of a study's results as the analysis uses them: their pandas types (from the one
declaration of every column, ``study.experiment.schema``; docs/results.md), which of them predict test error, on
which scale and in which figure (the columns' ``AsPredictor``), and the sampled axes of the architecture space.

``analysis.results`` types the tables with the dtypes, ``analysis.stats`` and ``analysis.figures`` pick
predictors and axes from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from archstudy.sampling import SPEC_FIELDS, space
from archstudy.study.experiment.schema import ARCHITECTURES, CURVES, RUNS, AsPredictor, columns, predictor_columns

if TYPE_CHECKING:
    import pandas as pd

# pandas dtypes of the schema's types. Integers and booleans become pandas' nullable kinds only where a
# value is missing (e.g. a column an older runner did not write); see ``results.typed``.
PANDAS_DTYPES = {
    "int64": "int64",
    "float64": "float64",
    "bool": "bool",
    "str": "str",
    "timestamp": "datetime64[ns, UTC]",
}
# What names one trained architecture of a study in its rows: its arch_id (the spec's content id) at its index. An
# arch_id alone is not enough: a large study samples some specs more than once (7% of the rows of a synthetic
# 100,000-architecture study share their arch_id with another index), and siblings share an index, not an arch_id.
UNIT_KEY = ("arch_id", "index")


def unit_keys(table: pd.DataFrame) -> list[str]:
    """Each row's ``UNIT_KEY`` as one string, ``"arch_id@index"`` (the arch_id alone where the table has no index),
    to key what the browser looks up per architecture."""
    ids = table["arch_id"].astype(str)
    if "index" not in table.columns or table["index"].isna().any():  # a table of an older runner: no index
        return list(ids)
    return list(ids + "@" + table["index"].astype("Int64").astype(str))


ARCHITECTURE_DTYPES: dict[str, str] = {c.name: PANDAS_DTYPES[c.type] for c in columns(ARCHITECTURES)}
RUN_DTYPES: dict[str, str] = {c.name: PANDAS_DTYPES[c.type] for c in columns(RUNS)}
CURVE_DTYPES: dict[str, str] = {c.name: PANDAS_DTYPES[c.type] for c in columns(CURVES)}
SPEC_DTYPES: dict[str, str] = {c.name: PANDAS_DTYPES[c.type] for c in columns(ARCHITECTURES, "spec")}

# Without these a table cannot be analysed at all; every other column may be missing (it is then NaN).
ARCHITECTURE_REQUIRED = tuple(c.name for c in columns(ARCHITECTURES) if c.required)
RUN_REQUIRED = tuple(c.name for c in columns(RUNS) if c.required)
CURVE_REQUIRED = tuple(c.name for c in columns(CURVES) if c.required)


@dataclass(frozen=True)
class Predictor(AsPredictor):
    """A column that may predict test error: its name (``column``) with what its declaration says
    (``study.experiment.schema.AsPredictor``, whose fields these are: label, kind, log scale and why, the report's
    figure grid it joins, its rank)."""

    column: str = field(kw_only=True)


# Every column declared with an ``AsPredictor``, in the declaration's order (kind by kind, ``rank`` within one):
# the order of the correlation table, the good ranges and the window scores.
PREDICTORS: tuple[Predictor, ...] = tuple(
    Predictor(**asdict(c.predictor), column=c.name) for c in predictor_columns() if c.predictor is not None
)
PREDICTOR_BY_COLUMN = {p.column: p for p in PREDICTORS}
BASELINES = tuple(p.column for p in PREDICTORS if p.kind == "baseline")


def figure_grid(figure: str) -> tuple[str, ...]:
    """The predictors a scatter grid of the report shows (``Predictor.figure``), in ``PREDICTORS`` order."""
    return tuple(p.column for p in PREDICTORS if p.figure == figure)


# The sampled axes of the architecture space, for the granulated Kendall coefficient and the paired
# sibling effects. An axis is a group of spec fields that vary together: the skip axis holds where skips
# start, their strength, length and branch scale, which are all fixed when there are no skips. ``width``
# is no axis: it is solved from the others and the parameter budget, so siblings differ in it too. ``imn``
# is the spec field (``auto`` | ``off`` | ``on``): pairs along the other axes share it; its level as an axis
# is the effective choice (``axis_level``), and a pair along ``param`` under ``auto`` switches IMN too
# (``analysis.stats.pair_context`` labels it).
AXES: dict[str, tuple[str, ...]] = {
    "depth": ("depth",),
    "activation": ("activation",),
    "dilation": ("dilation",),
    "shift": ("shift",),
    "debias": ("debias",),
    "norm": ("norm",),
    "skip": ("skip", "skip_strength", "skip_length", "branch_scale"),
    "weights": ("weights",),
    "param": ("param",),
    "imn": ("imn",),
    "bias_init": ("bias_init",),
    "init_scale": ("init_scale",),
}
assert all(f in SPEC_FIELDS for group in AXES.values() for f in group)

# Which variants of each sibling axis a paired effect compares, in the order "A vs B" (difference B - A): the
# sampler's declaration (``archstudy.sampling.space.SIBLING_LEVELS``, the spec's declared values of each axis).
SIBLING_LEVELS = space.SIBLING_LEVELS


def input_mean_norm(df: pd.DataFrame) -> pd.Series:
    """Each architecture's effective input mean normalization, "on" or "off" (``ArchSpec.input_mean_norm``:
    ``imn``, with ``auto`` as the parameterization implies: on for GmP, off for SP)."""
    on = (df["imn"] == "on") | ((df["imn"] == "auto") & (df["param"] == "gmp"))
    return on.map({True: "on", False: "off"})


def axis_level(df: pd.DataFrame, axis: str) -> pd.Series:
    """Each architecture's level along a sibling axis (the values of ``SIBLING_LEVELS[axis]``): its spec
    field, except for skips, whose level is "none" or "skips" (where they start is one of the skip axis'
    fields, not a level), IMN, whose level is the effective choice (``input_mean_norm``), and width, whose level
    is relative: "2x" for a width sibling, "1x" for every other row (its base)."""
    if axis == "skip":
        return df["skip"].where(df["skip"] == "none", "skips")
    if axis == "imn":
        return input_mean_norm(df)
    if axis == "width":  # relative to its base: widths differ across draws (the budget re-solves them)
        return df["variant"].eq("width").map({True: SIBLING_LEVELS["width"][1], False: SIBLING_LEVELS["width"][0]})
    return df[axis]
