"""Error EDFs of a design space: per level of every sampled axis, the empirical distribution of test error,
its complexity-normalized version, and the Kolmogorov-Smirnov distance between levels.

Radosavovic, Johnson, Xie, Lo and Dollár, *On Network Design Spaces for Visual Recognition* (2019),
section 3 compares design spaces by distributions of sampled models instead of their best points:

* the error EDF of n models with errors e_i (their eq. 1):  F(e) = (1/n) sum_i 1[e_i < e];
* the Kolmogorov-Smirnov statistic between two EDFs:  D = sup_e |F_1(e) - F_2(e)|;
* the normalized error EDF, which controls for complexity:  F(e) = sum_i w_i 1[e_i < e] with weights
  summing to 1, chosen "such that its complexity distribution is uniform": the complexity range is cut
  into k bins and each of the m_j models of bin j gets w_j = 1 / (k m_j).

Here a "design space" is a level of an axis of the architecture space (``columns.AXES``: relu vs tanh,
batch vs layer norm, depth in bins, ...), so every axis gets one EDF per level. The paper leaves the bins
open; here they are a tenth of a decade of complexity wide (``BIN_DECADES``: sizes within a factor 1.26
count as the same size), from the smallest complexity of the axis' architectures, and shared by its levels,
so the normalized EDFs of the levels all reweight to one common complexity distribution: uniform over the
bins. A level can only be reweighted onto bins it has models in, so only the bins that every level of the
axis occupies are kept (k = their number; the paper's sets cover every bin, and then this is exactly its
weighting); models in other bins get weight 0 (``n_normalized`` counts the rest). A study at one parameter
budget has every architecture within the width's rounding of it: one bin, and the normalized EDFs equal the
plain ones (the levels do not differ in size); they differ where the complexity does (``flops`` with skip
projections, ``activation_units``, studies of several budgets).

The EDFs are step functions; F(e) is reported at the models' own errors as the share at or below e (the
right limit of the paper's 1[e_i < e]), which leaves D = sup_e |F_1 - F_2| unchanged. A weighted D is the
same supremum over the weighted step functions; no closed null distribution exists for it, so its p-value
(``p_normalized``) is a permutation one (``ks_p_permutation``): the errors of the two levels' weighted
architectures reassigned to them at random, each keeping its level and weight, p = (1 + #{D* >= D}) / (1 + P)
over P permutations, exact under the null that error does not depend on the level (Kolmogorov's asymptotic
distribution at Kish's effective sizes, ``ks_p_weighted``, which this replaced, fired at 8 times its level in
small studies). The unweighted p-value is scipy's ``ks_2samp``. An axis of several levels compares every pair
of them, so ``p_holm`` and ``p_normalized_holm`` adjust the pairs' p-values over the axis (Holm, ``stats.holm``):
what a verdict on the axis' largest KS may read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats as sps

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Integer, Real, check

from .columns import AXES
from .results import Results, architectures_table
from .stats import holm

COMPLEXITY = "num_params"  # the study's budget: what "the same size" means here (FLOPs: complexity="flops")
BIN_DECADES = 0.1  # width of a complexity bin in log10 units
MAX_LEVELS = 8  # a numeric axis with more distinct values (depth 3..49) is shown in bins ...
NUMERIC_BINS = 4  # ... this many, of equal width
PERMUTATIONS = 999  # permutations of a normalized KS p-value (resolution 0.001)
# The most architectures a permutation p-value deals (``ks_p_permutation``): a pair of levels with more is tested
# on a random subsample of this many. The test stays exact (under the null the errors of any subset are
# exchangeable between the levels) and its cost bounded: 999 permutations of 10,000 points, a second, where all
# 100,000 of a large study took 8 GB and minutes per pair. ``ErrorEDF.ks``' ``n_permuted`` says how many it used.
PERMUTATION_SAMPLE_MAX = 10_000
_CHUNK = 2_000_000  # permuted values held at once (16 MB): permutations are dealt in chunks of this many


@dataclass(frozen=True)
class ErrorEDF:
    """What ``edf`` computed. Its tables have one row per

    ``curves``: architecture and axis: dataset, axis, level, arch_id, error, complexity, cdf (plain EDF at
    the architecture's error), weight (1/n of its level), normalized_weight, normalized_cdf.
    ``levels``: level of an axis: dataset, axis, level, n, min, mean, median, complexity_median,
    n_normalized (architectures of positive normalized weight), normalized_min, normalized_mean, bins
    (the shared complexity bins k of the axis: 1 means the levels do not differ in size).
    ``ks``: pair of levels of an axis: dataset, axis, a, b, n_a, n_b, ks, p, ks_normalized, p_normalized
    (from the permutations of ``n_permuted`` of the pair's ``permuted_of`` architectures of positive weight:
    ``PERMUTATION_SAMPLE_MAX`` at most, ``permutation_note``), p_holm and p_normalized_holm (adjusted over the
    axis' pairs), complexity_ks (the KS distance between the two levels' complexity distributions: how much they
    differ in size, so how much normalizing can change).
    """

    curves: pd.DataFrame
    levels: pd.DataFrame
    ks: pd.DataFrame
    complexity: str


# -- the pieces -------------------------------------------------------------------------------------------------


def step_cdf(errors: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """F(e_i) = sum_j w_j 1[e_j <= e_i] / sum_j w_j at every point's own error (ties share a value); plain
    1/n weights by default."""
    e = np.asarray(errors, dtype=np.float64)
    w = np.ones(len(e)) if weights is None else np.asarray(weights, dtype=np.float64)
    order = np.argsort(e, kind="stable")
    cum = np.cumsum(w[order])
    total = cum[-1] if len(cum) else 0.0
    if total <= 0:
        return np.full(len(e), math.nan)
    last = np.searchsorted(e[order], e, side="right") - 1  # the last sorted point tied with each
    return cum[last] / total


def ks_distance(a: np.ndarray, b: np.ndarray, wa: np.ndarray | None = None, wb: np.ndarray | None = None) -> float:
    """D = sup_e |F_a(e) - F_b(e)| of the (weighted) EDFs of samples a and b; NaN if either has no weight."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    wa = np.ones(len(a)) if wa is None else np.asarray(wa, dtype=np.float64)
    wb = np.ones(len(b)) if wb is None else np.asarray(wb, dtype=np.float64)
    if wa.sum() <= 0 or wb.sum() <= 0:
        return math.nan
    grid = np.union1d(a, b)  # the steps of both functions: the supremum is attained at one of them

    def at(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        cum: np.ndarray = np.concatenate([[0.0], np.cumsum(w[order])]) / w.sum()
        return cum[np.searchsorted(x[order], grid, side="right")]

    return float(np.max(np.abs(at(a, wa) - at(b, wb))))


def effective_size(w: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of the points with positive weight."""
    w = np.asarray(w, dtype=np.float64)
    w = w[w > 0]
    return float(w.sum() ** 2 / (w**2).sum()) if len(w) else 0.0


def ks_p_weighted(d: float, wa: np.ndarray, wb: np.ndarray) -> float:
    """Asymptotic p-value of a weighted KS distance d: scipy's two-sample asymptotic one (``ks_2samp``,
    method "asymp": Kolmogorov's one-sample distribution of size n_a n_b / (n_a + n_b), rounded) with Kish's
    effective sizes for n_a and n_b (an approximation; see the module docstring)."""
    na, nb = effective_size(wa), effective_size(wb)
    if not (math.isfinite(d) and na > 0 and nb > 0):
        return math.nan
    return float(sps.kstwo.sf(d, max(1, round(na * nb / (na + nb)))))


def ks_p_permutation(
    a: np.ndarray,
    b: np.ndarray,
    wa: np.ndarray,
    wb: np.ndarray,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    max_points: int | None = None,
) -> float:
    """Permutation p-value of the weighted KS distance D of (a, wa) and (b, wb) (``ks_distance``): the errors of
    the points of positive weight pooled and dealt at random to the points (each keeping its level and weight),
    p = (1 + #{D* >= D}) / (1 + permutations). NaN when either side has no weight. More than ``max_points``
    (default ``PERMUTATION_SAMPLE_MAX``) such points: the test runs on that many drawn at random (seeded), D and
    D* both of the subsample, whose weights are renormalized within each level (``permuted_points``).

    Along the pooled errors in ascending order, the difference of the two weighted EDFs is the cumulative sum of
    s_k = w_k / sum(wa) on a's points and -w_k / sum(wb) on b's, read where the error changes (ties step
    together); a permutation deals the s_k to the sorted errors in a random order."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    wa, wb = np.asarray(wa, dtype=np.float64), np.asarray(wb, dtype=np.float64)
    ka, kb = wa > 0, wb > 0
    if not ka.any() or not kb.any():
        return math.nan
    e = np.concatenate([a[ka], b[kb]])
    w = np.concatenate([wa[ka], wb[kb]])
    side = np.r_[np.ones(int(ka.sum()), bool), np.zeros(int(kb.sum()), bool)]
    rng = np.random.default_rng(seed)
    cap = PERMUTATION_SAMPLE_MAX if max_points is None else max_points
    if len(e) > cap:
        keep = np.sort(rng.choice(len(e), cap, replace=False))
        e, w, side = e[keep], w[keep], side[keep]
        if side.all() or not side.any():  # the subsample drew one level only: no test
            return math.nan
    s = np.where(side, w / w[side].sum(), -w / w[~side].sum())
    order = np.argsort(e, kind="stable")
    es = e[order]
    ends = np.flatnonzero(np.r_[es[1:] != es[:-1], True])  # the last position of each run of equal errors
    d = float(np.max(np.abs(np.cumsum(s[order])[ends])))
    rows = max(1, _CHUNK // len(s))
    exceed = 0
    for start in range(0, permutations, rows):
        perm = rng.permuted(np.tile(s, (min(rows, permutations - start), 1)), axis=1)
        exceed += int(np.sum(np.max(np.abs(np.cumsum(perm, axis=1)[:, ends]), axis=1) >= d - 1e-12))
    return float((1 + exceed) / (1 + permutations))


def permuted_points(weighted: int) -> int:
    """How many of a pair of levels' ``weighted`` points (of positive weight) ``ks_p_permutation`` deals: all, or
    ``PERMUTATION_SAMPLE_MAX``."""
    return min(weighted, PERMUTATION_SAMPLE_MAX)


def normalized_weights(
    complexity: np.ndarray, level: np.ndarray, decades: float = BIN_DECADES
) -> tuple[np.ndarray, int]:
    """Radosavovic et al.'s weights w = 1 / (k m_j) per level (see the module docstring): (weights, k).

    ``complexity``: each architecture's complexity (> 0 and finite to be weighted); ``level``: its level.
    Bin j holds log10 complexity in [lo + j d, lo + (j + 1) d), d = ``decades``, lo the smallest over all
    levels; k counts the bins that every level occupies. Each level's weights sum to 1 (all 0 when k = 0)."""
    c = np.asarray(complexity, dtype=np.float64)
    level = np.asarray(level)
    ok = np.isfinite(c) & (c > 0)
    w = np.zeros(len(c))
    if not ok.any():
        return w, 0
    x = np.log10(c[ok])
    j = np.floor((x - x.min()) / decades).astype(np.int64)
    levels = np.unique(level)
    counts = np.zeros((len(levels), int(j.max()) + 1), dtype=np.int64)  # m_j of every level
    li = np.searchsorted(levels, level[ok])
    np.add.at(counts, (li, j), 1)
    shared = np.asarray((counts > 0).all(axis=0))  # numpy's stubs type all(axis=0) as a scalar or an array
    k = int(shared.sum())
    if k == 0:
        return w, 0
    m = counts[li, j]
    w[np.flatnonzero(ok)] = np.where(shared[j], 1.0 / (k * np.maximum(m, 1)), 0.0)
    return w, k


def axis_levels(
    df: pd.DataFrame, axis: str, *, max_levels: int = MAX_LEVELS, numeric_bins: int = NUMERIC_BINS
) -> pd.Series:
    """The level of each row along ``axis`` (a key of ``columns.AXES``, whose first field is the axis' own,
    or any column), as an ordered categorical of labels: the values themselves, or for a numeric field with
    more than ``max_levels`` distinct values, ``numeric_bins`` equal-width bins labelled by the smallest and
    largest value in each ("3-13")."""
    column = AXES[axis][0] if axis in AXES else axis
    v = df[column]
    if pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v):
        x = v.to_numpy(np.float64)
        finite = np.isfinite(x)
        values = np.unique(x[finite])
        if len(values) > max_levels:
            lo, hi = values[0], values[-1]
            code = np.full(len(x), -1)
            code[finite] = np.minimum(((x[finite] - lo) / (hi - lo) * numeric_bins).astype(np.int64), numeric_bins - 1)
            bin_labels = {}
            for c in np.unique(code[code >= 0]):
                inside = x[code == c]
                bin_labels[c] = f"{_num(inside.min())}-{_num(inside.max())}"
            out = pd.Series([bin_labels.get(c) for c in code], index=df.index, dtype=object)
            return pd.Series(
                pd.Categorical(out, categories=[bin_labels[c] for c in sorted(bin_labels)], ordered=True),
                index=df.index,
            )
        labels = [_num(u) for u in values]
        out = pd.Series([_num(u) if f else None for u, f in zip(x, finite)], index=df.index, dtype=object)
        return pd.Series(pd.Categorical(out, categories=labels, ordered=True), index=df.index)
    text = v.astype(object).where(v.notna(), None).map(lambda u: None if u is None else str(u))
    return pd.Series(pd.Categorical(text, categories=sorted(text.dropna().unique()), ordered=True), index=df.index)


def _num(u: float) -> str:
    return f"{u:g}"


# -- the table ----------------------------------------------------------------------------------------------------


def _axes_of(df: pd.DataFrame, by: str | Iterable[str] | None) -> list[str]:
    if by is None:
        return [a for a in AXES if AXES[a][0] in df.columns]
    names = [by] if isinstance(by, str) else list(by)
    for name in names:
        if name not in AXES and name not in df.columns:
            raise SpecError("edf", "by", name, f"must be an axis ({', '.join(AXES)}) or a column of the table")
    return names


def edf(
    results: Results | pd.DataFrame,
    by: str | Iterable[str] | None = None,
    *,
    target: str = "test_error",
    complexity: str = COMPLEXITY,
    decades: float = BIN_DECADES,
    variants: Iterable[str] | None = ("base",),
    max_levels: int = MAX_LEVELS,
    numeric_bins: int = NUMERIC_BINS,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> ErrorEDF:
    """Error EDFs per level of each axis in ``by`` (default every axis of ``columns.AXES``; an axis name or
    any column), per dataset, over the rows whose ``variant`` is in ``variants`` (default the random draws:
    a design space's distribution is that of its samples) and whose ``target`` is finite. An axis with fewer
    than 2 levels among them is left out. ``complexity``: the column the normalized EDFs equalize
    (``num_params``, or ``flops``, ...), in bins ``decades`` wide in log10; their KS p-values from
    ``permutations`` permutations seeded by ``seed`` (``ks_p_permutation``). ``results``: a ``Results`` or its
    architectures table. See ``ErrorEDF`` for the tables."""
    df = architectures_table(results, "edf")
    if target not in df.columns:
        raise SpecError("edf", "target", target, "must be a column of the table")
    if complexity not in df.columns or not pd.api.types.is_numeric_dtype(df[complexity]):
        raise SpecError("edf", "complexity", complexity, "must name a numeric column (num_params, flops, ...)")
    decades = check("edf", "decades", Real(0.0, lo_open=True), decades)
    max_levels = check("edf", "max_levels", Integer(2), max_levels)
    numeric_bins = check("edf", "numeric_bins", Integer(2), numeric_bins)
    permutations = check("edf", "permutations", Integer(1), permutations)
    axes = _axes_of(df, by)
    if variants is not None and "variant" in df.columns:
        df = df[df["variant"].isin(list(variants))]
    df = df[np.isfinite(df[target].to_numpy(np.float64))]
    curves, levels = [], []
    ks: list[dict[str, object]] = []
    groups = df.groupby(df["dataset"].astype(str), sort=True) if "dataset" in df.columns else [("", df)]
    for ds, g in groups:
        for axis in axes:
            lv = axis_levels(g, axis, max_levels=max_levels, numeric_bins=numeric_bins)
            keep = lv.notna().to_numpy()
            present = [c for c in lv.cat.categories if (lv == c).any()]
            if len(present) < 2:
                continue
            part = g[keep]
            lab = lv[keep].astype(str).to_numpy()
            err = part[target].to_numpy(np.float64)
            cx = part[complexity].to_numpy(np.float64)
            w_norm, k = normalized_weights(cx, lab, decades)
            for level in present:
                at = lab == level
                e, wn = err[at], w_norm[at]
                pos = wn > 0
                curves.append(
                    pd.DataFrame(
                        {
                            "dataset": ds,
                            "axis": axis,
                            "level": level,
                            "arch_id": part["arch_id"].to_numpy()[at] if "arch_id" in part.columns else None,
                            "error": e,
                            "complexity": cx[at],
                            "cdf": step_cdf(e),
                            "weight": 1.0 / len(e),
                            "normalized_weight": wn,
                            "normalized_cdf": step_cdf(e, wn) if pos.any() else math.nan,
                        }
                    ).sort_values("error", kind="stable")
                )
                levels.append(
                    {
                        "dataset": ds,
                        "axis": axis,
                        "level": level,
                        "n": int(at.sum()),
                        "min": float(e.min()),
                        "mean": float(e.mean()),
                        "median": float(np.median(e)),
                        "complexity_median": float(np.nanmedian(cx[at])) if np.isfinite(cx[at]).any() else math.nan,
                        "n_normalized": int(pos.sum()),
                        "normalized_min": float(e[pos].min()) if pos.any() else math.nan,
                        "normalized_mean": float((wn * e).sum() / wn.sum()) if pos.any() else math.nan,
                        "bins": k,
                    }
                )
            for a, b in combinations(present, 2):
                ia, ib = lab == a, lab == b
                d = ks_distance(err[ia], err[ib])
                dn = ks_distance(err[ia], err[ib], w_norm[ia], w_norm[ib])
                finite_c = np.isfinite(cx)
                ks.append(
                    {
                        "dataset": ds,
                        "axis": axis,
                        "a": a,
                        "b": b,
                        "n_a": int(ia.sum()),
                        "n_b": int(ib.sum()),
                        "ks": d,
                        "p": float(sps.ks_2samp(err[ia], err[ib]).pvalue),
                        "ks_normalized": dn,
                        "p_normalized": ks_p_permutation(
                            err[ia], err[ib], w_norm[ia], w_norm[ib], permutations, seed + len(ks)
                        ),
                        "n_permuted": permuted_points(int((w_norm[ia | ib] > 0).sum())),
                        "permuted_of": int((w_norm[ia | ib] > 0).sum()),
                        "complexity_ks": ks_distance(cx[ia & finite_c], cx[ib & finite_c])
                        if (ia & finite_c).any() and (ib & finite_c).any()
                        else math.nan,
                    }
                )
    curve_cols = [
        "dataset",
        "axis",
        "level",
        "arch_id",
        "error",
        "complexity",
        "cdf",
        "weight",
        "normalized_weight",
        "normalized_cdf",
    ]
    return ErrorEDF(
        curves=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=curve_cols),
        levels=pd.DataFrame(
            levels,
            columns=[
                "dataset",
                "axis",
                "level",
                "n",
                "min",
                "mean",
                "median",
                "complexity_median",
                "n_normalized",
                "normalized_min",
                "normalized_mean",
                "bins",
            ],
        ),
        ks=pd.DataFrame(
            ks,
            columns=[
                "dataset",
                "axis",
                "a",
                "b",
                "n_a",
                "n_b",
                "ks",
                "p",
                "ks_normalized",
                "p_normalized",
                "n_permuted",
                "permuted_of",
                "complexity_ks",
            ],
        ).pipe(_with_holm),
        complexity=complexity,
    )


def permutation_note(result: ErrorEDF) -> str | None:
    """The line that says where ``p_normalized`` was computed on a subsample (``PERMUTATION_SAMPLE_MAX``): "... on
    10,000 of 40,000 architectures, sampled"; None where every pair was tested on all of its architectures."""
    ks = result.ks
    if not len(ks):
        return None
    big = ks[ks["n_permuted"] < ks["permuted_of"]]
    if not len(big):
        return None
    return (
        f"Normalized KS p-values of {len(big)} of the {len(ks)} pairs of levels from permutations of "
        f"{PERMUTATION_SAMPLE_MAX:,} of their up to {int(big['permuted_of'].max()):,} architectures of positive "
        "weight, sampled at random (still an exact test; the KS distances use every architecture)."
    )


def _with_holm(ks: pd.DataFrame) -> pd.DataFrame:
    """``ks`` with ``p_holm`` and ``p_normalized_holm``: each p-value adjusted over its axis' pairs (``holm``)."""
    for col in ("p", "p_normalized"):
        ks[f"{col}_holm"] = (
            ks.groupby(["dataset", "axis"])[col].transform(lambda p: holm(p.to_numpy(np.float64)))
            if len(ks)
            else pd.Series(dtype=np.float64)
        )
    return ks
