"""The generic Ray engine: run many independent jobs with bounded in-flight work, bounded retries, progress.

Measured on Ray 2.58 (2 cores): a Core task costs ~2 ms, a Tune trial 2.6 s (0.09 s with reuse_actors), a
worker that imports torch 2.5 s; Tune's restore after SIGKILL re-ran finished trials. So the engine uses
Ray Core directly, and nothing of Ray's decides what is finished (the caller's store does):

* CPU jobs are Ray tasks (``num_cpus`` each); CPU workers are reused between tasks, so torch and the
  dataset are loaded once per worker process.
* GPU jobs go to a pool of long-lived actors (``num_gpus`` each, fractions allowed: 0.25 = four jobs per
  GPU), since Ray's GPU tasks default to a fresh process per task. A dead actor is replaced. An actor is
  kept only while a queued job can take it at once: one left idle is ended, so that it gives back its GPU
  and an autoscaler can remove the node (the tail of a study, a lower limit) instead of keeping it until the
  run ends. Each actor reports its node once, so progress can say where every job runs.
* At most ``limit`` jobs are in flight (the cluster's capacity for one job's resources, re-read once per tick
  so added or lost nodes count; or ``max_in_flight``); ``ray.wait`` returns whichever finishes first. The
  capacity is Ray's node table, a request to Ray's control store: read per finished job, it was the largest part
  of the driver's own cost of a short job (``archstudy bench --driver``, docs/performance.md).
* A job that raises, whose worker dies, or whose node is lost is retried up to ``max_retries`` times,
  then reported failed with a one-line reason; a failure never stops the others.
* Ray's automatic retries are off (``max_retries=0``): the engine counts attempts itself, so an attempt
  number reaches the job and the failure record.
* Whatever a job raises crosses back as plain data (``JobError``: the exception's type name, its first line
  and the worker's traceback), so its reason is never lost to an exception class that Ray cannot rebuild on
  the driver; each failed attempt is reported (``on_retry``), not only the last one.
"""

from __future__ import annotations

import math
import os
import re
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable

import ray
from ray import exceptions as rex


@dataclass(frozen=True)
class Job:
    """One job: a unique ``key`` and the ``payload`` the work function gets."""

    key: Hashable
    payload: Any


@dataclass
class Failure:
    """Why an attempt failed: the one-line ``reason`` and the full ``detail`` (traceback or Ray's message)."""

    reason: str
    detail: str
    system: bool  # the worker, actor or node died (as opposed to the job raising)


@dataclass
class Tally:
    """What the engine has done so far, for progress lines and heartbeats."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    retried: int = 0
    in_flight: list = field(default_factory=list)
    nodes: dict = field(default_factory=dict)  # key -> where it runs (_PoolWorker.node), for the actor pool's jobs


class JobError(Exception):
    """An exception a job raised, as plain data: its type's name (``kind``), its first line (``message``) and
    the worker's traceback (``detail``). Ray rebuilds an exception on the driver from its pickled arguments;
    one whose constructor takes other arguments than its message (``SpecError(where, field, value, allowed)``)
    cannot be rebuilt and arrived as "UnserializableException: Failed to deserialize exception", its reason
    lost. A ``JobError`` always can: ``_plain_errors`` raises one for anything a job raises."""

    def __init__(self, kind: str, message: str, detail: str = ""):
        super().__init__(kind, message, detail)
        self.kind, self.message, self.detail = kind, message, detail

    @classmethod
    def of(cls, error: BaseException) -> "JobError":
        lines = _plain(str(error)).splitlines()
        return cls(type(error).__name__, lines[0][:500] if lines else "", traceback.format_exc())

    @property
    def reason(self) -> str:
        """The one-line reason: ``<type>: <first line>`` (the type alone for an exception without a message)."""
        return f"{self.kind}: {self.message}" if self.message else self.kind

    def __str__(self) -> str:
        return self.reason


def _plain_errors(fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """``fn`` whose exceptions (``Exception``: an interrupt stays what it is) leave the worker as ``JobError``."""

    def job(payload: Any, attempt: int) -> Any:
        try:
            return fn(payload, attempt)
        except JobError:
            raise
        except Exception as e:  # noqa: BLE001 - every exception of the job becomes plain data
            raise JobError.of(e) from None

    return job


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*$")


def _plain(text: str) -> str:
    return _ANSI.sub("", text).strip()


def failure_of(exc: BaseException) -> Failure:
    """Classify what ``ray.get`` raised: the job's own exception, or a lost worker/actor/node."""
    if isinstance(exc, rex.RayTaskError):
        cause = getattr(exc, "cause", None) or exc
        if isinstance(cause, JobError):
            return Failure(cause.reason, cause.detail or _plain(str(exc)), system=False)
        lines = _plain(str(cause)).splitlines()
        reason = f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
        return Failure(reason, _plain(getattr(exc, "traceback_str", "") or str(exc)), system=False)
    text = _plain(str(exc))
    lines = text.splitlines()
    first = lines[0] if lines else ""
    # An actor that could not even start (e.g. an import error on that node): its exception is the last such line.
    raised = [line.strip() for line in lines if _EXCEPTION_LINE.match(line.strip())]
    if isinstance(exc, rex.RayActorError) and "creation task" in first and raised:
        return Failure(f"actor failed to start ({raised[-1][:300]})", text, system=True)
    kind = {
        rex.OutOfMemoryError: "worker killed by Ray's memory monitor",
        rex.WorkerCrashedError: "worker process died",
        rex.NodeDiedError: "node died",
        rex.ObjectLostError: "result lost with its node",
    }
    for cls, what in kind.items():
        if isinstance(exc, cls):
            return Failure(f"{what} ({type(exc).__name__})", text, system=True)
    if isinstance(exc, rex.RayActorError):
        return Failure(f"actor died ({type(exc).__name__}: {first[:200]})", text, system=True)
    return Failure(f"{type(exc).__name__}: {first[:300]}", text, system=True)


class _PoolWorker:
    """A long-lived GPU worker: holds the work function, so the process (torch, CUDA context, the dataset on
    the GPU) is reused from job to job."""

    def __init__(self, fn: Callable[[Any, int], Any]):
        self.fn = _plain_errors(fn)

    def execute(self, payload: Any, attempt: int) -> Any:
        return self.fn(payload, attempt)

    def pid(self) -> int:
        return os.getpid()

    def node(self) -> dict:
        """Where this actor runs: Ray's node id, the node's IP, and its node type where the autoscaler's node
        provider tells the node (``RAY_NODE_TYPE_NAME``: the fake multi-node provider, KubeRay; else None)."""
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "type": os.environ.get("RAY_NODE_TYPE_NAME"),
        }


class Engine:
    """Runs ``fn(payload, attempt)`` for each job on Ray (see the module docstring).

    ``cpus``/``gpus`` are one job's resources; ``gpus > 0`` selects the actor pool. ``name`` names the
    Ray task (its workers' process title is ``ray::<name>``)."""

    def __init__(
        self,
        fn: Callable[[Any, int], Any],
        *,
        cpus: float = 1.0,
        gpus: float = 0.0,
        max_retries: int = 2,
        max_in_flight: int | None = None,
        tick_s: float = 1.0,
        name: str | None = None,
    ):
        self.fn, self.cpus, self.gpus = fn, float(cpus), float(gpus)
        self.max_retries, self.max_in_flight, self.tick_s = int(max_retries), max_in_flight, tick_s
        self.name = name or getattr(fn, "__name__", "job")
        self._task: Any = None  # the Ray remote function of ``fn`` (CPU jobs), made on first use
        self._actor_cls: Any = None  # the Ray actor class of the pool (GPU jobs), made on first use
        self._idle: list = []  # pool actors without a job
        self._actors: list = []  # every live pool actor
        self._node_of: dict = {}  # pool actor -> its node (_PoolWorker.node), or the ref that will tell it
        self._read: tuple[float, int] | None = None  # (when, capacity) last read by the loop (``_slots``)

    # -- capacity ------------------------------------------------------------------------------------
    def capacity(self) -> int:
        """How many jobs the cluster's live nodes can run at once now, node by node (a job's CPUs and GPUs must
        fit on one node); re-read every tick, since nodes come and go."""
        slots = 0
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            res = node.get("Resources", {})
            n = math.floor(res.get("CPU", 0.0) / self.cpus + 1e-9) if self.cpus > 0 else 10**6
            if self.gpus > 0:
                n = min(n, math.floor(res.get("GPU", 0.0) / self.gpus + 1e-9))
            slots += n
        return slots

    def limit(self) -> int:
        """The bound on jobs in flight: ``max_in_flight`` if set, else the capacity (at least 1, so a cluster that
        autoscales from zero sees the demand)."""
        return self.max_in_flight if self.max_in_flight else max(1, self.capacity())

    def _slots(self, now: float) -> int:
        """``capacity()`` as the loop sees it: read again once ``tick_s`` has passed since the last read, else
        the last one (nodes that come or go count from the next tick)."""
        if self._read is None or now - self._read[0] >= self.tick_s:
            self._read = (now, self.capacity())
        return self._read[1]

    # -- submission ----------------------------------------------------------------------------------
    def _submit(self, job: Job, attempt: int):
        """Start one attempt; return (object ref, actor or None)."""
        if self.gpus <= 0:
            if self._task is None:
                self._task = ray.remote(_plain_errors(self.fn)).options(
                    num_cpus=self.cpus, num_gpus=0, max_retries=0, retry_exceptions=False, name=self.name
                )
            return self._task.remote(job.payload, attempt), None
        actor = self._idle.pop() if self._idle else self._new_actor()
        return actor.execute.options(name=self.name).remote(job.payload, attempt), actor

    def _new_actor(self):
        if self._actor_cls is None:
            self._actor_cls = ray.remote(_PoolWorker)
        actor = self._actor_cls.options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_restarts=0, max_task_retries=0
        ).remote(self.fn)
        self._actors.append(actor)
        self._node_of[actor] = actor.node.remote()  # runs first on the actor, resolved when it has started
        return actor

    def _drop_actor(self, actor) -> None:
        self._node_of.pop(actor, None)
        if actor in self._actors:
            self._actors.remove(actor)
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def _nodes(self, in_flight: dict) -> dict:
        """key -> node of the in-flight jobs whose actor has reported it (never waits)."""
        asked = [ref for ref in self._node_of.values() if isinstance(ref, ray.ObjectRef)]
        if asked:
            ready, _ = ray.wait(asked, num_returns=len(asked), timeout=0)
            told = set(ready)
            for actor, ref in list(self._node_of.items()):
                if isinstance(ref, ray.ObjectRef) and ref in told:
                    try:
                        self._node_of[actor] = ray.get(ref)
                    except rex.RayError:  # the actor died before it could say; its job fails on its own
                        self._node_of.pop(actor)
        return {
            job.key: self._node_of[actor]
            for job, _, actor in in_flight.values()
            if actor is not None and isinstance(self._node_of.get(actor), dict)
        }

    # -- the loop ------------------------------------------------------------------------------------
    def execute(
        self,
        jobs: Iterable[Job],
        *,
        on_done: Callable[[Job, Any, int], None],
        on_failed: Callable[[Job, Failure, int], None],
        on_tick: Callable[[Tally], None] | None = None,
        first_attempt: Callable[[Job], int] | None = None,
        on_retry: Callable[[Job, Failure, int], None] | None = None,
    ) -> Tally:
        """Run every job; ``on_done(job, result, attempt)`` commits a result, ``on_failed(job, failure, attempts)``
        records a job that failed ``max_retries + 1`` times in this run; ``on_retry(job, failure, attempt)`` hears
        of each failed attempt that is tried again; ``on_tick(tally)`` is called at least every ``tick_s``.
        ``first_attempt(job)`` numbers the first attempt (a resumed study counts earlier ones).

        ``on_done`` raising ``Rejected`` counts as a failed attempt; anything else it raises stops the run
        (a storage error: the caller resumes later, nothing is lost)."""
        queue: deque[tuple[Job, int]] = deque()
        tried: dict[Hashable, int] = {}
        for job in jobs:
            queue.append((job, first_attempt(job) if first_attempt else 1))
        tally = Tally(total=len(queue))
        in_flight: dict[Any, tuple[Job, int, Any]] = {}
        last_tick, changed = 0.0, True
        self._read = None
        try:
            while queue or in_flight:
                now = time.monotonic()
                limit = self.max_in_flight or max(1, self._slots(now))
                while queue and len(in_flight) < limit:
                    job, attempt = queue.popleft()
                    ref, actor = self._submit(job, attempt)
                    in_flight[ref] = (job, attempt, actor)
                while self._idle:  # no queued job can take it now: give its resources back
                    self._drop_actor(self._idle.pop())
                if on_tick is not None and (changed or now - last_tick >= self.tick_s):
                    tally.running = min(len(in_flight), max(1, self._slots(now)))
                    tally.in_flight = [job.key for job, _, _ in in_flight.values()]
                    tally.nodes = self._nodes(in_flight)
                    on_tick(tally)
                    last_tick, changed = now, False
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=self.tick_s)
                changed = bool(ready)
                for ref in ready:
                    job, attempt, actor = in_flight.pop(ref)
                    try:
                        result = ray.get(ref)
                        failure = None
                    except rex.RayError as e:
                        result, failure = None, failure_of(e)
                    if failure is None:
                        try:
                            on_done(job, result, attempt)
                        except Rejected as e:
                            failure = Failure(str(e), str(e), system=False)
                    if actor is not None:
                        if failure is not None and failure.system:
                            self._drop_actor(actor)
                        else:
                            self._idle.append(actor)
                    if failure is None:
                        tally.done += 1
                        continue
                    tried[job.key] = tried.get(job.key, 0) + 1
                    if tried[job.key] <= self.max_retries:
                        tally.retried += 1
                        if on_retry is not None:
                            on_retry(job, failure, attempt)
                        queue.appendleft((job, attempt + 1))  # retried next, before new jobs
                    else:
                        tally.failed += 1
                        on_failed(job, failure, attempt)
            tally.running, tally.in_flight, tally.nodes = 0, [], {}
            if on_tick is not None:
                on_tick(tally)
            return tally
        finally:
            for ref in in_flight:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
            for actor in list(self._actors):
                self._drop_actor(actor)
            self._idle.clear()

    def pool_size(self) -> int:
        return len(self._actors)


class Rejected(Exception):
    """Raised by ``on_done`` when a result cannot be committed (e.g. rows that do not fit the schema):
    the attempt counts as failed."""
