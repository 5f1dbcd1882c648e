"""``archstudy serve``: it listens on 127.0.0.1 by default and serves the study's state, Ctrl-C ends it in one line
with exit code 0, and a port in use, a bad port or interval, or a directory that is no study is one line naming
what is wrong, no traceback. (The page itself: tests/analysis/test_live_view.py.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import urllib.request

import pytest

from archstudy.study.cli import build_parser, main

import synthetic_study as synth


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return synth.write_study(tmp_path_factory.mktemp("serve") / "study", n=4)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_error(err: str) -> str:
    """The error line of a command's stderr: its last, after at most the line saying what it was starting."""
    lines = err.splitlines()
    assert 1 <= len(lines) <= 2 and lines[-1].startswith("archstudy serve: error: ") and "Traceback" not in err, err
    return lines[-1]


def test_the_default_address_is_this_machine_only():
    args = build_parser().parse_args(["serve", "STUDY"])
    assert (args.host, args.port) == ("127.0.0.1", 8765)


def test_it_serves_the_study_on_loopback_and_ctrl_c_ends_it_in_one_line(study, capsys):
    port, seen = free_port(), {}

    def client():  # once the server answers: read the state, then press Ctrl-C
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data.json?since=0", timeout=5) as r:
                    seen.update(json.loads(r.read()))
                break
            except OSError:
                time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=client)
    t.start()
    rc = main(["serve", str(study), "--port", str(port), "--every", "0.5"])
    t.join()
    out, err = capsys.readouterr()
    assert rc == 0
    assert f"http://127.0.0.1:{port}/" in out
    assert err.splitlines()[-1] == "archstudy serve: stopped" and "Traceback" not in err
    assert seen["progress"]["finished"] == 4 and seen["version"] == 1
    with pytest.raises(OSError):  # the port was let go
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


def test_a_port_in_use_is_one_line(study, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(study), "--port", str(port)]) == 2
    err = one_error(capsys.readouterr().err)
    assert f"--port = {port}: is in use on 127.0.0.1" in err and "--port 0" in err


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--port", "70000"], "serve.--port = 70000"),
        (["--port", "0", "--every", "0"], "serve.--every = 0.0"),
        (["--port", "0", "--host", "300.1.2.3"], "serve.--host = '300.1.2.3'"),
    ],
)
def test_bad_flags_are_one_line_naming_the_flag(study, capsys, flags, field):
    assert main(["serve", str(study), *flags]) == 2
    assert field in one_error(capsys.readouterr().err)


def test_a_directory_that_is_no_study_is_one_line(tmp_path, capsys):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not a study")
    for path in (tmp_path / "other", tmp_path / "other" / "notes.txt"):
        assert main(["serve", str(path)]) == 2
        err = one_error(capsys.readouterr().err)
        assert "serve.STUDY" in err and "study.yaml" in err


def test_a_study_not_started_yet_is_waited_for_saying_so(tmp_path):
    """``serve`` started before ``run``: no directory yet, then an empty one, then its study.yaml; it waits, says so
    once, and returns once study.yaml is there."""

    from archstudy.study.cli.serve import _open_study

    study = tmp_path / "s"
    said: list[str] = []

    def start():  # what `run` does first: the directory, then study.yaml
        time.sleep(0.2)
        study.mkdir()
        time.sleep(0.2)
        (study / "study.yaml").write_text("dataset: waveform-noise\n")

    t = threading.Thread(target=start)
    t.start()
    began = time.monotonic()
    _open_study(str(study), said.append, poll_s=0.05)
    t.join()
    assert (study / "study.yaml").exists() and 0.3 < time.monotonic() - began < 10
    assert said == [f"{study} holds no study yet: waiting for a study to start there (Ctrl-C to stop)"]
