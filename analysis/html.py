"""The HTML pieces every page of archstudy shares (the study report, each reproduction's page, their index): the
style sheet, number formats, escaping and tables. Pages are self-contained: CSS inline, scripts inline (the
report's, ``analysis.interactive``), no network."""

from __future__ import annotations

import html
import math
import re
from typing import Any, Iterable

import numpy as np
import pandas as pd

CSS = """
* { box-sizing: border-box; }
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1280px;
       padding: 16px 24px; color: #222; line-height: 1.45; overflow-wrap: break-word; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ccc; margin-top: 2em; }
h3 { margin-top: 1.6em; } h4 { margin: 0.5em 0 0.3em; } .muted { color: #666; font-size: 0.9em; }
.tag { background: #e8eef6; border-radius: 3px; padding: 0 4px; font-size: 0.85em; }
table.leaderboard tr.sel td { background: #fde2e2; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1em; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; overflow-wrap: normal; } td.l, th.l { text-align: left; } td.l { overflow-wrap: anywhere; }
table.kv td:first-child { white-space: nowrap; } table.words td { overflow-wrap: normal; }
tr.baseline td { background: #f7f7f7; color: #555; }
.box { padding: 8px 12px; border-radius: 4px; margin: 0.6em 0; }
.partial { background: #fff4e0; border: 1px solid #f0b060; } .done { background: #eaf6ea; border: 1px solid #8c8; }
.error { background: #fde8e8; border: 1px solid #d88; }
figure { margin: 10px 0 22px; max-width: 100%; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.88em; color: #444; max-width: 75em; margin-top: 4px; }
p.missing, span.missing { color: #555; font-style: italic; }
.ci { font-size: 0.85em; color: #666; }
pre { background: #f7f7f7; padding: 8px; font-size: 0.8em; white-space: pre-wrap; overflow-wrap: anywhere; }
code { overflow-wrap: anywhere; font-size: 0.95em; }
details > summary { cursor: pointer; } details.fold > summary { overflow-wrap: anywhere; }
details.part > summary > h3 { display: inline; } details.part > summary { margin-top: 1.6em; }
details.part[open] > summary { margin-bottom: 0.6em; }
.cols { display: flex; flex-wrap: wrap; gap: 4px 32px; align-items: flex-start; }
.cols > div { flex: 1 1 420px; min-width: 0; } .cols > div.wide { flex: 2 1 640px; }
code.id { white-space: nowrap; font-size: 0.9em; }
nav.toc { background: #f7f7f7; border: 1px solid #e3e3e3; border-radius: 4px; padding: 6px 14px; font-size: 0.92em; }
nav.toc ul { margin: 4px 0; padding-left: 1.2em; } nav.toc li { margin: 2px 0; }
.study { margin-bottom: 1.4em; }
h2, h3, h4, section, figure { scroll-margin-top: 48px; }
nav.bar { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ccc; margin: 0 -24px;
          padding: 5px 24px; font-size: 0.85em; display: flex; flex-wrap: wrap; gap: 2px 14px; }
nav.bar a { text-decoration: none; white-space: nowrap; } nav.bar a:hover { text-decoration: underline; }
th.sort { cursor: pointer; } th.sort:hover { background: #e6e6e6; }
th[aria-sort="ascending"]::after { content: " ▲"; font-size: 0.8em; }
th[aria-sort="descending"]::after { content: " ▼"; font-size: 0.8em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(290px, 1fr)); gap: 8px 12px; }
.iplot { min-height: 270px; min-width: 0; border: 1px solid #eee; }
.scroll { max-height: 460px; overflow: auto; border: 1px solid #eee; }
.scroll table { margin: 0; } .scroll thead th { position: sticky; top: 0; z-index: 1; }
aside#detail { position: fixed; top: 0; right: 0; bottom: 0; width: min(480px, 100vw); z-index: 20; overflow-y: auto;
               background: #fff; border-left: 2px solid #999; padding: 8px 16px; box-shadow: -4px 0 12px #0002; }
aside#detail[hidden] { display: none; } aside#detail .close { float: right; font-size: 1.4em; cursor: pointer;
               border: none; background: none; } aside#detail table { width: 100%; }
a.arch { text-decoration: none; }
"""


def fmt(x: Any, digits: int = 3) -> str:
    """A number for a table cell: ``digits`` decimals (fewer from 10 up), scientific when tiny or huge,
    thousands separated, a dash when missing."""
    if x is None or x is pd.NA or (isinstance(x, (float, np.floating)) and not math.isfinite(x)):
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    x = float(x)
    if x != 0 and (abs(x) < 0.5 * 10**-digits or abs(x) >= 1e6):
        return f"{x:.2e}"
    return f"{x:.{digits}f}" if abs(x) < 10 else f"{x:,.{max(digits - 2, 0)}f}"


def interval(lo: float, hi: float, digits: int = 2) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f'<span class="ci">[{lo:.{digits}f}, {hi:.{digits}f}]</span>'


def with_interval(value: float | None, lo: float, hi: float, digits: int = 2) -> str:
    """A correlation-like value in fixed point, and below it its interval in small type."""
    ci = interval(lo, hi, digits)
    text = f"{value:.{digits}f}" if value is not None and np.isfinite(value) else "–"
    return text + (f"<br>{ci}" if ci else "")


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def emphasised(text: object) -> str:
    """``text`` escaped, its ``*short title*`` spans (the markdown the reproductions' ``paper`` fields use for a
    paper's title) set in italics."""
    return re.sub(r"\*([^*\n]+)\*", r"<i>\1</i>", esc(text))


def plain(text: object) -> str:
    """``text`` without the ``*`` of its ``*short title*`` spans (for a page's ``<title>``, which holds no markup)."""
    return re.sub(r"\*([^*\n]+)\*", r"\1", str(text))


def folded(text: str, limit: int = 90, full: str | None = None) -> str:
    """``text`` escaped for a table cell, or where longer than ``limit`` characters, its beginning folded over the
    whole (``full``, default the text itself) in a ``<details>``: long values never widen a table."""
    text = str(text)
    if len(text) <= limit:
        return esc(text)
    return (
        f'<details class="fold"><summary>{esc(text[: max(10, limit - 30)])}… ({len(text):,} characters)'
        f"</summary><pre>{esc(text if full is None else full)}</pre></details>"
    )


def table(
    headers: list[str] | None,
    rows: list[list[str]],
    left: int | Iterable[int] = 1,
    row_classes: list[str] | None = None,
    cls: str | None = None,
) -> str:
    """An HTML table; cells are already escaped/formatted strings; the first ``left`` columns align left (or,
    given a collection of column numbers, those); ``headers=None``: a key-value table without a header row;
    ``cls``: the table's class."""
    lefts = set(range(left)) if isinstance(left, int) else set(left)
    if headers is None:
        head = ""
    else:
        head = (
            "<thead><tr>"
            + "".join(f'<th class="l">{h}</th>' if i in lefts else f"<th>{h}</th>" for i, h in enumerate(headers))
            + "</tr></thead>"
        )
    body = []
    for k, r in enumerate(rows):
        row_attr = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        cells = "".join(f'<td class="l">{c}</td>' if i in lefts else f"<td>{c}</td>" for i, c in enumerate(r))
        body.append(f"<tr{row_attr}>{cells}</tr>")
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>{head}<tbody>{''.join(body)}</tbody></table>"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "study"
