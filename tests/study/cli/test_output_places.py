"""No command writes its output inside a study (``study.experiment.location.study_holding``, the one test): a stray
file in a study's folder breaks the reading of its tables (``reproduce --out STUDY/runs`` wrote NAME.json and
NAME.html there, after which pandas could not read the runs table), and a study's own files are never overwritten.
Only ``STUDY/report.html`` may be written in a study. Each is refused in one line, before any work, and the study
is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archstudy.study.cli import main
from archstudy.study.execution.store import Store
from archstudy.study.experiment.config import StudyConfig

KEYS = {"dataset": "waveform-noise", "architectures": 3, "param_budget": 3000, "protocol": "quick", "seed": 5}


@pytest.fixture
def study(tmp_path) -> Path:
    root = tmp_path / "study"
    Store(root).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    for folder in ("runs", "architectures"):
        (root / folder).mkdir(exist_ok=True)
    return root


CASES = {
    "reproduce into runs/": (lambda s: ["reproduce", "gmp-banana", "--out", str(s / "runs")], "is inside the study"),
    "reproduce into the study": (lambda s: ["reproduce", "gmp-banana", "--out", str(s)], "is inside the study"),
    "reproduce into a new folder of it": (
        lambda s: ["reproduce", "gmp-banana", "--out", str(s / "new" / "deeper")],
        "is inside the study",
    ),
    "report into architectures/": (
        lambda s: ["report", str(s), "--out", str(s / "architectures" / "r.html")],
        "is inside the study",
    ),
    "report of another study into this one": (
        lambda s: ["report", str(s.parent / "other"), "--out", str(s / "r.html")],
        "is inside the study",
    ),
    "rank into runs/": (
        lambda s: ["rank", "--from", str(s), "--architectures", "2", "--out", str(s / "runs" / "x")],
        "lies inside the study",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_output_goes_inside_a_study(case, study, capsys):
    argv, expected = CASES[case]
    if case.startswith("report of another"):
        other = study.parent / "other"
        Store(other).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    before = sorted(os.walk(study))
    code = main(argv(study))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert sorted(os.walk(study)) == before
