"""``archstudy calibrate``: the analysis' verdicts counted on simulated studies, from the command line."""

import json

import pytest

from archstudy.study.cli import main


def test_calibration_prints_each_verdicts_rate_under_the_null_and_the_coverage_with_signal(capsys):
    assert main(["calibrate", "predictor", "--replicates", "1", "--sizes", "16", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    flags = {(r["kind"], r["flag"]) for r in rows}
    assert {("null", "beats_baseline"), ("null", "beats_nlc"), ("null", "excludes:any learner (pooled)")} <= flags
    assert ("signal", "covers") in flags and all(r["architectures"] == 16 for r in rows)
    assert all(0 <= r["fired"] <= r["of"] for r in rows) and all(r["seconds_per_study"] > 0 for r in rows)


def test_verdict_calibration_counts_each_report_verdict_over_the_null_studies(capsys):
    assert main(["calibrate", "verdicts", "--replicates", "2", "--sizes", "8", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from archstudy.analysis.verdict_calibration import VERDICTS, WINDOW_VERDICTS

    assert {r["verdict"] for r in rows} == {v.name for v in VERDICTS} | set(WINDOW_VERDICTS.values())
    assert all(r["replicates"] == 2 and r["architectures"] == 8 for r in rows)
    assert all(0 <= r["fired"] <= r["trials"] and r["rate"] == pytest.approx(r["fired"] / r["trials"]) for r in rows)
    study_wide = [r for r in rows if r["unit"] == "study"]
    assert study_wide and all(r["trials"] == 2 for r in study_wide)  # one trial per null study


@pytest.mark.parametrize(
    "argv, message",
    [
        (["predictor", "--sizes", "4"], "calibrate.sizes = '4': must be a comma-separated list of integers >= 8"),
        (["verdicts", "--replicates", "0"], "calibrate.replicates = 0: must be an integer >= 1"),
    ],
)
def test_bad_options_are_one_line(argv, message, capsys):
    assert main(["calibrate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_an_unknown_kind_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["calibrate", "everything"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "invalid choice: 'everything'" in err and len(err.strip().splitlines()) == 1


def test_bench_holds_no_calibration(capsys):
    """The speed command holds speed only: its help names no calibration."""
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "calibrat" not in capsys.readouterr().out
