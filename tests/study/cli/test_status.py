"""`archstudy status` prints what it printed when it sampled the whole plan (``survey``), now that it samples only
what it must (``survey_files``): the same text and JSON on a study of every kind of file, loose and packed, with a
driver running and without."""

import contextlib
import json
import re

import pytest

from archstudy.study.cli import main, status
from archstudy.study.execution import state as state_module
from archstudy.study.execution.compaction import compact

from ..execution.test_state_files import CONFIG, messy_study


def printed(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in argv else out


@pytest.mark.parametrize("packed", [False, True])
def test_status_prints_what_the_survey_of_the_whole_plan_prints(tmp_path, capsys, monkeypatch, packed):
    store = messy_study(tmp_path / "study")
    if packed:
        with store.driver_lock():
            compact(store, CONFIG, per_pack=4)
    whole = lambda store, config, say=None: state_module.survey(store, config)  # noqa: E731 (the survey of the whole plan)
    monkeypatch.setattr(status, "_ago", lambda unix: "a while ago")  # the same clock for both
    for argv in (["status", str(tmp_path / "study"), "--wide"], ["status", str(tmp_path / "study"), "--json"]):
        for running in (False, True):
            with store.driver_lock() if running else contextlib.nullcontext():
                now = printed(capsys, argv)
                with monkeypatch.context() as m:
                    m.setattr(state_module, "survey_files", whole)
                    before = printed(capsys, argv)
            assert now == before
            if isinstance(now, str):
                assert "remaining" in now and "not in plan" in now and ("in packs" in now) is packed
                assert bool(re.search(r"^  in progress +2 ", now, re.M)) is running
