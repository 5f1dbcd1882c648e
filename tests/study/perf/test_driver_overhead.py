"""The driver's own cost per unit (study.perf.driver_overhead, `archstudy bench --driver N`): the bench runs a study of
no-op units through the real driver and reports its fields; and what keeps the driver's cost per unit flat: the
engine reads the cluster's capacity once per tick, not per finished job, and driver.json is rewritten at most every
BEAT_MIN_S while units finish, not once per unit. One Ray session for the module."""

import json
import math
import sys
import time

import pytest
import ray

from archstudy.study.cli import main
from archstudy.study.execution.dispatch import BEAT_MIN_S
from archstudy.study.execution.engine import Engine, Job
from archstudy.study.execution.state import survey
from archstudy.study.execution.store import Store

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
N = 30


pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py: a Ray of this module's own


def test_the_bench_commits_every_unit_once_reports_its_fields_and_beats_at_most_every_beat_min_s(
    tmp_path, capsys, monkeypatch
):
    beats: list[dict] = []
    write = Store.write_driver_state

    def counted(self, state):
        beats.append(dict(state))
        write(self, state)

    monkeypatch.setattr(Store, "write_driver_state", counted)
    out = tmp_path / "bench"
    assert main(["bench", "--driver", str(N), "--out", str(out), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["units"] == N
    for key in ("cpu_ms_per_unit", "wall_ms_per_unit", "rss_mb_10", "rss_mb_50", "rss_mb_100", "run_cpu_s"):
        assert math.isfinite(row[key]) and row[key] > 0, key
    # per unit: (at the last commit - at the first) / (N - 1), so N - 1 units cost at most the whole run
    assert row["cpu_ms_per_unit"] * (N - 1) / 1000 <= row["run_cpu_s"]
    assert row["rss_growth_mb"] == pytest.approx(row["rss_mb_100"] - row["rss_mb_10"])
    state = survey(Store(out), driver=False)
    assert len(state.finished) == N == len(state.pruned) and not state.failed and not state.corrupt
    # driver.json: the first beat, then at most one per BEAT_MIN_S while units finish (each changes what is in flight)
    assert beats[-1]["running"] is False and beats[-1]["done"] == N
    running = [b["heartbeat_unix"] for b in beats if b["running"]]
    assert all(b - a >= BEAT_MIN_S for a, b in zip(running, running[1:])), running
    assert main(["bench", "--driver", "1", "--out", str(tmp_path / "other")]) != 0
    assert "bench.driver = 1: must be an integer >= 2" in capsys.readouterr().err


def _square(payload, attempt):
    return payload * payload


def test_the_engine_reads_the_clusters_capacity_once_per_tick_not_once_per_finished_job(monkeypatch):
    reads: list[float] = []
    capacity = Engine.capacity
    monkeypatch.setattr(Engine, "capacity", lambda self: (reads.append(time.monotonic()), capacity(self))[1])
    engine, done = Engine(_square, cpus=1, tick_s=5.0), {}
    t0 = time.monotonic()
    engine.execute(
        [Job(i, i) for i in range(N)],
        on_done=lambda job, result, attempt: done.__setitem__(job.key, result),
        on_failed=lambda job, failure, attempt: None,
        on_tick=lambda tally: None,
    )
    elapsed = time.monotonic() - t0
    assert done == {i: i * i for i in range(N)}
    assert len(reads) <= 1 + elapsed / 5.0 + 1, (len(reads), elapsed)  # before: two per finished job
