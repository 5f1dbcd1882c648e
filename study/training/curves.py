"""Training curves: per run and per epoch, what the trainer saw (the ``curves`` table, docs/results.md).

After every epoch e = 1, 2, ... of the stack, each live run gets one point, taken at the end of the epoch
before the schedule acts on it (before a rewind, a division or the run's leaving the stack):

* ``lr``: the rate the run trained the epoch's last step at (under E.2's plateau schedule the rate of the
  whole epoch; under the ``steps`` schedule a division inside the epoch shows from that epoch on);
* ``train_loss``: the mean of the run's minibatch losses over the epoch's steps, the loss the optimizer
  minimized (the cross-entropy of softmax(f / c_out), or mse), accumulated on the device without a host
  synchronization per step (``Stack.loss_sum``); not finite when one of those losses was not;
* ``monitored_error``: the error that drives E.2's schedule, measured by the trainer anyway (the
  validation error, or the training error under the ``long`` protocol's ``monitor = train``; which one is
  ``monitored``). Under the ``steps`` schedule nothing is evaluated during training (its contract and its
  cost), so it is NaN and ``monitored`` is ``"none"``: a run's only evaluation is its final state, in the
  ``runs`` table; unless ``Protocol.test_every`` = N asks for the test error every N epochs and after the last
  (``monitored`` is then ``"test"``, NaN at the other epochs; ``Outcome.best_along_training``);
* ``nlc``: with a trajectory (``Trajectory``; ``MetricOptions.nlc_trajectory``) the NLC of the run's network
  on the training set at the listed epochs (the same minibatches and Gaussian matrices as ``measure``'s NLC
  at initialization and ``nlc_after``: common random numbers), NaN at the other epochs.

Epoch 0 is the initialization: ``lr`` the starting rate, ``train_loss`` NaN (no step yet), the monitored
error of the initial state (plateau; what E.2's schedule compares the first epoch with) and, when 0 is a
trajectory epoch, the NLC at initialization (equal to the ``nlc`` column: the same network and draws).

The points are kept as plain columns (``Curves``): lists of numbers, in the checkpoint as they are, so a
resumed training continues them and ends with the curves of an uninterrupted one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from archstudy.sampling.constraints import Integer, check

POINT_FIELDS = ("run", "epoch", "lr", "train_loss", "monitored_error", "nlc")


@dataclass(frozen=True)
class Trajectory:
    """The epochs at which the NLC of every run is measured during training, and the NLC's sample sizes (those
    of ``measure``: ``MetricOptions.nlc_batches`` minibatches of ``batch_size``)."""

    epochs: tuple = ()
    batches: int = 100
    batch_size: int = 250

    def __post_init__(self):
        object.__setattr__(self, "epochs", tuple(check("Trajectory", "epochs", Integer(0), e) for e in self.epochs))

    def __contains__(self, epoch: int) -> bool:
        return epoch in self.epochs


@dataclass
class Curves:
    """The points recorded so far, one list per field of ``POINT_FIELDS`` (run = index in the trainer's runs)."""

    columns: dict[str, list] = field(default_factory=lambda: {k: [] for k in POINT_FIELDS})

    def add(self, runs, epoch: int, lr, train_loss, error, nlc=None) -> None:
        """One point per run of ``runs`` at ``epoch``; ``lr``, ``train_loss``, ``error``, ``nlc``: one value per
        run, or a scalar for all (NaN where not measured)."""
        runs = [int(r) for r in runs]
        n = len(runs)

        def values(v):
            a = np.broadcast_to(np.asarray(math.nan if v is None else v, dtype=np.float64), (n,))
            return [float(x) for x in a]

        c = self.columns
        c["run"] += runs
        c["epoch"] += [int(epoch)] * n
        c["lr"] += values(lr)
        c["train_loss"] += values(train_loss)
        c["monitored_error"] += values(error)
        c["nlc"] += values(nlc)

    def to_dict(self) -> dict[str, list]:
        return {k: list(v) for k, v in self.columns.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Curves":
        return cls({k: list(d[k]) for k in POINT_FIELDS})

    def rows(self, runs=None) -> list[dict]:
        """The points as rows sorted by run and epoch; only those of ``runs`` when given."""
        c = self.columns
        keep = None if runs is None else set(int(r) for r in runs)
        order = sorted((r, e, i) for i, (r, e) in enumerate(zip(c["run"], c["epoch"])) if keep is None or r in keep)
        return [{k: c[k][i] for k in POINT_FIELDS} for _, _, i in order]
