"""The training protocol: how the runs of one architecture are trained (NLC paper, appendix E.2).

``paper`` is E.2 exactly: SGD, minibatches of 250, float64, 40 starting learning rates

    lr_k = lr_min * 3^k,   k = 0 .. 39,   lr_min = 1e-8 / sum_l ( Q_b |dW_lb|_F / |W_l|_F )

(``study.training.lr_min``), and for each run the schedule "train until the validation classification
error (VCE) has not improved for 10 epochs, rewind to the best state, divide the learning rate by 3,
continue until it has not improved for 5 epochs, ..., after the 10th division, when the VCE has again
not improved for 5 epochs, rewind one last time and terminate" (``study.training.schedule``).

The other presets change only what E.2 and section 4 say they change:

* ``adam``  (figure 3F): Adam instead of SGD; "before obtaining our measurements for dW_lb, we first ran
  Adam for 4 epochs, again without applying updates, in order to warm-start the running averages".
* ``long``  (figure 3D, B.1): 60 rates from ``1e-16 * sum_l (...)`` ("the smallest step size that was
  meaningful for 64 bit precision"), and the patience counted on the training classification error
  ("without using early stopping based on the validation error"); the selected run is then the one with
  the lowest training error, as figure 3D reports it.
* ``quick`` (not in the paper): 8 rates, every second one of the paper's series from index 12 to 26,
  and a cap of 60 epochs per run, for small studies and tests. The indices are where trainable
  waveform-noise nets select theirs: measured with the paper protocol capped at 30 epochs on 20k-parameter
  nets of the paper space, the rates within 0.02 of the best validation error spanned indices 13-26
  (depth-5 relu, best 20) and 21-39 (depth-49 gaussian with layernorm and skips, best 29); a depth-3
  batchnorm-relu net selected index 18. (Figure 7A of the paper, CIFAR10, shows wide never-chosen
  margins at both ends of the 40 rates.) ``edge_runs`` = 1: with 8 rates, ``lr_edge`` flags a selection
  at the lowest or highest one.

Explicit ``lrs=[...]`` replace the series (``lr_min`` is still measured and reported).
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, Mapping

from sampling.constraints import (
    Choice, Constraint, Integer, Real, SpecError, Text, check, is_real,
)

OPTIMIZERS = ("sgd", "adam")
MONITORS = ("val", "train")


@dataclass(frozen=True)
class Maybe(Constraint):
    """``None`` or a value under ``inner``."""

    inner: Constraint

    def normalize(self, value):
        return None if value is None else self.inner.normalize(value)

    def describe(self):
        return self.inner.describe() + ", or null"

    def invalid_examples(self):
        return self.inner.invalid_examples()


@dataclass(frozen=True)
class Rates(Constraint):
    """``None`` or a non-empty strictly increasing sequence of finite positive learning rates."""

    def normalize(self, value):
        if value is None:
            return None
        if isinstance(value, (str, bytes, Mapping)):
            self.fail()
        try:
            rates = tuple(value)
        except TypeError:
            self.fail()
        if not rates or not all(is_real(r) and math.isfinite(r) and r > 0 for r in rates):
            self.fail()
        rates = tuple(float(r) for r in rates)
        if any(b <= a for a, b in zip(rates, rates[1:])):
            self.fail()
        return rates

    def describe(self):
        return "must be null or a non-empty, strictly increasing list of finite positive learning rates"

    def invalid_examples(self):
        return ([], [1e-3, 1e-4], [0.0, 1.0], "0.1")


def _f(constraint: Constraint, default: Any, doc: str):
    return field(default=default, metadata={"constraint": constraint, "doc": doc})


@dataclass(frozen=True)
class Protocol:
    """How the runs of one architecture are trained; the defaults are the paper's (E.2)."""

    preset: str = _f(Text(), "custom", "the preset this protocol started from")
    optimizer: str = _f(Choice(OPTIMIZERS), "sgd", "sgd (the paper) or adam (figure 3F)")
    lrs: tuple | None = _f(Rates(), None, "explicit starting learning rates (increasing); null: the series")
    num_lrs: int = _f(Integer(1), 40, "number of starting rates lr_min * lr_factor^k (len(lrs) when given)")
    lr_factor: float = _f(Real(1.0, lo_open=True), 3.0, "spacing factor of the series")
    lr_min_scale: float = _f(Real(0.0, lo_open=True), 1e-8,
                             "lr_min = lr_min_scale / sum_l Q_b|dW_lb|_F / |W_l|_F (1e-8 paper, 1e-16 long)")
    batch_size: int = _f(Integer(1), 250, "minibatch size")
    max_epochs: int | None = _f(Maybe(Integer(1)), None, "cap on the epochs of one run (null: none)")
    patience_first: int = _f(Integer(1), 10, "epochs without improvement before the first division")
    patience: int = _f(Integer(1), 5, "epochs without improvement before each later division and the stop")
    divisions: int = _f(Integer(0), 10, "learning-rate divisions before the final patience window")
    division_factor: float = _f(Real(1.0, lo_open=True), 3.0, "each division divides the rate by this")
    monitor: str = _f(Choice(MONITORS), "val",
                      "error that drives patience, rewinds and selection: val (E.2) or train (figure 3D)")
    warmup_epochs: int = _f(Integer(0), 0, "Adam: epochs of moment estimates before measuring lr_min")
    adam_beta1: float = _f(Real(0.0, 1.0, hi_open=True), 0.9, "Adam beta1")
    adam_beta2: float = _f(Real(0.0, 1.0, hi_open=True), 0.999, "Adam beta2")
    adam_eps: float = _f(Real(0.0, lo_open=True), 1e-8, "Adam epsilon")
    edge_runs: int = _f(Integer(0), 5, "lr_edge flags a selected index among this many lowest or highest")

    def __post_init__(self):
        where = "Protocol"
        for f in fields(self):
            object.__setattr__(self, f.name, check(where, f.name, f.metadata["constraint"], getattr(self, f.name)))
        if self.lrs is not None:
            # The explicit list decides how many runs there are.
            object.__setattr__(self, "num_lrs", len(self.lrs))
        if self.warmup_epochs and self.optimizer != "adam":
            raise SpecError(where, "warmup_epochs", self.warmup_epochs,
                            "must be 0 unless optimizer = 'adam' (SGD keeps no running averages)")

    # -- derived ---------------------------------------------------------------------------------
    def rates(self, lr_min: float) -> list[float]:
        """The starting learning rates: ``lrs`` when given, else ``lr_min * lr_factor^k``, k < num_lrs."""
        if self.lrs is not None:
            return list(self.lrs)
        return [lr_min * self.lr_factor ** k for k in range(self.num_lrs)]

    def is_edge(self, index: int) -> bool:
        """Whether run ``index`` is among the ``edge_runs`` lowest or highest rates (E.2's heuristic check)."""
        return index < self.edge_runs or index >= self.num_lrs - self.edge_runs

    # -- serialization ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["lrs"] is not None:
            d["lrs"] = list(d["lrs"])  # YAML- and JSON-friendly
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Protocol":
        """A protocol from a mapping; with ``preset`` naming a preset, the unnamed fields come from it."""
        if not isinstance(d, Mapping):
            raise SpecError("Protocol", "protocol", d, "must be a preset name or a mapping of Protocol fields")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names, key=str)
        if unknown:
            raise SpecError("Protocol", str(unknown[0]), d[unknown[0]], "is not a field of Protocol")
        base = PROTOCOLS.get(d.get("preset")) if isinstance(d.get("preset"), str) else None
        if base is None:
            return cls(**d)
        return replace(base, **d)

    @classmethod
    def of(cls, protocol: "str | Mapping | Protocol") -> "Protocol":
        """``"paper" | "adam" | "long" | "quick"``, a mapping of fields (see ``from_dict``) or a Protocol."""
        if isinstance(protocol, Protocol):
            return protocol
        if isinstance(protocol, str):
            if protocol not in PROTOCOLS:
                raise SpecError("Protocol", "preset", protocol,
                                "must be one of " + ", ".join(repr(k) for k in PROTOCOLS))
            return PROTOCOLS[protocol]
        return cls.from_dict(protocol)

    def replace(self, **changes) -> "Protocol":
        return replace(self, **changes)


assert all(f.default is not MISSING for f in fields(Protocol))

PROTOCOLS: dict[str, Protocol] = {
    "paper": Protocol(preset="paper"),
    "adam": Protocol(preset="adam", optimizer="adam", warmup_epochs=4),
    "long": Protocol(preset="long", num_lrs=60, lr_min_scale=1e-16, monitor="train"),
    "quick": Protocol(preset="quick", num_lrs=8, lr_factor=9.0, lr_min_scale=1e-8 * 3.0**12, max_epochs=60,
                      edge_runs=1),
}
