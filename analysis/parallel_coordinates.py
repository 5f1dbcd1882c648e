"""The parallel-coordinates view of a study's trained architectures (Plotly's ``parcoords``, drawn in the reader's
browser by ``analysis.interactive``): one vertical axis per design axis that takes two or more values, then the
measures at initialization in the order of the predictor ranking (at most ``MAX_MEASURES``), then test error; one
line per architecture, coloured by its test error. Brushing an axis (a drag along it) keeps the lines inside the
brushed ranges, and selects those architectures in every plot of the study and in its table (the selection of
``analysis.interactive``).

A measure declared log (``AsPredictor.log``) is drawn as its log10, a text or boolean axis as its values in order
(``kind`` "category"); an architecture without a finite value on an axis drawn is left out of the view, and counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .columns import PREDICTOR_BY_COLUMN
from .features import design_axes, measures

MAX_MEASURES = 6  # beside a dozen design axes, more are hard to read side by side: the ranking's best are kept


def dimensions(arch: pd.DataFrame, ranking: pd.DataFrame) -> list[dict[str, Any]]:
    """The view's axes (module docstring), each ``{"col", "label", "kind"}``: kind "category" (with ``values``, in
    order), "log" (drawn as log10) or "linear"."""
    out: list[dict[str, Any]] = []
    for col in design_axes(arch):
        values = arch[col].dropna()
        if values.nunique() < 2:
            continue
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            levels = sorted({str(v) for v in values})
            out.append({"col": col, "label": col.replace("_", " "), "kind": "category", "values": levels})
        else:
            out.append({"col": col, "label": col.replace("_", " "), "kind": "linear"})
    order = list(ranking["predictor"]) if len(ranking) and "predictor" in ranking.columns else []
    found = measures(arch)
    ranked = [m for m in order if m in found] + [m for m in found if m not in order]
    for col in ranked[:MAX_MEASURES]:
        predictor = PREDICTOR_BY_COLUMN[col]
        x = pd.to_numeric(arch[col], errors="coerce").to_numpy(np.float64)
        log = predictor.log and bool(np.all(x[np.isfinite(x)] > 0))
        label = f"log10 {predictor.label}" if log else predictor.label
        out.append({"col": col, "label": label, "kind": "log" if log else "linear"})
    out.append({"col": "test_error", "label": "test error", "kind": "linear"})
    return out
