"""``archstudy calibrate``: the verdicts' rates on simulated studies, as JSON rows and one-line errors; and
``archstudy bench``, which measures speed only, offers none of them."""

import json

import pytest

from archstudy.study.cli import build_parser, main


def test_predictor_prints_each_verdicts_rate_under_the_null_and_the_coverage_with_signal(capsys):
    assert main(["calibrate", "predictor", "--replicates", "1", "--sizes", "16", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    flags = {(r["kind"], r["flag"]) for r in rows}
    assert {("null", "beats_baseline"), ("null", "beats_nlc"), ("null", "excludes:any learner (pooled)")} <= flags
    assert ("signal", "covers") in flags and all(r["architectures"] == 16 for r in rows)
    assert all(0 <= r["fired"] <= r["of"] for r in rows) and all(r["seconds_per_study"] > 0 for r in rows)


def test_verdicts_counts_each_report_verdict_over_the_null_studies(capsys):
    assert main(["calibrate", "verdicts", "--replicates", "2", "--sizes", "8", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from archstudy.analysis.verdict_calibration import VERDICTS, WINDOW_VERDICTS

    assert {r["verdict"] for r in rows} == {v.name for v in VERDICTS} | set(WINDOW_VERDICTS.values())
    assert all(r["replicates"] == 2 and r["architectures"] == 8 for r in rows)
    assert all(0 <= r["fired"] <= r["trials"] and r["rate"] == pytest.approx(r["fired"] / r["trials"]) for r in rows)
    study_wide = [r for r in rows if r["unit"] == "study"]
    assert study_wide and all(r["trials"] == 2 for r in study_wide)  # one trial per null study


def test_findings_counts_some_finding_per_size_and_sibling_setting(capsys):
    assert main(["calibrate", "findings", "--replicates", "1", "--sizes", "16", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    some = [r for r in rows if r["what"] == "some finding"]
    assert {(r["kind"], r["siblings"]) for r in some} == {(k, s) for k in ("null", "signal") for s in (False, True)}
    assert all(r["replicates"] == 1 and 0 <= r["fired"] <= 1 and r["lo"] <= r["rate"] <= r["hi"] for r in rows)
    for r in some:  # one study: "some finding" fired iff a family's finding did
        families = [f for f in rows if f["what"].startswith("some finding: ") and f["kind"] == r["kind"]]
        assert r["fired"] == max(f["fired"] for f in families if f["siblings"] == r["siblings"])


def test_intervals_measures_the_paired_differences_coverage_and_width(capsys):
    assert main(["calibrate", "intervals", "--replicates", "2", "--sizes", "16", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["versus"] for r in rows} <= {"baseline", "nlc"} and rows
    assert all(r["replicates"] <= 2 and 0 <= r["covers"] <= r["replicates"] for r in rows)
    assert all(r["ratio"] == pytest.approx(r["half_width"] / r["spread"]) for r in rows if r["spread"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["predictor", "--sizes", "4"], "calibrate.sizes = '4': must be a comma-separated list of integers >= 8"),
        (["verdicts", "--sizes", "8,x"], "calibrate.sizes = '8,x': must be a comma-separated list of integers >= 8"),
        (["predictor", "--replicates", "0"], "calibrate.replicates = 0: must be an integer >= 1"),
    ],
)
def test_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(["calibrate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_unknown_calibration_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["calibrate", "speed"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1
    assert "archstudy calibrate: error: argument calibration: invalid choice: 'speed'" in err


def test_bench_measures_speed_only():
    bench = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    text = bench.format_help().lower()
    assert "calibrat" not in text and "verdict" not in text and "replicates" not in text
