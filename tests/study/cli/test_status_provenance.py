"""Provenance in ``archstudy status`` and the report's status section: who computed the finished architectures
(archstudy's version, Python, the libraries, the device), read back from the result files' Parquet metadata, loose
and packed, with the architectures each record computed."""

from __future__ import annotations

import json
from importlib import metadata

import numpy
import pytest

from archstudy.analysis import load_results
from archstudy.analysis.report.status import computed_with_rows
from archstudy.study.cli import main
from archstudy.study.execution.compaction import compact
from archstudy.study.execution.store import Store
from archstudy.study.experiment import provenance
from archstudy.study.perf.synthetic_store import write_synthetic_study

N = 5


@pytest.mark.parametrize("packed", [False, True])
def test_status_and_the_report_name_who_computed_the_rows(tmp_path, capsys, packed):
    root = tmp_path / "study"
    write_synthetic_study(str(root), N, num_lrs=2, curve_epochs=1)
    if packed:
        store = Store(str(root))
        with store.driver_lock():
            compact(store, store.read_config(), per_pack=2)
    assert main(["status", str(root), "--wide"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("computed with: ")]
    assert len(lines) == 1 and lines[0].endswith(f"({N} architectures)")
    for name in ("numpy", "pyarrow", "pandas"):
        assert f"{name} {metadata.version(name)}" in lines[0]
    assert f"numpy {numpy.__version__}" in lines[0] and "synthetic" in lines[0]  # the writer's device
    assert main(["status", str(root), "--json"]) == 0
    (recorded,) = json.loads(capsys.readouterr().out)["provenance"]
    assert recorded["architectures"] == N and recorded["record"]["science_version"] == provenance.SCIENCE_VERSION
    rows = computed_with_rows(load_results(root))
    assert len(rows) == 1 and rows[0][0] == "computed with" and f"({N} architectures)" in rows[0][1]


def test_a_resume_beside_rows_of_another_science_version_is_refused_and_other_versions_are_said(tmp_path, monkeypatch):
    """The driver's refusal of a plan whose finished units another science version computed, asked of the study's
    survey as ``status`` takes it (a resume of the synthetic study would first refuse its science config, which the
    synthetic writer records as its own)."""
    from archstudy.study.execution import driver
    from archstudy.study.execution.state import survey_files

    root = tmp_path / "study"
    write_synthetic_study(str(root), 3, num_lrs=2, curve_epochs=1)
    store = Store(str(root))
    state = survey_files(store, store.read_config())
    assert driver._science_version_problem(store, state) is None
    monkeypatch.setattr(provenance, "SCIENCE_VERSION", str(int(provenance.SCIENCE_VERSION) + 1))
    refusal = driver._science_version_problem(store, state)
    assert refusal is not None and "\n" not in refusal
    old = int(provenance.SCIENCE_VERSION) - 1
    assert f"3 finished architecture(s) were computed by archstudy science version {old}" in refusal
    elsewhere = {**provenance.current(), "numpy": "1.0.0"}
    line = provenance.versions_line(state.provenance, elsewhere)
    assert line is not None and f"numpy {numpy.__version__} -> 1.0.0" in line and "\n" not in line
