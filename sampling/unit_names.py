"""The name of a study's unit of work, ``<index:06d>-<arch_id>``: the stem of its result, failure and
checkpoint files (docs/results.md), declared once for the driver (``study.execution.store``) and the reader
(``analysis.results``).

The index has ``INDEX_DIGITS`` digits, so a study has at most ``MAX_ARCHITECTURES`` architectures
(indices 0 .. 999,999): the count a config allows is bounded here, so that every index it allows has a
name of this width, which the pattern accepts (a 7-digit name would never count as finished).
"""

from __future__ import annotations

import re

INDEX_DIGITS = 6
MAX_ARCHITECTURES = 10**INDEX_DIGITS
# the stem, without anchors, for patterns that add an extension
UNIT_STEM = rf"(?P<index>\d{{{INDEX_DIGITS}}})-(?P<arch_id>[0-9a-f]{{16}})"
UNIT_NAME = re.compile(rf"^{UNIT_STEM}$")


def unit_name(index: int, arch_id: str) -> str:
    """``<index:06d>-<arch_id>`` for an index in ``[0, MAX_ARCHITECTURES)``."""
    if not 0 <= index < MAX_ARCHITECTURES:
        raise ValueError(f"unit index {index} does not fit the {INDEX_DIGITS}-digit unit names")
    return f"{index:0{INDEX_DIGITS}d}-{arch_id}"
