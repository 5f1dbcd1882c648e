"""Ctrl-C and SIGTERM end every command within 5 s, whatever it is doing (a FIFO at driver.json would hold
`status` in pyarrow's open, where no Python handler runs). Each signal is sent during each kind of blocking step, in a
command run as the process's entry point: a read stuck in C (where no Python handler runs: the command's deadline,
``study.execution.interrupts.deadline``, ends it), a network wait on object storage that never answers (``reach``'s
wait, which the interrupt ends at once), and a step busy in Python (the handler's KeyboardInterrupt). The steps are
stand-ins put in place of a command's own (a fake blocking step, not a real study), so each case costs a process's
start and the wait."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[3]
ENDS_WITHIN_S = 5.0

# Run as `archstudy status STUDY` with one step replaced; the marker file appears when the step has begun.
SCRIPT = r"""
import os, sys
marker, step, fifo = sys.argv[1:4]
sys.argv = ["archstudy", *sys.argv[4:]]
from archstudy.study import cli
from archstudy.study.execution.store import Store

def begun():
    open(marker, "w").close()

if step == "read stuck in C":
    import pyarrow.fs as pafs
    def read_config(self):
        begun()
        with pafs.LocalFileSystem().open_input_stream(fifo) as f:  # waits in C for a writer that never comes
            f.read()
    Store.read_config = read_config
elif step == "network wait":
    reach = Store.reach
    def waiting_reach(self):
        begun()
        reach(self)
    Store.reach = waiting_reach
else:  # busy in Python
    def read_config(self):
        begun()
        while True:
            sum(range(1000))
    Store.read_config = read_config
sys.exit(cli.main())
"""

STEPS = ("read stuck in C", "network wait", "busy in Python")


@pytest.fixture(scope="module")
def silent_endpoint():
    """An endpoint that accepts connections and never answers (the kernel accepts; nobody reads)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield server.getsockname()[1]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("step", STEPS)
def test_each_signal_during_each_blocking_step_ends_the_command_within_5_s(step, signum, tmp_path, silent_endpoint):
    fifo, marker = tmp_path / "fifo", tmp_path / "begun"
    os.mkfifo(fifo)
    study = (
        f"s3://bucket/study?endpoint_override=127.0.0.1:{silent_endpoint}&scheme=http"
        if step == "network wait"
        else str(tmp_path / "study")
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(marker), step, str(fifo), "status", study],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the step never began"
            time.sleep(0.02)
        time.sleep(0.3)  # well inside the step
        t0 = time.monotonic()
        os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = err.decode()
    assert took < ENDS_WITHIN_S, (took, err)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "archstudy status: interrupted" and "Traceback" not in err, err
