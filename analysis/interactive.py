"""The report's interactive parts, drawn in the reader's browser by Plotly.js: per study, every predictor
against test error (the correlation scatter plots) and every sampled axis of the design space against test error,
where hovering a point shows its architecture (id, spec, metrics, test error), a drag zooms, the mode bar pans and
box- or lasso-selects (a selection is shown in every plot of the study and listed), and a click opens the
architecture's detail panel (its spec, metrics, its runs at every learning rate and the training curve of the
selected run); every table of the page sorts by a click on its header.

The page stays one self-contained file: each study's numbers are one JSON block (``study_data``; each plot draws
from it, so a value is written once however many plots show it), and the scripts, Plotly.js (as the ``plotly``
package ships it) and ours (``SCRIPT``), are inlined once per page (``scripts_html``). The static figures
(``analysis.figures``) stay as they are, in the page and for ``--figures``.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .columns import AXES, PREDICTOR_BY_COLUMN, PREDICTORS, SPEC_DTYPES, unit_keys
from .parallel_coordinates import dimensions
from .study_analysis import detailed
from .html import esc, fmt

if TYPE_CHECKING:
    from .study_analysis import StudyAnalysis

# What the detail panel and the hover show of an architecture besides its spec: the predictors and these.
OUTCOMES = (
    "test_error",
    "val_error",
    "train_error",
    "lr",
    "lr_index",
    "epochs",
    "n_runs",
    "n_diverged",
    "lr_edge",
    "high_bias",
    "nlc_after",
    "bias_after",
    "train_s",
    "total_s",
)
# Numeric columns beside the sampled axes that the design-space plots draw against test error.
DESIGN_NUMERIC = ("width", "num_params", "lr")
# At most this many points of a training curve go into the page (evenly spaced epochs, the last kept).
CURVE_POINTS = 60
DIGITS = 4  # significant digits of a number in the page's data


def _value(v: Any) -> Any:
    """A JSON value: a float to ``DIGITS`` significant digits, None where missing or not finite."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(f"{float(v):.{DIGITS}g}") if math.isfinite(v) else None
    return str(v)


def _column(s: pd.Series) -> list[Any]:
    return [_value(v) for v in s.tolist()]


def spec_parts(r: pd.Series | dict[str, Any]) -> dict[str, str]:
    """What an architecture is, by part: ``net`` (depth × width), ``activation``, ``norm``, ``skip`` (with its
    length), ``layers`` (weights, parametrization: "dense, SP")."""
    get = r.get

    def number(key: str) -> int | None:
        v = get(key)
        if isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v):
            return int(v)
        return None

    skip = str(get("skip", "") or "")
    length, depth, width = number("skip_length"), number("depth"), number("width")
    if skip and skip != "none" and length is not None:
        skip = f"{skip} (length {length})"
    return {
        "net": f"{depth} × {width}" if depth is not None and width is not None else "–",
        "activation": str(get("activation", "–")),
        "norm": str(get("norm", "–")),
        "skip": skip or "–",
        "layers": f"{get('weights', '–')}, {str(get('param', '–')).replace('gmp', 'GmP').replace('sp', 'SP')}",
    }


def spec_text(r: pd.Series | dict[str, Any]) -> str:
    """An architecture in one line (``spec_parts``): "4 × 96 relu, norm none, skip none, dense, SP"."""
    p = spec_parts(r)
    return f"{p['net']} {p['activation']}, norm {p['norm']}, skip {p['skip']}, {p['layers']}"


def design_axes(arch: pd.DataFrame) -> list[dict[str, Any]]:
    """The design-space plots: every sampled axis (``columns.AXES``, its first field) with two or more values in
    the study, then width, parameters and the selected run's learning rate; each ``{"col", "label", "kind"}``,
    kind "category" (an axis of at most 8 distinct values, or not a number; drawn as jittered strips) or
    "linear"/"log" (log where every value is positive and they span more than a decade; width, parameters and the
    rate are quantities, numeric however few their values)."""
    out: list[dict[str, Any]] = []
    for col in [group[0] for group in AXES.values()] + list(DESIGN_NUMERIC):
        if col not in arch.columns or any(a["col"] == col for a in out):
            continue
        values = arch[col].dropna()
        if values.nunique() < 2:
            continue
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if not numeric or (values.nunique() <= 8 and col not in DESIGN_NUMERIC):  # a quantity is never categories
            kind = "category"
        else:
            v = values.to_numpy(np.float64)
            v = v[np.isfinite(v)]
            kind = "log" if len(v) and v.min() > 0 and v.max() > 10 * v.min() else "linear"
        label = PREDICTOR_BY_COLUMN[col].label if col in PREDICTOR_BY_COLUMN else col.replace("_", " ")
        out.append({"col": col, "label": "learning rate (selected run)" if col == "lr" else label, "kind": kind})
    return out


def scatter_panels(s: StudyAnalysis) -> list[dict[str, Any]]:
    """The correlation scatter plots: every predictor with at least 3 finite values beside a test error, in the
    order of the predictor ranking (``study_analysis.StudyAnalysis.ranking``; the best first), each ``{"col", "label",
    "kind", "log", "tau", "p"}`` (Kendall τ-b with test error and its p-value, from the correlation table)."""
    c = s.corr
    if not len(c):
        return []
    rank = dict(zip(s.ranking["predictor"], s.ranking["rank"])) if len(s.ranking) else {}
    c = c[(c["n"] >= 3) & c["predictor"].isin(s.arch.columns)]
    c = c.assign(order=c["predictor"].map(rank)).sort_values(["order", "rank"], kind="stable", na_position="last")
    return [
        {
            "col": r["predictor"],
            "label": str(r["label"]),
            "kind": str(r["kind"]),
            "log": bool(r["log"]),
            "tau": _value(r["kendall"]),
            "p": _value(r["kendall_p"]),
        }
        for _, r in c.iterrows()
    ]


def _runs(runs: pd.DataFrame, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Per architecture (its ``columns.unit_keys`` key), its runs by learning rate, lowest first: ``lr``, ``val``
    (the run's best validation error), ``div`` (a "0"/"1" character per run: diverged) and ``sel`` (the place of the
    selected run, None without one)."""
    if not len(runs) or "arch_id" not in runs.columns:
        return {}
    if "init_index" in runs.columns:  # the architecture's own initialization (the others measure the seed noise)
        runs = runs[runs["init_index"].fillna(0) == 0]
    runs = runs.assign(_key=unit_keys(runs))
    runs = runs[runs["_key"].isin(set(keys))].sort_values(["_key", "lr_index"], kind="stable")
    out = {}
    for key, g in runs.groupby("_key", sort=False):
        selected = np.flatnonzero(g["selected"].fillna(False).to_numpy(bool))
        out[str(key)] = {
            "lr": _column(g["lr"]),
            "val": _column(g["val_error"]),
            "div": "".join("1" if v else "0" for v in g["diverged"].fillna(False)),
            "sel": int(selected[0]) if len(selected) else None,
        }
    return out


def _curves(curves: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per architecture (its ``columns.unit_keys`` key), the training curve of its selected run
    (``study_analysis.selected_curves``): epoch, monitored error and training loss at up to ``CURVE_POINTS`` evenly
    spaced epochs (the last kept)."""
    if not len(curves):
        return {}
    out = {}
    for key, g in curves.assign(_key=unit_keys(curves)).groupby("_key", sort=False):
        g = g.sort_values("epoch")
        if len(g) > CURVE_POINTS:
            g = g.iloc[np.unique(np.linspace(0, len(g) - 1, CURVE_POINTS).round().astype(int))]
        out[str(key)] = {
            "epoch": _column(g["epoch"]),
            "error": _column(g["monitored_error"]),
            "loss": _column(g["train_loss"]),
            "monitored": str(g["monitored"].iloc[0]),
        }
    return out


def study_data(s: StudyAnalysis) -> dict[str, Any]:
    """Everything the browser draws a study's interactive parts from: ``columns`` (one list per column of the
    trained architectures: id, variant, the one-line spec, the spec fields, the predictors and ``OUTCOMES``),
    ``spec`` / ``metrics`` (which columns the detail panel lists under each), ``labels`` (column -> label),
    ``scatter`` (``scatter_panels``), ``design`` (``design_axes``), ``parcoords`` (the parallel coordinates' axes,
    ``parallel_coordinates.dimensions``), ``runs`` (``_runs``) and ``curves`` (``_curves``)."""
    a = s.arch.reset_index(drop=True)
    ids = a["arch_id"].astype(str).tolist()
    spec = [c for c in SPEC_DTYPES if c in a.columns]
    metrics = [p.column for p in PREDICTORS if p.column in a.columns and a[p.column].notna().any()]
    metrics += [c for c in OUTCOMES if c in a.columns and c not in metrics]
    keys, shown = unit_keys(a), detailed(a)
    cols = {"arch_id": ids, "variant": _column(a["variant"]) if "variant" in a.columns else ["base"] * len(a)}
    cols["unit"] = keys
    cols["spec_text"] = [spec_text(r) for r in a.to_dict("records")]
    for c in dict.fromkeys(spec + metrics + ["num_params"]):
        if c in a.columns:
            cols[c] = _column(a[c])
    labels = {p.column: p.label for p in PREDICTORS}
    labels.update({c: c.replace("_", " ") for c in cols if c not in labels})
    return {
        "study": s.name,
        "columns": cols,
        "spec": spec,
        "metrics": metrics,
        "labels": labels,
        "scatter": scatter_panels(s),
        "design": design_axes(a),
        "parcoords": dimensions(a, s.ranking),
        "runs": _runs(s.results.runs, unit_keys(shown)),
        "detail": {"max": len(shown), "of": len(a)},  # the architectures with their runs and curve in the page
        "curves": _curves(s.selected_curves),
    }


def _json_block(element_id: str, data: Any) -> str:
    """``data`` as a JSON data block in the page (not run; ``</`` escaped so that it cannot close the script)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


def leaderboard_html(s: StudyAnalysis) -> str:
    """Every trained architecture, lowest test error first, in a table that sorts by any column (a click on a
    row's id opens its detail panel)."""
    a = s.arch.reset_index(drop=True)
    order = np.argsort(a["test_error"].to_numpy(np.float64), kind="stable")  # NaN last
    records = a.to_dict("records")  # one conversion: a row of ``iloc`` costs about 3 ms at 10,000 rows
    rows = []
    for k, i in enumerate(order, start=1):
        r = records[int(i)]
        rows.append(
            f'<tr data-row="{int(i)}"><td>{k}</td><td>{fmt(r.get("test_error"), 4)}</td>'
            f"<td>{fmt(r.get('nlc'), 3)}</td><td>{fmt(r.get('bias'), 3)}</td>"
            f'<td class="l">{esc(spec_text(r))}</td><td>{fmt(r.get("num_params"))}</td>'
            f"<td>{fmt(r.get('lr'), 3)}</td><td>{fmt(r.get('n_diverged'))}</td>"
            f'<td class="l"><a href="#" class="arch" data-row="{int(i)}"><code class="id">{esc(r["arch_id"])}</code>'
            f"</a>{'' if r.get('variant', 'base') == 'base' else ' ' + esc(r['variant'])}</td></tr>"
        )
    head = "".join(
        f'<th class="l">{h}</th>' if h in ("architecture", "arch_id") else f"<th>{h}</th>"
        for h in ("#", "test error", "NLC", "bias", "architecture", "parameters", "lr", "runs diverged", "arch_id")
    )
    return (
        f'<div class="scroll"><table class="leaderboard"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def explore_html(s: StudyAnalysis) -> str:
    """A study's interactive part: the correlation scatter plots, the design-space plots, the sortable table of
    every trained architecture, and the study's data block they draw from."""
    data = study_data(s)
    a = s.anchor
    scatter = "".join(
        f'<div class="iplot" data-plot="scatter" data-key="{k}" data-col="{esc(p["col"])}"></div>'
        for k, p in enumerate(data["scatter"])
    )
    design = "".join(
        f'<div class="iplot" data-plot="design" data-key="{k}" data-col="{esc(p["col"])}"></div>'
        for k, p in enumerate(data["design"])
    )
    how = (
        '<p class="muted">Hover a point for its architecture; drag to zoom (double-click: back), pan, box- or '
        "lasso-select with the bar above each plot (a selection shows in every plot of the study and is listed "
        "in the panel); click a point or an id for the architecture's spec, metrics, runs and curve.</p>"
    )
    return (
        f'<div class="explore" data-study="{esc(a)}">{how}'
        f'<h4 id="{esc(a)}-explore-scatter">Each predictor against test error</h4>'
        f'<p class="muted">Kendall τ-b with test error in each title (the correlation table\'s), the best predictor '
        f"first.</p>"
        f'<div class="grid">{scatter or "<p class=missing>No predictor has three finite values yet.</p>"}</div>'
        f'<h4 id="{esc(a)}-explore-design">The design space: each sampled axis against test error</h4>'
        f'<div class="grid">{design or "<p class=missing>No sampled axis has two values.</p>"}</div>'
        f"{parcoords_html(a, data['parcoords'])}"
        f'<h4 id="{esc(a)}-explore-all">All {len(s.arch):,} trained architectures</h4>'
        f"{leaderboard_html(s)}"
        f"{_json_block(f'data-{a}', data)}</div>"
    )


def parcoords_html(anchor: str, dims: list[dict[str, Any]]) -> str:
    """The parallel-coordinates view's heading, note and plot (``analysis.parallel_coordinates``)."""
    return (
        f'<h4 id="{esc(anchor)}-explore-parallel">Parallel coordinates: the design axes, the measures and test '
        "error</h4>"
        '<p class="muted">One line per architecture, coloured by test error; the measures in the order of the '
        "predictor ranking (log10 where the report plots them on a log scale). Drag along an axis to brush a range "
        "(several axes: their intersection); the brushed architectures are selected in every plot of the study and "
        "in its table. An architecture without a value on an axis drawn is left out of this view.</p>"
        f'<div class="iplot parcoords" data-plot="parcoords" data-axes="{len(dims)}"></div>'
    )


DETAIL_HTML = (
    '<aside id="detail" hidden><button type="button" class="close" aria-label="close">×</button>'
    '<div class="content"></div></aside>'
)


def scripts_html(interactive: bool) -> str:
    """The page's scripts, inlined once: Plotly.js where the page has interactive plots (``interactive``), and
    ours (``SCRIPT``: sortable tables, the plots, the selection and the detail panel; ``FOLDS``: the folded parts)."""
    out = ""
    if interactive:
        from plotly.offline import get_plotlyjs

        out += f"<script>{get_plotlyjs()}</script>"
    return out + f"<script>{FOLDS}{SCRIPT}</script>"


# The parts of a study fold under their headings (``details.part``): a link to a part or to anything inside one
# (the navigation bar, the contents, a figure's) opens it, and printing opens every part, so that a print or a
# PDF holds the whole page.
FOLDS = r"""
(function () {
"use strict";
function reveal(id) {
  const el = id && document.getElementById(decodeURIComponent(id));
  if (!el) return;
  for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
  el.scrollIntoView();
}
window.addEventListener("hashchange", () => reveal(location.hash.slice(1)));
window.addEventListener("beforeprint", () => {
  document.querySelectorAll("details.part").forEach(d => { d.open = true; });
});
document.addEventListener("DOMContentLoaded", () => {
  document.addEventListener("click", ev => {
    const a = ev.target.closest && ev.target.closest('a[href^="#"]');
    if (a && a.getAttribute("href").length > 1) reveal(a.getAttribute("href").slice(1));
  });
  if (location.hash) reveal(location.hash.slice(1));
});
})();
"""


# Ours: sorting tables, drawing each study's plots as they scroll into view, the linked selection, the detail panel.
SCRIPT = r"""
(function () {
"use strict";
function cellKey(td) {
  const t = (td ? td.textContent : "").trim().replace(/\u2212/g, "-").replace(/,/g, "");
  if (t === "" || t === "\u2013" || t === "-") return [2, 0];
  const m = t.match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i);
  return m ? [0, parseFloat(m[0])] : [1, t.toLowerCase()];
}
function sortBy(table, col, th) {
  const body = table.tBodies[0];
  if (!body) return;
  const asc = th.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th[aria-sort]").forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  const rows = Array.from(body.rows).map((r, i) => [cellKey(r.cells[col]), i, r]);
  rows.sort((a, b) => {
    if (a[0][0] !== b[0][0]) return a[0][0] - b[0][0];
    if (a[0][1] < b[0][1]) return asc ? -1 : 1;
    if (a[0][1] > b[0][1]) return asc ? 1 : -1;
    return a[1] - b[1];
  });
  rows.forEach(r => body.appendChild(r[2]));
}
function sortable(root) {
  root.querySelectorAll("table").forEach(table => {
    if (!table.tHead || table.dataset.sortable) return;
    table.dataset.sortable = "1";
    Array.from(table.tHead.rows[0].cells).forEach((th, col) => {
      th.classList.add("sort");
      th.title = "sort by this column";
      th.addEventListener("click", () => sortBy(table, col, th));
    });
  });
}
const STUDIES = {};
const fmt = v => v === null || v === undefined ? "\u2013" :
  typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en") :
    Math.abs(v) < 1e-3 ? v.toExponential(3) : Number(v.toPrecision(4)).toString()) :
  typeof v === "boolean" ? (v ? "yes" : "no") : String(v);
const escapeHtml = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
function study(anchor) {
  if (STUDIES[anchor]) return STUDIES[anchor];
  const d = JSON.parse(document.getElementById("data-" + anchor).textContent);
  const c = d.columns, n = c.arch_id.length;
  d.n = n;
  d.hover = c.arch_id.map((id, i) => "<b>" + escapeHtml(id) + "</b>" +
    (c.variant[i] && c.variant[i] !== "base" ? " (" + escapeHtml(c.variant[i]) + " sibling)" : "") + "<br>" +
    escapeHtml(c.spec_text[i]).replace(/, (?=skip)/, ",<br>") + "<br>test error " + fmt(c.test_error[i]) +
    ("nlc" in c ? ", NLC " + fmt(c.nlc[i]) : "") + ("bias" in c ? ", bias " + fmt(c.bias[i]) : ""));
  d.plots = [];
  d.selected = null;
  STUDIES[anchor] = d;
  return d;
}
function jitter(i) { const x = Math.sin(i * 12.9898) * 43758.5453; return (x - Math.floor(x) - 0.5) * 0.5; }
const CONFIG = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["autoScale2d"]};
function draw(div) {
  if (div.dataset.plot === "parcoords") { drawParcoords(div); return; }
  const anchor = div.closest(".explore").dataset.study, d = study(anchor), c = d.columns;
  const kind = div.dataset.plot, panel = d[kind][+div.dataset.key], col = panel.col;
  const rows = [], x = [], y = [];
  let ticks = null;
  if (kind === "design" && panel.kind === "category") {
    const values = Array.from(new Set(c[col].filter(v => v !== null)));
    values.sort((a, b) => typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b)));
    const levels = values.map(String);
    ticks = levels;
    c[col].forEach((v, i) => { if (v !== null && c.test_error[i] !== null) {
      rows.push(i); x.push(levels.indexOf(String(v)) + jitter(i)); y.push(c.test_error[i]); } });
  } else {
    const log = panel.log || panel.kind === "log";
    c[col].forEach((v, i) => {
      if (v === null || c.test_error[i] === null || (log && v <= 0)) return;
      rows.push(i); x.push(v); y.push(c.test_error[i]);
    });
  }
  const label = panel.label;
  const title = kind === "scatter" ? label + "  (\u03c4 " + fmt(panel.tau) + ")" : label;
  const text = ticks ? rows.map(i => d.hover[i] + "<br>" + escapeHtml(label) + ": " + escapeHtml(c[col][i])) :
    rows.map(i => d.hover[i]);
  const trace = {type: "scatter", mode: "markers", x: x, y: y, customdata: rows, text: text,
    hovertemplate: "%{text}" + (ticks ? "" : "<br>" + escapeHtml(label) + ": %{x:.4~g}") + "<extra></extra>",
    marker: {size: 6, color: "#2a6fb0", opacity: 0.75, line: {width: 0}},
    selected: {marker: {color: "#d62728", opacity: 1, size: 8}}, unselected: {marker: {opacity: 0.2}}};
  const xaxis = {title: {text: label, font: {size: 11}}, automargin: true, zeroline: false};
  if (ticks) Object.assign(xaxis, {tickvals: ticks.map((_, k) => k), ticktext: ticks,
                                   range: [-0.6, ticks.length - 0.4]});
  else if (panel.log || panel.kind === "log") xaxis.type = "log";
  const layout = {title: {text: escapeHtml(title), font: {size: 12}}, height: 270, margin: {l: 50, r: 30, t: 32, b: 40},
    modebar: {orientation: "v"}, hoverlabel: {align: "left"},
    xaxis: xaxis, yaxis: {title: {text: "test error", font: {size: 11}}, zeroline: false}, dragmode: "zoom",
    hovermode: "closest", showlegend: false, font: {size: 10}};
  Plotly.newPlot(div, [trace], layout, CONFIG).then(() => {
    div.dataset.drawn = "1";
    d.plots.push({div: div, rows: rows});
    if (d.selected) restyle(d, {div: div, rows: rows});
    div.on("plotly_click", ev => { if (ev.points.length) openDetail(anchor, ev.points[0].customdata); });
    div.on("plotly_selected", ev => { if (ev && ev.points) select(anchor, ev.points.map(p => p.customdata)); });
    div.on("plotly_deselect", () => select(anchor, null));
  });
}
function parcoordsRows(d) {
  const c = d.columns, dims = d.parcoords, rows = [];
  for (let i = 0; i < d.n; i++) {
    const ok = p => { const v = c[p.col][i]; return v !== null && v !== undefined && (p.kind !== "log" || v > 0); };
    if (dims.every(ok)) rows.push(i);
  }
  return rows;
}
function drawParcoords(div) {
  const anchor = div.closest(".explore").dataset.study, d = study(anchor), c = d.columns;
  const rows = parcoordsRows(d);
  const dimensions = d.parcoords.map(p => {
    if (p.kind === "category") {
      const at = new Map(p.values.map((v, k) => [v, k]));
      return {label: p.label, values: rows.map(i => at.get(String(c[p.col][i]))),
              tickvals: p.values.map((_, k) => k), ticktext: p.values};
    }
    return {label: p.label, values: rows.map(i => p.kind === "log" ? Math.log10(c[p.col][i]) : c[p.col][i])};
  });
  const trace = {type: "parcoords", dimensions: dimensions, line: {color: rows.map(i => c.test_error[i]),
    colorscale: "Viridis", showscale: true, colorbar: {title: {text: "test error"}}}};
  const layout = {height: 460, margin: {l: 60, r: 60, t: 90, b: 30}, font: {size: 10}};
  trace.labelangle = -30;
  Plotly.newPlot(div, [trace], layout, CONFIG).then(() => {
    div.dataset.drawn = "1";
    div.dataset.lines = rows.length;
    div.on("plotly_restyle", () => brushed(anchor, div, rows));
  });
}
function inRanges(v, r) {
  const ranges = Array.isArray(r[0]) ? r : [r];
  return ranges.some(x => v >= x[0] && v <= x[1]);
}
function brushed(anchor, div, rows) {
  const dims = div.data[0].dimensions.filter(dm => dm.constraintrange && dm.constraintrange.length);
  if (!dims.length) { select(anchor, null); return; }
  select(anchor, rows.filter((i, k) => dims.every(dm => inRanges(dm.values[k], dm.constraintrange))), true);
}
function restyle(d, p) {
  const sel = d.selected ? p.rows.map((r, k) => d.selected.has(r) ? k : -1).filter(k => k >= 0) : null;
  Plotly.restyle(p.div, {selectedpoints: [sel]});
}
function select(anchor, rows, brushed) {
  const d = study(anchor);
  d.selected = rows && (rows.length || brushed) ? new Set(rows) : null;
  d.plots.forEach(p => restyle(d, p));
  document.querySelectorAll('.explore[data-study="' + anchor + '"] table.leaderboard tbody tr').forEach(tr =>
    tr.classList.toggle("sel", d.selected !== null && d.selected.has(+tr.dataset.row)));
  if (d.selected) showSelection(anchor);
}
function table(head, rows, cls) {
  const th = head ? "<thead><tr>" + head.map(h => "<th>" + h + "</th>").join("") + "</tr></thead>" : "";
  const td = r => r.map((x, k) => "<td" + (k === 0 && !head ? ' class="l"' : "") + ">" + x + "</td>").join("");
  return "<table" + (cls ? ' class="' + cls + '"' : "") + ">" + th +
    "<tbody>" + rows.map(r => "<tr>" + td(r) + "</tr>").join("") + "</tbody></table>";
}
function panel(html) {
  const aside = document.getElementById("detail");
  aside.querySelector(".content").innerHTML = html;
  aside.hidden = false;
  sortable(aside);
  aside.querySelectorAll("a.arch").forEach(a => a.addEventListener("click", ev => {
    ev.preventDefault(); openDetail(a.dataset.study, +a.dataset.row); }));
  return aside;
}
function showSelection(anchor) {
  const d = study(anchor), c = d.columns, rows = Array.from(d.selected);
  rows.sort((a, b) => (c.test_error[a] ?? 9) - (c.test_error[b] ?? 9));
  panel("<h3>" + rows.length + " selected <span class=muted>" + escapeHtml(d.study) + "</span></h3>" +
    table(["test error", "architecture", "arch_id"], rows.map(i => [fmt(c.test_error[i]), escapeHtml(c.spec_text[i]),
      '<a href="#" class="arch" data-study="' + anchor + '" data-row="' + i + '"><code class=id>' +
      escapeHtml(c.arch_id[i]) + "</code></a>"])));
}
function openDetail(anchor, i) {
  const d = study(anchor), c = d.columns, id = c.arch_id[i];
  const kv = cols => table(null, cols.filter(k => k in c).map(k => [escapeHtml(d.labels[k] || k),
                                                                      escapeHtml(fmt(c[k][i]))]), "kv");
  let html = "<h3><code class=id>" + escapeHtml(id) + "</code></h3><p>" + escapeHtml(c.spec_text[i]) +
    (c.variant[i] !== "base" ? " <span class=muted>(" + escapeHtml(c.variant[i]) + " sibling)</span>" : "") +
    " <span class=muted>" + escapeHtml(d.study) + "</span></p>";
  const runs = d.runs[c.unit[i]] || d.runs[id];  // the arch_id alone: a runs table without index
  html += "<h4>Runs by learning rate</h4>" + (runs ? table(["#", "lr", "best val error", "diverged", "selected"],
    runs.lr.map((lr, k) => [k + 1, fmt(lr), fmt(runs.val[k]), runs.div[k] === "1" ? "yes" : "no",
                            runs.sel === k ? "\u2713" : ""]), "runs") :
    (d.detail && d.detail.of > d.detail.max ? "<p class=missing>The page holds the runs and curves of the " +
     d.detail.max.toLocaleString() + " architectures of lowest test error of " + d.detail.of.toLocaleString() +
     "; this one's are in the study (<code>load_results</code>).</p>" :
     "<p class=missing>No runs table for this architecture.</p>"));
  html += '<h4>Training curve of the selected run</h4><div class="curve"></div>';
  html += "<h4>Metrics</h4>" + kv(d.metrics) + "<h4>Spec</h4>" + kv(d.spec);
  const aside = panel(html);
  aside.scrollTop = 0;
  const curve = d.curves[c.unit[i]] || d.curves[id], box = aside.querySelector(".curve");
  if (curve) {
    Plotly.newPlot(box, [
      {x: curve.epoch, y: curve.error, name: curve.monitored + " error", mode: "lines+markers", marker: {size: 4}},
      {x: curve.epoch, y: curve.loss, name: "training loss", yaxis: "y2", mode: "lines", line: {dash: "dot"}}],
      {height: 240, margin: {l: 45, r: 45, t: 10, b: 35}, font: {size: 10}, xaxis: {title: {text: "epoch"}},
       yaxis: {title: {text: "error"}}, yaxis2: {overlaying: "y", side: "right", type: "log", title: {text: "loss"},
                tickformat: ".2~g"},  // two significant digits: a loss within one decade has no round ticks
       legend: {orientation: "h", y: -0.3}}, CONFIG);
  } else {
    box.innerHTML = "<p class=missing>No training curve recorded for this architecture.</p>";
  }
}
document.addEventListener("DOMContentLoaded", () => {
  sortable(document);
  const aside = document.getElementById("detail");
  if (aside) aside.querySelector(".close").addEventListener("click", () => { aside.hidden = true; });
  if (typeof Plotly === "undefined") return;
  document.querySelectorAll("a.arch").forEach(a => a.addEventListener("click", ev => {
    ev.preventDefault(); openDetail(a.dataset.study || a.closest(".explore").dataset.study, +a.dataset.row); }));
  const plots = document.querySelectorAll(".iplot[data-plot]");
  const shown = p => p.getClientRects().length > 0;  // not inside a folded part
  const once = p => { if (!p.dataset.started && shown(p)) { p.dataset.started = "1"; seen.unobserve(p); draw(p); } };
  const seen = new IntersectionObserver(entries => entries.forEach(e => { if (e.isIntersecting) once(e.target); }),
                                        {rootMargin: "400px"});
  plots.forEach(p => seen.observe(p));
  // The plots in view first; then every other one, one at a time while the page is idle, so that a print, a PDF
  // or a full-page capture finds none blank (and a print started before that draws the rest at once).
  window.addEventListener("beforeprint", () => plots.forEach(once));  // after FOLDS opened every part
  document.querySelectorAll("details.part").forEach(d => d.addEventListener("toggle", () => {
    if (!d.open) return;
    d.querySelectorAll(".iplot[data-plot]").forEach(p => {
      if (p.dataset.drawn) Plotly.Plots.resize(p); else once(p);
    });
  }));
  const rest = Array.from(plots), next = () => { const p = rest.shift(); if (p) { once(p); setTimeout(next, 0); } };
  if (document.readyState === "complete") setTimeout(next, 0);
  else window.addEventListener("load", () => setTimeout(next, 0));
});
})();
"""
