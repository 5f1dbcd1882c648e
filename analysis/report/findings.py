"""The findings: every verdict the page states, tested as one family (``analysis.findings``), and how each table
reads its verdict from them."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..figures import fmt_p
from ..findings import ALPHA, FAMILIES, summary
from ..html import esc, fmt, table
from ..study_analysis import StudyAnalysis


class Verdict(NamedTuple):
    """One test's ``p``, its ``p_adjusted`` with every test of the page, and whether it is a ``finding``."""

    p: float
    p_adjusted: float
    finding: bool

    def text(self) -> str:
        """ "p / adjusted p", the adjusted one in bold where it is a finding: an unadjusted p never stands alone."""
        adjusted = fmt_p(self.p_adjusted)
        return f"{fmt_p(self.p)} / {'<b>' + adjusted + '</b>' if self.finding else adjusted}"


NONE = Verdict(math.nan, math.nan, False)


def verdict_of(s: StudyAnalysis, family: str, subject: str, dataset: str | None = None) -> Verdict:
    """The test of ``family`` about ``subject`` among the study's findings (``NONE`` where it was not tested)."""
    f = s.findings
    if not len(f):
        return NONE
    hit = f[(f["family"] == family) & (f["subject"] == subject)]
    if dataset is not None and len(hit) > 1:
        hit = hit[hit["dataset"] == dataset]
    if not len(hit):
        return NONE
    r = hit.iloc[0]
    return Verdict(float(r["p"]), float(r["p_adjusted"]), bool(r["finding"]))


def yes_no(v: Verdict) -> str:
    """A verdict column: "yes" for a finding of the whole family, else "no" with its adjusted p."""
    if v.finding:
        return f"<b>yes</b> (adjusted p {fmt_p(v.p_adjusted)})"
    if not np.isfinite(v.p):
        return "no (not tested)"
    return f"no (adjusted p {fmt_p(v.p_adjusted)})"


def findings_html(s: StudyAnalysis) -> str:
    """The study's findings: how many tests, how controlled, each finding in words, and every family's count."""
    f = s.findings
    if not len(f):
        return "<p>No test: no finished architectures yet.</p>"
    hits = f[f["finding"]]
    head = f'<div class="box {"done" if len(hits) else "partial"}">{esc(summary(f))}</div>'
    rows = [
        [esc(_family_name(r["family"])), esc(r["claim"]), fmt_p(r["p"]), f"<b>{fmt_p(r['p_adjusted'])}</b>"]
        for _, r in hits.iterrows()
    ]
    found = table(["family", "finding", "p", "adjusted p"], rows, left=2) if rows else ""
    per = []
    for fam in FAMILIES:
        t = f[(f["family"] == fam.key) & np.isfinite(f["p"].to_numpy(np.float64))]
        per.append(
            [
                esc(fam.name),
                fmt(len(t)),
                fmt(int(t["finding"].sum())) if len(t) else "–",
                fmt_p(float(t["p_adjusted"].min())) if len(t) else "–",
                esc(fam.test),
            ]
        )
    return (
        head
        + found
        + table(["family", "tests", "findings", "smallest adjusted p", "the test"], per, left=(0, 4))
        + f'<p class="muted">Every verdict of this page is one test of one family above, and the page states it '
        f"only when its p-value, adjusted with all {int(np.isfinite(f['p'].to_numpy(np.float64)).sum())} tests "
        f"(Holm's sequentially rejective procedure, each family an equal share of the weight, split equally among "
        f"its tests), is at most {ALPHA}: the chance that this page states any false finding is at most "
        f"{ALPHA:.0%}, whatever the dependence between the tests. Tables show p / adjusted p, the adjusted one in "
        "bold where it is a finding. The whole set is in the findings JSON beside the page.</p>"
    )


def _family_name(key: str) -> str:
    return next((f.name for f in FAMILIES if f.key == key), key)


def method(key: str) -> str:
    """A family's test in words (``findings.FAMILIES``): the captions of the tables say it from there."""
    return next(f.test for f in FAMILIES if f.key == key)
