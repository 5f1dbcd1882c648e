"""``archstudy run / resume / status`` refuse bad input with one line, exit code 2, no traceback, and leave every
study directory exactly as it was. (Runs that do work are tested in test_runner_study.py.)"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from study.cli import build_parser, main
from study.cli.run import EXAMPLE, EXAMPLE_OUT, config_of
from study.config import StudyConfig
from study.store import Store

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"dataset": "waveform-noise", "architectures": 3, "param_budget": 3000, "protocol": "quick", "seed": 5}


def _snapshot(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def dirs(tmp_path):
    """A study (its study.yaml, a finished-looking runs folder) and a folder that is no study."""
    study = tmp_path / "study"
    Store(study).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    (study / "failed").mkdir()
    (study / "failed" / "000001-0123456789abcdef.json").write_text('{"reason": "x", "attempts": 1}\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a study\n")
    return {"study": study, "other": other, "new": tmp_path / "new", "tmp": tmp_path}


def _new(d, *extra):
    return ["run", "--dataset", "waveform-noise", "--architectures", "2", "--out", str(d["new"]), *extra]


def _binary(d, name="binary.yaml"):
    path = d["tmp"] / name
    path.write_bytes(b"\xff\xfe\x00\x01 not text")
    return str(path)


CASES = {
    "config is a directory": (lambda d: ["run", "--config", str(d["other"]), "--out", str(d["new"])],
                              "is a directory, not a YAML file"),
    "config is not text": (lambda d: ["run", "--config", _binary(d), "--out", str(d["new"])],
                           "is not a UTF-8 text (YAML) file"),
    "protocol file is not text": (lambda d: _new(d, "--protocol", _binary(d, "p.yaml")),
                                  "is not a UTF-8 text (YAML) file"),
    "unknown dataset": (lambda d: ["run", "--dataset", "nope", "--architectures", "2", "--out", str(d["new"])],
                        "study.dataset = 'nope': must be one of 'waveform-noise'"),
    "negative architectures": (
        lambda d: ["run", "--dataset", "digits", "--architectures", "-3", "--out", str(d["new"])],
        "study.architectures = -3: must be an integer >= 1"),
    "negative budget": (lambda d: _new(d, "--param-budget", "-5"), "study.param_budget = -5: must be an integer >= 1"),
    "budget below the smallest net": (lambda d: _new(d, "--param-budget", "10"),
                                      "study.param_budget = 10: is too small for waveform-noise (d_in 40, 3 classes)"),
    "empty out": (lambda d: ["run", "--dataset", "digits", "--architectures", "2", "--out", ""],
                  "run.out = '': must be a directory or a URI"),
    "negative retries": (lambda d: _new(d, "--max-retries", "-1"), "study.max_retries = -1: must be an integer >= 0"),
    "zero cpus": (lambda d: _new(d, "--cpus-per-arch", "0"), "study.resources.cpus_per_arch = 0.0: must be"),
    "1.5 gpus": (lambda d: _new(d, "--gpus-per-arch", "1.5"),
                 "study.resources.gpus_per_arch = 1.5: must be 0, a fraction"),
    "zero in flight": (lambda d: _new(d, "--max-in-flight", "0"), "max_in_flight = 0: must be an integer >= 1"),
    "unknown preset": (lambda d: _new(d, "--preset", "huge"),
                       "study.preset = 'huge': must be one of 'paper', 'extended'"),
    "unknown siblings": (lambda d: _new(d, "--siblings", "colour"), "study.siblings = 'colour': must be a list"),
    "reversed nlc window": (lambda d: _new(d, "--nlc-window", "3,1"),
                            "study.nlc_window = '3,1': must be null, 'auto' or two numbers lo < hi"),
    "pilot without auto": (lambda d: _new(d, "--nlc-window", "1,3", "--nlc-pilot", "20"),
                           "study.nlc_pilot = 20: must stay 100 unless nlc_window = 'auto'"),
    "missing data root": (lambda d: ["run", "--dataset", "mnist", "--root", str(d["tmp"] / "no-mnist"),
                                     "--architectures", "2", "--out", str(d["new"])], "mnist"),
    "root for generated data": (lambda d: ["run", "--dataset", "digits", "--root", str(d["other"]),
                                           "--architectures", "2", "--out", str(d["new"])], "load_dataset.root"),
    "no out": (lambda d: ["run", "--dataset", "digits", "--architectures", "2"], "run: --out is required"),
    "missing config file": (lambda d: ["run", "--config", str(d["tmp"] / "none.yaml"), "--out", str(d["new"])],
                            "run.config = "),
    "no dataset": (lambda d: ["run", "--architectures", "2", "--out", str(d["new"])],
                   "study.dataset = None: is required"),
    "out is no study": (lambda d: _new(d)[:-1] + [str(d["other"])], "exists and is not a study (no study.yaml)"),
    "out is a file": (lambda d: _new(d)[:-1] + [str(d["other"] / "notes.txt")], "is a file, not a study directory"),
    "other config": (lambda d: ["run", *sum(([f"--{k.replace('_', '-')}", str(v)] for k, v in KEYS.items()), []),
                                "--param-budget", "4000", "--out", str(d["study"])],
                     "is a study with a different param_budget (3000, asked 4000)"),
    "resume no study": (lambda d: ["resume", str(d["other"])], "is not a study (no study.yaml)"),
    "resume nothing": (lambda d: ["resume", str(d["tmp"] / "nowhere")], "is not a study (no study.yaml)"),
    "resume bad override": (lambda d: ["resume", str(d["study"]), "--gpus-per-arch", "-1"],
                            "study.resources.gpus_per_arch = -1.0"),
    "status no study": (lambda d: ["status", str(d["other"])], "is not a study (no study.yaml)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_changes_nothing(case, dirs, capsys):
    argv, expected = CASES[case]
    argv = argv(dirs)
    before = {k: _snapshot(dirs[k]) for k in ("study", "other")}
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith(f"archstudy {argv[0]}: error: ") and expected in lines[0], lines[0]
    assert {k: _snapshot(dirs[k]) for k in ("study", "other")} == before
    assert not dirs["new"].exists()


@pytest.mark.parametrize("argv, prog, expected", [
    (["sample", "--n", "abc"], "archstudy sample", "argument --n: invalid int value: 'abc'"),
    (["bench", "--runs", "x"], "archstudy bench", "argument --runs: invalid int value: 'x'"),
    (["report", "s", "--nlc-window", "x", "1"], "archstudy report", "argument --nlc-window: invalid float value"),
    (["datasets", "extra"], "archstudy", "unrecognized arguments: extra"),
    (["run", "extra", "--out", "x"], "archstudy", "unrecognized arguments: extra"),
    ([], "archstudy", "the following arguments are required: COMMAND"),
    (["bogus"], "archstudy", "argument COMMAND: invalid choice: 'bogus'"),
])
def test_argument_errors_of_every_command_are_one_line(argv, prog, expected, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err == f"{prog}: error: {err.split(': error: ', 1)[1]}"
    assert expected in err


def test_the_command_line_itself_prints_no_traceback(tmp_path):
    p = subprocess.run([sys.executable, "-m", "study.cli", "run", "--dataset", "nope", "--architectures", "2",
                        "--out", str(tmp_path / "s")], cwd=ROOT, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("archstudy run: error: study.dataset = 'nope'")
    assert not (tmp_path / "s").exists()


def test_no_arguments_is_the_example_and_flags_override_a_config_file(tmp_path):
    parser = build_parser()
    keys, out, example = config_of(parser.parse_args(["run"]))
    assert example and keys == EXAMPLE and out == EXAMPLE_OUT
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**KEYS, "space": StudyConfig(**KEYS).space}))
    keys, out, example = config_of(parser.parse_args(["run", "--config", str(cfg), "--seed", "9", "--preset", "paper",
                                                      "--siblings", "--out", "o"]))
    assert not example and out == "o" and keys["seed"] == 9 and keys["siblings"] == "all"
    assert "space" not in keys and StudyConfig.from_dict(keys).preset == "paper"
    assert keys["param_budget"] == 3000 and keys["protocol"] == "quick"
    # --execution flags do not make a run leave the example: only study flags do.
    keys, out, example = config_of(parser.parse_args(["run", "--cpus-per-arch", "2"]))
    assert example


def test_a_studys_own_yaml_is_a_template_for_a_new_study(dirs, tmp_path):
    """What archstudy recorded about the old study (data shape and fingerprint, version, creation time) is
    dropped from --config, so copying study.yaml and changing the seed starts a new study cleanly."""
    old = yaml.safe_load((dirs["study"] / "study.yaml").read_text())
    recorded = {"d_in": 7, "d_out": 9, "data_fingerprint": "0123456789abcdef", "package_version": "0.0.1",
                "created": "2020-01-01T00:00:00+00:00"}
    cfg = tmp_path / "template.yaml"
    cfg.write_text(yaml.safe_dump({**old, **recorded}))
    keys, out, _ = config_of(build_parser().parse_args(["run", "--config", str(cfg), "--seed", "5", "--out", "n"]))
    assert not set(recorded) & set(keys) and keys["seed"] == 5 and keys["dataset"] == old["dataset"]
    config = StudyConfig.from_dict(keys)
    assert config.d_in is None and config.data_fingerprint is None


@pytest.mark.parametrize("argv", [["run", "--architectures", "abc"], ["resume", "s", "--max-retries", "z"], ["status"]])
def test_argument_errors_are_one_line_too(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith(f"archstudy {argv[0]}: error: ")


def test_on_an_existing_study_a_command_overrides_only_the_execution_settings_it_names():
    from study.runner import _named_execution

    assert _named_execution({"dataset": "digits", "architectures": 2}, {"cpus_per_arch": None}) == {}
    assert _named_execution({**KEYS, "resources": {"gpus_per_arch": 0.5}, "max_retries": 4},
                            {"cpus_per_arch": 2.0, "root": None}) == {
        "gpus_per_arch": 0.5, "max_retries": 4, "cpus_per_arch": 2.0}
    stored = StudyConfig(**KEYS, resources={"cpus_per_arch": 3}, max_retries=5).replace(d_in=40, d_out=3)
    kept = stored.with_execution(**_named_execution(KEYS, {"gpus_per_arch": 0.5}))
    assert kept.resources.cpus_per_arch == 3 and kept.resources.gpus_per_arch == 0.5 and kept.max_retries == 5
    assert _named_execution(StudyConfig(**KEYS), {}) == {
        "root": None, "max_retries": 2, "checkpoint_every_s": 300.0, "cpus_per_arch": 1.0, "gpus_per_arch": 0.0}
