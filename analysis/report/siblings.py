"""Paired effects of sibling architectures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..html import esc, fmt, interval, table
from ..study_analysis import StudyAnalysis
from ..findings import paired_subject
from .findings import method, verdict_of

if TYPE_CHECKING:
    pass


def paired_html(s: StudyAnalysis) -> str:
    p = s.paired
    if not len(p) or not (p["n_pairs"] > 0).any():
        return "<p>No sibling pairs in this study (siblings are off, or none finished yet).</p>"
    rows = []
    for _, r in p[p["n_pairs"] > 0].iterrows():
        level = "–" if not np.isfinite(r["ci_level"]) else f"{100 * r['ci_level']:.1f}%"
        effect = f"{esc(r['a'])} → {esc(r['b'])}" + (f" ({esc(r['context'])})" if r["context"] else "")
        rows.append(
            [
                esc(r["axis"]),
                effect,
                fmt(int(r["n_pairs"])),
                fmt(r["median"], 4),
                f"{interval(r['ci_lo'], r['ci_hi'], 4) or '–'} ({level})",
                f"{int(r['n_pos'])} / {int(r['n_neg'])} / {int(r['n_zero'])}",
                verdict_of(s, "paired", paired_subject(r), r["dataset"]).text(),
            ]
        )
    return table(
        [
            "axis",
            "A → B",
            "pairs",
            "median Δ test error (B − A)",
            "interval for the median (coverage)",
            "B worse / better / equal",
            "sign test p / adjusted",
        ],
        rows,
        left=2,
    ) + (
        '<p class="muted">Pairs: architectures of the same draw that differ only along the axis (everything else, '
        "the seed included, shared; the width re-solved to the parameter budget). In brackets, what else the pair "
        "differs in or shares: a GmP sibling of a spec with <code>imn: auto</code> (every spec from before that "
        "field, and both presets) also switches input mean normalization (Chen and Ge, eq. 16), as GmP always "
        "did; with <code>imn</code> off, GmP from the SP weights is the same function as its SP twin at "
        "initialization (for relu and abs without norms or skips). Interval: the distribution-free order-statistic "
        "interval that inverts the sign test (at least 95%; – with fewer than 6 pairs). Each comparison is a test of "
        f"the page's family ({esc(method('paired'))}): p / adjusted p, bold where a finding.</p>"
    )
