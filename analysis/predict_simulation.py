"""Synthetic studies for the joint predictor's calibration: does a verdict ``analysis.predict`` prints fire at its
nominal rate when nothing is there, and do its intervals cover a value known in closed form when something is?

**Null** (``null_architectures``): every init metric and proxy is independent noise (log-normal where its scale is
log) and test error is independent of all of them, so no learner predicts test error and no learner beats
another: "the joint model beats the best baseline" (or NLC alone) should fire in at most 2.5% of studies (the
one-sided tail of a 95% interval), and each learner's interval should exclude 0 in at most 5% (two-sided).

**Signal** (``signal_architectures``): log10 NLC and test error are bivariate normal with correlation ``r``, every
other metric noise. The raw NLC, its sign chosen on the training folds, is then an unfitted rule whose Spearman's
rho on a held-out fold of m architectures has the expectation of Moran (*Rank correlation and product-moment
correlation*, Biometrika 35, 1948): E[r_s] = 6 / (pi (m + 1)) (arcsin r + (m - 2) arcsin(r / 2))
(``expected_spearman``): the truth its interval should cover at about its nominal rate.

``calibrate`` runs replicate studies through ``predict_study`` and returns one row per replicate with each
verdict's flag; ``rates`` summarises them with exact binomial (Clopper-Pearson) intervals.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from .predict import CANNOT_FIT, JOINT, METRIC_FEATURES, REPEATS, predict_study


def _metrics(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {f.column: (10 ** rng.normal(0, 1, n) if f.log else rng.normal(0, 1, n)) for f in METRIC_FEATURES}


def _table(n: int, error: np.ndarray, metrics: dict[str, np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
    d: dict[str, Any] = {
        "index": np.arange(n),
        "arch_id": [f"{i:016x}" for i in range(n)],
        "variant": "base",
        "study_seed": 0,
        "dataset": "synthetic",
        "trained": True,
        "test_error": error,
        **metrics,
        "num_params": rng.integers(1000, 3000, n).astype(np.float64),
        "depth": rng.integers(2, 9, n).astype(np.float64),
    }
    return pd.DataFrame(d)


def null_architectures(n: int, seed: int) -> pd.DataFrame:
    """A study of ``n`` trained architectures whose metrics, proxies, parameter count and depth are independent
    noise and whose test error is independent of them (uniform on [0.1, 0.5])."""
    rng = np.random.default_rng([seed, 33])
    return _table(n, rng.uniform(0.1, 0.5, n), _metrics(rng, n), rng)


def signal_architectures(n: int, r: float, seed: int) -> pd.DataFrame:
    """A study of ``n`` architectures where (log10 NLC, test error) is bivariate normal with correlation ``r``
    (error = 0.3 + 0.05 z, z the standard normal correlated with log10 NLC); everything else noise."""
    rng = np.random.default_rng([seed, 34])
    metrics = _metrics(rng, n)
    a, b = rng.normal(0, 1, n), rng.normal(0, 1, n)
    metrics["nlc"] = 10**a
    z = r * a + math.sqrt(1 - r * r) * b
    return _table(n, 0.3 + 0.05 * z, metrics, rng)


def expected_spearman(r: float, m: int) -> float:
    """E[Spearman's rho] of m draws of a bivariate normal with correlation r (Moran 1948, the module docstring)."""
    return 6 / (math.pi * (m + 1)) * (math.asin(r) + (m - 2) * math.asin(r / 2))


def calibrate(
    kind: str,
    replicates: int,
    n: int,
    *,
    seed: int = 0,
    r: float = 0.5,
    joint: Sequence[str] = JOINT,
    repeats: int | None = None,
) -> pd.DataFrame:
    """``replicates`` synthetic studies of ``n`` architectures (``kind`` "null" or "signal" with correlation
    ``r``) through ``predict_study``; one row per replicate: ``beats_baseline``, ``beats_nlc`` (+1, 0, -1: the
    verdict), ``joint_above_zero``, and for every learner ``excludes:NAME`` (its interval excludes 0: 1, else 0;
    NaN when it cannot fit); with signal also ``covers`` (the raw NLC's interval holds ``expected_spearman``)."""
    if kind not in ("null", "signal"):
        raise ValueError(f"calibrate: kind = {kind!r}: must be 'null' or 'signal'")
    rows = []
    for i in range(replicates):
        arch = null_architectures(n, seed + i) if kind == "null" else signal_architectures(n, r, seed + i)
        p = predict_study(
            arch,
            importance=False,
            dependence=False,
            ranking=False,
            curve=False,
            joint=joint,
            repeats=REPEATS if repeats is None else repeats,
        )
        row: dict[str, Any] = {"replicate": seed + i, **p.calls}
        for _, s in p.scores.iterrows():
            if s["status"] == CANNOT_FIT or not np.isfinite(s["spearman_lo"]):
                row[f"excludes:{s['learner']}"] = math.nan
            else:
                row[f"excludes:{s['learner']}"] = float(s["spearman_lo"] > 0 or s["spearman_hi"] < 0)
        if kind == "signal":
            fold = n // p.folds  # the folds of a study without siblings: n // k or n // k + 1 rows
            truth = expected_spearman(r, fold)
            s = p.scores.set_index("learner").loc["raw:nlc"]
            row["truth"] = truth
            row["covers"] = float(s["spearman_lo"] <= truth <= s["spearman_hi"])
        rows.append(row)
    return pd.DataFrame(rows)


def rates(table: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Each flag's rate over the replicates of ``calibrate`` with its Clopper-Pearson interval: ``beats`` (the
    verdict "the joint model beats ...", +1), ``excludes:NAME`` and ``covers`` (1)."""
    rows = []
    for col in table.columns:
        if col == "replicate" or col == "truth":
            continue
        v = table[col].dropna().to_numpy(np.float64)
        hits = int((v == 1).sum())
        k = len(v)
        lo = float(sps.beta.ppf((1 - confidence) / 2, hits, k - hits + 1)) if hits > 0 else 0.0
        hi = float(sps.beta.ppf(1 - (1 - confidence) / 2, hits + 1, k - hits)) if hits < k else 1.0
        rows.append({"flag": col, "fired": hits, "of": k, "rate": hits / k if k else math.nan, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def calibration_rates(
    replicates: int, sizes: Sequence[int], *, seed: int = 0, r: float = 0.5, progress: Any = None
) -> pd.DataFrame:
    """``archstudy calibrate predictor``: for each study size in ``sizes``, ``replicates`` null and ``replicates``
    signal studies through the full evaluation (both joint learners, ``predict_study``'s default repeats), and
    the rate of each verdict (``rates``): one row per (size, kind, flag), with the seconds per study."""
    import time

    out = []
    for n in sizes:
        for kind in ("null", "signal"):
            start = time.perf_counter()
            table = calibrate(kind, replicates, n, seed=seed, r=r)
            seconds = (time.perf_counter() - start) / max(replicates, 1)
            rows = rates(table)
            if kind == "null":  # every learner's "interval excludes 0", pooled
                flags = table[[c for c in table.columns if c.startswith("excludes:")]].to_numpy(np.float64)
                fired, trials = int(np.nansum(flags)), int(np.isfinite(flags).sum())
                pooled = {"flag": "excludes:any learner (pooled)", "fired": fired, "of": trials}
                rows = pd.concat([rows, pd.DataFrame([{**pooled, "rate": fired / max(trials, 1)}])], ignore_index=True)
            rows.insert(0, "kind", kind)
            rows.insert(0, "architectures", n)
            rows["seconds_per_study"] = seconds
            out.append(rows)
            if progress is not None:
                print(
                    f"calibration: {kind}, {n} architectures: {replicates} studies, {seconds:.1f} s each", file=progress
                )
    return pd.concat(out, ignore_index=True)
