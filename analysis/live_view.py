"""The live view of a study (``archstudy serve``): a light page that follows the study while it runs.

The full report (``analysis.report``) takes tens of seconds to minutes; the live page never builds it. The server
(standard library ``http.server``, in a thread) serves one page, built once, with Plotly.js inlined once (as the
report's interactive page, ``analysis.interactive.scripts_html``), and a small JSON endpoint the page polls:

* ``GET /`` the page; ``GET /report.html`` the study's full report where ``STUDY/report.html`` exists (the page
  links it then);
* ``GET /data.json?since=V`` the study's state of version ``V + 1`` or later (``snapshot``), or only
  ``{"version": V}`` while nothing changed.

Change detection is cheap: every ``poll_s`` the watcher lists the study's directories of finished, failed and
started units and its ``study.yaml`` and ``report.html`` (``listing``: one listing per directory, on object storage
one request each) and reloads the rows (``analysis.results.load_results``, without the runs table) only when that
listing changed; after a reload of r seconds it waits at least ``RELOAD_SHARE`` r before the next check (``pause``),
so a large study is not reread back to back. Each reload computes the correlation table without bootstrap intervals
(``n_boot = 0``: the coefficients and p-values are the report's, its intervals are not needed here) and the predictor
ranking, and hands them to ``analysis.interactive.study_data`` (the scatter plots' columns and panels) and
``leaderboard_html`` (the best ``LEADERBOARD`` architectures), with the parallel coordinates' axes
(``analysis.parallel_coordinates``: brushing one marks the brushed architectures in the scatter plots and the
leaderboard), the importance ranking of test error (``analysis.importance``, ``LIVE_REPLICATES`` replicates) and the
study's notes (``notes.jsonl``, watched). The page redraws its numbers, its table and its plots in place
(``Plotly.react``: a zoom and a brush survive a redraw), without reloading itself.

Nothing is ever written to the study: it is read the way ``archstudy report`` reads it, local or ``s3://``.

Progress: finished (trained, and pruned at launch), running (units with a checkpoint or a progress record and no result
yet: a killed driver's stay until the next run starts), failed, and remaining = planned - finished - failed - running,
where the plan is known (``Results.planned``). The ETA is the driver's own forecast, the one its command line
prints (``study.execution.costs.Forecast``), which its heartbeat records in ``driver.json`` (``eta_s`` at
``heartbeat_unix``, rewritten at least every 10 s) and the page counts down; without a running driver that has one,
where units are running and at least ``ETA_MIN_FINISHED`` have finished with distinct ``finished_at`` times, the
recent rate's: (remaining + running) x (t_last - t_first) / (k - 1) over the last k = min(``ETA_WINDOW``, finished)
finish times, the mean interval between finishes; the page says which. Each running unit's stage, epoch and live
runs come from its progress record (``study.execution.live``), read at every check (``live_part``).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.fs as pafs

from archstudy.sampling.unit_names import UNIT_NAME
from archstudy.study.experiment.config import CONFIG_NAME, REPORT_NAME
from archstudy.study.experiment.layout import CHECKPOINTS, DRIVER_STATE, FAILED, IN_FLIGHT, PROGRESS, STALE_S
from archstudy.study.experiment.schema import ARCHITECTURES
from archstudy.study.experiment.notes import NOTES_NAME

from .html import CSS, esc
from .importance import MIN_ROWS, available, importance
from .interactive import leaderboard_html, scripts_html, study_data
from .ranking import predictor_ranking
from .results import Results, load_results, study_filesystem
from .study_analysis import StudyAnalysis
from .stats import FEW, correlations
from .study_notes import read_notes

# The study's directories whose listing changes when a unit finishes (``architectures``, packs included), fails or
# starts (``study.experiment.layout``), and the files beside them the page shows. Of these, the directories of units
# in flight (``IN_FLIGHT``: a unit's checkpoint, and the progress record its worker rewrites every few seconds,
# ``study.execution.live``) are watched by name only.
WATCHED_DIRS = (ARCHITECTURES, FAILED, CHECKPOINTS, PROGRESS)
WATCHED_FILES = (CONFIG_NAME, REPORT_NAME, NOTES_NAME)
POLL_S = 3.0  # seconds between two listings of the study (the page asks the server as often)
# A request's Host header: a name or IPv4 address, or an IPv6 address in brackets, then an optional port (RFC 9110
# section 7.2, RFC 3986 section 3.2.2).
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]{2,45})\]|(?P<name>[A-Za-z0-9._-]{1,253}))(?::(?P<port>[0-9]{1,5}))?")
_SINCE = re.compile(r"-?[0-9]{1,18}")  # a version: a 64-bit integer, -1 for "none yet"


class BadRequest(ValueError):
    """A request the server does not parse: answered 400 with this line."""


def loopback(address: str) -> bool:
    """Whether ``address`` names this machine's loopback: ``localhost``, or an IPv4 address in 127.0.0.0/8 or the
    IPv6 ``::1`` (RFC 1122 section 3.2.1.3, RFC 4291 section 2.5.3)."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def host_name(header: str | None) -> str:
    """The name or address of a request's ``Host`` header (an IPv6 one without its brackets); a header that is not
    ``NAME[:PORT]`` or ``[IPV6][:PORT]`` raises ``BadRequest``."""
    m = _HOST.fullmatch(header or "")
    if m is None or (m["port"] is not None and int(m["port"]) > 65535):
        raise BadRequest(f"malformed Host header {(header or '')[:80]!r}")
    return m["v6"] or m["name"]


def since_version(query: str) -> int:
    """The ``since`` of ``/data.json``'s query (-1 where absent: the whole state); more than one, or one that is not
    an integer of at most 18 digits, raises ``BadRequest``."""
    try:
        given = urllib.parse.parse_qs(query, keep_blank_values=True, max_num_fields=8).get("since", ["-1"])
    except ValueError:
        raise BadRequest("malformed query") from None
    if len(given) != 1 or not _SINCE.fullmatch(given[0]):
        raise BadRequest(f"since must be one integer version, not {given[0][:40]!r}")
    return int(given[0])


def _error_line(e: BaseException) -> str:
    """An error in one line, as the page shows it."""
    return " ".join(str(e).split()) or type(e).__name__


LEADERBOARD = 25  # architectures in the page's leaderboard, lowest test error first
ETA_WINDOW = 20  # finish times the recent rate is measured over
ETA_MIN_FINISHED = 3
RELOAD_SHARE = 2.0  # after a reload of r seconds the watcher waits at least RELOAD_SHARE r (``pause``)
# Replicates of the page's importance ranking of test error (``analysis.importance``): a reload recomputes it, so
# fewer than the report's ``REPLICATES``; the page says how many.
LIVE_REPLICATES = 3


def listing(study_dir: str) -> tuple[tuple[str, int], ...]:
    """What changes when the study does, from its listing alone: (name, size) of every file of ``WATCHED_DIRS``
    and ``WATCHED_FILES`` (size -1 where absent); a checkpoint or progress record by its name only (each is
    rewritten as its unit trains). Hidden files (a write in flight) are left out. No file is opened."""
    fs, root, _ = study_filesystem(study_dir)
    out: list[tuple[str, int]] = []
    for info in fs.get_file_info([f"{root}/{name}" for name in WATCHED_FILES]):
        out.append((info.base_name, int(info.size) if info.type == pafs.FileType.File else -1))
    for sub in WATCHED_DIRS:
        for info in fs.get_file_info(pafs.FileSelector(f"{root}/{sub}", allow_not_found=True)):
            if info.base_name.startswith(".") or info.type != pafs.FileType.File:
                continue
            out.append((f"{sub}/{info.base_name}", 0 if sub in IN_FLIGHT else int(info.size or 0)))
    return tuple(sorted(out))


def recent_rate_eta(finished_at: pd.Series, left: int, running: int) -> dict[str, Any] | None:
    """The ETA at the recent rate (module docstring) of ``left`` units still to finish (those running included):
    ``{"seconds", "over"}`` (``over``: the finishes measured), None while it cannot be measured (nothing running,
    nothing left, too few distinct finish times)."""
    if left <= 0 or running <= 0:
        return None
    t = pd.to_datetime(finished_at, utc=True, errors="coerce").dropna().sort_values()
    t = t.iloc[-ETA_WINDOW:]
    if len(t) < ETA_MIN_FINISHED:
        return None
    span = (t.iloc[-1] - t.iloc[0]).total_seconds()
    if not np.isfinite(span) or span <= 0:
        return None
    return {"seconds": left * span / (len(t) - 1), "over": len(t)}


def _read_json(fs: pafs.FileSystem, path: str) -> dict[str, Any] | None:
    """A small JSON file's object; None where it is missing, being rewritten, or not an object."""
    try:
        with fs.open_input_stream(path) as f:
            out = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return out if isinstance(out, dict) else None


def unit_text(rec: dict[str, Any]) -> str:
    """A unit's progress record in the progress line's words (``study.execution.costs.Forecast.detail``):
    ``epoch 4/15, 8 of 16 runs live``, or its stage (``measuring``, ``finishing``)."""
    if rec.get("stage") == "training" and rec.get("epoch"):
        cap = rec.get("max_epochs")
        text = f"epoch {rec['epoch']}" + (f"/{cap}" if cap else "")
        if rec.get("live_runs") is not None and rec.get("total_runs"):
            text += f", {rec['live_runs']} of {rec['total_runs']} runs live"
        return text
    return str(rec.get("stage", "starting"))


def live_part(study_dir: str, listed: tuple[tuple[str, int], ...], now: float | None = None) -> dict[str, Any]:
    """What changes inside running units and the driver, read at every poll (their files are watched by name
    only): ``units``, each unit in flight with a progress record, ``{"unit", "label", "text"}`` (its draw index,
    and ``unit_text``: the stage, or the epoch and the runs live); and ``driver_eta``,
    the driver's own forecast, the ETA its command line prints (``driver.json``'s ``eta_s`` at ``heartbeat_unix``,
    counted down to ``now``), None without a running driver that has one (its heartbeat older than
    ``STALE_S``: gone)."""
    now = time.time() if now is None else now
    fs, root, _ = study_filesystem(study_dir)
    units = []
    for name, _ in listed:
        sub, _, base = name.partition("/")
        stem = base.rpartition(".")[0]
        m = UNIT_NAME.match(stem)
        if sub != PROGRESS or not m:
            continue
        rec = _read_json(fs, f"{root}/{name}")
        if rec is not None:
            units.append({"unit": stem, "label": f"#{int(m['index'])}", "text": unit_text(rec)})
    d = _read_json(fs, f"{root}/{DRIVER_STATE}") or {}
    eta = None
    beat = d.get("heartbeat_unix")
    if d.get("running") and isinstance(beat, (int, float)) and now - beat < STALE_S:
        if isinstance(d.get("eta_s"), (int, float)) and math.isfinite(d["eta_s"]):
            left = max(0.0, float(d["eta_s"]) - max(0.0, now - beat))
            eta = {"seconds": left, "eta_s": float(d["eta_s"]), "at_unix": float(beat)}
    return {"units": units, "driver_eta": eta}


def in_flight(listed: tuple[tuple[str, int], ...]) -> set[str]:
    """The arch_ids of the units with a checkpoint or a progress record in a ``listing`` (files named by their unit,
    ``sampling.unit_names``, and a suffix)."""
    out = set()
    for name, _ in listed:
        sub, _, base = name.partition("/")
        m = UNIT_NAME.match(base.rpartition(".")[0])
        if sub in IN_FLIGHT and m:
            out.add(m["arch_id"])
    return out


def progress(results: Results, flying: set[str]) -> dict[str, Any]:
    """Finished (of which trained and pruned at launch), running (``flying``: arch_ids with a checkpoint or a
    progress record, ``in_flight``, less those finished or failed), failed, planned, remaining and the ETA
    (``recent_rate_eta``) of a study as read."""
    done = set(results.architectures["arch_id"].astype(str)) | {str(f["arch_id"]) for f in results.failed}
    finished, failed, running = results.n_finished, results.n_failed, len(flying - done)
    planned = results.planned
    remaining = None if planned is None else max(planned - finished - failed - running, 0)
    arch = results.architectures
    stamps = arch["finished_at"] if "finished_at" in arch.columns else pd.Series(dtype="datetime64[ns, UTC]")
    return {
        "finished": finished,
        "trained": len(results.trained),
        "pruned": len(results.pruned),
        "running": running,
        "failed": failed,
        "planned": planned,
        "planned_note": results.planned_note,
        "remaining": remaining,
        "complete": results.complete,
        "eta": None if remaining is None else recent_rate_eta(stamps, remaining + running, running),
    }


def analysis_of(results: Results, name: str) -> StudyAnalysis:
    """The little of a study's analysis the live page draws: its trained architectures, their correlation table
    (no bootstrap) and the predictor ranking."""
    arch = results.trained
    corr = correlations(arch, n_boot=0) if len(arch) else pd.DataFrame()
    return StudyAnalysis(
        dataset=results.dataset,
        arch=arch,
        corr=corr,
        results=results,
        anchor="live",
        label=name,
        ranking=predictor_ranking(corr),
    )


def snapshot(
    study_dir: str, name: str | None = None, listed: tuple[tuple[str, int], ...] | None = None
) -> dict[str, Any]:
    """The page's data (everything but ``version``): ``study``, ``dataset``, ``progress``, ``leaderboard`` (the
    best ``LEADERBOARD`` architectures as ``interactive.leaderboard_html`` renders them, and ``shown``, how many),
    ``data`` (``interactive.study_data`` without runs and curves: the columns and the scatter panels),
    ``few`` (``stats.FEW``: below it the page cautions that tau is coarse), ``excluded`` and ``corrupt`` (counts of
    result files left out), ``notes`` (the study's notes) and ``importance`` (``live_importance``). ``listed``: the
    study's ``listing``, where the caller has it."""
    results = load_results(study_dir, runs=False)
    flying = in_flight(listing(study_dir) if listed is None else listed)
    s = analysis_of(results, name or results.study_dir)
    data = study_data(s)
    for key in ("runs", "curves"):
        data.pop(key, None)
    best = s.arch.sort_values("test_error", kind="stable").head(LEADERBOARD)
    return {
        "study": s.name,
        "dataset": results.dataset,
        "notes": [n.to_dict() for n in read_notes(study_dir)],
        "importance": live_importance(s.arch),
        "progress": progress(results, flying),
        "leaderboard": leaderboard_html(dataclasses.replace(s, arch=best)) if len(best) else "",
        "shown": len(best),
        "few": FEW,
        "data": data,
        "excluded": len(results.excluded),
        "corrupt": len(results.corrupt),
    }


def live_importance(arch: pd.DataFrame) -> dict[str, Any]:
    """The page's importance ranking of test error (``LIVE_REPLICATES`` replicates): ``rows`` (feature, kind, median,
    low, high), or ``missing``: why there is none."""
    why = available()
    found = importance(arch, replicates=LIVE_REPLICATES) if why is None and len(arch) else None
    if found is None:
        return {"missing": why or f"fewer than {MIN_ROWS} trained architectures with every feature", "rows": []}
    rows = [{k: _plain(v) for k, v in r.items()} for r in found.table.to_dict("records")]
    return {"missing": None, "rows": rows, "replicates": found.replicates, "used": found.rows}


def _plain(v: Any) -> Any:
    return float(v) if isinstance(v, (float, np.floating)) else v


def pause(poll_s: float, reload_s: float) -> float:
    """Seconds until the next check after one whose reload took ``reload_s`` (0: none): ``poll_s``, or
    ``RELOAD_SHARE`` reload_s where that is longer, so that reloading a large study takes at most 1 / (1 +
    ``RELOAD_SHARE``) of the watcher's time however often its units finish."""
    return max(poll_s, RELOAD_SHARE * reload_s)


def json_bytes(data: Any) -> bytes:
    """``data`` as compact JSON (NaN refused: ``study_data`` writes None for a missing number)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode("utf-8")


class Watcher:
    """A study's latest state: ``check`` lists the study (``listing``) and, when the listing changed, reloads it
    (``snapshot``) and raises ``version``. A reload that fails keeps the last good state and records the error's
    line (``error``), shown on the page; the next check tries again. The first read raises its error."""

    def __init__(self, study_dir: str, name: str | None = None):
        self.study_dir, self.name = study_dir, name
        self.version = 0
        self.seen: tuple[tuple[str, int], ...] | None = None
        self.state: dict[str, Any] = {}
        self.body = json_bytes({"version": 0})
        self.error: str | None = None
        self.reloads = 0
        self.live: dict[str, Any] = {"units": [], "driver_eta": None}  # ``live_part``, read at every check
        self.lock = threading.Lock()

    def check(self) -> bool:
        """List the study; reload when the listing differs from the last one, and take the running units' progress
        and the driver's forecast (``live_part``) when they changed. True when the state changed."""
        seen = listing(self.study_dir)
        live = live_part(self.study_dir, seen)
        if seen == self.seen:
            return self._take_live(live)
        try:
            state = snapshot(self.study_dir, self.name, seen)
            error = None
        except Exception as e:
            if not self.state:  # the first read: no page to show it on
                raise
            state, error = self.state, _error_line(e)
        with self.lock:
            if error is not None:  # the listing is not taken as seen: the next check reads again
                changed = error != self.error
                self.error = error
                if changed:
                    self.version += 1
                    self.body = json_bytes({"version": self.version, "error": error, "report": self.has_report} | state)
                return changed
            self.seen = seen
            self.version += 1
            self.reloads += 1
            self.error = None
            self.state = state
            self.live = live
            self.body = self._body()
        return True

    def _body(self) -> bytes:
        return json_bytes(
            {"version": self.version, "error": None, "report": self.has_report, **self.state} | {"live": self.live}
        )

    def _take_live(self, live: dict[str, Any]) -> bool:
        """The running units' progress and the driver's forecast when they changed (a countdown of the same forecast
        is no change: the page counts down itself)."""

        def key(part: dict[str, Any]) -> Any:
            eta = part["driver_eta"]
            return part["units"], None if eta is None else (eta["eta_s"], eta["at_unix"])

        with self.lock:
            if not self.state or key(live) == key(self.live):
                return False
            self.live = live
            self.version += 1
            self.body = self._body()
        return True

    @property
    def has_report(self) -> bool:
        return any(name == REPORT_NAME and size >= 0 for name, size in self.seen or ())

    def since(self, version: int) -> bytes:
        """The state as JSON, or only the version while it is ``version``."""
        with self.lock:
            return self.body if version != self.version else json_bytes({"version": self.version, "error": self.error})


def page_html(title: str, poll_s: float = POLL_S) -> str:
    """The live page: its frame, Plotly.js and the report's script (``interactive.scripts_html``) inlined once, and
    ours (``SCRIPT``); everything it shows comes from ``/data.json``."""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} (live)</title>'
        f"<style>{CSS}{STYLE}</style></head><body>"
        f'<main class="live" data-poll-ms="{int(poll_s * 1000)}">'
        f'<h1>{esc(title)} <span class="muted">live</span></h1>'
        '<p id="status" class="muted">loading...</p>'
        '<p id="report-link" hidden><a href="report.html">the full report</a> (as last written by '
        "<code>archstudy report</code>)</p>"
        '<div id="notes"></div>'
        '<h2>Progress</h2><div id="progress"></div>'
        '<h2>Leaderboard</h2><div id="leaderboard"></div>'
        "<h2>Parallel coordinates: the design axes, the measures and test error</h2>"
        '<p class="muted">One line per trained architecture, coloured by test error; drag along an axis to brush a '
        "range: the brushed architectures are marked in the plots below and in the leaderboard.</p>"
        '<div id="parcoords" class="iplot"></div>'
        "<h2>Each predictor against test error</h2>"
        '<p class="muted">Kendall τ-b with test error in each title: an estimate, not a finding (this page states '
        "none: whether a predictor predicts test error, the report says, with every test of the study counted "
        "together); hover a point for its architecture, drag to zoom (double-click: back).</p>"
        '<p id="caution" class="muted" hidden></p><div id="scatter" class="grid"></div>'
        "<h2>Importance of the design axes and measures for test error (fANOVA)</h2>"
        '<div id="importance"></div></main>'
        f"{scripts_html(True)}"
        f"<script>{SCRIPT}</script></body></html>"
    )


STYLE = """
main.live { max-width: 1240px; margin: 0 auto; padding: 0 12px; }
#progress .bar { height: 10px; background: #eee; border-radius: 4px; overflow: hidden; display: flex; }
#progress .bar span { display: block; height: 100%; }
#progress .bar .done { background: #2a6fb0; } #progress .bar .run { background: #9cc3e6; }
#progress .bar .fail { background: #d62728; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 8px; }
"""

# The page's own script: poll /data.json, redraw the numbers, the table and the plots in place.
SCRIPT = r"""
(function () {
"use strict";
const main = document.querySelector("main.live"), POLL = +main.dataset.pollMs;
const esc = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const fmt = v => v === null || v === undefined ? "\u2013" : typeof v !== "number" ? String(v) :
  Number.isInteger(v) ? v.toLocaleString("en") : Math.abs(v) < 1e-3 ? v.toExponential(3) :
  Number(v.toPrecision(4)).toString();
function duration(s) {
  s = Math.round(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  const two = n => String(n).padStart(2, "0");
  return d ? d + "d" + h + "h" : h ? h + "h" + two(m) + "m" : m ? m + "m" + two(s % 60) + "s" : s + "s";
}
let version = 0;
function progress(p, live) {
  const planned = p.planned, of = planned === null ? "" : " of " + fmt(planned);
  const part = (n, cls) => planned ?
    '<span class="' + cls + '" style="width:' + (100 * n / planned) + '%"></span>' : "";
  const driver = live && live.driver_eta;  // the command line's own forecast, counted down here (tick below)
  const eta = driver ? "ETA " + duration(driver.seconds) + " (the driver's forecast, as its command line prints it)" :
    p.eta ? "ETA " + duration(p.eta.seconds) + " at the rate of the last " + p.eta.over +
    " finishes" : p.complete ? "complete" : p.running ? "ETA: not yet measurable" : "nothing running";
  etaAt = driver ? {left: driver.seconds, since: Date.now()} : null;
  const units = live && live.units.length ? '<ul id="units">' + live.units.map(u => "<li>" + esc(u.label) + ": " +
    esc(u.text) + "</li>").join("") + "</ul>" : "";
  return '<p><b id="n-finished">' + fmt(p.finished) + "</b>" + of + " finished (" + fmt(p.trained) + " trained, " +
    fmt(p.pruned) + " pruned at launch), <b id=\"n-running\">" + fmt(p.running) + "</b> running, " +
    '<b id="n-failed">' + fmt(p.failed) + "</b> failed, " + '<b id="n-remaining">' +
    (p.remaining === null ? "unknown" : fmt(p.remaining)) + "</b> remaining; " +
    (driver ? '<span id="eta">' + esc(eta.split(" (")[0]) + "</span> (the driver's forecast, as its command line " +
     "prints it)" : esc(eta)) + "</p>" +
    (planned ? '<div class="bar">' + part(p.finished, "done") + part(p.running, "run") + part(p.failed, "fail") +
    "</div>" : '<p class="muted">planned count unknown: ' + esc(p.planned_note) + "</p>") + units;
}
let etaAt = null;
setInterval(() => {
  const el = document.getElementById("eta");
  if (el && etaAt) el.textContent = "ETA " + duration(Math.max(0, etaAt.left - (Date.now() - etaAt.since) / 1000));
}, 1000);
function plot(d, panel, div) {
  const c = d.columns, col = panel.col, rows = [];
  c[col].forEach((v, i) => {
    if (v !== null && c.test_error[i] !== null && !(panel.log && v <= 0)) rows.push(i); });
  const text = rows.map(i => "<b>" + esc(c.arch_id[i]) + "</b><br>" + esc(c.spec_text[i]) + "<br>test error " +
    fmt(c.test_error[i]) + "<br>" + esc(panel.label) + ": " + fmt(c[col][i]));
  const trace = {type: "scatter", mode: "markers", x: rows.map(i => c[col][i]), y: rows.map(i => c.test_error[i]),
    text: text, hovertemplate: "%{text}<extra></extra>", marker: {size: 6, color: "#2a6fb0", opacity: 0.75}};
  const layout = {title: {text: esc(panel.label + "  (\u03c4 " + fmt(panel.tau) + ")"), font: {size: 12}},
    height: 270, margin: {l: 50, r: 20, t: 32, b: 40}, uirevision: col, hovermode: "closest", showlegend: false,
    font: {size: 10}, hoverlabel: {align: "left"},
    xaxis: {title: {text: panel.label, font: {size: 11}}, type: panel.log ? "log" : "linear", automargin: true},
    yaxis: {title: {text: "test error", font: {size: 11}}}};
  div.dataset.points = rows.length;
  div._rows = rows;
  return Plotly.react(div, [trace], layout, {displaylogo: false, responsive: true}).then(() => mark(div));
}
// The brushed architectures (their arch_ids; null: no brush): marked in every scatter plot and in the leaderboard.
let brushedIds = null, current = null;
function mark(div) {
  const c = current.columns, rows = div._rows || [];
  const sel = brushedIds ? rows.map((i, k) => brushedIds.has(c.arch_id[i]) ? k : -1).filter(k => k >= 0) : null;
  return Plotly.restyle(div, {selectedpoints: [sel], "selected.marker.color": "#d62728",
                              "unselected.marker.opacity": 0.2});
}
function markAll() {
  document.querySelectorAll("#scatter .iplot").forEach(mark);
  document.querySelectorAll("#leaderboard table.leaderboard tbody tr").forEach(tr => {
    const id = tr.querySelector("code.id");
    tr.classList.toggle("sel", brushedIds !== null && id !== null && brushedIds.has(id.textContent));
  });
}
function parcoords(d) {
  const c = d.columns, dims = d.parcoords, box = document.getElementById("parcoords"), rows = [];
  for (let i = 0; i < c.arch_id.length; i++) {
    const ok = p => { const v = c[p.col][i]; return v !== null && v !== undefined && (p.kind !== "log" || v > 0); };
    if (dims.every(ok)) rows.push(i);
  }
  const dimensions = dims.map(p => {
    if (p.kind === "category") {
      const at = new Map(p.values.map((v, k) => [v, k]));
      return {label: p.label, values: rows.map(i => at.get(String(c[p.col][i]))),
              tickvals: p.values.map((_, k) => k), ticktext: p.values};
    }
    return {label: p.label, values: rows.map(i => p.kind === "log" ? Math.log10(c[p.col][i]) : c[p.col][i])};
  });
  const old = box.data && box.data[0] ? box.data[0].dimensions : [];
  dimensions.forEach(dm => { const o = old.find(x => x.label === dm.label);
                             if (o && o.constraintrange) dm.constraintrange = o.constraintrange; });
  const trace = {type: "parcoords", dimensions: dimensions, labelangle: -30, line: {colorscale: "Viridis",
    color: rows.map(i => c.test_error[i]), showscale: true, colorbar: {title: {text: "test error"}}}};
  box.dataset.lines = rows.length;
  return Plotly.react(box, [trace], {height: 460, margin: {l: 60, r: 60, t: 90, b: 30}, font: {size: 10}},
                      {displaylogo: false, responsive: true}).then(() => {
    if (!box.dataset.listening) {
      box.dataset.listening = "1";
      box.on("plotly_restyle", () => brushed(box));
    }
    box._rows = rows;
    brushed(box);
  });
}
function brushed(box) {
  const c = current.columns;
  const dims = box.data[0].dimensions.filter(dm => dm.constraintrange && dm.constraintrange.length);
  const inside = (v, r) => (Array.isArray(r[0]) ? r : [r]).some(x => v >= x[0] && v <= x[1]);
  brushedIds = dims.length ? new Set(box._rows.filter((i, k) => dims.every(dm => inside(dm.values[k],
    dm.constraintrange))).map(i => c.arch_id[i])) : null;
  box.dataset.brushed = brushedIds ? brushedIds.size : "";
  markAll();
}
function importance(imp) {
  const box = document.getElementById("importance");
  if (imp.missing) { box.innerHTML = '<p class="missing">Not computed: ' + esc(imp.missing) + "</p>"; return; }
  box.innerHTML = '<p class="muted">fANOVA through Optuna over ' + fmt(imp.used) + " trained architectures, " +
    imp.replicates + " bootstrap replicates (the report computes more): the share of the variance of test error " +
    "each feature explains alone. A description: no significance is claimed.</p><table><thead><tr><th>feature" +
    "</th><th>kind</th><th>share (median)</th><th>range</th></tr></thead><tbody>" + imp.rows.map(r =>
    '<tr><td class="l">' + esc(r.feature) + "</td><td>" + esc(r.kind) + "</td><td>" + fmt(r.median) + "</td><td>" +
    fmt(r.low) + " \u2013 " + fmt(r.high) + "</td></tr>").join("") + "</tbody></table>";
}
function notes(list) {
  document.getElementById("notes").innerHTML = list.length ? '<div class="notes"><b>Notes</b> ' +
    "(<code>archstudy note</code>)<ul>" + list.map(n => '<li><span class="muted">' + esc(n.at) + "</span> " +
    esc(n.text) + n.tags.map(t => ' <span class="tag">' + esc(t) + "</span>").join("") + "</li>").join("") +
    "</ul></div>" : "";
}
function render(s) {
  current = s.data;
  notes(s.notes);
  importance(s.importance);
  document.getElementById("progress").innerHTML = progress(s.progress, s.live);
  const n = s.progress.trained;
  document.getElementById("leaderboard").innerHTML = s.shown ? s.leaderboard +
    (n > s.shown ? '<p class="muted">the best ' + s.shown + " of " + fmt(n) + " trained</p>" : "") :
    '<p class="missing">No trained architecture yet.</p>';
  document.getElementById("report-link").hidden = !s.report;
  const caution = document.getElementById("caution");
  caution.hidden = !(n >= 2 && n < s.few);
  caution.textContent = caution.hidden ? "" : "caution: only " + n + " trained architectures (fewer than " + s.few +
    "): tau moves in steps of " + fmt(4 / (n * (n - 1))) + ", so a tau of \u00b11 can be chance.";
  const box = document.getElementById("scatter"), want = new Set();
  s.data.scatter.forEach(panel => {
    const id = "scatter-" + panel.col;
    want.add(id);
    let div = document.getElementById(id);
    if (!div) { div = document.createElement("div"); div.id = id; div.className = "iplot"; box.appendChild(div); }
    plot(s.data, panel, div);
  });
  Array.from(box.children).forEach(div => { if (!want.has(div.id)) { Plotly.purge(div); div.remove(); } });
  if (!s.data.scatter.length) box.innerHTML = '<p class="missing">No predictor has three finite values yet.</p>';
  else box.querySelectorAll("p.missing").forEach(p => p.remove());
  if (s.data.parcoords.length > 1 && s.data.columns.arch_id.length) parcoords(s.data); else markAll();
}
function say(text) { document.getElementById("status").textContent = text; }
async function poll() {
  try {
    const r = await fetch("data.json?since=" + version, {cache: "no-store"});
    const s = await r.json();
    if (s.version !== version) {
      version = s.version;
      if (s.study) render(s);
      main.dataset.version = version;
    }
    say("updated " + new Date().toLocaleTimeString() + (s.error ? "; the last read failed: " + s.error : "") +
      "; checks every " + POLL / 1000 + " s");
  } catch (e) {
    say("the server does not answer (stopped?); trying again every " + POLL / 1000 + " s");
  }
  setTimeout(poll, POLL);
}
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("leaderboard").addEventListener("click", ev => {  // its ids open no panel here
    if (ev.target.closest("a.arch")) ev.preventDefault(); });
  poll();
});
})();
"""


class LiveServer:
    """The live view of ``study_dir`` at http://``host``:``port``/ (``port`` 0: any free one; ``port`` says which
    after ``start``): an HTTP server thread, and with ``watch`` a thread that checks the study every ``poll_s``
    (else the caller calls ``watcher.check``). Read only; ``stop`` ends both."""

    def __init__(
        self, study_dir: str, host: str = "127.0.0.1", port: int = 0, *, poll_s: float = POLL_S, name: str = ""
    ):
        self.study_dir, self.poll_s = study_dir, poll_s
        self.watcher = Watcher(study_dir, name or None)
        self.page = page_html(name or study_dir, poll_s).encode("utf-8")
        self.httpd = _Server((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.host, self.port = str(self.httpd.server_address[0]), int(self.httpd.server_address[1])
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` may be answered: on any loopback address (IPv4 or IPv6) only a loopback name
        (a web page elsewhere whose name is made to resolve to a loopback address, DNS rebinding, would otherwise
        read the study through the reader's browser); on another address given with ``--host``, any. A malformed
        header raises ``BadRequest``."""
        name = host_name(header)
        return not loopback(self.host) or loopback(name)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self, watch: bool = True, check: bool = True) -> LiveServer:
        """Read the study (its error raised; ``check=False``: the caller has), then serve, and with ``watch`` follow
        it."""
        if check:
            self.watcher.check()
        threads = [threading.Thread(target=self.httpd.serve_forever, name="live-http", daemon=True)]
        if watch:
            threads.append(threading.Thread(target=self.watch, name="live-watch", daemon=True))
        for t in threads:
            t.start()
            self._threads.append(t)
        return self

    def watch(self) -> None:
        """Check the study every ``poll_s`` until ``stop``, or after a reload that took r seconds, after
        ``pause(r)``; an error of a listing (storage briefly away) is recorded on the page and the next check tries
        again."""
        wait = self.poll_s
        while not self._stop.wait(wait):
            t0 = time.monotonic()
            try:
                reloaded = self.watcher.check()
            except Exception as e:  # noqa: BLE001 - shown on the page, as a failed reload is
                reloaded = False
                with self.watcher.lock:
                    self.watcher.error = _error_line(e)
            wait = pause(self.poll_s, time.monotonic() - t0 if reloaded else 0.0)

    def stop(self) -> None:
        self._stop.set()
        if self._threads:  # ``shutdown`` waits for a ``serve_forever`` that has started
            self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def report_bytes(self) -> bytes | None:
        """``STUDY/report.html`` as it is, None where there is none."""
        fs, root, _ = study_filesystem(self.study_dir)
        try:
            if fs.get_file_info(f"{root}/{REPORT_NAME}").type != pafs.FileType.File:
                return None  # none, or a FIFO (its open would wait for a writer): not served
            with fs.open_input_stream(f"{root}/{REPORT_NAME}") as f:
                return bytes(f.read())
        except (FileNotFoundError, OSError):
            return None


class _Server(ThreadingHTTPServer):
    """The standard threading HTTP server, on IPv6 for an IPv6 address (``--host ::1``), whose errors in a request
    end that request without a traceback on the terminal."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, TimeoutError)):  # a client that left is not worth a line
            print(f"archstudy serve: a request failed: {_error_line(error or RuntimeError())}", file=sys.stderr)


def answer(server: LiveServer, path: str, hosts: list[str]) -> tuple[int, bytes, str]:
    """(status, body, content type) of ``GET path`` with the request's ``Host`` headers: 400 for a malformed
    request (not one Host header, a malformed one, a malformed query), 403 for a Host not this server's, 404 for
    another path."""
    try:
        if len(hosts) != 1:
            raise BadRequest(f"{len(hosts)} Host headers, not one")
        url = urllib.parse.urlsplit(path)
        if not server.host_allowed(hosts[0]):
            return 403, b"forbidden: this server answers to its own address only", "text/plain"
        if url.path in ("/", "/index.html"):
            return 200, server.page, "text/html; charset=utf-8"
        if url.path == "/data.json":
            return 200, server.watcher.since(since_version(url.query)), "application/json"
        if url.path == "/report.html" and (body := server.report_bytes()) is not None:
            return 200, body, "text/html; charset=utf-8"
        return 404, b"not found", "text/plain"
    except ValueError as e:  # BadRequest, or urlsplit's own (a '[' in the path's host part)
        return 400, f"bad request: {e}".encode(errors="replace"), "text/plain; charset=utf-8"


def _handler(server: LiveServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._send(*answer(server, self.path, self.headers.get_all("Host") or []))

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the browser left
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            pass  # one line per request would drown the terminal

    return Handler
