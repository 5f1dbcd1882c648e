"""The columns that describe a study's architectures for the exports, the importance ranking and the parallel
coordinates: the design axes and the measures at initialization.

* design axes: the sampled spec fields (``analysis.columns.AXES``) and ``width`` (solved from them and the budget),
  those with a value in the study;
* measures: the columns measured at initialization (``AsPredictor`` of kind ``metric`` or ``proxy``), those with a
  finite value in the study.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .columns import AXES, PREDICTORS


def design_axes(arch: pd.DataFrame) -> tuple[str, ...]:
    """The spec fields of the sampled axes, and ``width``, that hold a value in ``arch`` (module docstring)."""
    fields = [f for group in AXES.values() for f in group] + ["width"]
    return tuple(f for f in dict.fromkeys(fields) if f in arch.columns and arch[f].notna().any())


def measures(arch: pd.DataFrame) -> tuple[str, ...]:
    """The columns measured at initialization with a finite value in ``arch`` (module docstring)."""
    out = []
    for p in PREDICTORS:
        if p.kind in ("metric", "proxy") and p.column in arch.columns:
            values = pd.to_numeric(arch[p.column], errors="coerce").to_numpy(np.float64)
            if np.isfinite(values).any():
                out.append(p.column)
    return tuple(out)
