"""The seed-noise ceiling: how well one initialization's test error predicts another's, and so how well any
predictor of test error can do.

A study with ``init_seeds: k`` (k >= 2) trains every architecture from k initializations at the same rates and keeps
each one's selected run (the ``runs`` table's ``selected`` per ``init_index``). Over the base architectures, the test
errors y_a and y_b of two initializations agree by Kendall's tau-b and Spearman's rho (each pair of initializations
apart, averaged over the k (k - 1) / 2 pairs), with a percentile interval from a bootstrap of the base
architectures (``BOOT`` resamples).

**The ceiling of a predictor.** Write y_j = T + e_j: T what the architecture decides, e_j the initialization's own
noise, independent across j. A predictor f of the architecture correlates with y_0 (the row's ``test_error``, the
one every predictor of the report is scored against) at most as T does, and corr(T, y_0) = sqrt(corr(y_0, y_1)), the
attenuation of Spearman (*The Proof and Measurement of Association between Two Things*, American Journal of
Psychology 15, 1904). On ranks, under a bivariate normal (Kendall, *Rank Correlation Methods*, 1948: tau =
(2 / pi) asin r; Moran 1948: rho_s = (6 / pi) asin(r / 2)), the seeds' agreement gives r = sin(pi tau / 2), and the
ceiling of a predictor's |tau| is (2 / pi) asin(sqrt(r)) (and of |rho_s|, (6 / pi) asin(sqrt(r') / 2) with
r' = 2 sin(pi rho_s / 6)). A predictor's ``of_ceiling`` is its |tau| over that ceiling: 1 is all that the seed noise
leaves to predict. With one initialization the ceiling is unknown (``seed_ceiling`` says so).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from .predict.folds import spearman

BOOT = 1000  # bootstrap resamples of the base architectures
CONFIDENCE = 0.95
FEWEST = 8  # base architectures with every initialization's error below which no agreement is stated
UNKNOWN = (
    "unknown: this study trained each architecture from one initialization; a study with `init_seeds: 2` "
    "(`archstudy run --init-seeds 2`) measures it, at twice the runs"
)


def seed_errors(runs: pd.DataFrame, arch: pd.DataFrame) -> pd.DataFrame:
    """One row per trained base architecture whose every initialization has a selected run with a finite test error:
    columns ``index``, ``arch_id`` and one ``init_<j>`` per initialization, the test error of its selected run."""
    if not len(runs) or "init_index" not in runs.columns:
        return pd.DataFrame()
    base = arch[(arch["variant"] == "base") & arch["trained"].astype(bool)][["index", "arch_id"]]
    sel = runs[runs["selected"].fillna(False).astype(bool)]
    sel = sel.merge(base, on=["index", "arch_id"], how="inner")
    wide = sel.pivot_table(index=["index", "arch_id"], columns="init_index", values="test_error", aggfunc="first")
    wide = wide[np.isfinite(wide.to_numpy(np.float64)).all(axis=1)]
    wide.columns = [f"init_{int(j)}" for j in wide.columns]
    return wide.reset_index()


def tau_ceiling(tau: float) -> float:
    """The largest |Kendall tau| a predictor can have with one initialization's error when two initializations
    agree by ``tau`` (module docstring): (2 / pi) asin(sqrt(sin(pi tau / 2))); NaN for tau <= 0 or NaN."""
    if not (math.isfinite(tau) and tau > 0):
        return math.nan
    return 2 / math.pi * math.asin(math.sqrt(math.sin(math.pi * min(tau, 1.0) / 2)))


def rho_ceiling(rho: float) -> float:
    """Likewise for Spearman's rho: r = 2 sin(pi rho / 6), ceiling (6 / pi) asin(sqrt(r) / 2); NaN for rho <= 0."""
    if not (math.isfinite(rho) and rho > 0):
        return math.nan
    r = 2 * math.sin(math.pi * min(rho, 1.0) / 6)
    return 6 / math.pi * math.asin(math.sqrt(min(r, 1.0)) / 2)


def _agreement(e: np.ndarray) -> tuple[float, float]:
    """(Kendall tau-b, Spearman rho) of every pair of columns of ``e`` (architectures x initializations), averaged."""
    k = e.shape[1]
    taus, rhos = [], []
    for a in range(k):
        for b in range(a + 1, k):
            taus.append(float(sps.kendalltau(e[:, a], e[:, b]).statistic))
            rhos.append(spearman(e[:, a], e[:, b]))
    return float(np.nanmean(taus)), float(np.nanmean(rhos))


def seed_ceiling(
    runs: pd.DataFrame, arch: pd.DataFrame, *, n_boot: int = BOOT, seed: int = 0, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """The seeds' agreement and the ceiling of a predictor (module docstring): ``inits``, ``n`` (base architectures),
    ``kendall``/``spearman`` with ``_lo``/``_hi``, ``kendall_ceiling``/``spearman_ceiling`` with theirs (the
    interval's ends mapped through the monotone ``tau_ceiling``/``rho_ceiling``), and ``why`` where nothing can be
    stated (one initialization, or fewer than ``FEWEST`` architectures)."""
    inits = int(arch["inits"].max()) if "inits" in arch.columns and arch["inits"].notna().any() else 1
    out: dict[str, Any] = {"inits": inits, "n": 0, "why": None}
    if inits < 2:
        return {**out, "why": UNKNOWN}
    wide = seed_errors(runs, arch)
    e = wide[[c for c in wide.columns if c.startswith("init_")]].to_numpy(np.float64) if len(wide) else np.empty((0, 0))
    out["n"] = len(e)
    if len(e) < FEWEST:
        return {**out, "why": f"{len(e)} base architectures with every initialization trained: fewer than {FEWEST}"}
    tau, rho = _agreement(e)
    rng = np.random.default_rng(seed)
    boot = np.array([_agreement(e[rng.integers(0, len(e), len(e))]) for _ in range(n_boot)])
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    t_lo, t_hi = (float(v) for v in np.nanquantile(boot[:, 0], q))
    r_lo, r_hi = (float(v) for v in np.nanquantile(boot[:, 1], q))
    return {
        **out,
        "kendall": tau,
        "kendall_lo": t_lo,
        "kendall_hi": t_hi,
        "spearman": rho,
        "spearman_lo": r_lo,
        "spearman_hi": r_hi,
        "kendall_ceiling": tau_ceiling(tau),
        "kendall_ceiling_lo": tau_ceiling(t_lo),
        "kendall_ceiling_hi": tau_ceiling(t_hi),
        "spearman_ceiling": rho_ceiling(rho),
        "spearman_ceiling_lo": rho_ceiling(r_lo),
        "spearman_ceiling_hi": rho_ceiling(r_hi),
    }


def of_ceiling(score: float, ceiling: float) -> float:
    """A predictor's |score| as a fraction of the ceiling (NaN where the ceiling is unknown)."""
    return abs(score) / ceiling if math.isfinite(score) and math.isfinite(ceiling) and ceiling > 0 else math.nan
