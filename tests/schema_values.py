"""A plausible value of any results column, for tests that write a result file by hand.

The value is one the science allows (the column's declared ``Numbers`` or ``Labels``, ``study.experiment.schema``), so
that a file made of them is valid once the test sets the row's identity and spec: a unit of 3 runs, its run 1
selected. Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

import datetime as dt
import math

import pyarrow as pa

from archstudy.study.experiment.schema import COLUMNS, Labels, Numbers

# Columns whose values must fit one another in a row: 3 runs of one initialization, run 1 selected, none diverged,
# the first attempt.
TOGETHER = {"lr_index": 1, "n_runs": 3, "n_diverged": 0, "attempt": 1, "epoch": 0, "inits": 1, "init_index": 0}
DECLARED = {c.name: c.values for cols in COLUMNS.values() for c in cols}


def value(field: pa.Field, i: int):
    """The ``i``-th made-up value of ``field``'s column: within its declared values (a numeric column's range, a text
    column's first category), else by its type alone."""
    declared = DECLARED.get(field.name)
    if field.name in TOGETHER:
        return TOGETHER[field.name]
    if isinstance(declared, Numbers):
        lo = 0.0 if math.isinf(declared.lo) else declared.lo
        hi = lo + 1 + i if math.isinf(declared.hi) else declared.hi
        number = lo + (hi - lo) / 2 if not declared.lo_open or hi > lo else lo + 1
        return int(number) if pa.types.is_integer(field.type) else float(number)
    if isinstance(declared, Labels):
        if declared.choices:
            return declared.choices[0]
        return "0123456789abcdef" if declared.pattern else f"s{i}"
    if pa.types.is_floating(field.type):
        return 0.5 + i
    if pa.types.is_integer(field.type):
        return i
    if pa.types.is_boolean(field.type):
        return i % 2 == 0
    if pa.types.is_timestamp(field.type):
        return dt.datetime(2026, 1, 31, 12, i % 60, tzinfo=dt.timezone.utc)
    return f"s{i}"


def unit_rows(spec, index: int, variant: str = "base", *, runs: int = 3, epochs: int = 0):
    """A valid architectures row of ``spec`` (trained, ``runs`` runs, run 1 selected, or run 0 of one), its runs rows
    and its curves rows (epochs 0 .. ``epochs`` of every run; none when ``epochs`` is negative): every value within its
    column's declared values (``value``)."""
    from archstudy.study.execution.store import SCHEMAS

    ident = {"arch_id": spec.content_id, "index": index, "variant": variant}
    chosen = min(1, runs - 1)
    arch = {f.name: value(f, i) for i, f in enumerate(SCHEMAS["architectures"])}
    arch.update({**spec.to_dict(), **ident}, trained=True, n_runs=runs, lr_index=chosen)
    run_rows = [
        {**{f.name: value(f, k) for f in SCHEMAS["runs"]}, **ident, "lr_index": k, "selected": k == chosen}
        for k in range(runs)
    ]
    curve_rows = [
        {**{f.name: value(f, k) for f in SCHEMAS["curves"]}, **ident, "lr_index": k, "epoch": e}
        for k in range(runs)
        for e in range(epochs + 1)
    ]
    return arch, run_rows, curve_rows
