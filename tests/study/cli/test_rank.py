"""``archstudy rank --from STUDY``: on a real tiny study, N fresh architectures measured at initialization only and
ranked by the predictor fitted on STUDY; the top K as a study.yaml that `archstudy run --config` trains as a normal
study (each architecture the same row as in the ranking: same spec, seed and init metrics); --check prints both
medians; a second run resumes to nothing; bad input is one line before anything is measured."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from archstudy.analysis.predict import load_predictor
from archstudy.sampling.plan import fresh_seed, plan_study
from archstudy.study.cli import main
from archstudy.study.cli.rank import nlc_rule_top
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.execution.driver import _extends
from archstudy.study.execution.ray_session import ray_session

# The fixture's space has depths 3 and 5 only, and the draws of some seeds ask for a shortcut of length 3, which
# fits neither; seed 9's first draws do not (the space, not rank, refuses such a draw).
SEED, N, TOP = 9, 4, 2


def test_rank_measures_ranks_writes_the_top_k_as_a_study_and_checks_the_lift(real_study_dir, tmp_path, capsys):
    out = tmp_path / "rank"
    args = [
        "rank",
        "--from",
        str(real_study_dir),
        "--architectures",
        str(N),
        "--top",
        str(TOP),
        "--check",
        "1",
        "--seed",
        str(SEED),
        "--out",
        str(out),
        "--allow-weak-predictor",  # eight draws: the predictor is not shown to predict (the test below)
    ]
    with ray_session():  # one Ray for the ranking, the check and the top K's training
        assert main(args) == 0
        said = capsys.readouterr()
        first = said.out.splitlines()[0]
        assert first.startswith("archstudy rank: WARNING: ranking with a predictor that is not shown to predict")
        assert "--allow-weak-predictor was given" in first
        import pyarrow.parquet as pq

        from archstudy.study.cli.rank import HELD_OUT_KEY

        stored = json.loads(pq.read_schema(out / "ranked.parquet").metadata[HELD_OUT_KEY])
        assert stored == load_predictor(out / "predictor.json").held_out and stored["groups"] == 3
        assert stored["calls"]["joint_above_zero"] == 0 and "othing can be told" in stored["verdict"]
        ranked = pd.read_parquet(out / "ranked.parquet")
        assert len(ranked) == N and list(ranked["predicted_rank"]) == list(range(1, N + 1))
        # the top of the ranking, printed: a line per architecture, as ranked.parquet orders them
        lines = said.out.splitlines()
        head = next(i for i, line in enumerate(lines) if line.startswith(f"the top {TOP} of {N} by the test error"))
        rows = [line.split() for line in lines[head + 2 : head + 2 + TOP]]
        assert [int(r[1]) for r in rows] == list(ranked["index"][:TOP])
        assert [float(r[2]) for r in rows] == [round(v, 4) for v in ranked["predicted_test_error"][:TOP]]
        assert all(len(line) <= 100 for line in lines[head : head + 2 + TOP])
        assert ranked["predicted_test_error"].is_monotonic_increasing and ranked["nlc"].notna().all()
        assert not ranked["trained"].any() and (ranked["study_seed"] == SEED).all()
        top = StudyConfig.from_yaml((out / "study.yaml").read_bytes())
        assert top.indices == tuple(ranked["index"][:TOP]) and top.seed == SEED and top.architectures == TOP
        assert not top.measure_only and top.nlc_window is None and top.siblings == ()
        base = StudyConfig.from_yaml((real_study_dir / "study.yaml").read_bytes())
        assert (top.dataset, top.param_budget, top.protocol, top.space) == (
            base.dataset,
            base.param_budget,
            base.protocol,
            base.space,
        )
        held = {
            p.spec.content_id
            for p in plan_study(
                base.seed, base.architectures, base.d_in, base.d_out, base.space_obj, base.param_budget, base.siblings
            )
        }
        assert not held & set(ranked["arch_id"])  # fresh: none is in STUDY
        assert load_predictor(out / "predictor.json").source["rows"] == 15
        assert "check: the top 1 by prediction: median test error" in said.out
        assert "1 drawn at random: median" in said.out
        assert "1 by the NLC-window rule: median" in said.out and "95% paired bootstrap" in said.out
        check = json.loads((out / "check.json").read_text())
        assert check["top_indices"] == [int(ranked["index"][0])]
        assert check["nlc_rule_indices"] == nlc_rule_top(ranked, 1)
        for other in ("nlc_rule", "random"):
            r = check[other]
            assert r["n_top"] == r["n_other"] == 1 and r["lift"] == pytest.approx(r["other"] - r["top"])

        # the top K trains as a normal study; each of its rows is the ranked one (spec, seed, init metrics)
        assert main(["run", "--config", str(out / "study.yaml"), "--out", str(out / "top")]) == 0
        trained = pd.read_parquet(out / "top" / "architectures").set_index("arch_id")
        assert trained["trained"].all() and trained["test_error"].notna().all() and len(trained) == TOP
        for _, r in ranked[:TOP].iterrows():
            t = trained.loc[r["arch_id"]]
            assert (t["index"], t["seed"], t["nlc"], t["snip"], t["nwot"]) == (
                r["index"],
                r["seed"],
                r["nlc"],
                r["snip"],
                r["nwot"],
            )

        # the same command again: everything is there, nothing runs (the progress line says so)
        assert main(args) == 0
        assert "nothing to do" in capsys.readouterr().err.lower()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--learner", "forest"], "fit_predictor.learner = 'forest': must be one of 'auto', 'descriptors', 'linear'"),
        (["--top", "9"], "rank.top = 9: must be an integer in [1, 4]"),
        (["--check", "0"], "rank.check = 0: must be an integer in [1, 4]"),
    ],
)
def test_bad_input_is_one_line_before_anything_is_measured(flags, message, real_study_dir, tmp_path, capsys):
    out = tmp_path / "rank"
    assert main(["rank", "--from", str(real_study_dir), "--architectures", "4", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_a_study_grows_by_a_longer_count_or_list_of_draws_that_begins_with_its_own():
    c = StudyConfig(dataset="digits", architectures=2, indices=[7, 3, 11], seed=fresh_seed(0))
    assert _extends(c, c.replace(architectures=3))
    assert _extends(c, c.replace(architectures=4, indices=(7, 3, 20, 11)))
    assert not _extends(c, c.replace(architectures=3, indices=(3, 7, 11)))  # another order: other draws first
    plain = StudyConfig(dataset="digits", architectures=2)
    assert _extends(plain, plain.replace(architectures=3, indices=(0, 1, 9)))
    assert not _extends(plain, plain.replace(architectures=3, indices=(1, 0, 9)))
    # neither key changes the record every result file carries while it is at its default
    assert c.replace(indices=None, architectures=3).science_fingerprint == c.science_fingerprint
    assert c.replace(measure_only=True).science_fingerprint != c.science_fingerprint


def _files(path) -> dict:
    """Every file under ``path`` with its bytes (what a refused command must leave as it was)."""
    from pathlib import Path

    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "where, message",
    [
        ("the study itself", "is a study (it holds study.yaml); nothing was changed"),
        ("another study", "is a study (it holds study.yaml); nothing was changed"),
        ("architectures/x", "lies inside the study"),
        ("checkpoints/nested", "lies inside the study"),
        ("inner", "lies inside the study"),
        ("s3://bucket/x", "rank writes a local directory, not a URI"),
        ("s3:bucket/x", "rank writes a local directory, not a URI"),
    ],
)
def test_rank_never_writes_into_a_study_or_under_one(where, message, real_study_dir, tmp_path, capsys, monkeypatch):
    """`rank --out` onto a study replaced its study.yaml with the top K's config (then status was a traceback, resume
    refused, top said 0 of 3 finished); under a study it broke pd.read_parquet(STUDY/architectures)."""
    import shutil

    study = tmp_path / "study"
    shutil.copytree(real_study_dir, study)
    other = tmp_path / "other"
    shutil.copytree(real_study_dir, other)
    monkeypatch.chdir(tmp_path)
    out = {"the study itself": str(study), "another study": str(other)}.get(where, str(study / where))
    if "s3" in where:
        out = where
    before = (_files(study), _files(other), sorted(p.name for p in tmp_path.iterdir()))
    assert main(["rank", "--from", str(study), "--architectures", "2", "--seed", str(SEED), "--out", out]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and (out in err or where in err)
    assert (_files(study), _files(other), sorted(p.name for p in tmp_path.iterdir())) == before


def test_rank_into_its_own_output_and_the_studies_inside_it_is_not_refused(tmp_path):
    """rank's output holds a study.yaml (the top K's config) beside its predictor.json: it is not a study, so running
    rank again there and `run --out DIR/top` stay allowed."""
    from archstudy.study.cli.rank import _check_out
    from archstudy.study.execution.driver import _check_not_inside_a_study
    from archstudy.study.execution.store import Store

    out = tmp_path / "rank"
    (out / "measured").mkdir(parents=True)
    (out / "study.yaml").write_text("dataset: digits\n")
    (out / "predictor.json").write_text("{}\n")
    _check_out(str(out), "s")
    for inner in ("measured", "check", "top"):
        _check_not_inside_a_study(Store(out / inner))


def test_rank_refuses_a_predictor_not_shown_to_predict_in_one_line_naming_its_score(real_study_dir, tmp_path, capsys):
    """On the README's example (eight draws) rank ranked with an anti-predictive model (held-out rho -0.60) and said
    nothing: now it refuses before anything is measured or written, in one line naming the held-out scores of the
    joint model, the best baseline and NLC alone, none of which beats chance."""
    out = tmp_path / "rank"
    argv = ["rank", "--from", str(real_study_dir), "--architectures", "2", "--seed", str(SEED), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no predictor beats chance held out" in err
    assert ("the joint model ρ = " in err or "the joint model cannot fit" in err) and "NLC alone ρ = " in err
    assert "--allow-weak-predictor ranks anyway" in err and not out.exists()


def test_rank_with_a_root_that_does_not_hold_the_data_writes_nothing(real_study_dir, tmp_path, capsys):
    """It refused only after writing OUT/predictor.json."""
    out = tmp_path / "rank"
    argv = ["rank", "--from", str(real_study_dir), "--architectures", "2", "--seed", str(SEED), "--out", str(out)]
    argv.append("--allow-weak-predictor")
    assert main([*argv, "--root", str(tmp_path / "nonexistent")]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert "waveform-noise: expected" in last and "nonexistent; not found" in last and not out.exists()
