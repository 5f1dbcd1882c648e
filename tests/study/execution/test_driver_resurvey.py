"""The driver, once it holds the study's lock, surveys the study's files again only where one changed since its plan
surveyed them (``StudyPlan.surveyed``: one listing instead of reading every result file again, most of the start of
a large study); a file added, removed or rewritten in between is seen. No Ray."""

import os
import time

from archstudy.study.execution import driver
from archstudy.study.execution.driver import plan_study
from archstudy.study.execution.store import ARCHITECTURES, FAILED
from archstudy.study.perf.synthetic_store import write_synthetic_study


def test_the_driver_surveys_again_only_a_study_whose_files_changed_since_its_plan(tmp_path, monkeypatch):
    # (a synthetic study records no data fingerprint: its rows are of another science config than the plan's, which
    # the survey says; what it says does not matter here, only whether the files are read again)
    write_synthetic_study(str(tmp_path / "s"), 3, num_lrs=2, curve_epochs=1)
    plan = plan_study(None, tmp_path / "s")  # a resume: the study's own config
    assert len(plan.state.other_config) == 3 and plan.files
    surveys: list[int] = []
    real = driver.survey
    monkeypatch.setattr(driver, "survey", lambda *a, **k: (surveys.append(1), real(*a, **k))[1])
    (tmp_path / "s" / ".lock").touch()  # the driver's own lock file is no change
    again = plan.surveyed()
    assert not surveys and again.state is plan.state and again.locked is None

    name = sorted(plan.state.other_config)[0]
    (tmp_path / "s" / ARCHITECTURES / f"{name}.parquet").unlink()  # a unit's commit point gone: redone
    again = plan.surveyed()
    assert surveys == [1] and len(again.state.other_config) == 2 and name in again.state.remaining
    assert again.surveyed().state is again.state and surveys == [1]  # unchanged since: not read again

    record = tmp_path / "s" / FAILED / f"{name}.json"
    record.parent.mkdir(exist_ok=True)
    record.write_text('{"reason": "x", "attempts": 1}')
    later = again.surveyed()
    assert name in later.state.failed and surveys == [1, 1]  # a file added
    stamp = time.time() + 5
    os.utime(record, (stamp, stamp))  # the same file rewritten: a new modification time
    assert later.surveyed().state is not later.state and len(surveys) == 3
