"""Every command against the same faults of the file system and the object store: one line on stderr, exit code 2,
no traceback, no hang, and nothing stored changed (``study.cli.main``, the one error boundary).

The faults: a path component over 255 bytes, a file of the wrong type where the study keeps another (``.lock`` a
directory or a FIFO, ``checkpoints`` or ``architectures`` a regular file, ``study.yaml`` a FIFO), a read-only
(immutable) directory to write in, an object-storage endpoint that refuses, a ``s3:`` URI without ``//`` and one
that names no bucket. Before, most of them ended in an ``OSError`` or ``ArrowInvalid`` traceback (``top`` and
``rank`` on an unreachable endpoint, ``checkpoints`` a file for every command), ``report`` on ``s3:bucket/x``
opened a local path, and a FIFO at ``.lock`` hung ``status`` and ``resume`` forever."""

import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from process_state import alive

from archstudy.study.cli import main, system_error_line
from archstudy.study.execution.store import Store
from archstudy.study.experiment.config import StudyConfig

KEYS = {"dataset": "waveform-noise", "architectures": 3, "param_budget": 3000, "protocol": "quick", "seed": 5}
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "archstudy-test",
    "AWS_SECRET_ACCESS_KEY": "archstudy-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
LONG = "x" * 300  # one path component over the 255 bytes of NAME_MAX
HANG_S = 60  # a command still running after this long hangs (a FIFO waited on)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A tiny study (its study.yaml and a failure record), made once and copied for each fault."""
    root = tmp_path_factory.mktemp("faults") / "study"
    Store(root).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))
    (root / "failed").mkdir()
    (root / "failed" / "000001-0123456789abcdef.json").write_text('{"reason": "x", "attempts": 1}\n')
    return root


def _study(tmp: Path, base: Path, fault) -> str:
    study = tmp / "study"
    shutil.copytree(base, study)
    fault(study)
    return str(study)


def _replace_by_file(study: Path, name: str) -> None:
    path = study / name
    if path.is_dir():
        shutil.rmtree(path)
    path.write_text("not a directory\n")


def _replace_by_dir(study: Path, name: str) -> None:
    (study / name).unlink(missing_ok=True)
    (study / name).mkdir()


def _replace_by_fifo(study: Path, name: str) -> None:
    (study / name).unlink(missing_ok=True)
    os.mkfifo(study / name)


# fault -> how its location is made (tmp, base) -> the study location the commands are given
LOCATIONS = {
    "name over 255 bytes": lambda tmp, base: str(tmp / LONG / "study"),
    ".lock a directory": lambda tmp, base: _study(tmp, base, lambda s: _replace_by_dir(s, ".lock")),
    ".lock a FIFO": lambda tmp, base: _study(tmp, base, lambda s: _replace_by_fifo(s, ".lock")),
    "study.yaml a FIFO": lambda tmp, base: _study(tmp, base, lambda s: _replace_by_fifo(s, "study.yaml")),
    "checkpoints a file": lambda tmp, base: _study(tmp, base, lambda s: _replace_by_file(s, "checkpoints")),
    "architectures a file": lambda tmp, base: _study(tmp, base, lambda s: _replace_by_file(s, "architectures")),
    "unreachable s3://": lambda tmp, base: (
        f"s3://bucket/study?endpoint_override=127.0.0.1:{_closed_port()}&scheme=http"
    ),
    "s3: without //": lambda tmp, base: "s3:bucket/study",
    "s3:// without a bucket": lambda tmp, base: "s3://?endpoint_override=127.0.0.1:9&scheme=http",
}

# command -> its argv on a study location (run: the study's own config, so that it continues the study)
COMMANDS = {
    "status": lambda loc, tmp: ["status", loc],
    "top": lambda loc, tmp: ["top", loc],
    "report": lambda loc, tmp: ["report", loc, "--out", str(tmp / "r.html"), "--n-boot", "5"],
    "resume": lambda loc, tmp: ["resume", loc],
    "run": lambda loc, tmp: [
        "run",
        *("--dataset", KEYS["dataset"], "--architectures", "3", "--param-budget", "3000"),
        *("--protocol", "quick", "--seed", "5", "--out", loc),
    ],
    "rank": lambda loc, tmp: ["rank", "--from", loc, "--architectures", "2", "--out", str(tmp / "ranked")],
}

# (fault, command) -> what the line says; a fault a command never meets (top never opens the lock) is absent
TOO_LONG = "File name too long: a name in the path is over 255 bytes"
NOT_A_DIRECTORY = "a file stands where"
EXPECTED: dict[tuple[str, str], str] = {}
for _command in COMMANDS:
    EXPECTED[("name over 255 bytes", _command)] = TOO_LONG
    EXPECTED[("study.yaml a FIFO", _command)] = "study.yaml"
    EXPECTED[("checkpoints a file", _command)] = "/checkpoints"
    EXPECTED[("architectures a file", _command)] = "/architectures"
    EXPECTED[("unreachable s3://", _command)] = ": cannot reach the study's storage (When getting information"
    EXPECTED[("s3: without //", _command)] = "study location 's3:bucket/study': a s3: URI without '//'"
    EXPECTED[("s3:// without a bucket", _command)] = "names no bucket; an object-storage study is s3://BUCKET/PREFIX"
for _command in ("status", "resume", "run"):
    EXPECTED[(".lock a directory", _command)] = "/.lock: the study's driver lock is a directory, not a regular file"
    EXPECTED[(".lock a FIFO", _command)] = "/.lock: the study's driver lock is a FIFO, a device or a socket"


def _tree(path: Path) -> dict:
    """Every entry under ``path`` (links not followed, FIFOs not opened): its type, and a regular file's digest."""
    out = {}
    if not path.exists():
        return out
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(folder) / name
            mode = p.lstat().st_mode
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(mode) else ""
            out[str(p.relative_to(path))] = (stat.S_IFMT(mode), digest)
    return out


def _one_line(argv: list[str], capsys, tmp: Path) -> str:
    """``argv`` exits 2 within HANG_S with one line on stderr and nothing on stdout, and leaves ``tmp`` as it was."""

    def hung(signum, frame):
        raise AssertionError(f"{argv}: still running after {HANG_S} s")

    before = _tree(tmp)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    if argv[0] == "run":  # run says what it plans first ("archstudy: planning ...", study.cli.run), then refuses
        lines = [line for line in lines if not line.startswith("archstudy: ")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, (code, captured.err[-3000:])
    assert lines[0].startswith(f"archstudy {argv[0]}: error: ") and captured.out == "", captured
    assert _tree(tmp) == before
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()  # refused before Ray or any training started
    return lines[0]


@pytest.mark.parametrize("fault, command", sorted(EXPECTED))
def test_every_command_meets_a_fault_with_one_line_and_changes_nothing(
    fault, command, base, tmp_path, capsys, monkeypatch
):
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)  # `s3:bucket/study` would be the local directory ./s3:bucket/study
    location = LOCATIONS[fault](tmp_path, base)
    line = _one_line(COMMANDS[command](location, tmp_path), capsys, tmp_path)
    assert EXPECTED[(fault, command)] in line, line
    if fault.endswith(" a file"):
        assert NOT_A_DIRECTORY in line, line


@pytest.fixture
def read_only(tmp_path):
    """A directory nothing can be created in: chmod for a user; for root (whom permissions do not stop) the
    immutable attribute (chattr +i), which stops root too. Skips where neither can be had."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("root, and no immutable attribute (chattr +i) on this file system")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


WRITES = {
    "report --out": (
        lambda s, ro, tmp: ["report", s, "--out", str(ro / "r.html"), "--n-boot", "5"],
        "(while reading the studies and writing the report)",
    ),
    "reproduce --out": (
        lambda s, ro, tmp: ["reproduce", "all", "--scale", "tiny", "--out", str(ro / "out")],
        str(Path("read-only") / "out"),
    ),
}


@pytest.mark.parametrize("what", sorted(WRITES))
def test_a_read_only_place_to_write_is_one_line(what, read_only, base, tmp_path, capsys):
    """`report --out` into an immutable directory was a PermissionError traceback."""
    argv, expected = WRITES[what]
    study = _study(tmp_path, base, lambda s: None)
    line = _one_line(argv(study, read_only, tmp_path), capsys, tmp_path)
    assert expected in line and str(read_only) in line, line


@pytest.mark.parametrize(
    "argv, expected",
    [
        (lambda tmp: ["datasets", "--root", str(tmp / LONG)], TOO_LONG),
        (lambda tmp: ["reproduce", "all", "--scale", "tiny", "--out", str(tmp / LONG)], TOO_LONG),
        (
            lambda tmp: ["reproduce", "all", "--scale", "tiny", "--out", str(tmp / "study" / "study.yaml")],
            "is a file: give a directory",
        ),
    ],
)
def test_the_commands_without_a_study_meet_the_same_faults(argv, expected, base, tmp_path, capsys):
    _study(tmp_path, base, lambda s: None)
    assert expected in _one_line(argv(tmp_path), capsys, tmp_path)


def test_debug_prints_the_traceback_as_well(base, tmp_path, capsys):
    study = _study(tmp_path, base, lambda s: _replace_by_file(s, "checkpoints"))
    assert main(["status", study, "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "NotADirectoryError" in err
    assert err.strip().splitlines()[-1].startswith("archstudy status: error: ")
    assert main(["--debug", "status", study]) == 2 and "Traceback" in capsys.readouterr().err


def test_a_system_error_is_named_by_its_path_what_was_done_and_why():
    """Python's own errors carry the path; pyarrow's quote it in the message with an errno in its detail."""
    python = FileNotFoundError(2, "No such file or directory", "/s/architectures/x.parquet")
    assert system_error_line(python, "status") == (
        "/s/architectures/x.parquet: No such file or directory: it does not exist (while reading the study)"
    )
    arrow = NotADirectoryError("Cannot list directory '/s/checkpoints'. Detail: [errno 20] Not a directory")
    assert system_error_line(arrow, "resume") == (
        "/s/checkpoints: Not a directory: a file stands where a directory is expected (listing it, while resuming "
        "the study)"
    )
    renamed = OSError(28, "No space left on device", "/s/.x.tmp", None, "/s/x")
    assert system_error_line(renamed, "report").startswith("/s/.x.tmp -> /s/x: No space left on device: the disk")
    assert system_error_line(MemoryError(), "report").startswith("out of memory while reading the studies")


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--n-boot", "1000000000000"], "report.n_boot = 1000000000000: must be an integer in [0, 100000]"),
        (["--out", "report.html"], "report.out = 'report.html': is a directory: give the HTML file to write"),
    ],
)
def test_report_bounds_what_it_asks_for_before_it_reads_a_study(extra, expected, base, tmp_path, capsys, monkeypatch):
    """`--n-boot 10**12` asked numpy for 21.8 TiB (ArrayMemoryError); `--out` a directory failed after the whole
    analysis. Both are refused before any study is read (the study here is a file, which reading would refuse)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.html").mkdir()
    (tmp_path / "not-read").write_text("x")
    line = _one_line(["report", str(tmp_path / "not-read"), *extra], capsys, tmp_path)
    assert expected in line, line


@pytest.mark.parametrize("folder, suffix", [("checkpoints", ".pt"), ("architectures", ".parquet")])
def test_a_directory_where_a_unit_writes_a_file_is_refused_before_anything_runs(folder, suffix, base, tmp_path, capsys):
    """A directory at checkpoints/<name>.pt failed every attempt of that architecture, on every resume."""
    from archstudy.study.execution.unit import work_units

    study = Path(_study(tmp_path, base, lambda s: None))
    name = work_units(Store(study).read_config())[1].name
    (study / folder).mkdir(exist_ok=True)
    (study / folder / f"{name}{suffix}").mkdir()
    (study / ".lock").touch()  # a driver's lock, as every driver leaves it: the refusal itself changes nothing
    line = _one_line(["resume", str(study)], capsys, tmp_path)
    assert f"{study}/{folder}/{name}{suffix}: not a file, where the study writes one of an architecture's" in line


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals and /proc are Linux's")
def test_the_reports_workers_die_with_a_killed_report(tmp_path):
    """After SIGKILL of `archstudy report`, its two forked workers stayed alive and ignored SIGTERM: each now gets
    SIGKILL when the report's process dies (study.cli.children_die_with_the_command)."""
    import time

    import synthetic_study as synth

    root = synth.write_study(tmp_path / "s", n=40)
    cli = [sys.executable, "-m", "archstudy.study.cli", "report", str(root), "--out", str(tmp_path / "r.html")]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    report = subprocess.Popen([*cli, "--n-boot", "20"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        children: set[int] = set()
        while not children and report.poll() is None and time.monotonic() < deadline:
            children = _children(report.pid)
            time.sleep(0.05)
        if not children:
            pytest.skip("the report forked no worker here (one CPU, or it ended first)")
        report.kill()
        report.wait()
        deadline = time.monotonic() + 10
        while any(alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(c) for c in children), children
    finally:
        if report.poll() is None:
            report.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals and /proc are Linux's")
def test_a_worker_started_with_die_with_parent_dies_with_a_killed_parent():
    """The helper for commands whose workers are started with exec (``reproduce all``'s): ``preexec_fn``."""
    import time

    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; from archstudy.study.execution.lifetime import die_with_parent; "
            "p = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent); print(p.pid, flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    worker = int(parent.stdout.readline())
    assert alive(worker)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)


def _warning_command(args):
    """A command that warns as archstudy's own code and as a library's, and starts a process that warns."""
    import warnings

    import numpy as np

    from archstudy.study.datasets import images

    warnings.warn_explicit("could not write the cache file /x: disk full", UserWarning, images.__file__, 140)
    np.log(np.array([-1.0]))  # numpy's "invalid value encountered in log"
    warnings.warn_explicit("a library's deprecation", DeprecationWarning, np.__file__, 1)
    child = subprocess.run(
        [sys.executable, "-c", "import warnings; warnings.warn('from a worker')"], capture_output=True, text=True
    )
    sys.stderr.write(child.stderr)
    return 0


@pytest.mark.parametrize("debug", [False, True])
def test_only_archstudys_own_warnings_reach_the_terminal_as_one_line_unless_debug(debug, capsys, monkeypatch):
    """Python's, numpy's and the libraries' warning lines (two lines each: where, and the source line) came out
    around the results and errors; now a user sees archstudy's own as one line, and the rest only with --debug."""
    import archstudy.study.cli.datasets as datasets

    monkeypatch.setattr(datasets, "command", _warning_command)
    before = os.environ.get("PYTHONWARNINGS")
    assert main(["datasets", *(["--debug"] if debug else [])]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "archstudy datasets: warning: could not write the cache file /x: disk full"
    if debug:
        joined = "\n".join(err[1:])
        assert "RuntimeWarning: invalid value encountered in log" in joined and "from a worker" in joined
        assert "DeprecationWarning: a library's deprecation" in joined
    else:
        assert err == err[:1]
    assert os.environ.get("PYTHONWARNINGS") == before


@pytest.mark.parametrize(
    "argv, name, shown",
    [
        (["run", "--dataset", "waveform-noise", "--out", "studies/a\nb"], "--out", "'studies/a\\nb' holds a newline"),
        (["status", "s\x1b[2Jx"], "STUDY", "holds the control character '\\x1b'"),
        (["report", "ok", "s\tx", "--out", "r.html"], "STUDY_DIR", "holds a tab"),
        (["reproduce", "all", "--out", "o\rp"], "--out", "holds a carriage return"),
        (["rank", "--from", "s", "--out", "x\x7f"], "--out", "holds the control character '\\x7f'"),
        (["top", "s", "--config", "a\nb"], None, None),  # top takes no --config: refused by argparse as before
    ],
)
def test_a_control_character_in_any_argument_is_refused_in_one_line_naming_it(argv, name, shown, tmp_path, capsys):
    """A newline in --out split the last line of every message naming the path (and made a directory no shell lists
    plainly): every command refuses such a value in its argument parsing, naming the argument and the character."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1, err
    if name is not None:
        assert err.startswith(f"archstudy {argv[0]}: error: argument {name}: ") and shown in err, err


def test_report_writes_beside_one_study_by_default_and_here_for_several(monkeypatch, tmp_path):
    """`run --report` wrote STUDY/report.html and `report STUDY` ./report.html: one study's report now goes beside
    its files in both; several studies' (no one study holds them) and an object-storage study's to ./report.html."""
    from archstudy.study.cli.report import default_out

    assert default_out([str(tmp_path / "s")]) == str(tmp_path / "s" / "report.html")
    assert default_out(["studies/wave"]) == os.path.join("studies/wave", "report.html")
    assert default_out(["studies/wave", "studies/digits"]) == "report.html"
    assert default_out(["s3://bucket/studies/wave?endpoint_override=x"]) == "report.html"
    seen = {}
    monkeypatch.setattr("archstudy.analysis.write_report", lambda dirs, out, **kw: seen.setdefault("out", out))
    assert main(["report", str(tmp_path / "s"), "--n-boot", "5"]) == 0
    assert seen["out"] == str(tmp_path / "s" / "report.html")
