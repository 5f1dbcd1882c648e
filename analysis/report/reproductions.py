"""The reproductions' verdicts on the report's page (``archstudy report --reproductions``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from archstudy.sampling import SpecError
from archstudy.sampling.regular_files import NotRegular, read_regular

from ..html import emphasised, esc, fmt, table

if TYPE_CHECKING:
    pass


def reproductions_html(directory: str | os.PathLike[str], out: Path) -> str:
    """The verdicts of the paper reproductions (``archstudy reproduce``) whose ``NAME.json`` files lie in
    ``directory``, each linked to its page; only when the user names the directory (``--reproductions``)."""
    found, skipped = [], []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            d = json.loads(read_regular(path, what="a reproduction's result").decode("utf-8"))
            # "ok" means agrees; a row that cannot tell (its own "verdict") is neither agreeing nor differing
            rows = [(str(r["quantity"]), r["ok"] is True, r.get("verdict")) for r in d["rows"]]
            found.append((path, d, rows))
        except NotRegular as e:  # never opened for reading: a FIFO's open would wait for a writer
            skipped.append(f"{path.name} ({e.kind}, not a regular file)")
            continue
        except (OSError, ValueError, KeyError, TypeError) as e:
            skipped.append(f"{path.name} ({type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})")
            continue  # another JSON file, not a reproduction's
    if not found:
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        named = f"; its JSON files are not: {', '.join(skipped[:3])}{more}"
        raise SpecError(
            "write_report",
            "reproductions",
            os.fspath(directory),
            "holds no reproduction results (NAME.json files of `archstudy reproduce`)" + (named if skipped else ""),
        )
    table_rows = []
    for path, d, rows in found:
        page = path.with_suffix(".html")
        name = esc(d.get("name", path.stem))
        if page.is_file():
            name = f'<a href="{esc(Path(os.path.relpath(page.resolve(), out.resolve().parent)).as_posix())}">{name}</a>'
        untold = [q for q, _, verdict in rows if verdict == "cannot tell"]
        differ = [q for q, ok, verdict in rows if not ok and verdict != "cannot tell"]
        table_rows.append(
            [
                name,
                emphasised(d.get("paper", "")),
                esc(d.get("source", "")),
                esc(d.get("scale", "")),
                fmt(d.get("seconds")),
                f"{len(rows) - len(differ) - len(untold)} / {len(rows)}",
                esc(", ".join(differ)) or "–",
                esc(", ".join(untold)) or "–",
            ]
        )
    return (
        f'<h2 id="reproductions">Reproductions <span class="muted">{esc(os.fspath(directory))}</span></h2>'
        + table(
            [
                "reproduction",
                "paper",
                "table or figure",
                "scale",
                "seconds",
                "rows agreeing",
                "rows that differ",
                "rows that cannot tell",
            ],
            table_rows,
            left=4,
        )
        + '<p class="muted">Written by <code>archstudy reproduce</code> and linked here on request: the papers\' '
        "own experiments run with this pipeline, their numbers beside the papers'.</p>"
    )
