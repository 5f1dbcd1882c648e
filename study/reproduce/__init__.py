"""``archstudy reproduce``: the papers' own experiments, run by the pipeline, their numbers beside the papers'.

Every reproduction is one module of this package holding ``REPRODUCTION`` (``reproduction.Reproduction``: name,
paper, table or figure, settings and cost per scale, a ``reproduce`` function) and one line in ``REPRODUCTIONS``
below; the papers' experiments not offered are ``NOT_OFFERED`` (``catalogue``), each with its reason.
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

from . import (
    gmp_banana,
    han_checkerboard,
    han_flipped,
    nlc_figure1,
    nlc_figure2,
    nlc_table1,
    nlc_table2,
    relu_abs_trainability,
    resnet_depth,
    resnet_hessian,
    resnet_norms,
    resnet_spectrum,
    variability_collapse,
    yz_variability_depth,
)
from .catalogue import NOT_OFFERED, NotOffered
from .reproduction import SCALES, WHERE, Context, Measured, Reproduction, RunOptions, run_reproduction
from .result import Result, Row, format_table

REPRODUCTIONS: dict[str, Reproduction] = {
    r.name: r
    for r in (
        nlc_table1.REPRODUCTION,
        nlc_table2.REPRODUCTION,
        nlc_figure2.REPRODUCTION,
        resnet_hessian.REPRODUCTION,
        han_checkerboard.REPRODUCTION,
        nlc_figure1.REPRODUCTION,
        yz_variability_depth.REPRODUCTION,
        variability_collapse.REPRODUCTION,
        resnet_depth.REPRODUCTION,
        relu_abs_trainability.REPRODUCTION,
        resnet_spectrum.REPRODUCTION,
        resnet_norms.REPRODUCTION,
        gmp_banana.REPRODUCTION,
        han_flipped.REPRODUCTION,
    )
}
ALL = "all"  # ``archstudy reproduce all``: every reproduction above

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
