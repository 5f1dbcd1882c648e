"""The README's reproduction table and docs/reproductions.md's measured numbers are generated from one committed
summary, docs/reproductions.json (``study.reproduce.record``): the files hold exactly the generated blocks, and
the blocks add up to the summary's totals."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from archstudy.study.reproduce import REPRODUCTIONS, record
from archstudy.study.reproduce.record import DOC, README, RECORD, ROOT, load, readme_table, regenerate


def test_readme_and_docs_hold_the_blocks_generated_from_the_committed_summary():
    summary = load()
    readme = (ROOT / README).read_text(encoding="utf-8")
    doc = (ROOT / DOC).read_text(encoding="utf-8")
    why = f"out of date with {RECORD}: run `{record.REGENERATE}`"
    assert record.update_readme(readme, summary) == readme, f"README.md {why}"
    assert record.update_doc(doc, summary) == doc, f"docs/reproductions.md {why}"


def test_the_summary_names_every_reproduction_once_and_its_rows_add_up():
    summary = load()
    names = [e["name"] for e in summary["reproductions"]]
    assert names == list(REPRODUCTIONS)  # the catalogue's order, each once
    assert summary["agreeing"] == sum(e["agreeing"] for e in summary["reproductions"])
    assert summary["rows"] == sum(e["rows"] for e in summary["reproductions"])
    assert all(0 <= e["agreeing"] <= e["rows"] for e in summary["reproductions"])
    assert summary["date"] and summary["machine"]
    if "claims" in summary:
        assert summary["claims"] == sum(len(e["claims"]) for e in summary["reproductions"])
    table = readme_table(summary)
    # rows: agree / differ / cannot tell of all, then the replicates and the time
    cells = re.findall(r"\| (\d+) / (\d+) / (\d+) of (\d+) \| [^|]+ \| [^|]+ \|$", table, re.M)
    assert len(cells) == len(names)
    for i, key in enumerate(("agreeing", "differing_rows", "cannot_tell_rows", "rows")):
        assert sum(int(c[i]) for c in cells) == summary[key], key
    assert f"rows: {summary['agreeing']} of {summary['rows']} agree" in table
    for e in summary["reproductions"]:  # every row carries its replicates and interval
        for claim in e["claims"]:
            assert all("replicates" in r and "interval" in r and "test" in r for r in claim["rows"])


def test_recording_a_run_rewrites_the_tables_and_a_stale_table_is_rewritten(tmp_path):
    for path in (README, DOC, RECORD):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    summary = load()
    summary["reproductions"][0] = {
        **summary["reproductions"][0],
        "agreeing": 1,
        "rows": 1,
        "differing": [],
        "cannot_tell": [],
        "claims": [{"claim": "c", "verdict": "agrees", "rows": []}],
        "claims_agreeing": 1,
        "claims_differing": 0,
        "claims_cannot_tell": 0,
        "replicates": [3, 3],
        "exact_rows": 0,
    }
    # any numbers: they are copied, not recomputed
    summary.update(agreeing=999, rows=1234, differing_rows=5, cannot_tell_rows=7)
    summary.update(claims=9, claims_agreeing=7, claims_differing=1, claims_cannot_tell=1)
    run = tmp_path / "summary.json"
    run.write_text(json.dumps({k: v for k, v in summary.items() if k != "machine"}))
    with pytest.raises(ValueError, match="--machine"):
        record.record(run, " ", None, root=tmp_path)
    record.record(run, "a test machine", None, root=tmp_path)
    assert regenerate(tmp_path) == [str(README), str(DOC)]
    readme = (tmp_path / README).read_text(encoding="utf-8")
    first = summary["reproductions"][0]["name"]
    assert f"| {first} | " in readme and "| 1 / 0 / 0 of 1 | 1 / 0 / 0 of 1 | 3 |" in readme
    text = " ".join(readme.split())
    assert "7 of 9 claims agree, 1 differ, 1 cannot tell; rows: 999 of 1234 agree, 5 differ, 7 cannot tell" in text
    assert "a test machine" in " ".join((tmp_path / DOC).read_text(encoding="utf-8").split())
    assert regenerate(tmp_path) == []  # now up to date
