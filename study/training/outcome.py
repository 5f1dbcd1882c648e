"""What training one architecture gives: a record per run and the selected run (NLC paper, E.2).

"Henceforth, we refer to the 'trained network' as the network that was obtained during the training run
that yielded the lowest validation classification error": the selected run is the one with the lowest
monitored error at its best state (the VCE; the training error under the ``long`` protocol, as figure 3D
reports the lowest training error across rates), or with ``Protocol.selection = "test"`` the lowest test
error (only to reproduce papers that selected so). ``BestRecord.selected_by`` names the split that
selected it ("val", "train" or "test"), and so does every row made from it. Ties go to the lower run
index, the smaller rate. Its ``lr_edge`` flag says whether its index is among the ``edge_runs`` (5)
lowest or highest, E.2's check that the range of rates contained the optimum.

Several initializations in one stack (``train_architecture(..., init_seeds=[...])``): the runs are
seed-major, ``runs[j * n_rates + k]`` is initialization ``init_seeds[j]`` at rate index k (``lr_index`` =
k); ``best`` is the selected run over all of them, ``best_per_seed()`` the selected run of each
initialization (the best rate per seed, what a paper's mean over seeds averages), and ``lr_min`` / ``c_out``
are those of the selected run's initialization.

Column names follow docs/results.md ("selected run" and "runs").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from torch import nn

from ..experiment.protocol import Protocol
from .curves import Curves
from .schedule import scheduler_of


@dataclass(frozen=True)
class RunRecord:
    """One run (one starting learning rate), errors at its best state."""

    lr: float  # starting learning rate
    lr_index: int  # 0-based, increasing rate
    epochs: int  # epochs trained, the epochs undone by rewinds included
    divisions: int  # learning-rate divisions done (protocol.divisions for a run that finished its schedule)
    val_error: float
    train_error: float
    test_error: float
    diverged: bool  # its loss turned non-finite at least once (each time ending a patience window)
    wall_s: float  # its share of the stack's time: each epoch's time split evenly among the live runs


@dataclass(frozen=True)
class BestRecord(RunRecord):
    """The selected run, with the network's NLC and output bias after training (on the training set)."""

    nlc_after: float = float("nan")
    bias_after: float = float("nan")
    lr_edge: bool = False
    selected_by: str = "val"  # the split whose error selected it: "val" (E.2), "train" (figure 3D) or "test"


@dataclass
class Outcome:
    runs: list[RunRecord]  # in the order of the rates (seed-major with several initializations)
    best: BestRecord
    lr_min: float  # the measured smallest starting rate of the series (NaN when not measurable)
    c_out: float  # output scale Q f at initialization (cross-entropy divides the output by it; mse does not)
    train_s: float  # seconds, lr_min measurement and final metrics included, over resumed sessions
    protocol: Protocol
    # Every run's training curves (``study.training.curves``: columns of points, ``run`` = position in ``runs``).
    curves: dict = field(repr=False, compare=False)
    network: nn.Module | None = field(default=None, repr=False, compare=False)  # the selected run, R = 1
    init_seeds: tuple = (0,)  # the initialization seed of each group of runs
    selected: int = 0  # position of the selected run in ``runs``
    first_index: int = 0  # the series index of ``runs[0]``'s rate (a rate window's first; 0: the whole series)

    @property
    def n_diverged(self) -> int:
        return sum(r.diverged for r in self.runs)

    @property
    def n_rates(self) -> int:
        return len(self.runs) // len(self.init_seeds)

    def seed_runs(self, j: int) -> list[RunRecord]:
        """The runs of initialization ``init_seeds[j]``, one per rate."""
        n = self.n_rates
        return self.runs[j * n : (j + 1) * n]

    def best_per_seed(self) -> list[RunRecord]:
        """The selected run of each initialization (by ``best.selected_by``, ties to the lower rate)."""
        return [
            self.seed_runs(j)[select(self.seed_runs(j), self.best.selected_by)] for j in range(len(self.init_seeds))
        ]

    def selected_row(self) -> dict:
        """The ``architectures`` columns this outcome fills (docs/results.md: selected run, runs summary,
        health, ``c_out`` and ``train_s``)."""
        b = self.best
        return {
            "lr_min": float(self.lr_min),
            "lr": b.lr,
            "lr_index": b.lr_index,
            "epochs": b.epochs,
            "divisions": b.divisions,
            "val_error": b.val_error,
            "train_error": b.train_error,
            "test_error": b.test_error,
            "nlc_after": b.nlc_after,
            "bias_after": b.bias_after,
            "lr_edge": b.lr_edge,
            "selected_by": b.selected_by,
            "n_runs": len(self.runs),
            **self.seed_spread(),
            "n_diverged": self.n_diverged,
            "all_diverged": self.n_diverged == len(self.runs),
            "c_out": float(self.c_out),
            "train_s": float(self.train_s),
        }

    def seed_spread(self) -> dict:
        """``inits``, and the mean and standard deviation (n - 1; NaN with one) over the initializations of each
        one's selected run's test error (``best_per_seed``): the ``architectures`` columns of ``init_seeds: k``."""
        errors = [r.test_error for r in self.best_per_seed()]
        k = len(errors)
        mean = math.fsum(errors) / k
        sd = math.sqrt(math.fsum((e - mean) ** 2 for e in errors) / (k - 1)) if k > 1 else math.nan
        return {"inits": k, "test_error_mean": mean, "test_error_sd": sd}

    def run_rows(self) -> list[dict]:
        """The ``runs`` table's rows (without the architecture's identity columns): one row per initialization and
        rate, seed-major; ``init_index`` the initialization's position, ``selected`` its selected run
        (``best_per_seed``; with one initialization, the selected run)."""
        n = self.n_rates
        chosen = {j * n + select(self.seed_runs(j), self.best.selected_by) for j in range(len(self.init_seeds))}
        return [{"init_index": k // n, **asdict(r), "selected": k in chosen} for k, r in enumerate(self.runs)]

    @property
    def monitored(self) -> str:
        """The split of the curves' ``monitored_error``: the protocol's monitor; under ``steps`` "test" with
        ``test_every``, else "none" (``Scheduler.tracks``)."""
        return scheduler_of(self.protocol).tracks

    def best_along_training(self) -> list[float]:
        """Each run's lowest error in its curves (``monitored_error`` of the split ``monitored``) over the points
        where it was evaluated on a finite state: a point whose epoch's loss was not finite is left out, and under a
        steps schedule so is a diverged run's last point (its state turned non-finite in that epoch, where it
        stopped); NaN where no point is left. Under a steps schedule with ``test_every``: the best test error along
        training, which the Householder papers report (their "best result"), beside ``test_error``, the final
        state's."""
        best = [math.nan] * len(self.runs)
        stops_at_divergence = not scheduler_of(self.protocol).monitors
        c = self.curves
        for run, epoch, loss, error in zip(c["run"], c["epoch"], c["train_loss"], c["monitored_error"]):
            record = self.runs[run]
            if not math.isfinite(error) or (epoch > 0 and not math.isfinite(loss)):
                continue
            if stops_at_divergence and record.diverged and epoch >= record.epochs:
                continue
            if not error >= best[run]:  # NaN (none yet) or lower
                best[run] = float(error)
        return best

    def curve_rows(self) -> list[dict]:
        """The ``curves`` table's rows (without the architecture's identity columns), one per run and epoch,
        by rate and epoch: of the first initialization, the architecture's (``Outcome.curves`` holds every one's)."""
        n = self.n_rates
        return [
            {
                "lr_index": self.first_index + p["run"],
                "epoch": p["epoch"],
                "lr": p["lr"],
                "train_loss": p["train_loss"],
                "monitored_error": p["monitored_error"],
                "monitored": self.monitored,
                "nlc": p["nlc"],
            }
            for p in Curves.from_dict(self.curves).rows()
            if p["run"] < n
        ]

    def to_dict(self) -> dict:
        """A JSON-friendly form (everything but the network)."""
        return {
            "runs": [asdict(r) for r in self.runs],
            "best": asdict(self.best),
            "lr_min": float(self.lr_min),
            "c_out": float(self.c_out),
            "train_s": float(self.train_s),
            "protocol": self.protocol.to_dict(),
            "init_seeds": list(self.init_seeds),
            "selected": self.selected,
            "first_index": self.first_index,
        }


SPLITS = ("val", "train", "test")


def select(runs: list[RunRecord], split: str) -> int:
    """The position in ``runs`` of the run with the lowest error on ``split`` ("val", "train" or "test");
    ties: the lower position (the smaller rate)."""
    key = f"{split}_error"
    return min(range(len(runs)), key=lambda i: (getattr(runs[i], key), i))
