"""The page's opening: per study, what predicts test error and the best architectures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..findings import summary
from ..html import esc, fmt, table
from ..interactive import spec_parts
from ..study_analysis import StudyAnalysis

if TYPE_CHECKING:
    pass

from .predictors import best_predictor_html
from .status import caveats_html


def best_architectures_html(s: StudyAnalysis) -> str:
    """The lowest test errors, with what each architecture is."""
    b = s.best
    errors = s.arch["test_error"].to_numpy(np.float64) if len(s.arch) else np.array([])
    errors = errors[np.isfinite(errors)]
    if not len(b) or not len(errors):
        return "<p>No architecture has a test error yet.</p>"
    head = (
        f"<p>Best test error <b>{fmt(float(errors.min()), 3)}</b>, median {fmt(float(np.median(errors)), 3)} "
        f"over {len(errors):,} trained architectures.</p>"
    )
    rows = []
    row_of = {a: k for k, a in enumerate(s.arch["arch_id"].astype(str))}  # its place in the study's data block
    for _, r in b.iterrows():
        t = spec_parts(r)
        variant = "" if r.get("variant", "base") == "base" else f' <span class="ci">{esc(r["variant"])} sibling</span>'
        rows.append(
            [
                fmt(int(r["rank"])),
                fmt(r["test_error"], 3),
                fmt(r["nlc"], 3),
                t["net"],
                esc(t["activation"]),
                esc(t["norm"]),
                esc(t["skip"]),
                esc(t["layers"]),
                f'<a href="#" class="arch" data-study="{esc(s.anchor)}" data-row="{row_of[str(r["arch_id"])]}">'
                f'<code class="id">{esc(r["arch_id"])}</code></a>{variant}',
            ]
        )
    return head + table(
        ["#", "test error", "NLC", "depth × width", "activation", "norm", "skip", "weights, param", "arch_id"],
        rows,
        left=(4, 5, 6, 7, 8),
        cls="words",
    )


def glance_html(sections: list[StudyAnalysis]) -> str:
    """The first screen: per study, what predicts test error and the best architectures."""
    out = ['<section id="glance"><h2>At a glance</h2>']
    for s in sections:
        r = s.results
        planned = "?" if r.planned is None else f"{r.planned:,}"
        state = "complete" if r.complete else "partial"
        out.append(
            f'<div class="study"><h3><a href="#{s.anchor}">{esc(s.name)}</a> <span class="muted">'
            f"{esc(r.dataset)} · {r.n_finished:,} of {planned} architectures · {state}</span></h3>"
            + caveats_html(s)
            + (
                f'<p><a href="#{s.anchor}-findings">Findings</a>: {esc(summary(s.findings))}</p>'
                if len(s.findings)
                else ""
            )
            + f'<div class="cols"><div><h4>What predicts test error</h4>{best_predictor_html(s)}</div>'
            f'<div class="wide"><h4>Best architectures</h4>{best_architectures_html(s)}</div></div></div>'
        )
    return "\n".join(out + ["</section>"])
