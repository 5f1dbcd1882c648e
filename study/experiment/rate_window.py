"""The rate window: a study that trains only m of the protocol's n starting rates, around a predicted best rate.

Every architecture is trained at n starting rates lr_k = lr_min * f^k, k = 0 .. n - 1, and its selected run is the
one of lowest validation error (Philipp and Carbonell, *The Nonlinearity Coefficient*, appendix E.2: n = 40, f = 3).
With ``lr_window: {size: m, centre: ...}`` a study trains only the window

    W(c, m) = {s, ..., s + m - 1},    s = clip(c - floor(m / 2), 0, n - m)

around the centre c, a rate index predicted for the architecture before training: the runs it trains are exactly
those of the full sweep at these rates (the rates of a stack train independently, with the same minibatch order),
and the selected run is the window's lowest validation error. A rule of the experiment, declared here once: the
trainer trains W, the run machinery counts m runs, and the analysis measures a window's regret offline with the
same ``window_start``.

The centre is written into the study's configuration when the study starts, resolved from a finished study
(``archstudy.analysis.learning_rates.resolve_window``, the command line's ``--lr-window-from``), so a study holds
everything it trains with and a resume draws the same windows:

* ``centre: K`` (an integer): every architecture's window is centred on K, the training study's median best index
  (the rule ``predictor: median``);
* ``centre: {intercept: b, terms: [...]}``: a linear function of the architecture's measures at initialization and
  design (``predictor: measures``): c = round(b + sum_t w_t * z_t), with z_t = (x - mean) / scale of a numeric
  column x (its log10 where ``log``; ``fill`` where the value is missing or not finite, as the fit imputed it) or
  z_t = [value == level] of a categorical column; rounded (halves to even) and clipped to 0 .. n - 1.

``from`` and ``predictor`` record where the centre came from (they do not change what is trained).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from archstudy.sampling.constraints import Constraint

PREDICTORS = ("median", "measures")  # the rule "the training study's median best index", or the measures' ridge
KEYS = ("size", "centre", "from", "predictor")
TERM_KEYS = {
    "numeric": ("column", "log", "mean", "scale", "fill", "weight"),
    "categorical": ("column", "level", "weight"),
}


def window_start(centre: Any, m: int, n: int) -> Any:
    """s = clip(c - floor(m / 2), 0, n - m): the first rate index of the window of ``m`` of ``n`` rates centred on
    ``centre`` (an integer or an integer array)."""
    return np.clip(np.asarray(centre) - m // 2, 0, n - m)


def centre_index(prediction: Any, n: int) -> Any:
    """A predicted best index as a window's centre: rounded to the nearest integer (halves to even) and clipped to
    0 .. n - 1."""
    return np.clip(np.rint(np.asarray(prediction, dtype=np.float64)), 0, n - 1).astype(np.int64)


def _value(term: Mapping[str, Any], row: Mapping[str, Any]) -> float:
    value = row.get(term["column"])
    if "level" in term:
        return 1.0 if value is not None and str(value) == str(term["level"]) else 0.0
    try:
        x = float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if term.get("log"):
        x = math.log10(x) if x > 0 and math.isfinite(x) else math.nan
    if not math.isfinite(x):
        x = float(term["fill"])
    return (x - float(term["mean"])) / float(term["scale"])


def predicted_centre(window: Mapping[str, Any], row: Mapping[str, Any], n: int) -> int:
    """The centre of ``window`` (a study's ``lr_window``) for the architecture whose spec fields and measures at
    initialization are ``row`` (module docstring), as a rate index in 0 .. n - 1."""
    centre = window["centre"]
    if not isinstance(centre, Mapping):
        return int(centre_index(centre, n))
    prediction = float(centre["intercept"]) + sum(float(t["weight"]) * _value(t, row) for t in centre["terms"])
    return int(centre_index(prediction if math.isfinite(prediction) else float(centre["intercept"]), n))


def window_of(window: Mapping[str, Any], row: Mapping[str, Any], n: int) -> tuple[int, int]:
    """(s, m): the first rate index and the size of the window ``window`` trains for the architecture ``row``."""
    m = int(window["size"])
    return int(window_start(predicted_centre(window, row, n), m, n)), m


@dataclass(frozen=True)
class WindowSpec(Constraint):
    """A study's ``lr_window``: null (the full sweep), or a mapping with ``size`` (an integer m >= 1; at most the
    protocol's rates, checked with the protocol), ``centre`` (an integer rate index >= 0, or ``{intercept, terms}``,
    module docstring) and optionally ``from`` (a text) and ``predictor`` (one of ``PREDICTORS``)."""

    def normalize(self, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping) or set(value) - set(KEYS) or not {"size", "centre"} <= set(value):
            self.fail()
        size = value["size"]
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            self.fail()
        out: dict[str, Any] = {"size": int(size), "centre": self._centre(value["centre"])}
        if "from" in value:
            if not isinstance(value["from"], str):
                self.fail()
            out["from"] = value["from"]
        if "predictor" in value:
            if value["predictor"] not in PREDICTORS:
                self.fail()
            out["predictor"] = value["predictor"]
        return out

    def _centre(self, centre: Any) -> Any:
        if isinstance(centre, (int, np.integer)) and not isinstance(centre, bool):
            if centre < 0:
                self.fail()
            return int(centre)
        if not isinstance(centre, Mapping) or set(centre) != {"intercept", "terms"}:
            self.fail()
        intercept = _finite(centre["intercept"])
        terms = centre["terms"]
        if intercept is None or not isinstance(terms, (list, tuple)):
            self.fail()
        out = []
        for t in terms:
            kind = "categorical" if isinstance(t, Mapping) and "level" in t else "numeric"
            if not isinstance(t, Mapping) or set(t) != set(TERM_KEYS[kind]) or not isinstance(t["column"], str):
                self.fail()
            numbers = [k for k in TERM_KEYS[kind] if k not in ("column", "level", "log")]
            if any(_finite(t[k]) is None for k in numbers) or (kind == "numeric" and not float(t["scale"]) > 0):
                self.fail()
            term = {k: (float(t[k]) if k in numbers else t[k]) for k in TERM_KEYS[kind]}
            if kind == "numeric":
                term["log"] = bool(t["log"])
            else:
                term["level"] = str(t["level"])
            out.append(term)
        return {"intercept": intercept, "terms": out}

    def describe(self) -> str:
        return (
            "must be null or a mapping {size: m >= 1, centre: a rate index >= 0 or {intercept, terms}} (optionally "
            f"from: a study, predictor: one of {', '.join(PREDICTORS)}); archstudy run --lr-window M --lr-window-from "
            "STUDY writes one"
        )

    def invalid_examples(self) -> tuple[Any, ...]:
        return ({"centre": 3, "size": 0}, {"size": 4}, {"centre": -1, "size": 4}, "8", {"centre": {}, "size": 4})


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return float(value) if math.isfinite(float(value)) else None
