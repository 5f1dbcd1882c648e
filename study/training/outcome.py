"""What training one architecture gives: a record per run and the selected run (NLC paper, E.2).

"Henceforth, we refer to the 'trained network' as the network that was obtained during the training run
that yielded the lowest validation classification error": the selected run is the one with the lowest
monitored error at its best state (the VCE; the training error under the ``long`` protocol, as figure 3D
reports the lowest training error across rates). Ties go to the lower learning-rate index, the smaller
rate. Its ``lr_edge`` flag says whether its index is among the ``edge_runs`` (5) lowest or highest, E.2's
check that the range of rates contained the optimum.

Column names follow docs/results.md ("selected run" and "runs").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from torch import nn

from ..protocol import Protocol


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


RUN_FIELDS = tuple(f.name for f in fields(RunRecord))


@dataclass
class Outcome:
    runs: list[RunRecord]  # in the order of the rates
    best: BestRecord
    lr_min: float  # the measured smallest starting rate of the series (NaN when not measurable)
    c_out: float  # output scale the loss divides by, measured once at initialization
    train_s: float  # seconds, lr_min measurement and final metrics included, over resumed sessions
    protocol: Protocol
    network: nn.Module | None = field(default=None, repr=False, compare=False)  # the selected run, R = 1

    @property
    def n_diverged(self) -> int:
        return sum(r.diverged for r in self.runs)

    def selected_row(self) -> dict:
        """The ``architectures`` columns this outcome fills (docs/results.md: selected run, runs summary,
        health, ``c_out`` and ``train_s``)."""
        b = self.best
        return {
            "lr_min": float(self.lr_min), "lr": b.lr, "lr_index": b.lr_index, "epochs": b.epochs,
            "divisions": b.divisions, "val_error": b.val_error, "train_error": b.train_error,
            "test_error": b.test_error, "nlc_after": b.nlc_after, "bias_after": b.bias_after,
            "lr_edge": b.lr_edge, "n_runs": len(self.runs), "n_diverged": self.n_diverged,
            "all_diverged": self.n_diverged == len(self.runs), "c_out": float(self.c_out),
            "train_s": float(self.train_s),
        }

    def run_rows(self) -> list[dict]:
        """The ``runs`` table's rows (without the architecture's identity columns)."""
        return [{**asdict(r), "selected": r.lr_index == self.best.lr_index} for r in self.runs]

    def to_dict(self) -> dict:
        """A JSON-friendly form (everything but the network)."""
        return {"runs": [asdict(r) for r in self.runs], "best": asdict(self.best), "lr_min": float(self.lr_min),
                "c_out": float(self.c_out), "train_s": float(self.train_s), "protocol": self.protocol.to_dict()}


def select(runs: list[RunRecord], monitor: str) -> RunRecord:
    """The run with the lowest monitored error (``val`` or ``train``); ties: the lower index."""
    key = "val_error" if monitor == "val" else "train_error"
    return min(runs, key=lambda r: (getattr(r, key), r.lr_index))
