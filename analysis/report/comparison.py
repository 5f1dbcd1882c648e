"""Several studies side by side: their test errors, the keys of their configs that differ, their good ranges."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from ..columns import PREDICTOR_BY_COLUMN
from ..html import esc, fmt, folded, table
from ..study_analysis import StudyAnalysis

if TYPE_CHECKING:
    pass


def errors_compare_html(have: list[StudyAnalysis]) -> str:
    """The studies' test errors side by side: best (and which architecture), quartiles, the best predictor."""
    rows = []
    for s in have:
        e = s.arch["test_error"].to_numpy(np.float64)
        e = e[np.isfinite(e)]
        best = s.best.iloc[0] if len(s.best) else None
        top = s.ranking[s.ranking["rank"] == 1] if len(s.ranking) else s.ranking
        rows.append(
            [
                f'<a href="#{s.anchor}">{esc(s.name)}</a>',
                esc(s.results.dataset),
                fmt(len(s.arch)),
                fmt(float(e.min()), 3) if len(e) else "–",
                f"<code>{esc(best['arch_id'])}</code>" if best is not None else "–",
                fmt(float(np.percentile(e, 25)), 3) if len(e) else "–",
                fmt(float(np.median(e)), 3) if len(e) else "–",
                (", ".join(esc(v) for v in top["label"]) + f" ({top['abs_tau'].iloc[0]:.2f})") if len(top) else "–",
            ]
        )
    return table(
        [
            "study",
            "dataset",
            "trained",
            "best test error",
            "its architecture",
            "25th percentile",
            "median",
            "best predictor (|τ|)",
        ],
        rows,
        left=2,
    )


# Keys every study has its own value of: they say nothing about how the studies differ (each study's provenance
# shows them).
PER_STUDY_KEYS = ("created",)


def config_diff_html(have: list[StudyAnalysis]) -> str:
    """The study.yaml keys whose values differ between the studies, one column per study, and the keys they share
    with their one value, in a table of their own (``PER_STUDY_KEYS`` in neither)."""

    def text(v: object) -> str:
        if v is None:
            return "–"
        return json.dumps(v, default=str, sort_keys=True) if isinstance(v, (dict, list)) else str(v)

    configs = [s.results.config for s in have]
    keys = [k for k in dict.fromkeys(k for c in configs for k in c) if k not in PER_STUDY_KEYS]
    differ = [k for k in keys if len({text(c.get(k)) for c in configs}) > 1]
    same = [k for k in keys if k not in differ]
    out = ""
    if differ:
        out += table(
            ["study.yaml key"] + [esc(s.name) for s in have],
            [[f"<code>{esc(k)}</code>"] + [folded(text(c.get(k))) for c in configs] for k in differ],
            left=len(have) + 1,
        )
    else:
        out += "<p>The studies' configs are identical (their creation times aside).</p>"
    if same:
        out += (
            f'<details class="same"><summary>The same in every study: {len(same)} keys</summary>'
            + table(None, [[f"<code>{esc(k)}</code>", folded(text(configs[0].get(k)))] for k in same], left=2, cls="kv")
            + "</details>"
        )
    return out


def good_ranges_compare_html(have: list[StudyAnalysis]) -> str:
    """The good range of every factor per study, one column per study."""
    factors = list(
        dict.fromkeys(f for s in have for f in s.good.loc[(s.good["n"] >= 3) & np.isfinite(s.good["low"]), "factor"])
    )
    rows = []
    for f in factors:
        cells = []
        for s in have:
            r = s.good[s.good["factor"] == f]
            cells.append(
                "–"
                if not len(r) or not np.isfinite(r["low"].iloc[0])
                else f'[{r["low"].iloc[0]:.3g}, {r["high"].iloc[0]:.3g}]<br><span class="ci">best '
                f"{r['best'].iloc[0]:.3g}</span>"
            )
        label = PREDICTOR_BY_COLUMN[f].label if f in PREDICTOR_BY_COLUMN else f
        rows.append([esc(label)] + cells)
    return table(
        ["factor"] + [f'{esc(s.name)}<br><span class="ci">{esc(s.results.dataset)}</span>' for s in have], rows
    )
