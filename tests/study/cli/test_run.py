"""``archstudy run / resume / status`` refuse bad input with one line, exit code 2, no traceback, and leave every
study directory exactly as it was. (Runs that do work are tested in test_runner_study.py.)"""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from archstudy.study.cli import build_parser, main
from archstudy.study.cli.run import EXAMPLE, EXAMPLE_OUT, config_of, defaults_line
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.execution.store import Store

ROOT = Path(__file__).resolve().parents[3]
KEYS = {"dataset": "waveform-noise", "architectures": 3, "param_budget": 3000, "protocol": "quick", "seed": 5}


def _snapshot(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def dirs(tmp_path, alias_bomb):
    """A study (its study.yaml, a finished-looking runs folder) and a folder that is no study."""
    study = tmp_path / "study"
    Store(study).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    (study / "failed").mkdir()
    (study / "failed" / "000001-0123456789abcdef.json").write_text('{"reason": "x", "attempts": 1}\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a study\n")
    bomb = tmp_path / "bomb"  # a study whose study.yaml was replaced by an alias bomb
    bomb.mkdir()
    config_bomb = alias_bomb(9, "dataset_options", head="dataset: waveform-noise\narchitectures: 2\n")
    (bomb / "study.yaml").write_text(config_bomb)
    return {
        "study": study,
        "other": other,
        "new": tmp_path / "new",
        "tmp": tmp_path,
        "bomb": bomb,
        "config bomb": config_bomb,
        "plain bomb": alias_bomb(9),
    }


def _new(d, *extra):
    return ["run", "--dataset", "waveform-noise", "--architectures", "2", "--out", str(d["new"]), *extra]


def _file(d, name: str, text: str) -> str:
    path = d["tmp"] / name
    path.write_text(text)
    return str(path)


def _waveform_file(d, rows: int, classes=(0, 1, 2)) -> str:
    """A folder with a user's ``waveform-+noise.data`` of ``rows`` points (40 attributes, then the class)."""
    folder = d["tmp"] / f"wave-{rows}-{len(classes)}"
    folder.mkdir(exist_ok=True)
    lines = [",".join(["0.5"] * 40 + [str(classes[i % len(classes)])]) for i in range(rows)]
    (folder / "waveform-+noise.data").write_text("\n".join(lines) + "\n")
    return str(folder)


def _binary(d, name="binary.yaml"):
    path = d["tmp"] / name
    path.write_bytes(b"\xff\xfe\x00\x01 not text")
    return str(path)


CASES = {
    "config is a directory": (
        lambda d: ["run", "--config", str(d["other"]), "--out", str(d["new"])],
        "is a directory, not a YAML file",
    ),
    "config is not text": (
        lambda d: ["run", "--config", _binary(d), "--out", str(d["new"])],
        "is not a UTF-8 text (YAML) file",
    ),
    "protocol file is not text": (
        lambda d: _new(d, "--protocol", _binary(d, "p.yaml")),
        "is not a UTF-8 text (YAML) file",
    ),
    "unknown dataset": (
        lambda d: ["run", "--dataset", "nope", "--architectures", "2", "--out", str(d["new"])],
        "study.dataset = 'nope': must be one of 'waveform-noise'",
    ),
    "negative architectures": (
        lambda d: ["run", "--dataset", "digits", "--architectures", "-3", "--out", str(d["new"])],
        "study.architectures = -3: must be an integer in [1, 1000000]",
    ),
    "negative budget": (lambda d: _new(d, "--param-budget", "-5"), "study.param_budget = -5: must be an integer >= 1"),
    "budget below the smallest net": (
        lambda d: _new(d, "--param-budget", "10"),
        "study.param_budget = 10: is too small for waveform-noise (d_in 40, 3 classes)",
    ),
    "empty out": (
        lambda d: ["run", "--dataset", "digits", "--architectures", "2", "--out", ""],
        "run.out = '': must be a directory or a URI",
    ),
    "negative retries": (lambda d: _new(d, "--max-retries", "-1"), "study.max_retries = -1: must be an integer >= 0"),
    "zero cpus": (lambda d: _new(d, "--cpus-per-arch", "0"), "study.resources.cpus_per_arch = 0.0: must be"),
    "1.5 gpus": (
        lambda d: _new(d, "--gpus-per-arch", "1.5"),
        "study.resources.gpus_per_arch = 1.5: must be 0, a fraction",
    ),
    "zero in flight": (lambda d: _new(d, "--max-in-flight", "0"), "max_in_flight = 0: must be an integer >= 1"),
    "unknown preset": (
        lambda d: _new(d, "--preset", "huge"),
        "study.preset = 'huge': must be one of 'paper', 'extended'",
    ),
    "unknown siblings": (lambda d: _new(d, "--siblings", "colour"), "study.siblings = 'colour': must be a list"),
    "reversed nlc window": (
        lambda d: _new(d, "--nlc-window", "3,1"),
        "study.nlc_window = '3,1': must be null, 'auto', or two finite numbers 0 <= lo < hi",
    ),
    "reversed nlc window in two words": (
        lambda d: _new(d, "--nlc-window", "3", "1"),
        "study.nlc_window = '3 1': must be null, 'auto', or two finite numbers",
    ),
    "three numbers for the nlc window": (
        lambda d: _new(d, "--nlc-window", "1", "2", "3"),
        "study.nlc_window = '1 2 3': must be null",
    ),
    "pilot without auto": (
        lambda d: _new(d, "--nlc-window", "1,3", "--nlc-pilot", "20"),
        "study.nlc_pilot = 20: must stay 100 unless nlc_window = 'auto'",
    ),
    "missing data root": (
        lambda d: [
            "run",
            "--dataset",
            "mnist",
            "--root",
            str(d["tmp"] / "no-mnist"),
            "--architectures",
            "2",
            "--out",
            str(d["new"]),
        ],
        "mnist",
    ),
    "root for generated data": (
        lambda d: [
            "run",
            "--dataset",
            "digits",
            "--root",
            str(d["other"]),
            "--architectures",
            "2",
            "--out",
            str(d["new"]),
        ],
        "load_dataset.root",
    ),
    "no out": (lambda d: ["run", "--dataset", "digits", "--architectures", "2"], "run: --out is required"),
    "missing config file": (
        lambda d: ["run", "--config", str(d["tmp"] / "none.yaml"), "--out", str(d["new"])],
        "run.config = ",
    ),
    "no dataset": (
        lambda d: ["run", "--architectures", "2", "--out", str(d["new"])],
        "study.dataset = None: is required",
    ),
    "out is no study": (lambda d: _new(d)[:-1] + [str(d["other"])], "exists and is not a study (no study.yaml)"),
    "out is a file": (lambda d: _new(d)[:-1] + [str(d["other"] / "notes.txt")], "is a file, not a study directory"),
    "other config": (
        lambda d: [
            "run",
            *sum(([f"--{k.replace('_', '-')}", str(v)] for k, v in {**KEYS, "param_budget": 4000}.items()), []),
            "--out",
            str(d["study"]),
        ],
        "is a study with a different param_budget (3000, asked 4000)",
    ),
    "resume no study": (lambda d: ["resume", str(d["other"])], "is not a study (no study.yaml)"),
    "resume nothing": (lambda d: ["resume", str(d["tmp"] / "nowhere")], "is not a study (no study.yaml)"),
    "resume bad override": (
        lambda d: ["resume", str(d["study"]), "--gpus-per-arch", "-1"],
        "study.resources.gpus_per_arch = -1.0",
    ),
    "status no study": (lambda d: ["status", str(d["other"])], "is not a study (no study.yaml)"),
    # every bad input refused before anything starts
    "seed beyond int64": (
        lambda d: _new(d, "--seed", str(10**40)),
        f"study.seed = {10**40}: must be an integer in [0, 9223372036854775807]",
    ),
    "a billion architectures": (
        lambda d: _new(d)[:4] + ["1000000000", "--out", str(d["new"])],
        "study.architectures = 1000000000: must be an integer in [1, 1000000]",
    ),
    "address refused": (lambda d: _new(d, "--address", "127.0.0.1:1"), "cannot reach Ray at 127.0.0.1:1"),
    "address refused, named": (
        lambda d: _new(d, "--address", "127.0.0.1:1"),
        "within 60 s: Connection refused; is the cluster up",
    ),
    "address unanswered": (
        lambda d: _new(d, "--address", "10.255.255.1:6379", "--connect-timeout", "0.5"),
        "cannot reach Ray at 10.255.255.1:6379 within 0.5 s: ",
    ),
    "address malformed": (
        lambda d: _new(d, "--address", "headnode"),
        "--address 'headnode': must be 'auto', host:port or ray://host:port",
    ),
    "connect timeout zero": (
        lambda d: _new(d, "--address", "127.0.0.1:1", "--connect-timeout", "0"),
        "run.connect_timeout = 0.0: must be a finite number in (0.0, inf)",
    ),
    "resume address refused": (
        lambda d: ["resume", str(d["study"]), "--address", "127.0.0.1:1"],
        "cannot reach Ray at 127.0.0.1:1",
    ),
    "config alias bomb": (
        lambda d: ["run", "--config", _file(d, "bomb.yaml", d["config bomb"]), "--out", str(d["new"])],
        "uses a YAML alias (*a) at line 5; an archstudy config takes none",
    ),
    "protocol alias bomb": (lambda d: _new(d, "--protocol", _file(d, "p.yaml", d["plain bomb"])), "run.protocol = "),
    "config over 1 MiB": (
        lambda d: ["run", "--config", _file(d, "big.yaml", "# " + "x" * (1 << 20) + "\n"), "--out", str(d["new"])],
        "is larger than 1 MiB",
    ),
    "resume alias-bomb study": (lambda d: ["resume", str(d["bomb"])], "uses a YAML alias"),
    "status alias-bomb study": (lambda d: ["status", str(d["bomb"])], "uses a YAML alias"),
    "report alias-bomb study": (
        lambda d: ["report", str(d["bomb"]), "--out", str(d["tmp"] / "r.html")],
        "uses a YAML alias",
    ),
    "sample budget below the smallest net": (
        lambda d: ["sample", "--param-budget", "1"],
        "sample.param_budget = 1: is too small for d_in 40, d_out 3",
    ),
    # a dimension larger than the budget names the dimension, not param_budget
    "sample a billion classes": (
        lambda d: ["sample", "--d-out", "1000000000"],
        "sample.d_out = 1000000000: must be at most param_budget (1,000,000)",
    ),
    "sample 1e11 classes": (
        lambda d: ["sample", "--d-out", str(10**11), "--param-budget", "3000"],
        f"sample.d_out = {10**11}: must be at most param_budget (3,000)",
    ),
    "sample a huge input": (
        lambda d: ["sample", "--d-in", "5000", "--param-budget", "3000"],
        "sample.d_in = 5000: must be at most param_budget (3,000)",
    ),
    "sample seed beyond int64": (lambda d: ["sample", "--seed", str(10**40)], "sample.seed = "),
    "datasets root missing": (
        lambda d: ["datasets", "--root", str(d["tmp"] / "no-such-folder")],
        "no-such-folder': must be a directory holding your data files; it does not exist",
    ),
    "datasets root is a file": (
        lambda d: ["datasets", "--root", str(d["other"] / "notes.txt")],
        "it is not a directory",
    ),
    "conflicting repeated dataset": (
        lambda d: _new(d, "--dataset", "digits"),
        "argument --dataset: given twice (waveform-noise, then digits); give it once",
    ),
    "conflicting repeated out": (
        lambda d: _new(d, "--out", str(d["tmp"] / "other-new")),
        "argument --out: given twice",
    ),
    "conflicting repeated study flag of resume": (
        lambda d: ["resume", str(d["study"]), "--max-retries", "1", "--max-retries", "2"],
        "argument --max-retries: given twice (1, then 2)",
    ),
    "pilot larger than the study": (
        lambda d: _new(d, "--nlc-window", "auto", "--nlc-pilot", "5"),
        "study.nlc_pilot = 5: must be less than architectures (2) with nlc_window = 'auto'",
    ),
    "default pilot larger than the study": (
        lambda d: _new(d, "--nlc-window", "auto"),
        "study.nlc_pilot = 100: must be less than architectures (2)",
    ),
    "a budget no worker can hold": (
        lambda d: _new(d, "--param-budget", str(10**13), "--protocol", "quick"),
        "an architecture needs about ",
    ),
    "data too small to split": (
        lambda d: _new(d, "--root", _waveform_file(d, 3)),
        "waveform-noise: the val split is empty (train/val/test = 1/0/2 points); a study needs",
    ),
    "a class without a training point": (
        lambda d: _new(d, "--root", _waveform_file(d, 40, classes=(0, 1))),
        "waveform-noise: class 2 of 3 has no point in the training split",
    ),
}


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own refusals (a value its type= cannot parse)
        return e.code


def _refused(argv, dirs, capsys, expected: str = "") -> str:
    """``argv`` exits 2 with one short line on stderr (no traceback), nothing on stdout, and every study
    directory byte for byte as it was."""
    before = {k: _snapshot(dirs[k]) for k in ("study", "other", "bomb")}
    assert _exit_code(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err and len(lines[0]) <= 1000, captured.err[:2000]
    assert lines[0].startswith(f"archstudy {argv[0]}: error: ") and expected in lines[0], lines[0]
    assert captured.out == ""
    assert {k: _snapshot(dirs[k]) for k in ("study", "other", "bomb")} == before
    assert not dirs["new"].exists()
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()  # refused up front: nothing (Ray, training) started
    return lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_changes_nothing(case, dirs, capsys):
    argv, expected = CASES[case]
    _refused(argv(dirs), dirs, capsys, expected)


# Every flag of `run` that sets a declared field, with each invalid example its constraint declares (those a
# command line can type), generated from the declarations as the spec's own tests are.
FLAGS = {
    "--architectures": ("architectures",),
    "--seed": ("seed",),
    "--param-budget": ("param_budget",),
    "--max-retries": ("max_retries",),
    "--checkpoint-every": ("checkpoint_every_s",),
    "--cpus-per-arch": ("resources", "cpus_per_arch"),
    "--gpus-per-arch": ("resources", "gpus_per_arch"),
}


def _declared_cases():
    from dataclasses import fields

    from archstudy.study.experiment.config import Resources

    declared = {f.name: f.metadata["constraint"] for f in fields(StudyConfig)}
    declared.update({f"resources.{f.name}": f.metadata["constraint"] for f in fields(Resources)})
    for flag, path in FLAGS.items():
        for bad in declared[".".join(path)].invalid_examples():
            if isinstance(bad, (int, float)) and not isinstance(bad, bool):
                yield pytest.param(flag, path[-1], bad, id=f"{flag}={bad!r}")


@pytest.mark.parametrize("flag, field, bad", list(_declared_cases()))
def test_every_declared_constraint_of_a_run_flag_is_refused_up_front(flag, field, bad, dirs, capsys):
    argv = _new(dirs, flag, str(bad))
    if flag == "--architectures":  # given once (a conflicting repeat is refused for itself)
        argv[argv.index(flag) : argv.index(flag) + 2] = []
    line = _refused(argv, dirs, capsys)
    assert f"{field} = " in line or f"argument {flag}: invalid int value: '{bad}'" in line, line


@pytest.mark.parametrize(
    "argv, prog, expected",
    [
        (["sample", "--n", "abc"], "archstudy sample", "argument --n: invalid int value: 'abc'"),
        (["bench", "--runs", "x"], "archstudy bench", "argument --runs: invalid int value: 'x'"),
        (
            ["report", "s", "--nlc-window", "x", "1"],
            "archstudy report",
            "argument --nlc-window: invalid float value: 'x'",
        ),
        (["report", "s", "--nlc-window", "1,x"], "archstudy report", "argument --nlc-window: invalid float value: 'x'"),
        (["datasets", "extra"], "archstudy", "unrecognized arguments: extra"),
        (["run", "extra", "--out", "x"], "archstudy", "unrecognized arguments: extra"),
        ([], "archstudy", "the following arguments are required: COMMAND"),
        (["bogus"], "archstudy", "argument COMMAND: invalid choice: 'bogus'"),
    ],
)
def test_argument_errors_of_every_command_are_one_line(argv, prog, expected, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err == f"{prog}: error: {err.split(': error: ', 1)[1]}"
    assert expected in err


def test_the_command_line_itself_prints_no_traceback(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "archstudy.study.cli",
            "run",
            "--dataset",
            "nope",
            "--architectures",
            "2",
            "--out",
            str(tmp_path / "s"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("archstudy run: error: study.dataset = 'nope'")
    assert not (tmp_path / "s").exists()


def test_no_arguments_is_the_example_and_flags_override_a_config_file(tmp_path):
    parser = build_parser()
    keys, out, example = config_of(parser.parse_args(["run"]))
    assert example and keys == EXAMPLE and out == EXAMPLE_OUT
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**KEYS, "space": StudyConfig(**KEYS).space}))
    keys, out, example = config_of(
        parser.parse_args(["run", "--config", str(cfg), "--seed", "9", "--preset", "paper", "--siblings", "--out", "o"])
    )
    assert not example and out == "o" and keys["seed"] == 9 and keys["siblings"] == "all"
    assert "space" not in keys and StudyConfig.from_dict(keys).preset == "paper"
    assert keys["param_budget"] == 3000 and keys["protocol"] == "quick"
    # --execution flags do not make a run leave the example: only study flags do.
    keys, out, example = config_of(parser.parse_args(["run", "--cpus-per-arch", "2"]))
    assert example


def test_which_defaults_a_run_takes_is_said_before_it_runs():
    """The example keeps its own scale; a study with flags takes the paper's defaults for what they leave out,
    and says so (docs/running.md, "The first run and a study")."""
    parser = build_parser()
    said = defaults_line(*config_of(parser.parse_args(["run"]))[::2])
    assert said.startswith(
        "no study flags: the example, 8 architectures on waveform-noise at 3,000 parameters, "
        "protocol quick capped at 15 epochs"
    )
    assert said.endswith("takes the paper's defaults instead: param_budget 1,000,000, protocol paper)")
    keys, _, example = config_of(
        parser.parse_args(["run", "--dataset", "digits", "--architectures", "2", "--out", "x"])
    )
    assert defaults_line(keys, example) == (
        "the paper's defaults for what the flags leave out: param_budget "
        "1,000,000, protocol paper (`--param-budget 3000 --protocol quick`: the "
        "example's scale)"
    )
    keys, _, example = config_of(
        parser.parse_args(["run", "--dataset", "digits", "--architectures", "2", "--protocol", "quick", "--out", "x"])
    )
    assert defaults_line(keys, example).startswith(
        "the paper's defaults for what the flags leave out: param_budget 1,000,000 ("
    )
    keys, _, example = config_of(
        parser.parse_args(
            [
                "run",
                "--dataset",
                "digits",
                "--architectures",
                "2",
                "--protocol",
                "quick",
                "--param-budget",
                "500",
                "--out",
                "x",
            ]
        )
    )
    assert defaults_line(keys, example) is None


def test_a_studys_own_yaml_is_a_template_for_a_new_study(dirs, tmp_path):
    """What archstudy recorded about the old study (data shape and fingerprint, version, creation time) is
    dropped from --config, so copying study.yaml and changing the seed starts a new study cleanly."""
    old = yaml.safe_load((dirs["study"] / "study.yaml").read_text())
    recorded = {
        "d_in": 7,
        "d_out": 9,
        "data_fingerprint": "0123456789abcdef",
        "package_version": "0.0.1",
        "created": "2020-01-01T00:00:00+00:00",
    }
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
    from archstudy.study.execution.driver import _named_execution

    assert _named_execution({"dataset": "digits", "architectures": 2}, {"cpus_per_arch": None}) == {}
    assert _named_execution(
        {**KEYS, "resources": {"gpus_per_arch": 0.5}, "max_retries": 4}, {"cpus_per_arch": 2.0, "root": None}
    ) == {"gpus_per_arch": 0.5, "max_retries": 4, "cpus_per_arch": 2.0}
    stored = StudyConfig(**KEYS, resources={"cpus_per_arch": 3}, max_retries=5).replace(d_in=40, d_out=3)
    kept = stored.with_execution(**_named_execution(KEYS, {"gpus_per_arch": 0.5}))
    assert kept.resources.cpus_per_arch == 3 and kept.resources.gpus_per_arch == 0.5 and kept.max_retries == 5
    assert _named_execution(StudyConfig(**KEYS), {}) == {
        "root": None,
        "max_retries": 2,
        "checkpoint_every_s": 300.0,
        "cpus_per_arch": 1.0,
        "gpus_per_arch": 0.0,
    }


def _run_on_read_only(directory: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """The command line with ``directory`` read-only: chmod for a user; for root (whom permissions do not stop)
    a read-only bind mount of it in a private mount namespace. Skips where neither can be had."""
    cli = [sys.executable, "-m", "archstudy.study.cli", *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if os.geteuid() != 0:
        mode = directory.stat().st_mode
        directory.chmod(0o555)
        try:
            return subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        finally:
            directory.chmod(mode)
    if shutil.which("unshare") is None:
        pytest.skip("root, and no unshare(1) to mount a read-only directory")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    probe = subprocess.run(
        [
            "unshare",
            "--mount",
            "sh",
            "-c",
            script,
            str(directory),
            "sh",
            "-c",
            'touch "$0/.probe" 2>/dev/null && exit 1 || exit 0',
            str(directory),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip(f"root, and no read-only mount here ({probe.stderr.strip()[:200]})")
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, str(directory), *cli],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("where", ["new study in it", "study it holds"])
def test_a_location_that_cannot_be_written_is_refused_before_anything_starts(where, dirs):
    """A read-only --out (or study) is one line, exit 2, before Ray or the data start: it was an OSError
    traceback after Ray had started."""
    ro = dirs["study"] if where == "study it holds" else dirs["other"]
    argv = ["resume", str(ro)] if where == "study it holds" else _new(dirs)[:-1] + [str(ro / "new")]
    before = _snapshot(ro)
    p = _run_on_read_only(ro, argv)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(
        f"archstudy {argv[0]}: error: {argv[-1]}: cannot write there ({ro} is not writable)"
    ), p.stderr
    assert _snapshot(ro) == before


# -- object-storage addresses: one line, exit 2, in a bounded time -----------------------------------------------------
# Credentials for pyarrow's S3 client (any will do: nothing answers), so it never asks EC2's metadata service.
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "archstudy-test",
    "AWS_SECRET_ACCESS_KEY": "archstudy-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _closed_port() -> int:
    """A local port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _object_storage_argv(command: str, uri: str, d) -> list[str]:
    return {
        "status": ["status", uri],
        "resume": ["resume", uri],
        "run": _new(d)[:-1] + [uri],
        "report": ["report", uri, "--out", str(d["tmp"] / "r.html")],
    }[command]


@pytest.mark.parametrize("command", ["status", "resume", "run", "report"])
@pytest.mark.parametrize(
    "where, expected",
    [
        ("s3://", "study location 's3://': names no bucket; an object-storage study is s3://BUCKET/PREFIX"),
        ("s3://?endpoint_override=127.0.0.1:9&scheme=http", "names no bucket"),
        (
            "closed port",
            ": cannot reach the study's storage (When getting information for key 'study/study.yaml' in "
            "bucket 'bucket': AWS Error NETWORK_CONNECTION",
        ),
    ],
)
def test_an_object_storage_address_without_a_bucket_or_an_answer_is_one_line(
    command, where, expected, dirs, capsys, monkeypatch
):
    """It was a pyarrow traceback (ArrowInvalid: Path cannot start with a separator; AWS Error NETWORK_CONNECTION)."""
    from archstudy.study.execution import location

    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    uri = (
        where
        if where != "closed port"
        else f"s3://bucket/study?endpoint_override=127.0.0.1:{_closed_port()}&scheme=http"
    )
    t0 = time.perf_counter()
    line = _refused(_object_storage_argv(command, uri, dirs), dirs, capsys, expected)
    assert uri in line and time.perf_counter() - t0 < location.wait_bound_s()


def test_an_endpoint_that_accepts_and_never_answers_fails_within_the_bound(dirs, capsys, monkeypatch):
    """A server that takes the connection and never says a word: each attempt gives up after STALL_S of silence,
    so the command ends within ATTEMPTS * (CONNECT_S + STALL_S), here made small."""
    from archstudy.study.execution import location

    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(location, "CONNECT_S", 1.0)
    monkeypatch.setattr(location, "STALL_S", 1.0)
    monkeypatch.setattr(location, "ATTEMPTS", 2)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)  # the kernel accepts the connections; nobody reads or answers
        uri = f"s3://bucket/study?endpoint_override=127.0.0.1:{server.getsockname()[1]}&scheme=http"
        t0 = time.perf_counter()
        line = _refused(["status", uri], dirs, capsys, f"{uri}: cannot reach the study's storage (")
        elapsed = time.perf_counter() - t0
    assert "Timeout was reached" in line and "gives up after at most 4 s" in line
    assert 2.0 <= elapsed < location.wait_bound_s() + 3.0, elapsed


# -- `report` leaves a corrupt result file out and says so; unreadable reproductions are named -------------------------
def test_report_leaves_a_corrupt_result_file_out_and_says_so(tmp_path, capsys):
    """It refused the whole study for one truncated file (status and resume already read on without it)."""
    import synthetic_study as synth

    root = synth.write_study(tmp_path / "s", n=6)
    broken = sorted((root / "architectures").glob("*.parquet"))[2]
    broken.write_bytes(broken.read_bytes()[:40])
    assert main(["report", str(root), "--out", str(tmp_path / "r.html"), "--n-boot", "5"]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert (
        f"<b>Unreadable:</b> 1 result file(s) left out of every number below, e.g. architectures/{broken.name}: "
        "not readable Parquet ("
    ) in html
    assert "5 of 6 planned architectures finished" in html
    assert broken.stat().st_size == 40  # left as it was: a resume redoes it


def test_report_reproductions_of_only_malformed_json_names_the_files(tmp_path, capsys):
    import synthetic_study as synth

    root = synth.write_study(tmp_path / "s", n=6)
    folder = tmp_path / "repro"
    folder.mkdir()
    (folder / "half.json").write_text('{"rows": [')
    (folder / "other.json").write_text('{"name": "not a reproduction"}')
    assert main(["report", str(root), "--out", str(tmp_path / "r.html"), "--reproductions", str(folder)]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "holds no reproduction results" in line, line
    assert "its JSON files are not: half.json (JSONDecodeError: " in line and "other.json (KeyError: " in line, line
    assert not (tmp_path / "r.html").exists()


def test_both_commands_read_an_nlc_window_in_the_same_forms():
    """One parser of the NLC window (``sampling.constraints.numbers_of``), one validation (the declared
    ``study.experiment.window_rule.WINDOW``): `run` and `report` take LO,HI and LO HI alike, and `run` also auto."""
    from archstudy.analysis.pruning import check_window

    parser = build_parser()
    for words in (["0.5,4"], ["0.5", "4"], ["0.5, 4"]):
        run = config_of(
            parser.parse_args(
                ["run", "--dataset", "digits", "--architectures", "2", "--out", "x", "--nlc-window", *words]
            )
        )[0]
        report = parser.parse_args(["report", "s", "--nlc-window", *words]).nlc_window
        assert StudyConfig.from_dict(run).nlc_window == (0.5, 4.0) == report == check_window(report)
    auto = config_of(
        parser.parse_args(
            [
                "run",
                "--dataset",
                "digits",
                "--architectures",
                "2",
                "--out",
                "x",
                "--nlc-window",
                "auto",
                "--nlc-pilot",
                "1",
            ]
        )
    )[0]
    assert StudyConfig.from_dict(auto).nlc_window == "auto"


@pytest.mark.parametrize("inside", ["inner", "checkpoints/nested", "architectures/sub", "failed/x/y"])
def test_a_new_study_inside_an_existing_one_is_refused_before_anything_is_written(inside, dirs, capsys):
    """`run --out STUDY/architectures/sub` made a study there (it broke pd.read_parquet(STUDY/architectures)): a
    study's directory and everything under it belong to that study."""
    where = dirs["study"] / inside
    line = _refused(_new(dirs)[:-1] + [str(where)], dirs, capsys, f"lies inside the study {dirs['study']}")
    assert str(where) in line and not where.exists()


@pytest.mark.parametrize("command", ["status", "resume", "run", "report"])
@pytest.mark.parametrize(
    "uri, expected",
    [
        (
            "s3://bucket/x/../study?endpoint_override=127.0.0.1:9&scheme=http",
            "its path holds a '..', '.' or empty segment, which the object store resolves for one object but not "
            "for a listing: write s3://bucket/study?endpoint_override=127.0.0.1:9&scheme=http",
        ),
        ("s3://bucket//study?endpoint_override=127.0.0.1:9&scheme=http", "write s3://bucket/study?"),
        ("s3://bucket/./study/?endpoint_override=127.0.0.1:9&scheme=http", "write s3://bucket/study?"),
        ("s3://bucket/../other?endpoint_override=127.0.0.1:9&scheme=http", "it leaves the bucket 'bucket'"),
        (
            "s3://bucket/study?endpoint_override=127.0.0.1:99999&scheme=http",
            "endpoint_override='127.0.0.1:99999': not HOST or HOST:PORT with a port from 1 to 65535",
        ),
        ("s3://bucket/study?endpoint_override=127.0.0.1:x&scheme=http", "endpoint_override='127.0.0.1:x'"),
        ("s3:bucket/study", "a s3: URI without '//'; write s3://BUCKET/PREFIX (or ./s3:bucket/study"),
        ("gs:/bucket/study", "a gs: URI without '//'; write gs://BUCKET/PREFIX"),
    ],
)
def test_a_study_uri_that_would_open_somewhere_else_is_one_line(command, uri, expected, dirs, capsys, monkeypatch):
    """A non-normalized URI made a finished study look unfinished (the store resolves x/../ab1 for one object, not
    for a listing: status said 0 finished, resume recomputed and overwrote committed objects); `s3:bucket/x` ran a
    local directory ./s3:bucket/x; port 99999 connected elsewhere. Refused before any request, for every command
    that opens a study location."""
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(dirs["tmp"])
    before = sorted(p.name for p in dirs["tmp"].iterdir())
    line = _refused(_object_storage_argv(command, uri, dirs), dirs, capsys, expected)
    assert f"study location {uri!r}" in line
    assert sorted(p.name for p in dirs["tmp"].iterdir()) == before  # no ./s3:bucket


def test_a_file_uri_is_normalized_as_a_local_path_is(tmp_path):
    study = tmp_path / "s"
    Store(study).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    (tmp_path / "x").mkdir()
    for location in (f"file://{tmp_path}/x/../s", f"file://{tmp_path}//s/", f"{tmp_path}/./x/../s"):
        store = Store(location)
        assert store.root == str(study) and store.is_study()


@pytest.mark.parametrize("flag, name", [("--config", "fifo"), ("--protocol", "fifo.yaml"), ("--config", "null")])
def test_a_config_file_that_is_no_regular_file_is_refused_not_waited_on(flag, name, dirs, capsys):
    """`--config FIFO` (or `--protocol FIFO`) waited forever for a writer; only a regular file is read."""
    import signal

    path = "/dev/null" if name == "null" else str(dirs["tmp"] / name)
    if name != "null":
        os.mkfifo(path)

    def hung(signum, frame):
        raise AssertionError(f"{flag} {path}: still waiting after 20 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        line = _refused(_new(dirs, flag, path), dirs, capsys, "is not a regular file (a FIFO, a device or a socket)")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert f"run.{flag[2:]} = {path!r}" in line


@pytest.mark.parametrize(
    "flag, text, expected",
    [
        (
            "--config",
            "architectures: 2\nseed: 1\narchitectures: 5\n",
            "gives the key 'architectures' twice, at lines 1 and 3",
        ),
        ("--protocol", "preset: quick\nnum_lrs: 2\nnum_lrs: 3\n", "gives the key 'num_lrs' twice, at lines 2 and 3"),
        ("--protocol", "{num_lrs: 2, lrs: [0.1, 0.2, 0.3]}\n", "Protocol.num_lrs = 2: must be len(lrs) = 3"),
        ("--protocol", "{preset: nosuch, num_lrs: 2}\n", "Protocol.preset = 'nosuch': must be one of 'paper', 'adam'"),
    ],
)
def test_a_config_file_that_repeats_or_contradicts_a_key_is_refused(flag, text, expected, dirs, capsys):
    _refused(_new(dirs, flag, _file(dirs, "c.yaml", text)), dirs, capsys, expected)
