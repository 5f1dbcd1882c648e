"""`archstudy run --report` where the report cannot be written (STUDY/report.html a directory, or a folder that
takes no new file) is refused in the plan, in one line, before the estimate's timed steps and before any training:
not after hours of training, when the report is written."""

import sys
from pathlib import Path

import pytest

from study_commands import config_only, dry_run, files

from archstudy.study.cli import main
from archstudy.study.cli.run import report_problem

KEYS = {"dataset": "waveform-noise", "architectures": 2, "param_budget": 3000, "protocol": "quick", "seed": 5}


@pytest.fixture
def study(tmp_path) -> Path:
    return config_only(tmp_path / "study", KEYS)


def test_a_report_path_that_is_a_directory_is_refused_in_the_plan(study, capsys):
    (study / "report.html").mkdir()
    before = files(study)
    assert main(dry_run(study, "--report")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"archstudy run: error: --report: the report cannot be written: {study / 'report.html'} is not a file "
        "(a directory?): move it away; nothing was run"
    )
    assert not any(line.startswith("archstudy: estimated") for line in err)  # before the timed steps
    assert files(study) == before and (study / "report.html").is_dir()
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()
    # without --report the same directory is no concern of `run`
    assert main(dry_run(study)) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == "archstudy: --dry-run: nothing was run or written"


def test_what_the_report_needs_is_checked_where_it_goes(tmp_path):
    assert report_problem(str(tmp_path / "new" / "deeper" / "report.html")) is None  # created with the study
    (tmp_path / "file.html").write_text("old report\n")
    assert report_problem(str(tmp_path / "file.html")) is None  # replaced
    (tmp_path / "plain").write_text("a file where the study's folder would go\n")
    assert report_problem(str(tmp_path / "plain" / "report.html")) == (
        f"cannot write {tmp_path / 'plain' / 'report.html'} ({tmp_path / 'plain'} is not a writable directory)"
    )
    (tmp_path / "link.html").symlink_to(tmp_path)  # a link to a directory: not a file either
    link = tmp_path / "link.html"
    assert report_problem(str(link)) == f"{link} is not a file (a directory?): move it away"
