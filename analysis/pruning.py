"""NLC-guided pruning: what if architectures whose initial NLC lies outside a window had not been trained?

The NLC paper (section 4, figure 2) finds that "one must start with an NLC in a narrow range,
approximately between 1 and 3, to achieve optimal test error", and proposes discarding architectures
"before training" (section 7). The NLC is measured after building, so pruning saves the training time
only: the saving is the recorded ``train_s`` of the skipped architectures, as a share of the recorded
``total_s`` of all. The regret is the best test error lost: min over the kept minus min over all.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from archstudy.sampling.constraints import check
from archstudy.study.experiment import window_rule as rule
from archstudy.study.experiment.window_rule import PAPER_WINDOW, WINDOW

from .results import architectures_table


def check_window(window: Any, where: str = "nlc_pruning") -> tuple[float, float]:
    """``window`` as (lo, hi) under the declared NLC window (``study.experiment.window_rule.WINDOW``), or the one-line
    ``SpecError`` ``<where>.window = ...: must be two finite numbers 0 <= lo < hi``."""
    lo, hi = check(where, "window", WINDOW, window)
    return lo, hi


def prune(df: pd.DataFrame, window: Any = PAPER_WINDOW, target: str = "test_error") -> dict[str, Any]:
    """The pruning outcome for one table (one dataset). An architecture is kept when lo <= NLC <= hi;
    one whose NLC is not finite (a broken initialization) is skipped too."""
    lo, hi = check_window(window)
    nlc = df["nlc"].to_numpy(np.float64)
    kept = np.isfinite(nlc) & (nlc >= lo) & (nlc <= hi)
    err = df[target].to_numpy(np.float64)
    train = df["train_s"].to_numpy(np.float64)
    total = df["total_s"].to_numpy(np.float64)
    best_all = float(np.nanmin(err)) if np.isfinite(err).any() else math.nan
    best_kept = float(np.nanmin(err[kept])) if np.isfinite(err[kept]).any() else math.nan
    total_s = float(np.nansum(total))
    saved_s = float(np.nansum(train[~kept]))
    return {
        "lo": lo,
        "hi": hi,
        "n": int(len(df)),
        "n_kept": int(kept.sum()),
        "n_skipped": int((~kept).sum()),
        "total_s": total_s,
        "saved_s": saved_s,
        "saved_fraction": saved_s / total_s if total_s > 0 else math.nan,
        "best_error": best_all,
        "best_error_kept": best_kept,
        "regret": best_kept - best_all,
        # Was the best architecture of the study kept? (the regret says by how much it was missed)
        "best_kept": bool(np.isfinite(best_kept) and best_kept == best_all),
    }


def nlc_pruning(df: pd.DataFrame, window: Any = PAPER_WINDOW, target: str = "test_error") -> pd.DataFrame:
    """One row per dataset: ``n_kept`` / ``n_skipped`` by the NLC window [lo, hi] (default the paper's
    [1, 3]), the training time that skipping saves (``saved_s``, ``saved_fraction`` of all recorded
    time) and the ``regret``: best test error among the kept minus the best overall (NaN when nothing
    is kept). Every finished architecture counts, siblings included: each is a candidate."""
    df = architectures_table(df, "nlc_pruning")
    check_window(window)
    rows = []
    groups = df.groupby(df["dataset"].astype(str), sort=True) if "dataset" in df.columns else [("", df)]
    for ds, g in groups:
        rows.append({"dataset": ds, **prune(g, window, target)})
    return pd.DataFrame(rows)


def pruning_curve(df: pd.DataFrame, lo: float = 1.0, his: Any = None, target: str = "test_error") -> pd.DataFrame:
    """``prune`` for windows [lo, hi] over a geometric grid of hi (default 1.5 to 10^4): the trade-off
    between compute saved and best error lost as the window widens."""
    his = np.geomspace(1.5, 1e4, 25) if his is None else his
    return pd.DataFrame([prune(df, (lo, float(h)), target) for h in his if h > lo])


def pilot_window(arch: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """The NLC window of pruning at launch with ``nlc_window: auto`` from the rows of the study's pilot (every
    pilot architecture, siblings included), as the driver computed it: ``study.experiment.window_rule.pilot_window``
    (the NLC's good range where the pilot is large enough for a stable one, else the NLC paper's [1, 3];
    ``source`` says which, ``reason`` why not the pilot's)."""
    df = architectures_table(arch, "pilot_window")
    if "nlc" not in df.columns or "test_error" not in df.columns:
        return rule.pilot_window([], [], seed=seed)
    return rule.pilot_window(df["nlc"].to_numpy(np.float64), df["test_error"].to_numpy(np.float64), seed=seed)
