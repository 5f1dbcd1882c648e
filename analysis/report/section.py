"""A section of the page: a heading, its tables and notes, then the figures declared in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class PageSection:
    """A section of the page: ``key`` (what a figure declaration names as its ``section``, and the anchor of its
    heading), the heading and the HTML of its tables and notes (``html``: of a ``StudyAnalysis``, or of the studies
    side by side; None: figures only). The figures declared in it follow, in declaration order."""

    key: str
    title: str
    html: Callable[..., str] | None = None
    short: str = ""  # its name in the navigation bar (default: the title)
