"""A FIFO at each name the tool reads or writes is refused in one line, never waited on: opening one blocks until a
writer (or a reader) comes, in C, where no Python handler runs (a FIFO at ``driver.json`` held ``status``,
``resume`` and ``compact`` in pyarrow's open; ``report --out x.html`` and a FIFO ``*.json`` in ``--reproductions``
hung the report). Each name is checked to be a regular file before it is opened (``sampling.regular_files``), on
the command line or inside a study; nothing stored is changed. A unit's result file that is a FIFO is never opened:
its unit is not finished for ``status`` and ``top`` (a runs or curves file is listed as corrupt), and ``resume``
redoes it."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from archstudy.study.cli import main
from archstudy.study.perf.synthetic_store import write_synthetic_study

HANG_S = 60  # a command still running after this long waits on the FIFO


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fifo") / "study"
    write_synthetic_study(str(out), 4, num_lrs=3)
    return out


def _fifo(path: Path) -> str:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return str(path)


def _unit(study: Path, folder: str) -> Path:
    return sorted((study / folder).glob("*.parquet"))[0]


# name -> (what is made a FIFO, the command's argv on the study, what the line names)
CASES = {
    "driver.json, status": (lambda s, t: _fifo(s / "driver.json"), lambda s, t: ["status", str(s)], "driver.json"),
    "driver.json, resume": (lambda s, t: _fifo(s / "driver.json"), lambda s, t: ["resume", str(s)], "driver.json"),
    "driver.json, compact": (lambda s, t: _fifo(s / "driver.json"), lambda s, t: ["compact", str(s)], "driver.json"),
    "report --out": (
        lambda s, t: _fifo(t / "x.html"),
        lambda s, t: ["report", str(s), "--out", str(t / "x.html")],
        "x.html",
    ),
    "report --reproductions DIR/*.json": (
        lambda s, t: (t / "repro").mkdir() or _fifo(t / "repro" / "nlc-table1.json"),
        lambda s, t: ["report", str(s), "--out", str(t / "r.html"), "--reproductions", str(t / "repro")],
        "nlc-table1.json",
    ),
    "cluster rehearse CLUSTER_YAML": (
        lambda s, t: _fifo(t / "cluster.yaml"),
        lambda s, t: ["cluster", "rehearse", str(t / "cluster.yaml")],
        "cluster.yaml",
    ),
}


def _run(argv: list[str]) -> int:
    def hung(signum, frame):
        raise AssertionError(f"{argv}: still running after {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_at_each_name_is_refused_in_one_line(case, finished, tmp_path, capsys):
    plant, argv, named = CASES[case]
    study = tmp_path / "study"
    shutil.copytree(finished, study)
    plant(study, tmp_path)
    code = _run(argv(study, tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    err = [line for line in err if not line.startswith("archstudy: ")]  # progress lines of a command that began
    assert code == 2 and len(err) == 1, err
    assert named in err[0] and "FIFO" in err[0], err[0]


@pytest.mark.parametrize("folder", ["architectures", "runs", "curves"])
def test_a_fifo_in_place_of_a_unit_s_file_is_a_corrupt_file_never_waited_on(folder, finished, tmp_path, capsys):
    study = tmp_path / "study"
    shutil.copytree(finished, study)
    unit = _unit(study, folder)
    _fifo(unit)
    assert _run(["status", str(study), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    # the architectures file commits a unit: without a readable one the unit is not finished (remaining)
    assert list(state["corrupt"]) == ([] if folder == "architectures" else [unit.stem]), state
    assert state["finished"] == 3 and state["total"] == 4, state
    assert _run(["top", str(study), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["finished"] == 3
