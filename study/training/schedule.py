"""The per-run learning-rate schedule of NLC paper appendix E.2, as a pure state machine over all runs.

E.2: "We train with the starting learning rate until the validation classification error (VCE) has not
decreased for 10 epochs. Then we rewind the state of the network by 10 epochs (when the lowest VCE was
achieved), divide the learning rate by 3 and continue training until the validation classification error
has not improved for 5 epochs. [...] This process continues until the step size has been divided by 3
ten times. When the VCE has again not improved for 5 epochs, we rewind one last time and terminate the
training run."

Read as a state machine, per run, after every epoch e = 1, 2, ... with error ``err`` (the monitored one):

* improvement means strictly lower than the best so far; the initial state counts as evaluated at
  epoch 0, so a run that never improves rewinds to its initialization;
* ``wait`` counts the epochs of the current window since the last improvement; the window ends when
  ``wait`` reaches the patience (``patience_first`` before the first division, ``patience`` after), or
  at once when the run's loss turned non-finite during the epoch (our choice: E.2 does not say);
* at the end of a window the run is rewound to its best state; if it has had ``divisions`` divisions
  this is the final rewind and the run is finished, else its rate is divided by ``division_factor``
  and a new window starts from the rewound state;
* a run that reaches ``max_epochs`` is rewound to its best state and finished wherever it is.

The functions here are pure: ``start`` makes the state, ``after_epoch`` returns the next state and the
decisions (which runs improved: save their state; which to rewind; which are finished). The trainer
applies the decisions to the stacked tensors; a test drives this module with scripted error curves.

The ``steps`` schedule (``Protocol.schedule``; Yu and Zhang, *Householder-Absolute Neural Layers*,
section 3.1: "the initial learning rate is annealed by a factor of 5 at the fractions 1/2, 7/10 and 9/10
of the training durations") uses the same state: ``divide`` divides the rates at the steps of
``Protocol.step_boundaries`` (it counts them in ``divisions``), and ``after_steps_epoch`` ends an epoch
without any error: every run is finished when the iterations are done, and a run whose loss or parameters
turned non-finite is finished at once, rewound to its initial state (the only state kept) and marked
diverged. ``best`` and ``best_epoch`` are not used. With ``Protocol.test_every`` = N the steps schedule has
the test error of every live run evaluated for the curves every N epochs and after the last (``tracked``), and
does not act on it.

The trainer calls a schedule through one interface, ``Scheduler`` (``SCHEDULERS`` by ``Protocol.schedule``,
``scheduler_of``), never by its name: whether it evaluates the monitored error of every run after each epoch
and keeps each run's best state by it (``monitors``), how many steps an epoch has (``epoch_steps``), the
divisions due at a step (``divisions_at``) and what the end of an epoch decides (``end_epoch``). A new schedule
is one ``Scheduler`` (its name in ``study.experiment.protocol.SCHEDULES``). ``tracked`` says which split's error
the curves record after an epoch (the monitored one under E.2's; the test split every ``test_every`` epochs
under steps; none otherwise).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, fields, replace
from typing import ClassVar

import numpy as np

from ..experiment.protocol import Protocol


@dataclass(frozen=True)
class Schedule:
    """The schedule state of every run (arrays indexed by run = learning-rate index)."""

    lr: np.ndarray  # current learning rate
    divisions: np.ndarray  # divisions done so far
    wait: np.ndarray  # epochs since the last improvement, in the current window
    best: np.ndarray  # lowest monitored error so far (of the state kept as best)
    best_epoch: np.ndarray  # epoch of that state (0 = initialization)
    epochs: np.ndarray  # epochs trained (rewound epochs included: the cost)
    done: np.ndarray  # finished: rewound a last time
    diverged: np.ndarray  # the loss turned non-finite at least once

    def to_dict(self) -> dict[str, list]:
        return {f.name: getattr(self, f.name).tolist() for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, list]) -> "Schedule":
        dtypes = {"lr": np.float64, "best": np.float64, "done": bool, "diverged": bool}
        return cls(**{f.name: np.asarray(d[f.name], dtype=dtypes.get(f.name, np.int64)) for f in fields(cls)})

    @property
    def live(self) -> np.ndarray:
        """Indices of the runs still training, increasing."""
        return np.flatnonzero(~self.done)


@dataclass(frozen=True)
class Decision:
    """What the trainer must do after an epoch (run indices, increasing)."""

    improved: np.ndarray  # save the current state as the run's best
    rewind: np.ndarray  # restore the best state (after saving the improved ones)
    finished: np.ndarray  # drop from the stack (all of them are also in ``rewind``)


def start(lrs, initial_error: float | np.ndarray) -> Schedule:
    """The state before training: every run at its starting rate, the initial state its best (epoch 0)."""
    lrs = np.asarray(lrs, dtype=np.float64)
    n = len(lrs)
    zeros = np.zeros(n, dtype=np.int64)
    return Schedule(
        lr=lrs.copy(),
        divisions=zeros.copy(),
        wait=zeros.copy(),
        best=np.broadcast_to(np.asarray(initial_error, dtype=np.float64), (n,)).copy(),
        best_epoch=zeros.copy(),
        epochs=zeros.copy(),
        done=np.zeros(n, dtype=bool),
        diverged=np.zeros(n, dtype=bool),
    )


def after_epoch(state: Schedule, protocol: Protocol, runs, errors, nonfinite) -> tuple[Schedule, Decision]:
    """Advance runs ``runs`` (live run indices) by one epoch that ended with ``errors`` (monitored error
    of each, ignored where ``nonfinite``) and ``nonfinite`` (the run's loss or parameters turned
    non-finite during the epoch)."""
    runs = np.asarray(runs, dtype=np.int64)
    errors = np.asarray(errors, dtype=np.float64)
    bad = np.asarray(nonfinite, dtype=bool)
    if np.any(state.done[runs]):
        raise ValueError("after_epoch: a finished run was trained")

    s = {f.name: getattr(state, f.name).copy() for f in fields(state)}
    epochs = s["epochs"][runs] + 1
    s["epochs"][runs] = epochs
    s["diverged"][runs] |= bad

    improved = ~bad & (errors < s["best"][runs])
    s["best"][runs[improved]] = errors[improved]
    s["best_epoch"][runs[improved]] = epochs[improved]
    wait = np.where(improved, 0, s["wait"][runs] + 1)

    divisions = s["divisions"][runs]
    patience = np.where(divisions == 0, protocol.patience_first, protocol.patience)
    window_end = bad | (wait >= patience)
    capped = np.zeros_like(bad) if protocol.max_epochs is None else epochs >= protocol.max_epochs
    finished = (window_end & (divisions >= protocol.divisions)) | capped
    divide = window_end & ~finished

    s["wait"][runs] = np.where(window_end, 0, wait)
    s["divisions"][runs[divide]] += 1
    s["lr"][runs[divide]] /= protocol.division_factor
    s["done"][runs[finished]] = True
    decision = Decision(improved=runs[improved], rewind=runs[window_end | finished], finished=runs[finished])
    return replace(state, **s), decision


def divide(state: Schedule, protocol: Protocol, runs, times: int = 1) -> Schedule:
    """The state with the rates of runs ``runs`` divided ``times`` times by ``protocol.division_factor``."""
    runs = np.asarray(runs, dtype=np.int64)
    lr, divisions = state.lr.copy(), state.divisions.copy()
    for _ in range(times):  # one division at a time: the rounding of the rates is that of repeated division
        lr[runs] /= protocol.division_factor
    divisions[runs] += times
    return replace(state, lr=lr, divisions=divisions)


def after_steps_epoch(state: Schedule, runs, nonfinite, done: bool) -> tuple[Schedule, Decision]:
    """Advance runs ``runs`` by one epoch of the ``steps`` schedule: ``nonfinite`` runs are finished (and
    rewound to their initial state), all of them when ``done`` (the iterations are over)."""
    runs = np.asarray(runs, dtype=np.int64)
    bad = np.asarray(nonfinite, dtype=bool)
    if np.any(state.done[runs]):
        raise ValueError("after_steps_epoch: a finished run was trained")
    epochs, diverged, finished_mask = state.epochs.copy(), state.diverged.copy(), state.done.copy()
    epochs[runs] += 1
    diverged[runs] |= bad
    finished = runs if done else runs[bad]
    finished_mask[finished] = True
    decision = Decision(improved=runs[:0], rewind=runs[bad], finished=finished)
    return replace(state, epochs=epochs, diverged=diverged, done=finished_mask), decision


def give_up(state: Schedule, runs) -> Schedule:
    """The state with runs ``runs`` finished before training, diverged (an initialization that cannot be
    trained: its output scale is not finite)."""
    runs = np.asarray(runs, dtype=np.int64)
    done, diverged = state.done.copy(), state.diverged.copy()
    done[runs] = True
    diverged[runs] = True
    return replace(state, done=done, diverged=diverged)


# -- the schedules the trainer runs ----------------------------------------------------------------------
class Scheduler:
    """One learning-rate schedule of ``Protocol.schedule``, over the state ``Schedule`` of all runs; see the module
    docstring. Subclasses declare ``name`` and ``monitors`` and implement ``epoch_steps``, ``divisions_at`` and
    ``end_epoch``."""

    name: ClassVar[str]
    monitors: ClassVar[bool]  # evaluates each run's monitored error after every epoch, keeps its best state by it

    def __init__(self, protocol: Protocol):
        self.protocol = protocol

    def start(self, lrs, initial_error: float | np.ndarray) -> Schedule:
        """The state before training (``start``); ``initial_error`` NaN where the schedule does not monitor."""
        return start(lrs, initial_error)

    def epoch_steps(self, epochs_done: int, steps: int) -> int:
        """The steps of the next epoch, after ``epochs_done`` epochs of ``steps`` minibatches each."""
        raise NotImplementedError

    def divisions_at(self, step: int) -> int:
        """The divisions of the rates due before training step ``step`` (counted from 0 over all epochs)."""
        raise NotImplementedError

    def planned_epochs(self, steps_per_epoch: int) -> float | None:
        """The epochs every run trains for when the schedule fixes them in advance, None when the errors decide
        (the driver then estimates them from measured trainings: ``study.execution.costs.expected_epochs``)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The schedule in a few words for the driver's plan line (``study.execution.costs.describe_protocol``)."""
        raise NotImplementedError

    @property
    def tracks(self) -> str:
        """The split ("val", "train" or "test") whose error the curves record (``monitored_error``), or "none"."""
        raise NotImplementedError

    def tracked(self, epoch: int, steps_done: int) -> str | None:
        """The split whose error every live run gets evaluated on after epoch ``epoch`` (1-based; ``steps_done``
        training steps so far) for the curves and, when ``monitors``, for ``end_epoch``; None: nothing is
        evaluated after this epoch."""
        raise NotImplementedError

    def divide(self, state: Schedule, runs, times: int) -> Schedule:
        """The state with the rates of ``runs`` divided ``times`` times (``divide``)."""
        return divide(state, self.protocol, runs, times)

    def end_epoch(self, state: Schedule, runs, errors, nonfinite, steps_done: int) -> tuple[Schedule, Decision]:
        """The next state and the decisions after an epoch of the live runs ``runs``: ``errors`` their monitored
        errors (None when the schedule does not monitor), ``nonfinite`` whether their loss or parameters turned
        non-finite, ``steps_done`` the training steps done so far."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class Plateau(Scheduler):
    """E.2's schedule (module docstring): every epoch is a full pass, the monitored error drives patience windows,
    rewinds and divisions (``after_epoch``)."""

    name = "plateau"
    monitors = True

    def epoch_steps(self, epochs_done, steps):
        return steps

    def divisions_at(self, step):
        return 0  # divisions happen at the ends of patience windows, never at a step

    def planned_epochs(self, steps_per_epoch):
        return None  # the patience windows end when the monitored error stops improving

    def describe(self):
        p = self.protocol
        cap = f"at most {p.max_epochs} epochs" if p.max_epochs else "no epoch cap"
        return f"E.2 schedule (patience {p.patience_first}/{p.patience}, {p.divisions} divisions), {cap}"

    @property
    def tracks(self):
        return self.protocol.monitor

    def tracked(self, epoch, steps_done):
        return self.tracks  # after every epoch

    def end_epoch(self, state, runs, errors, nonfinite, steps_done):
        return after_epoch(state, self.protocol, runs, errors, nonfinite)


class Steps(Scheduler):
    """A fixed number of iterations with divisions at ``Protocol.step_boundaries`` (module docstring; the
    Householder paper's protocol): nothing the schedule acts on is evaluated (the test error only for the curves,
    with ``test_every``: ``tracked``), the last epoch may be cut short (``after_steps_epoch``)."""

    name = "steps"
    monitors = False

    def __init__(self, protocol: Protocol):
        super().__init__(protocol)
        self._at = Counter(protocol.step_boundaries())  # a step may carry several divisions

    def epoch_steps(self, epochs_done, steps):
        return min(steps, self.protocol.iterations - epochs_done * steps)

    def divisions_at(self, step):
        return self._at.get(step, 0)

    def planned_epochs(self, steps_per_epoch):
        return float(math.ceil(self.protocol.iterations / max(1, steps_per_epoch)))  # the last one cut short

    def describe(self):
        return f"{self.protocol.iterations:,} steps each"

    @property
    def tracks(self):
        return "none" if self.protocol.test_every is None else "test"

    def tracked(self, epoch, steps_done):
        every = self.protocol.test_every
        if every is None or not (epoch % every == 0 or steps_done >= self.protocol.iterations):
            return None
        return self.tracks

    def end_epoch(self, state, runs, errors, nonfinite, steps_done):
        return after_steps_epoch(state, runs, nonfinite, done=steps_done >= self.protocol.iterations)


SCHEDULERS: dict[str, type[Scheduler]] = {c.name: c for c in (Plateau, Steps)}


def scheduler_of(protocol: Protocol) -> Scheduler:
    """The schedule ``protocol`` trains with (``Protocol.schedule``)."""
    return SCHEDULERS[protocol.schedule](protocol)
