"""The design space: error distributions by axis (EDFs), good ranges, the study's own NLC window."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from archstudy.study.experiment.good_range import STABILITY_DRAWS

from ..columns import PREDICTOR_BY_COLUMN
from ..edf import permutation_note
from ..figures import fmt_p
from ..html import esc, fmt, table
from ..study_analysis import StudyAnalysis

if TYPE_CHECKING:
    pass

from .pruning import window_text
from .status import RADOSAVOVIC_2019, RADOSAVOVIC_2020


def edf_html(s: StudyAnalysis) -> str:
    e = s.edf
    if e is None or not len(e.levels):
        return "<p>No sampled axis has two levels among the finished random draws.</p>"
    ks = e.ks
    rows = []
    for axis in dict.fromkeys(e.levels["axis"]):
        lv = e.levels[e.levels["axis"] == axis]
        k = ks[ks["axis"] == axis]
        top = k.loc[k["ks"].idxmax()] if len(k) else None
        differ = int(lv["bins"].max()) > 1
        rows.append(
            [
                esc(axis),
                "<br>".join(
                    f"{esc(r['level'])}: {int(r['n'])} | {fmt(r['min'], 3)} | {fmt(r['mean'], 3)}"
                    for _, r in lv.iterrows()
                ),
                "–" if top is None else f"{fmt(top['ks'], 2)} ({esc(top['a'])} vs {esc(top['b'])})",
                "–" if top is None else f"{fmt_p(top['p'])} ({fmt_p(top.get('p_holm', np.nan))})",
                "levels of one size"
                if not differ
                else "–"
                if top is None
                else f"{fmt(k['ks_normalized'].max(), 2)} "
                f"(p ≈ {fmt_p(k.loc[k['ks_normalized'].idxmax(), 'p_normalized'])}, Holm "
                f"{fmt_p(k.loc[k['ks_normalized'].idxmax()].get('p_normalized_holm', np.nan))})",
            ]
        )
    return table(
        [
            "axis",
            "level: n | min | mean test error",
            "largest KS",
            "p (KS test; Holm)",
            f"largest KS, normalized by {esc(e.complexity)}",
        ],
        rows,
        left=2,
    ) + (
        f'<p class="muted">Error EDFs ({RADOSAVOVIC_2019}, section 3) of the random draws per level of each '
        "sampled axis (depth in bins). KS: the largest distance between two levels' EDFs, with scipy's two-sample "
        "p-value. Normalized: each level reweighted so that its distribution of the complexity column is uniform "
        "over the complexity bins (a tenth of a decade) that every level occupies; levels of one size (all in "
        "one bin, as at one parameter budget) have normalized EDFs equal to their EDFs. Its p-value is "
        "asymptotic with Kish's effective sample sizes (approximate).</p>"
        + (f'<p class="muted">{esc(note)}</p>' if (note := permutation_note(e)) else "")
    )


def good_ranges_html(s: StudyAnalysis) -> str:
    g = s.good
    if not len(g):
        return "<p>No finished architectures yet.</p>"
    g = g[(g["n"] >= 3) & np.isfinite(g["low"])]
    rows, classes = [], []
    for _, r in g.iterrows():
        p = PREDICTOR_BY_COLUMN.get(r["factor"])
        rows.append(
            [
                esc(r["label"]),
                fmt(int(r["n"])),
                fmt(r["low"], 3),
                fmt(r["best"], 3),
                fmt(r["high"], 3),
                f"{fmt(r['min'], 3)} – {fmt(r['max'], 3)}",
                f"{fmt(100 * r['below'], 0)}% / {fmt(100 * r['above'], 0)}%",
                "yes" if r["u_shaped"] else "no",
            ]
        )
        classes.append("baseline" if p is not None and p.kind == "baseline" else "")
    return (
        nlc_window_html(s)
        + table(
            ["factor", "n", "low", "best", "high", "observed range", "below / above", "U-shaped"],
            rows,
            row_classes=classes,
        )
        + (
            f'<p class="muted">pycls\'s empirical bootstrap ({RADOSAVOVIC_2020}, section 3.1): 2,500 subsamples of '
            "25% of the random draws (with replacement), the factor's value at each subsample's lowest test error; low "
            "and high are the 2.5th and 97.5th percentiles of those values and best their median (on a log scale "
            "where the factor is plotted on one). Below / above: the share of all architectures outside the range.</p>"
        )
    )


def nlc_window_html(s: StudyAnalysis) -> str:
    w = s.own_nlc_window
    if not len(w):
        return ""
    r = w.iloc[0]
    if not np.isfinite(r["low"]):
        return ""
    verdict = (
        "large enough: it is the pruning analysis' default window"
        if r["large_enough"]
        else f"not large enough to replace the paper's window: {esc(r['reason'])}"
    )
    sd = (
        f", each end moving by {fmt(r['sd_low'], 2)} / {fmt(r['sd_high'], 2)} decades (root mean square) over "
        f"{STABILITY_DRAWS} resamples of the study"
        if np.isfinite(r["sd_low"])
        else ""
    )
    return (
        f'<div class="box {"done" if r["large_enough"] else "partial"}"><b>The study\'s own NLC window:</b> '
        f"{window_text(r['low'], r['high'])} (best {r['best']:.3g}), beside the NLC paper's [1, 3]; "
        f"{fmt(int(r['n']))} architectures{sd}; {verdict}.</div>"
    )
