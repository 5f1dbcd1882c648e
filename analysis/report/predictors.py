"""What predicts test error: the correlation table, the granulated Kendall coefficient by axis (Psi), the window
predictors, and the best predictor at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..columns import AXES, PREDICTOR_BY_COLUMN
from ..figures import fmt_p
from ..html import esc, fmt, interval, table, with_interval
from ..study_analysis import StudyAnalysis
from ..stats import bootstrap_note

if TYPE_CHECKING:
    import pandas as pd

from .findings import NONE, Verdict, method, verdict_of, yes_no
from .status import JIANG


def correlations_html(s: StudyAnalysis) -> str:
    c = s.corr
    if not len(c):
        return "<p>No finished architectures yet.</p>"
    chart = dict(zip(s.ranking["predictor"], s.ranking["rank"])) if len(s.ranking) else {}
    measured = (
        c[c["n"] >= 3]
        .assign(chart=lambda t: t["predictor"].map(chart))
        .sort_values(["chart", "rank"], kind="stable", na_position="last")
    )
    missing = c[c["n"] < 3]
    rows, classes = [], []
    for _, r in measured.iterrows():
        p = PREDICTOR_BY_COLUMN.get(r["predictor"])
        rows.append(
            [
                fmt(int(r["chart"])) if np.isfinite(r["chart"]) else "–",
                esc(r["label"]),
                esc(r["kind"]),
                "log" if r["log"] else "linear",
                fmt(int(r["n"])),
                with_interval(r["pearson"], r["pearson_lo"], r["pearson_hi"]),
                with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                verdict_of(s, "predictor", r["predictor"], r["dataset"]).text(),
                psi_cell(r, verdict_of(s, "psi", r["predictor"], r["dataset"])),
                fmt(r["psi_tau_b"], 2),
                with_interval(r["lift"], r["lift_lo"], r["lift_hi"]),
            ]
        )
        classes.append("baseline" if p is not None and p.kind == "baseline" else "")
    best = measured["best_baseline"].dropna()
    out = table(
        [
            "rank",
            "predictor",
            "kind",
            "scale",
            "n",
            "Pearson r",
            "Spearman ρ",
            "Kendall τ",
            "Kendall p / adjusted",
            "granulated Kendall Ψ",
            "Ψ over defined cells (τ-b)",
            "lift over best baseline",
        ],
        rows,
        left=4,
        row_classes=classes,
    )
    notes = [
        "Pearson on log10 of the predictor where the scale says log (the NLC paper correlates on the log of "
        "what it plots on a log axis); intervals: percentile bootstrap over architectures "
        f"(the random draws, n above); rank: the place in the ranking chart below (by |τ|, beside the window "
        "scores). Lift = |τ| − |τ| of the best trivial baseline "
        f"({esc(best.iloc[0]) if len(best) else '–'}), with its paired bootstrap interval. Kendall p: "
        f"{esc(method('predictor'))}; adjusted with every test of the page (the findings above; bold: a finding).",
        f"Ψ ({JIANG}, section 6.1, eq. 4-5, as defined there): the mean over sampled axes of the mean, "
        "over the cells of architectures that differ only along that axis, of τ = the average sign agreement of "
        "all pairs in the cell (ties count 0); every cell counts, one where the predictor is constant scores 0. "
        f"Its test: {esc(method('psi'))} (p / adjusted p under Ψ). Such cells come from sibling architectures "
        "(a random draw almost never repeats every other axis), so without siblings Ψ is undefined (–). The τ-b "
        "column is another statistic: it averages τ-b over the cells where τ-b is defined, so it skips the cells "
        "where the predictor is constant (a trivial baseline such as depth is constant in every sibling cell but "
        "the depth axis', and there the two differ most).",
    ]
    sampled = bootstrap_note(c)  # a large study's bootstrap ran on a subsample: say so
    if sampled:
        notes.append(esc(sampled))
    if len(missing):
        notes.append(
            "Fewer than 3 finite values (not switched on, or not finite where measured): "
            + ", ".join(esc(v) for v in missing["label"])
            + "."
        )
    return out + "".join(f'<p class="muted">{n}</p>' for n in notes)


def psi_cell(r: pd.Series, v: Verdict = NONE) -> str:
    """Jiang et al.'s Ψ with its interval, its test (p / adjusted p) and what it averages."""
    if not r["psi_cells"]:
        return "–"
    ci = interval(r["psi_lo"], r["psi_hi"])
    test = f"<br>{v.text()}" if np.isfinite(v.p) else ""
    return (
        f'{fmt(r["psi"], 2)}{"<br>" + ci if ci else ""}{test}<br><span class="ci">{int(r["psi_axes"])} axes, '
        f"{int(r['psi_cells'])} cells ({int(r['psi_constant_cells'])} constant)</span>"
    )


def psi_html(s: StudyAnalysis) -> str:
    t = s.psi
    if not len(t) or not (t["cells"] > 0).any():
        return "<p>No cells: no two architectures differ along exactly one sampled axis (turn siblings on).</p>"
    axes = [a for a in AXES if (t[t["axis"] == a]["cells"] > 0).any()]
    order = s.corr[s.corr["n"] >= 3].sort_values("rank")["predictor"].tolist()
    rows = []
    for pred in order:
        sub = t[t["predictor"] == pred].set_index("axis")
        label = PREDICTOR_BY_COLUMN[pred].label if pred in PREDICTOR_BY_COLUMN else pred
        rows.append(
            [esc(label)]
            + [
                f"{fmt(sub.at[a, 'psi'], 2)} ({int(sub.at[a, 'cells'])}"
                + (f", {int(sub.at[a, 'constant_cells'])} constant)" if sub.at[a, "constant_cells"] else ")")
                if sub.at[a, "cells"]
                else "–"
                for a in axes
            ]
        )
    return table(["predictor"] + [esc(a) for a in axes], rows) + (
        f'<p class="muted">ψ of each axis ({JIANG}, eq. 4): the mean over the cells where only that axis '
        "varies of τ, the average sign agreement of predictor and test error over the cell's pairs (number of "
        "cells in brackets; a cell where the predictor is constant scores 0 and is counted as constant).</p>"
    )


def windows_html(s: StudyAnalysis) -> str:
    """The window scores beside the raw metrics, out of sample."""
    w = s.window_scores
    if not len(w):
        return "<p>Too few architectures to fit a window (at least 8 with a finite metric and test error).</p>"
    w = w.assign(key=(~w["u_shaped"]).astype(int)).sort_values(["key", "gain"], ascending=[True, False])
    rows = [
        [
            esc(r["label"]),
            yes_no(verdict_of(s, "u_shape", r["metric"])),
            fmt(int(r["n"])),
            fmt(r["centre"], 3),
            f"{fmt(r['tau'], 2)} ± {fmt(r['tau_sd'], 2)}<br>{interval(r['tau_lo'], r['tau_hi'])}",
            f"{fmt(r['raw_tau'], 2)} ± {fmt(r['raw_tau_sd'], 2)}",
            with_interval(r["gain"], r["gain_lo"], r["gain_hi"]),
            fmt(r["kendall_full"], 2),
        ]
        for _, r in w.iterrows()
    ]
    splits = int(w["splits"].max()) if len(w) else 0
    return table(
        [
            "metric",
            "U-shaped",
            "n",
            "window centre",
            "τ of the window distance (held out)",
            "τ of the raw metric (same halves)",
            "gain |τ| − |τ raw|",
            "τ raw, all",
        ],
        rows,
    ) + (
        '<p class="muted">Window distance: |log10 x − centre| (linear for metrics not on a log scale), the centre '
        "being the middle of the metric's good range fitted on a random half of the architectures; Kendall τ with "
        f"test error on the other half; {splits} random splits: mean ± sd, bracket: the central 95% of splits. "
        "The raw metric's τ is taken on the same held-out halves. U-shaped: a finding of the page (its test: "
        f"{esc(method('u_shape'))}); the metrics at least 10% of whose architectures lie on each side of the good "
        "range with a permutation p below 0.05 on its own, and the NLC, join the predictor ranking above (green): "
        "an order, not a finding.</p>"
    )


def _label_of(column: str) -> str:
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p is not None else column


def _tau_text(r: pd.Series) -> str:
    ci = interval(r["abs_lo"], r["abs_hi"])
    return f"{r['abs_tau']:.2f}{' ' + ci if ci else ''}"


def best_predictor_html(s: StudyAnalysis) -> str:
    """The first rows of the predictor ranking (the ranking chart's table): the best predictor named, the best
    trivial baseline beside it, and the top five."""
    rk = s.ranking
    if not len(rk):
        return "<p>No predictor has three finite values with a test error yet.</p>"
    top = rk[rk["rank"] == 1]
    link = f'<a href="#{s.anchor}-predictors">ranking chart</a>'
    if len(top) == 1:
        head = (
            f"<p>Best predictor: <b>{esc(top['label'].iloc[0])}</b>, |Kendall τ| with test error "
            f"{_tau_text(top.iloc[0])}, first in the {link}."
        )
    else:
        head = (
            f"<p>Best predictors, tied first in the {link}: "
            + ", ".join(f"<b>{esc(v)}</b>" for v in top["label"])
            + f" (|Kendall τ| {top['abs_tau'].iloc[0]:.2f})."
        )
    found = s.findings[s.findings["family"] == "predictor"] if len(s.findings) else s.findings
    if len(found):
        hits = found[found["finding"]]
        if len(hits):
            names = ", ".join(esc(_label_of(v)) for v in hits["subject"])
            head += (
                f" Predictors shown to predict test error, with every test of the page counted (the findings): {names}."
            )
        else:
            # Ranking many predictors, the first has an interval away from 0 in about half of the null studies
            # (docs/analysis.md, verdict calibration): only the family's adjusted p-value is a verdict.
            head += (
                f" No predictor is distinguishable from chance once every test of the page is counted (smallest "
                f"adjusted Kendall p {fmt_p(float(found['p_adjusted'].min()))}): the order is not a finding."
            )
    base = rk[rk["kind"] == "baseline"]
    if len(base):
        b = base.iloc[0]
        head += f" The best trivial baseline, {esc(b['label'])}, reaches {b['abs_tau']:.2f} (rank {int(b['rank'])})."
    head += "</p>"
    rows = [
        [fmt(int(r["rank"])), esc(r["label"]) + f" ({'+' if r['kendall'] >= 0 else '−'})", esc(r["kind"]), _tau_text(r)]
        for _, r in rk.head(5).iterrows()
    ]
    return head + table(["rank", "predictor (sign of τ)", "kind", "|τ| [95% interval]"], rows, left=3)
