"""`archstudy top`: the leaderboard of a real study on the command line, as text and as JSON; bad input is one line."""

import json

import pandas as pd

from archstudy.study.cli import main


def test_top_prints_the_best_architectures_and_the_top_predictors(real_study_dir, capsys):
    assert main(["top", str(real_study_dir), "-k", "2"]) == 0
    out = capsys.readouterr().out
    arch = pd.read_parquet(real_study_dir / "architectures")
    best = arch.sort_values(["test_error", "index", "variant"]).iloc[0]
    lines = out.splitlines()
    assert lines[0].startswith(f"{real_study_dir}: waveform-noise, {len(arch)} of {len(arch)} architectures finished")
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    first = lines[header + 1].split()
    assert first[:3] == ["1", str(best["index"]), best["variant"]] and first[3] == f"{best['test_error']:.3f}"
    assert "top predictors of test error" in out and "NLC" in out


def test_top_json_and_by_a_predictor(real_study_dir, capsys):
    assert main(["top", str(real_study_dir), "--by", "nlc", "-k", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["by"] == "nlc" and len(data["architectures"]) == 3 and "[1, 3]" in data["order"]
    assert [r["rank"] for r in data["architectures"]] == [1, 2, 3]


def test_top_refuses_a_column_it_cannot_rank_by_in_one_line(real_study_dir, capsys):
    assert main(["top", str(real_study_dir), "--by", "colour"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leaderboard.by = 'colour'" in err and "test_error" in err
