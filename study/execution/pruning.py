"""NLC-guided pruning at launch: measure every architecture at initialization, train only those whose NLC lies
in a window (``StudyConfig.nlc_window``).

The NLC paper finds that optimal test error needs an initial NLC of about 1 to 3 (section 4, figure 2) and
proposes discarding architectures "before training" (section 7). With a window [lo, hi], a unit is built and
measured as always; if lo <= NLC <= hi (a finite NLC) it is trained, else its ``architectures`` row holds what
was measured at initialization with ``trained`` false (``untrained_row``) and it has no runs or curves file.
It counts as finished: a resume does not train it.

``auto``: the window is the NLC's good range (pycls's empirical bootstrap) of a pilot, the architectures of
indices 0 .. ``nlc_pilot`` - 1 with their siblings, which are all trained first; the rest of the study is then
pruned with it. The window is a deterministic function of the pilot's stored rows and the study seed (the rule
``study.experiment.window_rule.pilot_window``: the band where the pilot is large enough for a stable one, else
the NLC paper's [1, 3]), so a resume recomputes the same window; it is computed only once every pilot
architecture is finished (a failed one is retried by the next resume first).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..experiment.config import StudyConfig
from ..experiment.schema import ARCHITECTURES, columns
from .store import current

# What a pruned architecture's row holds where a trained one has its selected run and runs summary (docs/results.md,
# the ``trained`` column): nothing measured (NaN), no run (lr_index -1, counts 0, flags false, selected by "none").
_UNTRAINED = {"float64": math.nan, "int64": 0, "bool": False, "str": "none"}


def untrained_row() -> dict:
    """The ``architectures`` columns of the selected run and the runs summary of an architecture not trained,
    with ``trained`` false, ``all_diverged`` false and ``train_s`` 0."""
    out = {c.name: _UNTRAINED[c.type] for c in columns(ARCHITECTURES, "selected run", "summary")}
    out.update(lr_index=-1, trained=False, train_s=0.0, all_diverged=False)
    return out


def inside(window: tuple[float, float], nlc: float) -> bool:
    """Whether an NLC is in the closed window [lo, hi] (a NaN or infinite NLC never is)."""
    lo, hi = window
    return math.isfinite(nlc) and lo <= nlc <= hi


def is_pilot(config: StudyConfig, index: int) -> bool:
    """Whether architecture ``index`` belongs to the pilot of an ``auto`` window."""
    return config.nlc_window == "auto" and index < config.nlc_pilot


def pilot_points(store, names: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """The NLC and test error of the pilot architectures ``names``, read from their stored ``architectures`` rows:
    the points of the rule ``study.experiment.window_rule.pilot_window``."""
    # current: a pilot finished under schema version 1 (text timestamps) concatenates with newer files
    tables = [current(pq.read_table(pa.BufferReader(store.read_bytes(ARCHITECTURES, f"{n}.parquet")))) for n in names]
    rows = pa.concat_tables(tables, promote_options="default").to_pandas()
    return rows["nlc"].to_numpy("float64"), rows["test_error"].to_numpy("float64")
