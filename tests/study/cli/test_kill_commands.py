"""A command killed outright (SIGKILL: no handler runs, nothing is shut down) leaves no process of its own running,
nothing stored damaged, and the next invocation works: ``run`` on the embedded Ray it started, ``rank`` while it
measures its fresh architectures, ``reproduce all`` while its workers run (one of them a study on its own Ray).

Each command is started as the leader of a new session, so every process it starts, Ray's included, is found by its
session id (/proc), and only those are ever killed here. Before, the raylet's two agents of a killed ``run`` lived
about a minute (62 s on the 2-core dev machine), its Ray workers 25 s: Ray ends an agent only once it has failed to
tell the (dead) GCS that its raylet died (``study.execution.ray_session._reap`` now ends them within about a
second)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from process_state import session
from study_commands import cli, new_run

from archstudy.study.cli import main

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions read from /proc are Linux's"),
    pytest.mark.slow,  # each starts an embedded Ray at least once (12 s, 31 s and 50 s at load 14 on 2 cores)
]

GONE_S = 10  # every process of a killed command has ended within this long (before: about a minute)
START_S = 240  # a command reaches the moment it is killed at within this long


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    return cli(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> list[tuple[int, str]]:
    """SIGKILL ``proc`` once ``ready()``; return what of its session is still alive ``GONE_S`` later (waiting less
    when it is empty sooner). Whatever is left is killed afterwards: only this test's processes."""
    try:
        deadline = time.monotonic() + START_S
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"never reached {what}: {proc.communicate()[1].decode()[-2000:]}")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + GONE_S
        while session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        return session(proc.pid)
    finally:
        for pid, _ in session(proc.pid):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _ray_agents_up(sid: int) -> Callable[[], bool]:
    """Whether the raylet's two agents have been up for a second (the reaper looks every quarter of a second)."""
    since: list[float] = []

    def up() -> bool:
        names = " ".join(cmd for _, cmd in session(sid))
        if "ray::DashboardAgent" not in names or "ray::RuntimeEnvAgent" not in names:
            return False
        since[:] = since or [time.monotonic()]
        return time.monotonic() - since[0] > 1.0

    return up


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_a_killed_run_leaves_no_ray_process_of_its_own(tmp_path):
    """The embedded Ray's raylet and GCS die with the driver (Ray's parent-death signal); its agents and workers,
    which outlived it by a minute, end within about a second."""
    proc = _start(new_run(tmp_path / "s", architectures=2))
    left = _kill_when(proc, _ray_agents_up(proc.pid), "Ray's agents")
    assert left == [], [cmd[:100] for _, cmd in left]


def test_a_killed_rank_damages_nothing_leaves_nothing_running_and_runs_again(real_study_dir, tmp_path, capsys):
    """Killed once its first fresh architecture is stored: the study it ranks from is unchanged, nothing of its Ray
    lives on, and the same command again resumes the measuring and writes the ranking."""
    out = tmp_path / "rank"
    argv = ["rank", "--from", str(real_study_dir), "--architectures", "2", "--seed", "9", "--out", str(out)]
    argv.append("--allow-weak-predictor")  # a 15-architecture study: its predictor is not shown to predict
    before = _tree(real_study_dir)
    proc = _start(argv)
    stored = lambda: any((out / "measured" / "architectures").glob("*.parquet"))  # noqa: E731
    left = _kill_when(proc, stored, "a stored architecture")
    assert left == [], [cmd[:100] for _, cmd in left]
    assert _tree(real_study_dir) == before
    assert main(argv) == 0, capsys.readouterr().err[-3000:]  # in this process: no second interpreter to start
    import pandas as pd

    assert len(pd.read_parquet(out / "ranked.parquet")) == 2
    assert _tree(real_study_dir) == before


def test_a_killed_reproduce_all_leaves_no_worker_and_the_next_reproduction_runs(tmp_path):
    """Killed while its first two reproductions run side by side (one of them a study on its own embedded Ray): its
    workers, which went on for about 14 s writing their outputs, and their Ray end with it; what it wrote is whole
    (every JSON reads back); a reproduction run next into the same directory works."""
    out = tmp_path / "out"
    proc = _start(["reproduce", "all", "--scale", "tiny", "--out", str(out), "--jobs", "2"])
    left = _kill_when(proc, _ray_agents_up(proc.pid), "a worker's Ray")
    assert left == [], [cmd[:100] for _, cmd in left]
    for path in out.rglob("*.json"):
        json.loads(path.read_text())
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    # gmp-banana: one of the quickest at this scale (4 s, resnet-hessian's 7 s, on the 2-core dev machine); in its
    # own process, as `reproduce` sets the torch threads of the process it runs in
    argv = ["reproduce", "gmp-banana", "--scale", "tiny", "--out", str(out)]
    again = cli(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = again.communicate(timeout=START_S)
    assert again.returncode in (0, 1), err.decode()[-3000:]  # 1: some row differs at this scale, a finding
    assert json.loads((out / "gmp-banana.json").read_text())
