"""What a study will run and what it will cost, said before training; and the ETA as the study goes.

Before training the driver says in one line what will run (``plan_line``): the architectures (drawn ones and
their siblings), the parameter budget, the protocol, the dataset's size, and how many run at once. Then the
first units time a few steps of their own stacked network on the workers that train them (``probe``, called in
the worker before training) and the driver says once what the study should take (``Forecast.estimate_line``):

    one architecture ~ lr_min + E x (steps x t_step(R) + n_monitored x t_eval) + (n_train + n_val + n_test) x t_eval

with ``steps`` = the training set's minibatches per epoch, ``R`` the runs trained together (the protocol's rates),
``t_step(R)`` the measured seconds of one training step of the R-run stack (``study.perf.bench.stacked_runner``:
the trainer's own step), ``t_eval`` the measured seconds per example of evaluating all R runs (the schedule
evaluates the monitored split every epoch, and every split once at the end), ``lr_min`` one epoch of R = 1 steps
(E.2; plus the warm-up epochs of Adam), and ``E`` the expected epochs of the stack (``expected_epochs``: a
``steps`` schedule's iterations; under E.2's plateau schedule the measured average, 1.25 times the schedule's
floor of ``patience_first + divisions x patience`` epochs, ``study.perf.profiles``, capped by ``max_epochs``).
The metrics at initialization come on top: the first units report how long theirs took, and the estimate adds it.

As the study goes, ``Forecast`` replaces the estimate by what happens: the mean wall time of the units finished
in this session, and for a unit in flight the epochs it has done of the ones expected (its live record,
``study.execution.live``). The ETA is the work left (the units in flight: what remains of each; the queued: one mean
unit each) over the units that run at once, and never less than the longest remaining unit. A unit that runs past
its estimate counts as nearly done (``PAST``), so the ETA does not count up while the last units run; the line
then says that the running units are past the estimate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, cast

from ..experiment.config import StudyConfig
from ..experiment.protocol import Protocol

PROBE_RUNS = 4  # runs of the probe's stack (``probe``)
PROBE_REPEATS = 3  # timed calls of each probed step (the fastest counts)
PROBE_EVAL_EXAMPLES = 200  # validation examples the probe evaluates
PROBE_UNITS = 4  # the first units of a session time their steps, at most (and at most as many as run at once)
PAST = 0.05  # a unit past its estimate: this fraction of the estimate is taken as still to run
LONG_UNIT_S = 600.0  # a unit whose training alone is estimated at this much: the estimate is said at once


# -- what will run ---------------------------------------------------------------------------------------
def expected_epochs(protocol: Protocol, steps_per_epoch: int) -> float:
    """Full-stack epochs of one architecture (the mean epochs of its runs): the schedule's own when it fixes them
    (``Scheduler.planned_epochs``: a ``steps`` schedule's ceil(iterations / steps per epoch)); else, as for E.2's
    plateau schedule, the measured 1.25 x its floor (module docstring), at most ``max_epochs``."""
    from ..training.schedule import scheduler_of

    planned = scheduler_of(protocol).planned_epochs(steps_per_epoch)
    if planned is not None:
        return planned
    from ..perf.profiles import EXPECTED_STACK_EPOCHS
    from ..perf.projection import SCHEDULE_FLOOR

    floor = protocol.patience_first + protocol.divisions * protocol.patience
    typical = floor * EXPECTED_STACK_EPOCHS / SCHEDULE_FLOOR
    return float(min(typical, protocol.max_epochs)) if protocol.max_epochs else float(typical)


def describe_protocol(protocol: Protocol) -> str:
    """``protocol quick: 8 learning rates, E.2 schedule (patience 10/5, 10 divisions), at most 15 epochs``."""
    name = protocol.preset if protocol.preset != "custom" else "custom"
    rates = f"{protocol.num_lrs} learning rate{'s' if protocol.num_lrs != 1 else ''}"
    from ..training.schedule import scheduler_of

    schedule = scheduler_of(protocol).describe()
    opt = (
        "" if protocol.optimizer == Protocol.default("optimizer") else f", {protocol.optimizer}"
    )  # the paper's SGD unsaid
    return f"protocol {name}: {rates}, {schedule}{opt}"


def count_text(config: StudyConfig, n_units: int) -> str:
    """The architectures of a plan in one vocabulary (the driver's and ``archstudy status``' alike): ``8
    architectures`` or, with siblings, ``8 architectures (4 drawn + 4 siblings along weights)``."""
    if not config.siblings:
        return f"{n_units:,} architectures"
    drawn = config.architectures
    return (
        f"{n_units:,} architectures ({drawn:,} drawn + {n_units - drawn:,} siblings along {', '.join(config.siblings)})"
    )


def plan_line(
    config: StudyConfig, data, units: list, todo: list, slots: int, where: str, finished_before: int = 0
) -> str:
    """The one line said before training: what will run and on what (module docstring)."""
    protocol = Protocol.from_dict(config.protocol)
    params = [u.spec.num_params for u in todo] or [0]
    lo, hi = min(params), max(params)
    solved = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
    left = (
        f"{len(todo):,} of {count_text(config, len(units))} to run"
        if len(todo) != len(units)
        else f"{count_text(config, len(units))} to run"
    )
    if finished_before:
        left += f" ({finished_before:,} finished earlier)"
    sizes = (
        f"{config.dataset} ({len(data.train.y):,} train / {len(data.val.y):,} val / {len(data.test.y):,} test, "
        f"{int(data.d_in)} inputs, {int(data.n_classes)} classes)"
    )
    return (
        f"{where}: {left}: {config.param_budget:,}-parameter budget ({solved} trainable, {config.preset} space), "
        f"{describe_protocol(protocol)}; {sizes}; {slots} at a time"
    )


# -- timing a few steps, on the worker --------------------------------------------------------------------
def probe(spec, data, protocol: Protocol, device) -> dict:
    """Time a few training steps of ``spec`` on this worker and return them with the estimate of one
    architecture's training (module docstring; ``train_s``).

    A step of the real stack can take minutes (a 1,000,000-parameter Householder net of 40 runs), so the probe
    times the protocol's minibatch on small stacks of 1 and r = ``PROBE_RUNS`` runs (or fewer), each the fastest
    of ``PROBE_REPEATS`` calls after one untimed one (other processes share the cores: the fastest is the one
    least disturbed), and takes the step's cost as a fixed part plus one per run,

        t_step(R) = t(1) + (t(r) - t(1)) (R - 1) / (r - 1),

    which holds where the step's matrix products dominate (large nets) and where its fixed costs do (small
    ones); likewise the evaluation of all runs, per example, on ``PROBE_EVAL_EXAMPLES`` validation examples.
    Nothing here touches the unit's own network, data order or random state (the probe's networks are built
    from seed 0, its inputs drawn from a generator of its own: ``study.perf.bench``)."""
    import torch

    from ..nn.network import build_network
    from ..perf.bench import LR, _batches
    from ..training.loss import errors
    from ..training.schedule import scheduler_of
    from ..training.splits import steps_per_epoch
    from ..training.stack import new_stack, train_step
    from ..training.timing import time_calls
    from ..training.trainer import auto_chunk

    device = torch.device(device or "cpu")
    runs = protocol.num_lrs
    n_train, n_val, n_test = len(data.train.y), len(data.val.y), len(data.test.y)
    batch = max(1, min(protocol.batch_size, n_train))
    t0 = time.perf_counter()

    def fastest(fn) -> float:
        fn(0)  # untimed: the allocator's first blocks
        return min(time_calls(fn, 1, device)[0] for _ in range(PROBE_REPEATS))

    xy = _batches(spec, batch, device, count=1)[0]
    step, evaluate = {}, {}
    x, y = data.val.x[:PROBE_EVAL_EXAMPLES].to(device), data.val.y[:PROBE_EVAL_EXAMPLES].to(device)
    width = max(spec.width, spec.d_in, spec.d_out)
    for r in sorted({1, min(runs, PROBE_RUNS)}):
        stack = new_stack(build_network(spec, 0, runs=r, device=device), [LR] * r, protocol)
        chunk = auto_chunk(spec, r, batch, device)
        step[r] = fastest(lambda i, stack=stack, chunk=chunk: train_step(stack, *xy, 1.0, protocol, chunk))
        evaluate[r] = fastest(lambda i, stack=stack, r=r: errors(stack.net, x, y, width, r, protocol.loss)) / max(
            1, len(y)
        )
        del stack
    r = max(step)
    scale = lambda t: t[1] + (t[r] - t[1]) * (runs - 1) / (r - 1) if r > 1 else t[1] * runs  # noqa: E731
    step_r, step_1, eval_s = max(step[1], scale(step)), step[1], max(evaluate[1], scale(evaluate))
    steps = steps_per_epoch(n_train, protocol.batch_size)
    epochs = expected_epochs(protocol, steps)
    monitored = n_train if protocol.monitor == "train" else n_val
    lr_min = (1 + protocol.warmup_epochs) * steps * step_1
    train = epochs * (steps * step_r + (monitored * eval_s if scheduler_of(protocol).monitors else 0))
    final = (n_train + n_val + n_test) * eval_s
    return {
        "step_s": step_r,
        "step_1_s": step_1,
        "eval_s_per_example": eval_s,
        "steps_per_epoch": steps,
        "expected_epochs": epochs,
        "train_s": lr_min + train + final,
        "probe_s": time.perf_counter() - t0,
        "timed_steps": 2 * PROBE_REPEATS,
    }


def duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 48 * 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


# -- the forecast, in the driver ----------------------------------------------------------------------------
@dataclass
class Forecast:
    """The driver's running estimate of what is left (module docstring). ``todo``: the units of this session;
    ``slots``: how many run at once (updated from the engine's tally)."""

    todo: int
    slots: int = 1
    started: dict[str, float] = field(default_factory=dict)  # in flight -> when it was first seen (monotonic)
    durations: list[float] = field(default_factory=list)  # wall seconds of the units finished in this session
    live: dict[str, dict] = field(default_factory=dict)  # in flight -> its live record (study.execution.live)
    probes: dict[str, dict] = field(default_factory=dict)  # unit -> its probe (with measure_s once measured)
    said: bool = False

    def seen(self, in_flight: Iterable[str], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        flying = set(in_flight)
        for key in flying:
            self.started.setdefault(key, now)
        for key in [k for k in self.started if k not in flying]:
            self.started.pop(key)
            self.live.pop(key, None)

    def finished(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if key in self.started:
            self.durations.append(now - self.started.pop(key))
        self.live.pop(key, None)

    def observe(self, records: Mapping[str, dict]) -> None:
        """The live records of the units in flight; a record with a probe keeps that probe for the estimate."""
        for key, rec in records.items():
            if key in self.started:
                self.live[key] = rec
            p = rec.get("probe")
            if isinstance(p, dict) and _finite(p.get("train_s")):
                self.probes[key] = {**p, "measure_s": rec.get("measure_s")}

    # -- per unit ------------------------------------------------------------------------------------------
    def _measure_s(self) -> float:
        """The metrics at initialization of one unit: the mean the probed units reported (0 before any)."""
        measured = [p["measure_s"] for p in self.probes.values() if _finite(p.get("measure_s"))]
        return sum(measured) / len(measured) if measured else 0.0

    def _probed_s(self, key: str | None = None) -> float | None:
        """One architecture from the probes (``key``'s own where it probed): training plus the metrics."""
        if key is not None and key in self.probes:
            p = self.probes[key]
            return p["train_s"] + (p["measure_s"] if _finite(p.get("measure_s")) else self._measure_s())
        if not self.probes:
            return None
        return sum(p["train_s"] for p in self.probes.values()) / len(self.probes) + self._measure_s()

    def unit_s(self) -> float | None:
        """Seconds of one architecture: the mean of those finished in this session, else the probes'."""
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self._probed_s()

    def _remaining(self, key: str, now: float, mean: float) -> tuple[float, bool]:
        """(seconds left of the unit in flight ``key``, whether it is past its estimate)."""
        rec = self.live.get(key) or {}
        epoch, expected, train_s = rec.get("epoch"), rec.get("expected_epochs"), rec.get("train_elapsed_s")
        if rec.get("stage") == "training" and epoch and expected and _finite(train_s) and epoch < expected:
            return train_s * (expected - epoch) / epoch, False  # its own pace, epochs left
        total = mean if self.durations else (self._probed_s(key) or mean)
        left = total - (now - self.started.get(key, now))
        return (left, False) if left > PAST * total else (PAST * total, True)

    def eta(self, done: int, failed: int, running: int, now: float | None = None) -> tuple[float | None, bool]:
        """(seconds to the end of this session, or None before anything is known; whether every unit in flight
        is past its estimate)."""
        now = time.monotonic() if now is None else now
        mean = self.unit_s()
        if mean is None:
            return None, False
        left = [self._remaining(k, now, mean) for k in self.started]
        queued = max(0, self.todo - done - failed - len(self.started))
        slots = max(1, self.slots, running)
        work = sum(s for s, _ in left) + queued * mean
        longest = max((s for s, _ in left), default=0.0)
        past = bool(left) and all(p for _, p in left) and not queued
        return max(work / slots, longest), past

    def detail(self, names: Mapping[str, str] | None = None, limit: int = 3) -> str:
        """What the units in flight are doing, for the progress line: ``#3 epoch 4/15, 8 live, #4 measuring``
        (``names``: unit -> its label, ``3`` or ``3 norm`` for a sibling)."""
        parts = []
        for key in sorted(self.started, key=lambda k: self.started[k])[:limit]:
            rec = self.live.get(key) or {}
            label = f"#{names[key]}" if names and key in names else key
            stage = rec.get("stage")
            if stage == "training" and rec.get("epoch"):
                cap = rec.get("max_epochs")
                live = rec.get("live_runs")
                parts.append(
                    f"{label} epoch {rec['epoch']}"
                    + (f"/{cap}" if cap else "")
                    + (f", {live} live" if live is not None else "")
                )
            elif stage:
                parts.append(f"{label} {stage}")
        more = len(self.started) - limit
        return ", ".join(parts) + (f", +{more}" if more > 0 and parts else "")

    def estimate_line(self, now: float | None = None) -> str | None:
        """Once, when the first probes are in and one of their units has measured its metrics at initialization
        (for a small net they can take longer than its training; for a unit whose training alone is estimated at
        ``LONG_UNIT_S`` or more, at once): the estimate of the whole session (module docstring)."""
        if self.said or not self.probes or self.durations:
            return None
        measured = any(_finite(p.get("measure_s")) for p in self.probes.values())
        if not measured and max(p["train_s"] for p in self.probes.values()) < LONG_UNIT_S:
            return None
        unit = cast(float, self._probed_s())  # probes were taken: known
        self.said = True
        n = len(self.probes)
        steps = next(iter(self.probes.values())).get("timed_steps", 2)
        total, _ = self.eta(0, 0, 0, now)  # known, as ``unit``
        what = "the metrics at initialization included" if measured else "training; the metrics at initialization add"
        return (
            f"estimated {duration(cast(float, total))} for {self.todo:,} "
            f"architecture{'s' if self.todo != 1 else ''} "
            f"({self.slots} at a time; about {duration(unit)} each, {what}), from {steps} timed steps of "
            f"the first {n} on these workers; the progress line updates it as architectures finish"
        )


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False
