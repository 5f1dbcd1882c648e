"""A plausible value of any results column, for tests that write a result file by hand.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa


def value(field: pa.Field, i: int):
    """The ``i``-th made-up value of ``field``'s type: float, integer, boolean, timestamp, else a string."""
    if pa.types.is_floating(field.type):
        return 0.5 + i
    if pa.types.is_integer(field.type):
        return i
    if pa.types.is_boolean(field.type):
        return i % 2 == 0
    if pa.types.is_timestamp(field.type):
        return dt.datetime(2026, 1, 31, 12, i % 60, tzinfo=dt.timezone.utc)
    return f"s{i}"
