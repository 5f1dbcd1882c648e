"""``archstudy reproduce``: the papers' own experiments, run by the pipeline, their numbers beside the papers'.

Every reproduction is one module of this package holding ``REPRODUCTION`` (``reproduction.Reproduction``: name,
paper, table or figure, settings and cost per scale, a ``reproduce`` function) and offering it beside it
(``reproduction.offer``, with its place in the list); ``REPRODUCTIONS`` finds them by importing every module of the
package. The papers' experiments not offered are ``NOT_OFFERED`` (``catalogue``), each with its reason.
``reproduce_all(out, scale=...)`` runs every one (``summary``: ``OUT/summary.json`` and ``OUT/index.html``).
``reproduce(name, out, scale=..., seed=..., device=..., root=...)`` (the keywords: ``reproduction.RunOptions``)
runs one and writes ``out/NAME.json`` (``result.Result``: one fixed shape for every reproduction; each row agrees,
differs or cannot tell, and names the claim it checks) and ``out/NAME.html`` (``page``: its figure beside the
table). ``record`` keeps one run's summary in docs/reproductions.json and writes the README's and docs'
reproduction tables from it.

    >>> result, json_path, html_path = reproduce("nlc-table1", "reproductions", scale="quick")
"""

from __future__ import annotations

from typing import Any

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, check

from .catalogue import NOT_OFFERED, NotOffered
from .reproduction import REPRODUCTIONS, SCALES, WHERE, Context, Measured, Reproduction, RunOptions, run_reproduction
from .result import Result, Row, format_table

ALL = "all"  # ``archstudy reproduce all``: every reproduction offered

__all__ = [
    "ALL",
    "NOT_OFFERED",
    "NotOffered",
    "REPRODUCTIONS",
    "SCALES",
    "Context",
    "Measured",
    "Reproduction",
    "Result",
    "Row",
    "RunOptions",
    "format_table",
    "get",
    "reproduce",
    "reproduce_all",
]


def get(name: str) -> Reproduction:
    """The reproduction ``name``, or a one-line ``SpecError`` listing the names."""
    return REPRODUCTIONS[check("reproduce", "name", Choice(tuple(REPRODUCTIONS)), name)]


def reproduce(name: str, out, **options: Any):
    """Run reproduction ``name`` with the ``RunOptions`` given as keywords (``scale``, ``seed``, ``device``,
    ``root``, ``threads``, ``progress``); returns (``Result``, path of NAME.json, path of NAME.html)."""
    run = RunOptions(**options)
    if run.jobs is not None:
        raise SpecError(WHERE, "jobs", run.jobs, f"only with `reproduce {ALL}` (one reproduction runs in one process)")
    return run_reproduction(get(name), out, run)


def reproduce_all(out, **options: Any):
    """Run every reproduction with the ``RunOptions`` given as keywords, ``jobs`` side by side (default: one per
    core on the CPU); returns (the summary's entries, path of summary.json, path of index.html)."""
    from .summary import run_all

    return run_all(REPRODUCTIONS, out, RunOptions(**options))
