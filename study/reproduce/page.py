"""A reproduction's page: one self-contained HTML file (the figure as an inline PNG beside the table of the
paper's numbers and ours; CSS inline, no scripts, no network), made with the pieces every page shares
(``analysis.html``'s style and tables, ``analysis.plotting``'s PNG encoding of matplotlib Figures)."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from archstudy.analysis.html import CSS, emphasised, esc, plain, table
from archstudy.analysis.plotting import render as render_figure

from ..experiment.config import package_version

from .result import Result, interval_text, number, verdict_counts, write_text

PAGE_CSS = (
    CSS
    + """
.side { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
tr.differs td:last-child { color: #b42318; font-weight: bold; } tr.agrees td:last-child { color: #1a7f37; }
tr.cannot-tell td:last-child { color: #8a6d00; }
"""
)


def rows_html(result: Result) -> str:
    """The rows (claim, quantity, paper, here, its interval and replicates with the test that made it,
    tolerance, verdict), a "cannot tell" verdict with its reason."""
    rows = [
        [
            esc(r.checks),
            esc(r.quantity),
            number(r.paper),
            number(r.measured),
            esc(interval_text(r) + ("" if r.evidence.exact else f"; {r.evidence.test}")),
            esc(r.tolerance),
            esc(r.verdict if r.why_cannot_tell is None else f"{r.verdict}: {r.why_cannot_tell}"),
        ]
        for r in result.rows
    ]
    return table(
        ["claim", "quantity", "paper", "here", "interval, replicates", "tolerance", "verdict"],
        rows,
        left=(0, 1, 4, 5, 6),
        row_classes=[r.verdict.replace(" ", "-") for r in result.rows],
    )


def render(result: Result, figures) -> str:
    extra = result.extra
    n, ok = len(result.rows), result.passed
    box = "done" if ok == n else "partial"
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>archstudy reproduce {esc(result.name)}: {esc(plain(result.paper))}</title>",
        f"<style>{PAGE_CSS}</style></head><body>",
        f"<h1>{esc(result.name)}: {emphasised(result.paper)}, {esc(extra.get('source', ''))}</h1>",
        f'<p class="muted">Scale {esc(result.scale)}, seed {esc(extra.get("seed", ""))}, device '
        f"{esc(extra.get('device', ''))}, {result.seconds:.1f} s. Drawn "
        f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by archstudy {esc(package_version())} on "
        f"{esc(platform.node())}.</p>",
        f'<div class="box {box}"><b>{esc(verdict_counts(result))}.</b> A row agrees when the interval its '
        "replicates give lies within the paper's tolerance, differs when it excludes it (Holm over this page's "
        "rows), and cannot tell otherwise, on fewer than 3 replicates, or when this run cannot test it (e.g. no net "
        "trained). A row that differs is a finding: its tolerance comes from the paper's precision or spread and "
        "is never widened to pass.</div>",
    ]
    if extra.get("data"):
        head.append(f"<p><b>Data:</b> {esc(extra['data'])}</p>")
    figs = "".join(figure_html(caption, fig) for caption, fig in figures)
    body = [f'<div class="side"><div>{figs}</div><div>{rows_html(result)}</div></div>']
    if extra.get("note"):
        body.append("<h2>Notes</h2>" + "".join(f"<p>{esc(p)}</p>" for p in str(extra["note"]).split("\n\n")))
    shown = {k: v for k, v in extra.items() if k not in ("note", "data")}
    body.append(
        "<details><summary>settings and everything else in the JSON</summary>"
        f"<pre>{esc(json.dumps(shown, indent=1, default=str))}</pre></details>"
    )
    return "\n".join(head + body + ["</body></html>"])


def figure_html(caption: str, fig) -> str:
    """A figure as the report shows one (``analysis.plotting.render``): a PNG of twice its pixels, shown at its size
    in inches, so that its type is as large on the page as in the figure (at least ``plotting.MIN_PT``)."""
    img = render_figure(fig, "png")
    return (
        f'<figure><img alt="{esc(caption)}" width="{img.width}" height="{img.height}" '
        f'src="data:image/png;base64,{img.base64}"><figcaption>{esc(caption)}</figcaption></figure>'
    )


def median_and_range(ax, x, samples, **style) -> None:
    """One point per x: the median of its samples, with a bar over their range (the reproductions' figures)."""
    med = np.array([np.median(v) for v in samples])
    lo, hi = np.array([min(v) for v in samples]), np.array([max(v) for v in samples])
    ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o", ms=4, **style)


def write_page(result: Result, figures, path: Path) -> Path:
    """``path`` (NAME.html), written whole."""
    write_text(path, render(result, figures))
    return path
