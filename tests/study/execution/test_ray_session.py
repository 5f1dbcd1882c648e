"""study.execution.ray_session leaves the process's SIGTERM handler as it found it (ray.init installs its own),
keeping the caller's Python handler during the session (the CLI's SIGTERM-as-Ctrl-C); its reaper ends what a killed
driver's session started, and nothing after a normal end."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray
from process_state import alive

from archstudy.study.execution.ray_session import ray_session


def test_the_callers_sigterm_handler_is_kept_during_and_after_the_session():
    if ray.is_initialized():
        pytest.skip("a Ray session of another test is up: ray_session would not start its own")

    def mine(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with ray_session() as embedded:
            assert embedded and ray.is_initialized()
            assert signal.getsignal(signal.SIGTERM) is mine
        assert not ray.is_initialized() and signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with ray_session():
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # Ray's own, which exits
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize(
    "asked, env, expected",
    [
        (None, None, "local"),  # never the cluster a `ray start` on this machine recorded in /tmp/ray
        (None, "10.0.0.1:6379", "10.0.0.1:6379"),  # a Ray job's driver: the cluster it was submitted to
        ("auto", "10.0.0.1:6379", "10.0.0.1:6379"),  # auto: the user's own cluster, RAY_ADDRESS first (as Ray's)
        ("10.0.0.2:6379", "10.0.0.1:6379", "10.0.0.2:6379"),  # an address given wins
    ],
)
def test_the_embedded_ray_is_a_new_local_one_unless_an_address_is_given(monkeypatch, asked, env, expected):
    if ray.is_initialized():
        pytest.skip("a Ray session of another test is up: ray_session would not start its own")
    seen = {}

    class Stop(BaseException):  # not an Exception: the session's boundary makes those one line (below)
        pass

    def init(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(ray, "init", init)
    if env is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", env)
    with pytest.raises(Stop):
        with ray_session(asked):
            pass
    assert seen["address"] == expected


@pytest.mark.parametrize(
    "error", [OSError(27, "File too large"), RuntimeError("Failed to start the GCS"), ConnectionError("refused")]
)
def test_every_failure_of_ray_s_start_is_one_line(monkeypatch, error):
    """Ray's start under a file-size limit raised an OSError past the boundary (a 40-line traceback)."""
    from archstudy.sampling import UserError

    if ray.is_initialized():
        pytest.skip("a Ray session of another test is up: ray_session would not start its own")

    def init(**kwargs):
        raise error

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(UserError) as e:
        with ray_session():
            pass
    assert str(e.value) == f"cannot start or reach Ray locally: {type(error).__name__}: {error}"


# A driver that holds a reaped session (``_reaped_on_exit``, no Ray: the mechanism alone) and starts three processes:
# a child whose environment lacks the session's marker (as a Ray agent's, overwritten by its process title: found
# only by the reaper's watch of what is below the driver), and an orphan (``sleep &`` of a shell that exits: no longer
# below the driver, found only by the marker). It prints their pids, waits a second (the reaper looks every quarter
# of one), then ends as it is told: killed, or leaving the session normally.
DRIVER = """
import os, subprocess, sys, time
from archstudy.study.execution.ray_session import _reaped_on_exit
with _reaped_on_exit():
    child = subprocess.Popen(["sleep", "60"], env={"PATH": os.environ["PATH"]})
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, text=True)
    orphan = int(shell.stdout.readline())
    shell.wait()
    time.sleep(1)
    print(child.pid, orphan, flush=True)
    if sys.argv[1] == "killed":
        time.sleep(60)
print("left", flush=True)
"""


def _driver(end: str) -> tuple[subprocess.Popen[str], list[int]]:
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, end],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    return proc, [int(p) for p in proc.stdout.readline().split()]  # type: ignore[union-attr]


def _gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper reads /proc")
def test_the_reaper_ends_what_a_killed_driver_started_and_nothing_after_a_normal_end():
    """SIGKILL of the driver: the child and the orphan end within a few seconds (SIGTERM, then SIGKILL a second
    later). A driver that leaves the session itself (after Ray's own shutdown) has them touched by no one."""
    proc, pids = _driver("killed")
    try:
        assert len(pids) == 2 and all(alive(p) for p in pids)
        proc.kill()
        proc.wait()
        assert _gone(pids, 10), [p for p in pids if alive(p)]
    finally:
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
    proc, pids = _driver("normal")
    try:
        assert proc.stdout.readline() == "left\n" and proc.wait(30) == 0  # type: ignore[union-attr]
        time.sleep(1.5)
        assert all(alive(p) for p in pids)
    finally:
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
