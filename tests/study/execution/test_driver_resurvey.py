"""The driver, once it holds the study's lock, surveys the study's files again only where one changed since its plan
surveyed them (``Preparation.surveyed``: one listing instead of reading every result file again, most of the start of
a large study); a file added, removed or rewritten in between is seen. No Ray."""

import os
import time

from archstudy.study.execution import driver
from archstudy.study.execution.driver import prepare_study
from archstudy.study.execution.store import ARCHITECTURES, FAILED
from archstudy.study.perf.synthetic_store import write_synthetic_study


def _age(root, seconds: float = 10.0) -> None:
    """Every entry under ``root`` as if written ``seconds`` ago (a listing with a recent entry stands for no survey:
    ``driver.FRESH_S``)."""
    stamp = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp))


def test_the_driver_surveys_again_only_a_study_whose_files_changed_since_its_plan(tmp_path, monkeypatch):
    # (a synthetic study records no data fingerprint: its rows are of another science config than the plan's, which
    # the survey says; what it says does not matter here, only whether the files are read again)
    write_synthetic_study(str(tmp_path / "s"), 3, num_lrs=2, curve_epochs=1)
    assert driver._files(driver.Store(str(tmp_path / "s"))) is None  # written just now: within a timestamp's step
    _age(tmp_path / "s")
    plan = prepare_study(None, tmp_path / "s")  # a resume: the study's own config
    assert len(plan.state.other_config) == 3 and plan.files
    surveys: list[int] = []
    real = driver.survey
    monkeypatch.setattr(driver, "survey", lambda *a, **k: (surveys.append(1), real(*a, **k))[1])
    (tmp_path / "s" / ".lock").touch()  # the driver's own lock file is no change (nor is its time)
    again = plan.surveyed()
    assert not surveys and again.state is plan.state and again.locked is None

    name = sorted(plan.state.other_config)[0]
    (tmp_path / "s" / ARCHITECTURES / f"{name}.parquet").unlink()  # a unit's commit point gone: redone
    _age(tmp_path / "s", 5.0)
    again = plan.surveyed()
    assert surveys == [1] and len(again.state.other_config) == 2 and name in again.state.remaining
    assert again.surveyed().state is again.state and surveys == [1]  # unchanged since: not read again

    record = tmp_path / "s" / FAILED / f"{name}.json"
    record.parent.mkdir(exist_ok=True)
    record.write_text('{"reason": "x", "attempts": 1}')
    _age(tmp_path / "s", 4.0)
    later = again.surveyed()
    assert name in later.state.failed and surveys == [1, 1]  # a file added
    stamp = time.time() + 5
    os.utime(record, (stamp, stamp))  # the same file rewritten: a new modification time
    assert later.surveyed().state is not later.state and len(surveys) == 3
