"""What a study will run and what it will cost, said before training; and the ETA as the study goes.

Before training the driver says in one line what will run (``launch_line``): the architectures (drawn ones and
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
floor of ``patience_first + divisions x patience`` epochs, ``study.training.epoch_profiles``, capped by ``max_epochs``).
The metrics at initialization come on top: the first units report how long theirs took, and the estimate adds it;
so does the selected network's NLC after training where the plan timed one (``after_s``: as long as the NLC pass at
initialization, and for a small net as long as its training).

As the study goes, ``Forecast`` replaces the estimate by what happens. A unit in training projects its own end
from the epochs its live record (``study.execution.live``) says it has done, at its own pace:

    left_k = (tau_k - tau_k0) (E - e_k) / (e_k - e_k0) + f,        T_k = (now - start_k) + left_k

(``e_k`` epochs of the ``E`` expected done in ``tau_k`` seconds of training; ``e_k0``, ``tau_k0`` the same in the
first record the driver read of it, 0 until a later one: the first epoch also finds the learning rates, E.2, and
took 1.5-3 times a later one on the example, so a unit read only at its first epoch does not project yet; ``f``
what the final evaluation and the metrics after training took the units seen finishing, from their ``finishing``
record to their commit, 0 before any; ``T_k`` its projected wall time). An architecture still to start costs its
relative cost ``w_u`` (``archstudy run``'s plan's estimate of its own seconds, ``study.cli.run.estimate_line``; else
``relative_cost``, its depth, as the step model of ``study.perf.projection`` is linear in depth; 1 each where the
caller gives none, and then ``m`` is a mean) times the seconds per unit of cost measured so far, from the units
finished in this session and the projections of those in training, less the timed steps of the first units
(``probe_s``: later units time none):

    c = sum_j (t_j - probe_j) / sum_j w_j,    m_u = c w_u     (j: finished, t_j its duration; or in training, T_j)

Counting the running units' projections matters early: the units that finish first are the quick ones, and a
mean of the finished alone (or the probes' steps, timed on an idle core) says half or less of what the rest take
on a loaded machine. Before any unit trains, ``c`` comes from the probes' estimates. The ETA then places the work on the
units that run at once as they free up (list scheduling, the queued in order on the slot that frees first):

    slot_i = left of the i-th unit in flight (0 for an idle slot); each queued unit u: min slot += m_u;  ETA = max slot

which is never less than the longest remaining unit and, unlike work / slots, counts the last unit that starts
only when a slot frees. A unit not yet training counts ``m_u`` (its probe before anything trains) less its time so
far; one that runs past its estimate counts as nearly done (``PAST``), so the ETA does not count up while the
last units run; the line then says that the running units are past the estimate.
"""

from __future__ import annotations

import heapq
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
PLACED_UNITS = 10_000  # the ETA places this many queued units one by one, the rest evenly over the slots
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
    from ..training.epoch_profiles import EXPECTED_STACK_EPOCHS, SCHEDULE_FLOOR

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


def launch_line(
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
        f"{describe_protocol(protocol)}{window_text(config)}{inits_text(config.init_seeds)}; {sizes}; {slots} at a time"
    )


def window_text(config: StudyConfig) -> str:
    """``, training a window of 8 of them around each one's predicted best rate (median rule of studies/a)`` (a
    study's ``lr_window``), else nothing."""
    w = config.lr_window
    if w is None:
        return ""
    how = {"median": "median rule", "measures": "predicted from its measures"}.get(w.get("predictor", ""), "")
    source = ", ".join(v for v in (how, f"of {w['from']}" if "from" in w else "") if v)
    return f", training a window of {w['size']} of them around a predicted best rate" + (
        f" ({source})" if source else ""
    )


def inits_text(inits: int) -> str:
    """``, each from 2 initializations`` (a study's ``init_seeds`` above 1), else nothing."""
    return f", each from {inits} initializations" if inits > 1 else ""


# -- timing a few steps, on the worker --------------------------------------------------------------------
def probe(spec, data, protocol: Protocol, device, inits: int = 1) -> dict:
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
    from ..training.loss import errors
    from ..training.schedule import scheduler_of
    from ..training.splits import steps_per_epoch
    from ..training.stack import new_stack, train_step
    from ..training.timing import TIMING_LR, time_calls, timing_batches
    from ..training.trainer import auto_chunk

    device = torch.device(device or "cpu")
    runs = protocol.num_lrs * inits  # the stack: every rate from each initialization (a study's init_seeds)
    n_train, n_val, n_test = len(data.train.y), len(data.val.y), len(data.test.y)
    batch = max(1, min(protocol.batch_size, n_train))
    t0 = time.perf_counter()

    def fastest(fn) -> float:
        fn(0)  # untimed: the allocator's first blocks
        return min(time_calls(fn, 1, device)[0] for _ in range(PROBE_REPEATS))

    xy = timing_batches(spec, batch, device, count=1)[0]
    step, evaluate = {}, {}
    x, y = data.val.x[:PROBE_EVAL_EXAMPLES].to(device), data.val.y[:PROBE_EVAL_EXAMPLES].to(device)
    width = max(spec.width, spec.d_in, spec.d_out)
    for r in sorted({1, min(runs, PROBE_RUNS)}):
        stack = new_stack(build_network(spec, 0, runs=r, device=device), [TIMING_LR] * r, protocol)
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
    lr_min = inits * (1 + protocol.warmup_epochs) * steps * step_1  # measured on each initialization
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


def relative_cost(spec) -> float:
    """What one architecture costs relative to the others of its study (``Forecast.weights``): its depth. At a
    fixed parameter budget the FLOPs of a step are nearly the same whatever the shape, and its time grows with the
    layers (the step model of ``study.perf.projection``, t_step linear in depth)."""
    return float(max(1, spec.depth))


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
    finishing: dict[str, float] = field(default_factory=dict)  # in flight -> when it was first seen finishing
    finishes: list[float] = field(default_factory=list)  # seconds from training's end to the commit, per unit
    weights: dict[str, float] = field(default_factory=dict)  # unit -> its relative cost (``relative_cost``), in order
    finished_weights: list[float] = field(default_factory=list)  # the weights of ``durations``' units
    ever: set[str] = field(default_factory=set)  # every unit seen in flight
    first_epoch: dict[str, tuple[int, float]] = field(default_factory=dict)  # in flight -> (e_0, tau_0) first seen
    said: bool = False

    def seen(self, in_flight: Iterable[str], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        flying = set(in_flight)
        self.ever |= flying
        for key in flying:
            self.started.setdefault(key, now)
        for key in [k for k in self.started if k not in flying]:
            self.started.pop(key)
            self.live.pop(key, None)
            self.finishing.pop(key, None)
            self.first_epoch.pop(key, None)

    def finished(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if key in self.started:
            self.durations.append(max(0.0, now - self.started.pop(key) - self._probe_s(key)))
            self.finished_weights.append(self._weight(key))
        if key in self.finishing:
            self.finishes.append(now - self.finishing.pop(key))
        self.first_epoch.pop(key, None)
        self.live.pop(key, None)

    def observe(self, records: Mapping[str, dict], now: float | None = None) -> None:
        """The live records of the units in flight; a record with a probe keeps that probe for the estimate, one
        that says ``finishing`` (the final evaluation and the metrics after training) starts its clock."""
        now = time.monotonic() if now is None else now
        for key, rec in records.items():
            if key in self.started:
                before = self.live.get(key)
                if before is not None and before.get("attempt") != rec.get("attempt"):
                    # a retry (the engine resubmits before the unit leaves flight): it trains again, from its
                    # checkpoint or from epoch 1 on another node, so the first attempt's marks say nothing of it
                    self.first_epoch.pop(key, None)
                self.live[key] = rec
                if rec.get("stage") == "finishing":
                    self.finishing.setdefault(key, now)
                else:
                    self.finishing.pop(key, None)
                if rec.get("stage") == "training" and rec.get("epoch") and _finite(rec.get("train_elapsed_s")):
                    self.first_epoch.setdefault(key, (int(rec["epoch"]), float(rec["train_elapsed_s"])))
            p = rec.get("probe")
            if isinstance(p, dict) and _finite(p.get("train_s")):
                self.probes[key] = {**p, "measure_s": rec.get("measure_s")}

    # -- per unit ------------------------------------------------------------------------------------------
    def _mean_of(self, part: str) -> float:
        """A part of one unit the probes may carry (``measure_s``: the metrics at initialization; ``after_s``: the
        selected network's NLC after training, timed on the plan's first probe): the mean of the probes that timed
        it (0 before any)."""
        measured = [p[part] for p in self.probes.values() if _finite(p.get(part))]
        return sum(measured) / len(measured) if measured else 0.0

    def probed_s(self, key: str | None = None) -> float | None:
        """One architecture from the probes (``key``'s own where it probed): training, the metrics at initialization
        and the NLC after training (each its own where timed, else the mean of the probes that timed it)."""

        def parts(p: dict) -> float:
            return p["train_s"] + sum(
                p[part] if _finite(p.get(part)) else self._mean_of(part) for part in ("measure_s", "after_s")
            )

        if key is not None and key in self.probes:
            return parts(self.probes[key])
        if not self.probes:
            return None
        return sum(parts(p) for p in self.probes.values()) / len(self.probes)

    def _projected(self, key: str, now: float) -> float | None:
        """Seconds left of the unit in flight ``key`` at its own pace (``left_k``) once it trains: its epochs left,
        then ``f``; at its expected epochs or finishing, what is left of ``f``. None before it trains."""
        rec = self.live.get(key) or {}
        if key in self.finishing:
            return max(0.0, self._finish_s() - (now - self.finishing[key]))
        epoch, expected, train_s = rec.get("epoch"), rec.get("expected_epochs"), rec.get("train_elapsed_s")
        if rec.get("stage") != "training" or not (epoch and expected and _finite(train_s)):
            return None
        if epoch >= expected:
            return self._finish_s()
        e0, tau0 = self.first_epoch.get(key, (0, 0.0))
        if not 0 < e0 < epoch:  # one record: the pace of all its epochs, the first one's learning rates' too
            if epoch <= 1:  # the first epoch alone: the rate search's pace (1.5-3x a later epoch's), not training's
                return None
            e0, tau0 = 0, 0.0
        return max(0.0, float(cast(float, train_s)) - tau0) * (expected - epoch) / (epoch - e0) + self._finish_s()

    def _finish_s(self) -> float:
        """From training's end to the commit (``f``): the mean of the units seen finishing (0 before any)."""
        return sum(self.finishes) / len(self.finishes) if self.finishes else 0.0

    def _probe_s(self, key: str) -> float:
        """The seconds ``key`` spent timing steps for the estimate (0 for a unit that did not)."""
        p = self.probes.get(key) or {}
        return float(p["probe_s"]) if _finite(p.get("probe_s")) else 0.0

    def _weight(self, key: str | None) -> float:
        """The relative cost of ``key`` (``weights``; the mean weight for a unit without one, or None)."""
        if key is not None and key in self.weights:
            return self.weights[key]
        return sum(self.weights.values()) / len(self.weights) if self.weights else 1.0

    def _per_weight(self, now: float) -> float | None:
        """Seconds per unit of relative cost (``c``, module docstring): the finished units' and the projections of
        those in training, less their timed steps; else the probes'; None before either."""
        seconds = list(self.durations)
        weights = self.finished_weights[: len(seconds)]
        weights += [self._weight(None)] * (len(seconds) - len(weights))  # durations given without their units
        for key, since in self.started.items():
            left = self._projected(key, now)
            if left is not None:
                seconds.append(max(0.0, now - since - self._probe_s(key)) + left)
                weights.append(self._weight(key))
        if not seconds:
            seconds = [cast(float, self.probed_s(k)) for k in self.probes]
            weights = [self._weight(k) for k in self.probes]
        return sum(seconds) / sum(weights) if seconds and sum(weights) > 0 else None

    def unit_s(self, now: float | None = None, key: str | None = None) -> float | None:
        """Seconds of architecture ``key`` still to start (``m``, module docstring; ``key`` None: a unit of the mean
        weight): ``c`` times its weight; without weights the mean of the units finished in this session and of the
        projections of those in training, less their timed steps; before any unit trains, the probes'."""
        c = self._per_weight(time.monotonic() if now is None else now)
        return None if c is None else c * self._weight(key)

    def _remaining(self, key: str, now: float, mean: float) -> tuple[float, bool]:
        """(seconds left of the unit in flight ``key``, whether it is past its estimate)."""
        if key in self.finishing:  # trained: what the finishing of the others took, less its own so far
            if not self.finishes:
                return 0.0, False  # the first to finish: nothing to go by, nothing to be past
            post = self._finish_s()
            left = post - (now - self.finishing[key])
            return (left, False) if left > PAST * post else (PAST * post, True)
        projected = self._projected(key, now)
        if projected is not None:
            return projected, False  # its own pace, epochs left
        trained = self.durations or any(self._projected(k, now) is not None for k in self.started)
        own = mean * self._weight(key) / self._weight(None)
        probed = self.probed_s(key) if key in self.probes else None  # its own probe, before any unit trained
        total = (own if trained or probed is None else probed) + self._probe_s(key)
        left = total - (now - self.started.get(key, now))
        return (left, False) if left > PAST * total else (PAST * total, True)

    def eta(self, done: int, failed: int, running: int, now: float | None = None) -> tuple[float | None, bool]:
        """(seconds to the end of this session, or None before anything is known; whether every unit in flight
        is past its estimate): the queued units placed on the slot that frees first (module docstring)."""
        now = time.monotonic() if now is None else now
        mean = self.unit_s(now)
        if mean is None:
            return None, False
        left = [self._remaining(k, now, mean) for k in self.started]
        queued = max(0, self.todo - done - failed - len(self.started))
        slots = max(1, self.slots, running, len(left))
        free = [s for s, _ in left] + [0.0] * (slots - len(left))
        heapq.heapify(free)
        waiting = [k for k in self.weights if k not in self.ever][:queued]  # in the order they are submitted
        placed = min(queued, PLACED_UNITS)
        ratio = mean / self._weight(None)  # seconds per unit of weight
        for i in range(placed):
            heapq.heapreplace(free, free[0] + (ratio * self.weights[waiting[i]] if i < len(waiting) else mean))
        end = max(free) + mean * (queued - placed) / slots  # a study of millions: the rest in whole rounds
        past = bool(left) and all(p for _, p in left) and not queued
        return end, past

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
        unit = cast(float, self.probed_s())  # probes were taken: known
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
