"""The record of one ``archstudy reproduce all``: ``docs/reproductions.json``, and the README's reproduction table
and docs/reproductions.md's measured numbers written from it, so that each number is typed in one place.

``docs/reproductions.json`` is that run's ``summary.json`` as ``run_all`` wrote it (``summary.totals``'s counts of
claims and rows, each reproduction's claims with their rows), with the day and the machine added (``record``).
It lives in docs/ because it is a measurement, and measurements with their date and machine belong there (not in
a docstring, not in a run's output folder, which is not committed); it sits beside docs/reproductions.md, which
it feeds, and a test reads it without running anything (``tests/study/reproduce/test_record.py`` checks that the
README and docs/reproductions.md hold exactly the blocks generated from it).

``python -m archstudy.study.reproduce.record`` rewrites the generated blocks of README.md and
docs/reproductions.md from docs/reproductions.json; ``python -m archstudy.study.reproduce.record OUT/summary.json
--machine "2-core CPU dev machine"`` first records a new run there. A summary written before claims were
counted (no "claims" per reproduction) prints "–" for them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from archstudy.sampling.doc_tables import update_blocks

from .catalogue import GMP, NLC, RESNET, VARIABILITY, YZ
from .result import write_text
from .summary import duration

ROOT = Path(__file__).resolve().parents[2]  # the source tree: README.md, docs/
RECORD = Path("docs") / "reproductions.json"
README, DOC = Path("README.md"), Path("docs") / "reproductions.md"
REGENERATE = "python -m archstudy.study.reproduce.record"

# The papers' short names, as the README's "Papers" section gives them.
SHORT = {
    NLC: "NLC paper",
    VARIABILITY: "variability paper",
    YZ: "Yu and Zhang",
    GMP: "Chen and Ge",
    RESNET: "Demystifying ResNet",
}


WIDTH = 115  # the prose lines of the generated blocks, as the README's


def fill(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_on_hyphens=False, break_long_words=False)


def where(entry: dict[str, Any]) -> str:
    """The paper and its table or figure, short: "NLC paper: Table 1, lines A to E" (the source without its
    parenthesised sections; a source that names its papers itself, as "Yu and Zhang's Tables 3 and 4", alone)."""
    source = re.sub(r"\s*\([^()]*\)", "", str(entry.get("source", ""))).strip()
    short = SHORT.get(str(entry.get("paper", "")))
    return f"{short}: {source}" if short else source


def claims_text(entry: dict[str, Any]) -> str:
    """ "4 / 1 / 0 of 5": claims agreeing / differing / cannot tell of all ("4 / 5" agreeing of all for a summary
    written before the differing ones were counted, "–" before claims were)."""
    if "claims" not in entry:
        return "–"
    if "claims_differing" not in entry:
        return f"{entry['claims_agreeing']} / {len(entry['claims'])}"
    agree, differ, cannot = entry["claims_agreeing"], entry["claims_differing"], entry["claims_cannot_tell"]
    return f"{agree} / {differ} / {cannot} of {len(entry['claims'])}"


def rows_text(entry: dict[str, Any]) -> str:
    """ "38 / 2 / 0 of 40": rows agreeing / differing / cannot tell of all ("38 / 40" agreeing of all before)."""
    if "cannot_tell" not in entry:
        return f"{entry['agreeing']} / {entry['rows']}"
    return f"{entry['agreeing']} / {len(entry['differing'])} / {len(entry['cannot_tell'])} of {entry['rows']}"


def replicates_text(entry: dict[str, Any]) -> str:
    """ "3-10" replicates a sampled row (", 24 exact" with exact rows), "exact", or "–" before they were kept."""
    if "replicates" not in entry:
        return "–"
    exact = f", {entry['exact_rows']} exact" if entry.get("exact_rows") else ""
    if entry["replicates"] is None:
        return "exact"
    lo, hi = entry["replicates"]
    return (f"{lo}" if lo == hi else f"{lo}-{hi}") + exact


def counts(summary: dict[str, Any]) -> str:
    """ "40 of 52 claims agree, 2 differ, 10 cannot tell; rows: 140 of 166 agree, 3 differ, 23 cannot tell" from the
    summary's totals."""
    rows = f"{summary['agreeing']} of {summary['rows']} agree"
    if "cannot_tell_rows" in summary:
        rows += f", {summary['differing_rows']} differ, {summary['cannot_tell_rows']} cannot tell"
    if "claims" not in summary:
        return f"rows: {rows}; claims not counted in this run"
    return (
        f"{summary['claims_agreeing']} of {summary['claims']} claims agree, {summary['claims_differing']} differ, "
        f"{summary['claims_cannot_tell']} cannot tell; rows: {rows}"
    )


def run_text(summary: dict[str, Any]) -> str:
    """ "`quick`, seed 0, one `reproduce all` (2 side by side), 2026-11-26, 2-core CPU dev machine"."""
    jobs = summary["jobs"]
    side = f"{jobs} side by side, each its own process" if jobs > 1 else "one after another"
    return (
        f"`{summary['scale']}`, seed {summary['seed']}, one `reproduce all` ({side}), {summary['date']}, "
        f"{summary['machine']}, device {summary['device']}"
    )


def readme_table(summary: dict[str, Any]) -> str:
    """The README's block: the run, one line per reproduction, the totals."""
    lines = [
        fill(f"At {run_text(summary)}:"),
        "",
        "| reproduction | paper: table or figure | claims: agree / differ / cannot tell | rows: the same | "
        "replicates a row | time |",
        "|---|---|---|---|---|---|",
    ]
    for e in summary["reproductions"]:
        lines.append(
            f"| {e['name']} | {where(e)} | {claims_text(e)} | {rows_text(e)} | {replicates_text(e)} "
            f"| {duration(e['seconds'])} |"
        )
    lines += [
        "",
        fill(
            f"All {len(summary['reproductions'])} in {duration(summary['seconds'])}: {counts(summary)}. Why rows "
            'differ, each cause measured or "not found": docs/reproductions.md.'
        ),
    ]
    return "\n".join(lines)


def doc_measured(summary: dict[str, Any]) -> str:
    """docs/reproductions.md's block: the run, its totals and estimate, each reproduction's counts and time."""
    one_by_one = sum(e["seconds"] for e in summary["reproductions"])
    each = ", ".join(
        f"{e['name']} {rows_text(e)} rows"
        + (f" ({claims_text(e)} claims)" if "claims" in e else "")
        + (f", {replicates_text(e)} replicates a row" if "replicates" in e else "")
        + f" in {duration(e['seconds'])}"
        for e in summary["reproductions"]
    )
    return fill(
        f"Measured at {run_text(summary)}: all {len(summary['reproductions'])} ran in {duration(summary['seconds'])} "
        f"(the estimate printed up front: {duration(summary['estimated_seconds'])}; one after another they add up "
        f"to {duration(one_by_one)}), {counts(summary)}. Each reproduction's rows (agree / differ / cannot tell), "
        f"claims and time: {each}."
    )


def update_readme(text: str, summary: dict[str, Any]) -> str:
    return update_blocks(text, {"reproductions": readme_table(summary)}, REGENERATE, str(README))


def update_doc(text: str, summary: dict[str, Any]) -> str:
    return update_blocks(text, {"reproductions_measured": doc_measured(summary)}, REGENERATE, str(DOC))


def load(root: Path = ROOT) -> dict[str, Any]:
    return json.loads((root / RECORD).read_text(encoding="utf-8"))


def record(summary_path: Path, machine: str, date: str | None, root: Path = ROOT) -> dict[str, Any]:
    """``summary_path`` (a ``reproduce all``'s summary.json) written to docs/reproductions.json with ``machine``
    (and ``date``, where the summary holds none) added."""
    summary = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    if not machine.strip():
        raise ValueError("record: --machine must name the machine (e.g. '2-core CPU dev machine')")
    summary["machine"] = machine
    if date is not None:
        summary["date"] = date
    if "date" not in summary:
        raise ValueError(f"record: {summary_path} holds no date: give --date YYYY-MM-DD")
    write_text(root / RECORD, json.dumps(summary, indent=1, allow_nan=False, ensure_ascii=False) + "\n")
    return summary


def regenerate(root: Path = ROOT) -> list[str]:
    """README.md's and docs/reproductions.md's blocks rewritten from docs/reproductions.json; the files changed."""
    summary, changed = load(root), []
    for path, update in ((README, update_readme), (DOC, update_doc)):
        text = (root / path).read_text(encoding="utf-8")
        new = update(text, summary)
        if new != text:
            write_text(root / path, new)
            changed.append(str(path))
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", nargs="?", help="a reproduce all's summary.json to record first")
    parser.add_argument("--machine", default="", help="the machine it ran on (with SUMMARY)")
    parser.add_argument("--date", help="the day it ran, YYYY-MM-DD (with SUMMARY, where it holds none)")
    args = parser.parse_args(argv)
    try:
        if args.summary is not None:
            record(Path(args.summary), args.machine, args.date)
        changed = regenerate()
    except (OSError, ValueError, KeyError) as e:
        print(f"{REGENERATE}: {e}", file=sys.stderr)
        return 2
    print(", ".join(changed) + " updated" if changed else "README.md and docs/reproductions.md up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
