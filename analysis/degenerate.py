"""Measures at initialization whose value says nothing of the function measured: flagged with why, and left out of
every fit (``without_degenerate``, applied by ``analysis.results.architectures_table``, the one door of every
statistic, range, EDF and predictor to a study's table). The stored rows keep them as measured.

A measure (a column of kind "metric" or "proxy", ``analysis.columns.PREDICTORS``) is degenerate in a row where

* **no signal comes back through the net**: the row's NLC is below ``VANISHED_NLC`` (a linear map's is 1, NLC
  paper section 3); then its NLC and every measure made of the same input gradient (``AsPredictor.gradient``:
  the gradient vector component size, the gradient length) only say how small float64 left that gradient;
* **it overflowed**: +-inf (an output or gradient past float64's range at initialization, ``Numbers.infinite``);
* **no signal through the net**: 0 where 0 means the network passes none (``AsPredictor.silent_at_zero``), a value
  no log axis can place: the variability of a network whose output is constant or linear on the planes (the
  variability paper, A.2: "once F_L becomes a constant (or linear for that matter) on Omega, variability as measured
  by V3 vanishes").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from archstudy.study.experiment.schema import VANISHED_NLC

from .columns import PREDICTORS

# Why a value is degenerate, as the report says it.
NO_SIGNAL_BACK = f"no signal back through the net: its input gradient vanished (NLC below {VANISHED_NLC:g})"
OVERFLOW = "overflow: past float64's range at initialization"
SILENT = "no signal through the net: 0, its output constant or linear where measured (no place on a log axis)"

_MEASURES = tuple(p for p in PREDICTORS if p.kind in ("metric", "proxy"))
_KEYS = ("arch_id", "index", "variant")


def _values(arch: pd.DataFrame, column: str) -> np.ndarray:
    values: np.ndarray = pd.to_numeric(arch[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    return values


def _masks(arch: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """column -> (degenerate rows, why of each): the first reason of the module docstring's that holds."""
    n = len(arch)
    vanished = np.zeros(n, bool)
    if "nlc" in arch.columns:
        nlc = _values(arch, "nlc")
        vanished = np.isfinite(nlc) & (nlc < VANISHED_NLC)
    out = {}
    for p in _MEASURES:
        if p.column not in arch.columns:
            continue
        v = _values(arch, p.column)
        why = np.full(n, "", dtype=object)
        why[np.isinf(v)] = OVERFLOW
        if p.silent_at_zero:
            why[(why == "") & (v == 0)] = SILENT
        if p.gradient:
            why[(why == "") & vanished & np.isfinite(v)] = NO_SIGNAL_BACK
        flagged = why != ""
        if flagged.any():
            out[p.column] = (flagged, why)
    return out


def degenerate(arch: pd.DataFrame) -> pd.DataFrame:
    """One row per degenerate value of ``arch`` (an architectures table): ``arch_id``, ``index``, ``variant`` (those
    ``arch`` holds), ``column``, ``label``, ``value`` and ``why`` (module docstring), by column then index."""
    labels = {p.column: p.label for p in _MEASURES}
    keys = [k for k in _KEYS if k in arch.columns]
    parts = []
    for column, (flagged, why) in _masks(arch).items():
        rows = arch.loc[flagged, keys].copy()
        rows["column"], rows["label"] = column, labels[column]
        rows["value"] = _values(arch, column)[flagged]
        rows["why"] = why[flagged]
        parts.append(rows)
    if not parts:
        return pd.DataFrame(columns=[*keys, "column", "label", "value", "why"])
    return pd.concat(parts, ignore_index=True)


def without_degenerate(arch: pd.DataFrame) -> pd.DataFrame:
    """``arch`` with its degenerate values (``degenerate``) as NaN, what every fit then leaves out as it leaves out
    a measure that was not made; ``arch`` itself where it holds none (no copy), else a copy."""
    masks = _masks(arch)
    if not masks:
        return arch
    out = arch.copy()
    for column, (flagged, _) in masks.items():
        out[column] = _values(out, column)
        out.loc[flagged, column] = np.nan
    return out
