"""``archstudy reproduce all``: every offered reproduction in turn, one summary table (reproduction, rows agreeing /
total, time here), ``OUT/summary.json`` and an index page ``OUT/index.html`` linking each reproduction's page; its
estimated time is printed before any work, the sum of the reproductions' declared costs at the scale
(``Reproduction.cost``, read by ``cost_seconds``).

The not offered experiments of the five papers (``catalogue.NOT_OFFERED``) close the index page and the JSON, so a
reader sees the whole map of the papers in one place.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, TextIO

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Choice, Integer, check

from .catalogue import NOT_OFFERED
from .reproduction import SCALES, WHERE, Reproduction, check_device, check_out, run_reproduction
from .result import Result, write_text

UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
_COST = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|min|h)\b")


def cost_seconds(text: str) -> float | None:
    """The seconds a declared cost states ("3 min", "40 s", "2 h (estimated)" -> 180, 40, 7200), or None when it
    states no time (e.g. "hours (estimated): a GPU job")."""
    m = _COST.match(text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def estimated_seconds(reproductions: Mapping[str, Reproduction], scale: str) -> tuple[float, list[str]]:
    """The sum of the declared costs at ``scale`` and the names whose cost states no time."""
    total, unknown = 0.0, []
    for name, r in reproductions.items():
        seconds = cost_seconds(r.cost[scale])
        if seconds is None:
            unknown.append(name)
        else:
            total += seconds
    return total, unknown


def duration(seconds: float) -> str:
    """"42 s", "3.5 min", "1.2 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Entry:
    """One reproduction's line of the summary."""

    name: str
    result: Result

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {"name": self.name, "paper": r.paper, "source": r.extra.get("source", ""), "agreeing": r.passed,
                "rows": len(r.rows), "seconds": round(r.seconds, 3), "json": f"{self.name}.json",
                "html": f"{self.name}.html", "differing": [row.quantity for row in r.rows if not row.ok]}


def roots_for(reproductions: Mapping[str, Reproduction], root) -> dict[str, Path | None]:
    """``--root`` for ``all``: each reproduction that reads an image set gets the directory when its files are
    there, the others run on their built-in data (and say so in their JSON); a root holding none is refused."""
    if root is None:
        return {name: None for name in reproductions}
    from ..datasets.images import IMAGE_SETS

    root = Path(root).expanduser()
    found = {}
    for name, r in reproductions.items():
        found[name] = None
        if r.reads_root is not None:
            try:
                IMAGE_SETS[r.reads_root].locate(root)
                found[name] = root
            except UserError:
                pass
    if not any(found.values()):
        sets = sorted({r.reads_root for r in reproductions.values() if r.reads_root})
        raise SpecError(WHERE, "root", str(root), f"holds none of the data sets read ({', '.join(sets)})")
    return found


def run_all(reproductions: Mapping[str, Reproduction], out, *, scale: str = "quick", seed: int = 0,
            device: Any = "cpu", root=None, threads: int = 1,
            progress: TextIO | None = sys.stderr, echo: TextIO | None = sys.stdout) -> tuple[list[Entry], Path, Path]:
    """Run every reproduction at ``scale`` into ``out`` (each writes NAME.json and NAME.html), then write
    ``summary.json`` and ``index.html``; returns the entries and both paths. ``echo`` gets the up-front estimate,
    each reproduction's table as it finishes and the summary table."""
    from .result import format_table

    scale = check(WHERE, "scale", Choice(SCALES), scale)  # every argument checked before any work
    check(WHERE, "seed", Integer(0), seed)
    check(WHERE, "threads", Integer(1), threads)
    check_device(device)
    roots = roots_for(reproductions, root)
    out = check_out(out)
    estimate, unknown = estimated_seconds(reproductions, scale)
    say = (lambda text: print(text, file=echo, flush=True)) if echo is not None else (lambda text: None)
    say(f"reproduce all ({scale}): {len(reproductions)} reproductions, about {duration(estimate)} on the 2-core "
        "machine they were built on (the sum of their declared costs)"
        + (f"; no time declared for {', '.join(unknown)}" if unknown else ""))
    entries, t0 = [], time.perf_counter()
    for i, (name, r) in enumerate(reproductions.items(), start=1):
        say(f"[{i}/{len(reproductions)}] {name} ({r.cost[scale]})")
        result, _, _ = run_reproduction(r, out, scale=scale, seed=seed, device=device, root=roots[name],
                                        threads=threads, progress=progress)
        say(format_table(result))
        entries.append(Entry(name, result))
    seconds = time.perf_counter() - t0
    summary = {"scale": scale, "seed": seed, "device": str(device), "seconds": round(seconds, 3),
               "estimated_seconds": estimate,
               "agreeing": sum(e.result.passed for e in entries), "rows": sum(len(e.result.rows) for e in entries),
               "reproductions": [e.to_dict() for e in entries],
               "not_offered": [n.to_dict() for n in NOT_OFFERED]}
    import json

    json_path = out / "summary.json"
    write_text(json_path, json.dumps(summary, indent=1, allow_nan=False) + "\n")
    html_path = out / "index.html"
    write_text(html_path, index_page(entries, summary))
    say(summary_table(entries, seconds))
    return entries, json_path, html_path


def summary_table(entries: list[Entry], seconds: float) -> str:
    """Reproduction, rows agreeing / total, time here; then the total."""
    header = ("reproduction", "rows agreeing", "time here")
    lines = [(e.name, f"{e.result.passed} / {len(e.result.rows)}", duration(e.result.seconds)) for e in entries]
    agreeing, rows = sum(e.result.passed for e in entries), sum(len(e.result.rows) for e in entries)
    lines.append(("all", f"{agreeing} / {rows}", duration(seconds)))
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(3)]
    return "\n".join(f"{a.ljust(widths[0])}  {b.rjust(widths[1])}  {c.rjust(widths[2])}"
                     for a, b, c in [header, *lines])


def index_page(entries: list[Entry], summary: dict) -> str:
    """The index: one line per reproduction linking its page, the differing rows named, then the not offered."""
    from archstudy.analysis.html import esc, table

    from .page import PAGE_CSS

    rows = [[f'<a href="{esc(e.name)}.html">{esc(e.name)}</a>', esc(e.result.paper),
             esc(e.result.extra.get("source", "")), f"{e.result.passed} / {len(e.result.rows)}",
             duration(e.result.seconds),
             esc(", ".join(r.quantity for r in e.result.rows if not r.ok)) or "–"] for e in entries]
    missing = [[esc(n.paper), esc(n.source), esc(n.what), esc(n.reason)] for n in NOT_OFFERED]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>archstudy reproduce all</title>", f"<style>{PAGE_CSS}</style></head><body>",
        f"<h1>The papers' experiments, reproduced ({esc(summary['scale'])} scale)</h1>",
        f"<p><b>{summary['agreeing']} of {summary['rows']} rows agree with the papers</b>, "
        f"{duration(summary['seconds'])} here (estimated {duration(summary['estimated_seconds'])}), seed "
        f"{summary['seed']}, device {esc(summary['device'])}. A row that differs is a finding: its tolerance comes "
        "from the paper's precision or spread.</p>",
        table(["reproduction", "paper", "source", "rows agreeing", "time here", "differing rows"], rows, left=3),
        "<h2>Not offered</h2><p>The papers' other experiments, each with why it is not run here.</p>",
        table(["paper", "source", "experiment", "why not here"], missing, left=4),
        "</body></html>"])
