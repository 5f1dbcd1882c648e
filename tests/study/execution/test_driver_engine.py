"""The generic Ray engine with cheap injected jobs: back-pressure, retries, failure records, dead workers, the
GPU actor pool (on logical GPUs: Ray schedules by declared resources, so the pool's packing and its
replacement of dead actors are testable without a GPU). One Ray session for the module."""

import os
import sys
import time

import pytest
import ray

from archstudy.study.execution.engine import Engine, Job, Rejected, failure_of

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


LOCAL_RAY_GPUS = 1  # a logical GPU, for the GPU actor pool
pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py: a Ray of this module's own


def _span(payload, attempt):
    """Sleep, and report when this job ran and in which process."""
    t0 = time.time()
    time.sleep(payload["sleep"])
    return {"start": t0, "end": time.time(), "pid": os.getpid(), "attempt": attempt, "value": payload["value"] ** 2}


def _flaky(payload, attempt):
    """Fails as told: raise on the listed attempts, or kill its own worker process, else square the value."""
    if attempt in payload.get("raise_on", ()):
        raise ValueError(f"boom on attempt {attempt}\nsecond line of the message")
    if attempt in payload.get("die_on", ()):
        os._exit(1)
    return {"value": payload["value"] ** 2, "attempt": attempt, "pid": os.getpid()}


def _flaky_span(payload, attempt):
    """``_span``, but the process dies at the end of the listed attempts."""
    out = _span(payload, attempt)
    if attempt in payload.get("die_on", ()):
        os._exit(1)
    return out


def _collect(engine, jobs, **kwargs):
    done, failed, ticks = {}, {}, []
    tally = engine.execute(
        jobs,
        on_done=lambda j, r, a: done.__setitem__(j.key, (r, a)),
        on_failed=lambda j, f, a: failed.__setitem__(j.key, (f, a)),
        on_tick=lambda t: ticks.append((t.done, t.failed, len(t.in_flight))),
        **kwargs,
    )
    return done, failed, ticks, tally


def _max_overlap(spans):
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = best = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best


def test_every_job_runs_once_with_bounded_work_in_flight():
    jobs = [Job(f"j{i}", {"sleep": 0.3, "value": i}) for i in range(6)]
    done, failed, ticks, tally = _collect(Engine(_span, cpus=1, max_in_flight=2, tick_s=0.1), jobs)
    assert not failed and sorted(done) == sorted(j.key for j in jobs)
    assert all(r["value"] == int(k[1:]) ** 2 and a == 1 for k, (r, a) in done.items())
    assert tally.done == 6 and tally.failed == 0 and tally.total == 6
    assert max(n for _, _, n in ticks) == 2  # two submitted at once, never three
    assert _max_overlap([(r["start"], r["end"]) for r, _ in done.values()]) <= 2


def test_capacity_follows_the_cluster_resources():
    assert Engine(_span, cpus=1).capacity() == 2
    assert Engine(_span, cpus=0.5).capacity() == 4
    assert Engine(_span, cpus=0.5, gpus=0.25).capacity() == 4
    assert Engine(_span, cpus=0.5, gpus=0.5).capacity() == 2
    assert Engine(_span, cpus=1, gpus=2).capacity() == 0 and Engine(_span, cpus=1, gpus=2).limit() == 1


def test_a_failing_job_is_retried_then_reported_and_never_stops_the_others():
    jobs = [
        Job("ok", {"value": 3}),
        Job("flaky", {"value": 4, "raise_on": (1,)}),
        Job("bad", {"value": 5, "raise_on": (1, 2, 3)}),
    ]
    done, failed, _, tally = _collect(Engine(_flaky, max_retries=2, tick_s=0.1), jobs)
    assert done["ok"] == ({"value": 9, "attempt": 1, "pid": done["ok"][0]["pid"]}, 1)
    assert done["flaky"][0]["value"] == 16 and done["flaky"][1] == 2
    failure, attempts = failed["bad"]
    assert attempts == 3 and failure.reason == "ValueError: boom on attempt 3" and not failure.system
    assert "boom on attempt 3" in failure.detail and "\n" not in failure.reason
    assert tally.done == 2 and tally.failed == 1 and tally.retried == 3


def test_first_attempt_numbers_continue_from_earlier_sessions():
    done, _, _, _ = _collect(Engine(_flaky, tick_s=0.1), [Job("a", {"value": 2})], first_attempt=lambda j: 4)
    assert done["a"][1] == 4 and done["a"][0]["attempt"] == 4


def test_a_dead_worker_is_a_system_failure_and_the_job_is_retried():
    jobs = [Job("dies", {"value": 7, "die_on": (1,)}), Job("fine", {"value": 1})]
    done, failed, _, _ = _collect(Engine(_flaky, max_retries=1, tick_s=0.1), jobs)
    assert not failed and done["dies"][1] == 2 and done["dies"][0]["value"] == 49


def test_a_worker_that_always_dies_is_recorded_with_a_one_line_reason():
    done, failed, _, _ = _collect(Engine(_flaky, max_retries=1, tick_s=0.1), [Job("x", {"value": 1, "die_on": (1, 2)})])
    failure, attempts = failed["x"]
    assert not done and attempts == 2 and failure.system
    assert failure.reason.startswith("worker process died") and "\n" not in failure.reason


def test_rejected_results_count_as_failed_attempts():
    seen = []

    def on_done(job, result, attempt):
        seen.append(attempt)
        if attempt == 1:
            raise Rejected("SchemaError: column 'nlc' missing")

    failed = {}
    Engine(_flaky, max_retries=1, tick_s=0.1).execute(
        [Job("r", {"value": 1})], on_done=on_done, on_failed=lambda j, f, a: failed.setdefault(j.key, f)
    )
    assert seen == [1, 2] and not failed


def test_gpu_jobs_run_on_a_reused_actor_pool_packed_by_fractional_gpus_and_dead_actors_are_replaced():
    engine = Engine(_flaky_span, cpus=0.5, gpus=0.5, max_retries=1, tick_s=0.1)
    jobs = [Job("dies", {"sleep": 0.3, "value": 3, "die_on": (1,)})] + [
        Job(i, {"sleep": 0.3, "value": i}) for i in range(5)
    ]
    pool, done, failed = [], {}, {}
    engine.execute(
        jobs,
        on_done=lambda j, r, a: done.__setitem__(j.key, (r, a)),
        on_failed=lambda j, f, a: failed.__setitem__(j.key, (f, a)),
        on_tick=lambda t: pool.append((engine.pool_size(), len(t.in_flight))),
    )
    assert not failed and len(done) == 6
    assert done["dies"][1] == 2 and done["dies"][0]["value"] == 9  # retried on a fresh actor
    # One GPU / 0.5 per job: a pool of two actors (never more, a dead one replaced), two jobs in flight, each
    # actor reused from job to job (6 jobs, at most 3 processes: the first two, one of which died, and its
    # replacement).
    assert max(p for p, _ in pool) == 2 and max(n for _, n in pool) == 2
    pids = [r["pid"] for r, _ in done.values()]
    assert len(set(pids)) <= 3 and max(pids.count(p) for p in set(pids)) >= 2
    assert engine.pool_size() == 0  # the pool is torn down when the run ends


def test_an_actor_no_queued_job_can_take_is_ended_so_its_gpu_goes_back_and_every_job_says_where_it_runs():
    engine = Engine(_span, cpus=0.5, gpus=0.5, tick_s=0.05)
    # "short" runs long enough for a few ticks to see where it runs (the node is asked of its actor once started)
    jobs = [Job("short", {"sleep": 1.0, "value": 1}), Job("long", {"sleep": 4.0, "value": 2})]
    samples = []

    def on_tick(t):
        samples.append((t.done, engine.pool_size(), ray.available_resources().get("GPU", 0.0), dict(t.nodes)))

    engine.execute(jobs, on_done=lambda j, r, a: None, on_failed=lambda j, f, a: None, on_tick=on_tick)
    # While "long" still runs, the actor of "short" is gone (nothing queued could take it) and its half GPU is
    # free again: under an autoscaler its node could be removed instead of waiting for the end of the run.
    during = [s for s in samples if s[0] == 1]
    assert during and during[-1][1] == 1 and during[-1][2] == 0.5
    here = {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address(), "type": None}
    assert during[-1][3] == {"long": here}
    assert any(s[3] == {"short": here, "long": here} for s in samples if s[0] == 0)


def test_failure_of_classifies_task_errors_by_their_cause():
    @ray.remote(max_retries=0)
    def raises():
        raise KeyError("no such column")

    with pytest.raises(ray.exceptions.RayTaskError) as e:
        ray.get(raises.remote())
    f = failure_of(e.value)
    assert f.reason == "KeyError: 'no such column'" and not f.system and "KeyError" in f.detail


def _raises_unrebuildable(payload, attempt):
    """Raises an exception Ray cannot rebuild from its arguments (a four-argument constructor)."""
    from archstudy.sampling import SpecError

    raise SpecError("data", "val.x", (0, 2), "must have shape [N >= 1, d_in = 2]")


def test_any_exception_of_a_job_keeps_its_one_line_reason_and_every_failed_attempt_is_heard():
    """It arrived as "UnserializableException: Failed to deserialize exception"; each attempt's reason reaches
    ``on_retry``, the last one ``on_failed``, with the worker's traceback as the detail."""
    retries, failed = [], {}
    Engine(_raises_unrebuildable, max_retries=1, tick_s=0.1).execute(
        [Job("u", {})],
        on_done=lambda j, r, a: None,
        on_failed=lambda j, f, a: failed.setdefault(j.key, (f, a)),
        on_retry=lambda j, f, a: retries.append((j.key, f.reason, a)),
    )
    reason = "SpecError: data.val.x = (0, 2): must have shape [N >= 1, d_in = 2]"
    assert retries == [("u", reason, 1)]
    failure, attempts = failed["u"]
    assert (failure.reason, attempts, failure.system) == (reason, 2, False)
    assert "_raises_unrebuildable" in failure.detail and "Traceback" in failure.detail
