"""A result file's values against the science: what every reader checks before it counts a row.

The schema declares what each column may hold (``study.experiment.schema``: ``Numbers``, a range with where NaN and
infinity may stand; ``Labels``, the categories or the form of a text). ``value_problem`` checks a table's columns
against those declarations, column by column (numpy, so a pack's thousands of rows cost what one file's do), and what
the rows of one architecture must hold together:

* an architectures row: its spec is one ``ArchSpec`` accepts and ``arch_id`` is that spec's content id; a trained
  row's selected run is one of its ``n_runs`` runs, as many as the protocol plans (``planned_runs``) times its
  ``inits``, and
  ``n_diverged`` is at most ``n_runs``; a row not trained has no run (``lr_index`` -1, ``n_runs`` 0);
* a runs file: every planned run of each initialization once (``lr_index`` 0 .. runs - 1 per ``init_index``; under
  a rate window, m consecutive indices s .. s + m - 1 of the protocol's series) and exactly one of each
  initialization's selected;
* a curves file: each (run, epoch) once, of a planned run.

A file that breaks one is corrupt, as a truncated one is: ``archstudy status`` lists it, a resume redoes its
architecture, and the analysis (``archstudy top``, ``report``) leaves it out and says so, so all three agree on what is
finished (``study.execution.store.check_table_bytes``, ``analysis.results.read_parquet_checked``). Torch-free.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from archstudy.sampling import ArchSpec
from archstudy.sampling.constraints import UserError, shorten

from . import schema
from .schema import ALWAYS, ARCHITECTURES, CURVES, NEVER, RUNS, Labels, Numbers

SPEC_FIELDS = tuple(ArchSpec.declarations())


class PlannedRuns(int):
    """The runs each initialization of a trained architecture has (an int), and ``series``: the rates of the
    protocol its runs' ``lr_index`` ranges over; more than the runs under a rate window (``lr_window``: m of n
    consecutive rates), else the same."""

    series: int

    def __new__(cls, runs: int, series: int | None = None) -> "PlannedRuns":
        out = super().__new__(cls, runs)
        out.series = int(series if series is not None else runs)
        return out


def planned_runs(protocol: Mapping[str, Any] | str | None, lr_window: Any = None) -> PlannedRuns | None:
    """The runs each trained architecture of a study has: its protocol's starting rates (``Protocol.num_lrs``), or
    the size of its rate window (``lr_window``); None where the protocol cannot be read (the count is then taken
    from the file itself)."""
    from .protocol import Protocol

    if protocol is None:
        return None
    try:
        n = int(Protocol.of(protocol if isinstance(protocol, str) else dict(protocol)).num_lrs)
    except (UserError, TypeError, ValueError):
        return None
    size = lr_window.get("size") if isinstance(lr_window, Mapping) else None
    return PlannedRuns(int(size), n) if isinstance(size, int) and 1 <= size <= n else PlannedRuns(n)


def _series(runs: int | None, n: int) -> int:
    """The rates an ``lr_index`` may take: the protocol's series (``PlannedRuns.series``), else the runs held."""
    return int(getattr(runs, "series", runs if runs is not None else n))


def _shown(value: Any) -> str:
    return shorten(repr(value), 60)


def _numbers(name: str, column: pa.ChunkedArray, rule: Numbers, untrained: np.ndarray | None) -> str | None:
    """Why ``column``'s values break ``rule`` (the first one found), or None."""
    if column.null_count and pa.types.is_integer(column.type):
        return f"{name} is missing in a row; it holds {rule.describe()}"
    values = column.to_numpy().astype(np.float64, copy=False)
    nan = np.isnan(values)
    if nan.any():
        allowed = rule.nan == ALWAYS or (rule.nan != NEVER and untrained is not None and not (nan & ~untrained).any())
        if not allowed:
            return f"{name} = NaN; it holds {rule.describe()}"
    finite = values[~nan]
    bad = (finite < rule.lo) | (finite > rule.hi) | ((finite == rule.lo) if rule.lo_open else False)
    if not rule.infinite:
        bad |= np.isinf(finite)
    if bad.any():
        return f"{name} = {_shown(float(finite[bad][0]))}; it holds {rule.describe()}"
    return None


def _labels(name: str, column: pa.ChunkedArray, rule: Labels) -> str | None:
    for value in pc.unique(column).to_pylist():
        if value is None or not rule.allows(value):
            return f"{name} = {_shown(value)}; it holds {rule.describe()}"
    return None


def _columns(table: pa.Table, kind: str) -> str | None:
    """The first column of ``table`` whose values break its declaration."""
    untrained = None
    if kind == ARCHITECTURES and "trained" in table.column_names:
        untrained = ~table.column("trained").fill_null(True).to_numpy(zero_copy_only=False).astype(bool)
    for c in schema.columns(kind):
        if c.name not in table.column_names or c.values is None:
            continue
        column = table.column(c.name)
        if c.added and column.null_count:  # a pack's rows of a writer from before the column: null there
            column = pc.drop_null(column)
        if isinstance(c.values, Numbers):
            problem = _numbers(c.name, column, c.values, untrained)
        else:
            problem = _labels(c.name, column, c.values)
        if problem:
            return problem
    return None


def _architectures(table: pa.Table, runs: int | None) -> str | None:
    """The rules an architectures row holds across its columns (module docstring)."""
    rows = table.select(
        [n for n in table.column_names if n in SPEC_FIELDS + ("arch_id",) or n in _COUNTS or n in _OPTIONAL_COUNTS]
    )
    for row in rows.to_pylist():
        spec = {k: row[k] for k in SPEC_FIELDS if row.get(k) is not None}  # null: a field added since it was written
        try:
            built = ArchSpec.from_dict(spec)
        except (UserError, TypeError, ValueError) as e:
            return f"its spec is none ArchSpec accepts ({shorten(str(e), 160)})"
        if built.content_id != row["arch_id"]:
            return f"arch_id {row['arch_id']} is not the content id of its spec ({built.content_id})"
        if any(row.get(k) is None for k in _COUNTS if k in row):
            continue  # a column missing from an older file: nothing to compare
        if not row.get("trained", True):
            if row.get("lr_index", -1) != -1 or row.get("n_runs", 0) != 0:
                return "an architecture not trained with a selected run (lr_index != -1 or n_runs != 0)"
            continue
        n = row.get("n_runs")
        inits = row.get("inits") or 1  # null: a file from before init_seeds, one initialization
        if n is not None and runs is not None and n != runs * inits:
            return f"n_runs = {n}; the protocol plans {runs} runs" + (
                f" x {inits} initializations" if inits > 1 else ""
            )
        if n is not None and not 0 <= row.get("lr_index", 0) < _series(runs, n):
            series = _series(runs, n)
            return f"lr_index = {row['lr_index']}: " + (
                f"not one of its {n} runs" if series == n else f"not one of the protocol's {series} rates"
            )
        if n is not None and row.get("n_diverged", 0) > n:
            return f"n_diverged = {row['n_diverged']} of {n} runs"
    return None


_COUNTS = ("trained", "lr_index", "n_runs", "n_diverged")
_OPTIONAL_COUNTS = ("inits",)  # read beside the counts; null in a file from before it


def _runs(table: pa.Table, runs: int | None) -> str | None:
    """Every planned run of each architecture's initializations once (``init_index``; a file without it: one),
    exactly one selected per initialization."""
    keys = ["arch_id", "index"] + (["init_index"] if "init_index" in table.column_names else [])
    per = table.group_by(keys).aggregate(
        [("lr_index", "count"), ("lr_index", "count_distinct"), ("lr_index", "min"), ("lr_index", "max")]
    )
    for row in per.to_pylist():
        n, distinct = row["lr_index_count"], row["lr_index_count_distinct"]
        want = int(runs) if runs is not None else n
        lo = row["lr_index_min"] if _series(runs, n) > want else 0  # a rate window starts anywhere in the series
        if n != distinct:
            return f"{n - distinct} run(s) twice (lr_index repeated)"
        if (
            n != want
            or row["lr_index_min"] != lo
            or row["lr_index_max"] != lo + want - 1
            or lo + want > _series(runs, n)
        ):
            return f"runs lr_index {row['lr_index_min']} .. {row['lr_index_max']} ({n}); the protocol plans {want}"
    selected = table.group_by(keys).aggregate([("selected", "sum")])
    if any(s != 1 for s in selected.column("selected_sum").to_pylist()):
        return "not exactly one selected run per initialization"
    return None


def _curves(table: pa.Table, runs: int | None) -> str | None:
    """Each (run, epoch) of each architecture once, of a planned run."""
    keys = ["arch_id", "index", "lr_index", "epoch"]
    counts = table.group_by(keys).aggregate([("epoch", "count")]).column("epoch_count")
    if len(counts) != table.num_rows:
        twice = int(pc.sum(pc.greater(counts, 1)).as_py() or 0)
        return f"{twice} (run, epoch) point(s) more than once"
    if runs is not None and table.num_rows and pc.max(table.column("lr_index")).as_py() >= _series(runs, 0):
        top = pc.max(table.column("lr_index")).as_py()
        return f"a point of run {top}; the protocol plans {_series(runs, 0)} rates"
    return None


def value_problem(table: pa.Table, kind: str, runs: int | None = None) -> str | None:
    """Why ``table`` (the rows of a ``kind`` file or pack, with this schema's column names) breaks what the science
    allows (module docstring), in a few words; None where it does not. ``runs``: the runs the study's protocol plans
    per trained architecture (``planned_runs``), None: as many as each file holds."""
    problem = _columns(table, kind)
    if problem is None and kind == ARCHITECTURES:
        problem = _architectures(table, runs)
    elif problem is None and kind == RUNS:
        problem = _runs(table, runs)
    elif problem is None and kind == CURVES:
        problem = _curves(table, runs)
    return None if problem is None else f"values the science forbids: {problem}"
