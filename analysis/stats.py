"""How well each initialization metric, proxy and trivial baseline predicts test error.

* ``correlations``: Pearson (on log10 where the NLC paper plots on a log axis, see ``columns.PREDICTORS``),
  Spearman and Kendall tau-b with p-values and percentile-bootstrap intervals over architectures, the
  granulated Kendall coefficient Psi over the sampled axes, and each predictor's lift over the best
  trivial baseline; one row per predictor and dataset.
* ``granulated_kendall``: Psi of Jiang et al. (2020), "Fantastic generalization measures and where to
  find them", section 6.1, eq. 4-5, exactly as written (every cell counts, tau over all pairs), with
  ``granulated_kendall_interval``; ``granulated_kendall_tau_b``: the variant that averages tau-b over
  the cells where it is defined (a cell where the measure is constant is skipped instead of scoring 0).
* ``paired_effects``: median test-error difference of sibling architectures with a sign test.
* ``holm``: Holm's step-down adjustment of a family of p-values (every p-value column above has a ``_holm``
  twin adjusted over its family: the predictors of a dataset, the paired comparisons of a dataset).

The bootstrap resamples architectures with replacement. A resample is a vector of counts c (how often
each architecture was drawn), and every statistic of the resample is a weighted statistic of the
original points, which turns B resamples into a few matrix products (see ``boot_kendall``).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pandas as pd
from scipy import stats as sps
from threadpoolctl import ThreadpoolController  # a dependency of scikit-learn

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, Integer, Real, check
from archstudy.sampling.space import WIDTH_FACTOR

from .columns import AXES, BASELINES, PREDICTOR_BY_COLUMN, PREDICTORS, SIBLING_LEVELS, Predictor, axis_level
from .results import architectures_table

# Up to this many architectures per dataset the bootstrap uses n x n matrices (18 MB each at 1500);
# beyond it, one explicit resample at a time with scipy (O(n log n) each).
MATRIX_BOOTSTRAP_MAX = 1500
# The most units (architectures; base draws for Psi) a bootstrap resamples: a larger sample is bootstrapped on a
# random subsample of this many, its spread rescaled to the whole sample (``subsample``, ``rescaled``), so that
# the report's 1000 resamples of some 20 predictors cost the same at 100,000 architectures as at 1,500 (the
# n x n matrices above, a few seconds in all) instead of 60,000 scipy calls on the whole sample (hours).
BOOTSTRAP_SAMPLE_MAX = MATRIX_BOOTSTRAP_MAX
# Psi's interval needs at least this many base draws holding a cell (``_psi_bootstrap``).
MIN_PSI_CLUSTERS = 10
FEW = 10  # below this many architectures a correlation's p-value cannot be small: the report and `top` say so


# -- bootstrap machinery ---------------------------------------------------------------------------------


def bootstrap_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) indices of resamples with replacement, seeded."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def subsample(n: int, seed: int, m: int | None = None) -> np.ndarray | None:
    """The units a bootstrap of ``n`` resamples: None (all of them) up to ``m`` (default ``BOOTSTRAP_SAMPLE_MAX``),
    else ``m`` of them drawn at random without replacement (seeded; a stream of its own, apart from the
    resamples'), in ascending order."""
    m = BOOTSTRAP_SAMPLE_MAX if m is None else m
    if n <= m:
        return None
    return np.sort(np.random.default_rng((seed, 0x5AB)).choice(n, m, replace=False))


def rescaled(values: np.ndarray, full: float, sub: float, m: int, n: int) -> np.ndarray:
    """Bootstrap values of a statistic on a random subsample of m of the n units, as values for the whole sample:
    full + sqrt(m / n) (v - sub), where ``full`` and ``sub`` are the statistic on the n and on the m units. The
    subsample's bootstrap spread estimates that of the statistic at size m; a statistic whose spread falls as
    1 / sqrt(size) (a correlation, a mean of cell statistics over independent units) has sqrt(m / n) of it at n
    (the m-out-of-n bootstrap of Bickel, Götze and van Zwet, *Resampling fewer than n observations*, 1997,
    section 2, here with m drawn without replacement before resampling it). Their percentile interval is
    centred on ``full``. Identity where m = n."""
    if m >= n or not (np.isfinite(full) and np.isfinite(sub)):
        return values if m >= n else np.full(len(values), math.nan)
    out: np.ndarray = full + math.sqrt(m / n) * (values - sub)
    return out


def counts(indices: np.ndarray, n: int) -> np.ndarray:
    """(B, n) float counts: how often each point is in each resample (negative entries are skipped)."""
    b = indices.shape[0]
    valid = indices >= 0
    rows = np.broadcast_to(np.arange(b)[:, None], indices.shape)[valid]
    return np.bincount(rows * n + indices[valid], minlength=b * n).reshape(b, n).astype(np.float64)


def _local(indices: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Resamples of the whole sample as indices into its points where ``mask`` holds (-1 elsewhere)."""
    remap = np.full(len(mask), -1)
    remap[mask] = np.arange(int(mask.sum()))
    local: np.ndarray = remap[indices]
    return local


def _signs(v: np.ndarray) -> np.ndarray:
    """s_ij = sign(v_i - v_j), as float32: the sums below are of small integers, exact in float32 up to
    2^24 (n^2 <= 2.25e6 at ``MATRIX_BOOTSTRAP_MAX``), and float32 products are twice as fast."""
    signs: np.ndarray = np.sign(v[:, None] - v[None, :]).astype(np.float32)
    return signs


def _quadratic(c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """c_b^T M c_b for every row b of c."""
    forms: np.ndarray = ((c @ m) * c).sum(axis=1, dtype=np.float64)
    return forms


def _tau(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def _ties(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points by value: ``order`` (argsort), the group of equal values of each sorted position, and where
    each group starts among the sorted positions."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    new = np.r_[True, sv[1:] != sv[:-1]] if len(v) else np.zeros(0, bool)
    return order, np.cumsum(new) - 1, np.flatnonzero(new)


def _pairs_apart(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """sum_ij c_i c_j |sign(v_i - v_j)| for every row of c (= c^T |S_v| c), without the n x n matrix: all
    weighted pairs, (sum_i c_i)^2, less those of equal value, the sum over groups g of equal v of
    (sum_{i in g} c_i)^2. Exact (sums of integer counts)."""
    order, _, starts = _ties(v)
    g = np.add.reduceat(c[:, order].astype(np.float64), starts, axis=1) if len(v) else np.zeros((len(c), 0))
    total = g.sum(axis=1)
    apart: np.ndarray = total * total - (g * g).sum(axis=1)
    return apart


def boot_kendall(x: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each resample given by counts c (B, n).

    tau_b = sum_{a,b} s_x s_y / sqrt(sum |s_x| * sum |s_y|) over ordered pairs, s = sign of the pair's
    difference (ties and a point paired with a copy of itself give 0). For a resample the pairs are
    weighted by c_i c_j, so the sums are quadratic forms c^T S c (the two of |s| in O(n) each,
    ``_pairs_apart``)."""
    c32 = c.astype(np.float32)
    return _tau(_quadratic(c32, _signs(x) * _signs(y)), _pairs_apart(c, x) * _pairs_apart(c, y))


def _midranks(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Rank of each point within each resample (ties, copies included, share their mid rank):
    r_i = sum_j c_j [v_j < v_i] + (sum_j c_j [v_j = v_i] + 1) / 2, from the cumulative counts in the order of v
    (O(n) per resample after one sort; exact)."""
    if not len(v):
        return np.zeros((len(c), 0))
    order, group, starts = _ties(v)
    cs = c[:, order].astype(np.float64)
    upto = np.cumsum(cs, axis=1)[:, np.r_[starts[1:], len(v)] - 1]  # counts of the groups up to each one
    before = upto - np.add.reduceat(cs, starts, axis=1)
    ranks = np.empty_like(cs)
    ranks[:, order] = (before + (upto - before + 1) / 2)[:, group]
    return ranks


def _rank_pearson(rx: np.ndarray, dy: np.ndarray, vy: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Row-wise weighted Pearson r of mid ranks ``rx`` with ``dy`` (the other variable's mid ranks less their
    weighted mean) and ``vy`` (its weighted sum of squares): the weighted mean of the mid ranks of N = sum_i
    c_i counted points is (N + 1) / 2, so the ranks are centred without a pass to find it."""
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = rx - (c.sum(axis=1, keepdims=True) + 1) / 2
        wdx = c * dx
        cov = (wdx * dy).sum(axis=1)
        var = (wdx * dx).sum(axis=1) * vy
        return np.where(var > 0, cov / np.sqrt(np.where(var > 0, var, 1.0)), np.nan)


def _centred_ranks(v: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mid ranks less their weighted mean, weighted sum of their squares) of v in every resample."""
    d = _midranks(v, c) - (c.sum(axis=1, keepdims=True) + 1) / 2
    return d, (c * d * d).sum(axis=1)


def boot_spearman(x: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Spearman rho of each resample: the weighted Pearson r of its mid ranks."""
    return _rank_pearson(_midranks(x, c), *_centred_ranks(y, c), c)


def boot_pearson(x: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Pearson r of each resample, from the weighted moments c @ x, c @ y, c @ x^2, c @ y^2, c @ xy (x and y
    centred on their own means first, so that no moment is large beside the variance). A resample whose x or
    y is constant has no correlation (NaN, as scipy): its variance is zero up to rounding."""
    x = x - x.mean()
    y = y - y.mean()
    sw = c.sum(axis=1)
    sx, sy = c @ x, c @ y
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = c @ (x * y) - sx * sy / sw
        vx = c @ (x * x) - sx * sx / sw
        vy = c @ (y * y) - sy * sy / sw
        # rounding leaves a constant resample's variance at about 1e-16 of its second moment, not 0
        flat = (vx <= 1e-12 * (c @ (x * x))) | (vy <= 1e-12 * (c @ (y * y)))
        return np.where(flat, np.nan, cov / np.sqrt(np.where(flat, 1.0, vx * vy)))


class SharedResamples:
    """The bootstrap resamples of one dataset's sample, shared by every predictor (so the lift over a
    baseline has a paired interval). What depends only on the target and on which points a predictor
    has (counts, the target's sign matrix and ranks) is computed once per set of points."""

    def __init__(self, y_all: np.ndarray, indices: np.ndarray, method: str = "auto") -> None:
        self.y_all, self.indices, self.method = y_all, indices, method
        self._cache: dict[bytes, dict[str, np.ndarray]] = {}

    def _points(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        key = mask.tobytes()
        if key not in self._cache:
            y = self.y_all[mask]
            local = _local(self.indices, mask)
            entry: dict[str, np.ndarray] = {"y": y, "local": local}
            if self._matrix(len(y)):
                c = counts(local, len(y))
                dy, vy = _centred_ranks(y, c)
                entry.update(c=c, c32=c.astype(np.float32), sy=_signs(y), ay=_pairs_apart(c, y), dy=dy, vy=vy)
            self._cache[key] = entry
        return self._cache[key]

    def _matrix(self, n: int) -> bool:
        return self.method == "matrix" or (self.method == "auto" and n <= MATRIX_BOOTSTRAP_MAX)

    def statistic(
        self,
        kind: str,
        x_all: np.ndarray,
        mask: np.ndarray,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """``kind`` of (x, target) on every resample, keeping the points where ``mask`` holds;
        ``transform`` (e.g. log10) is applied to those x first."""
        t = self._points(mask)
        x = x_all[mask] if transform is None else transform(x_all[mask])
        if len(x) < 3:
            return np.full(len(self.indices), np.nan)
        if not self._matrix(len(x)):
            return bootstrap_statistic(kind, x, t["y"], t["local"], "explicit")
        if kind == "kendall":
            return _tau(_quadratic(t["c32"], _signs(x) * t["sy"]), _pairs_apart(t["c"], x) * t["ay"])
        if kind == "spearman":
            return _rank_pearson(_midranks(x, t["c"]), t["dy"], t["vy"], t["c"])
        return boot_pearson(x, t["y"], t["c"])


def _scipy_pearson(x: np.ndarray, y: np.ndarray) -> float:
    r: float = sps.pearsonr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else np.nan
    return r


def _scipy_spearman(x: np.ndarray, y: np.ndarray) -> float:
    r: float = sps.spearmanr(x, y).statistic
    return r


def _scipy_kendall(x: np.ndarray, y: np.ndarray) -> float:
    r: float = sps.kendalltau(x, y).statistic
    return r


_MATRIX: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "pearson": boot_pearson,
    "spearman": boot_spearman,
    "kendall": boot_kendall,
}
_SCIPY: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "pearson": _scipy_pearson,
    "spearman": _scipy_spearman,
    "kendall": _scipy_kendall,
}
METHODS = Choice(("auto", "matrix", "explicit"))


def bootstrap_statistic(
    kind: str, x: np.ndarray, y: np.ndarray, indices: np.ndarray, method: str = "auto"
) -> np.ndarray:
    """The statistic ``kind`` ("pearson" | "spearman" | "kendall") of every resample.

    ``indices`` (B, m): one resample per row, as indices into x and y; a negative entry is a drawn
    architecture without a value for this pair, left out of that resample. ``method``: "matrix" (counts
    and n x n matrices), "explicit" (scipy on each resample; the two agree to rounding) or "auto"
    (matrix up to ``MATRIX_BOOTSTRAP_MAX`` points)."""
    n = len(x)
    if method == "auto":
        method = "matrix" if n <= MATRIX_BOOTSTRAP_MAX else "explicit"
    if method == "matrix":
        return _MATRIX[kind](x, y, counts(indices, n))
    out = np.full(len(indices), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b, row in enumerate(indices):
            keep = row[row >= 0]
            if len(keep) >= 2:
                out[b] = _SCIPY[kind](x[keep], y[keep])
    return out


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval; resamples where the statistic is undefined are left out."""
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return math.nan, math.nan
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(v, [a, 1.0 - a])
    return float(lo), float(hi)


# -- multiplicity ----------------------------------------------------------------------------------------------


def holm(p: Iterable[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979, *A simple sequentially rejective multiple test
    procedure*): for the m finite p-values in ascending order p_(1) <= ... <= p_(m),

        p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)),

    each in its original place (NaN stays NaN and does not count in m). Rejecting where p~ <= alpha keeps the
    probability of any false rejection in the family at most alpha, whatever the dependence between the tests."""
    p = np.asarray(list(p) if not isinstance(p, np.ndarray) else p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


# -- correlations -------------------------------------------------------------------------------------------


def statistic_and_p(fn: Callable[..., Any], x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fn(x, y)
    return float(r.statistic), float(r.pvalue)


def pearson_on_scale(x: np.ndarray, y: np.ndarray, log: bool) -> tuple[float, float, int]:
    """(r, p, n) of Pearson on log10(x) when ``log`` (points with x <= 0 have no log and are left out),
    else on x. The NLC paper: "if any quantity is plotted in log-scale, the correlation is also using the
    log of that quantity" (section 4)."""
    ok = np.isfinite(x) & np.isfinite(y) & ((x > 0) if log else True)
    xs = np.log10(x[ok]) if log else x[ok]
    r, p = statistic_and_p(sps.pearsonr, xs, y[ok])
    return r, p, int(ok.sum())


def _random_sample(df: pd.DataFrame, variants: Iterable[str] | None) -> pd.DataFrame:
    if variants is None or "variant" not in df.columns:
        return df
    return df[df["variant"].isin(list(variants))]


def _predictor_list(df: pd.DataFrame, predictors: Iterable[str] | None) -> list[Predictor]:
    if predictors is None:
        return [p for p in PREDICTORS if p.column in df.columns]
    out = []
    for name in predictors:
        if name not in df.columns or not pd.api.types.is_numeric_dtype(df[name]):
            raise SpecError("correlations", "predictors", name, "must name numeric columns of the table")
        out.append(
            PREDICTOR_BY_COLUMN.get(name) or Predictor(name, "other", False, "not in the catalog: linear", column=name)
        )
    return out


def _groups(df: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    if "dataset" not in df.columns:
        yield "", df
        return
    for ds, g in df.groupby(df["dataset"].astype(str).fillna(""), sort=True):
        yield ds, g


def correlations(
    df: pd.DataFrame,
    target: str = "test_error",
    predictors: Iterable[str] | None = None,
    *,
    variants: Iterable[str] | None = ("base",),
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    axes: dict[str, tuple[str, ...]] | None = None,
    method: str = "auto",
) -> pd.DataFrame:
    """One row per predictor and dataset: how well it predicts ``target`` across architectures.

    Columns: ``pearson`` (on log10 of the predictor where ``log``; ``n_pearson`` points), ``spearman``,
    ``kendall`` (tau-b), each with ``_p`` (scipy's two-sided p-value), ``_p_holm`` (``holm`` over the
    predictors of the dataset: what a verdict "significant" may read, as every predictor of the table is
    tested at once) and ``_lo``/``_hi`` (percentile
    bootstrap interval at ``confidence`` over ``n_boot`` resamples of architectures, seeded by ``seed``;
    every predictor of a dataset sees the same resamples); ``psi`` (granulated Kendall of Jiang et al. over
    ``axes``, all variants: ``granulated_kendall``, with ``psi_p``, ``psi_lo``/``psi_hi`` from test error
    permuted within base draws (``psi_test``; with ``n_boot`` > 0) and ``psi_axes`` / ``psi_cells`` /
    ``psi_constant_cells`` used); ``psi_tau_b`` (the variant averaging tau-b
    over defined cells, ``granulated_kendall_tau_b``, with ``psi_tau_b_axes`` / ``psi_tau_b_cells``);
    ``lift`` = |tau| - |tau of the best trivial
    baseline| (``best_baseline``) with its paired bootstrap interval; ``rank`` by |tau| (1 = best). The rows of a
    dataset are in the order of ``rank`` (ties, and predictors without a tau last, in the declaration's order).

    The random sample for the pooled statistics is the rows whose ``variant`` is in ``variants``
    (default: the base draws; siblings are conditioned on them and would count an architecture twice).
    Psi uses every row: its cells are mostly sibling groups. Rows where the predictor or the target is
    not finite are left out of that predictor's statistics. ``df`` may also be a ``Results``.
    """
    df = architectures_table(df, "correlations")
    if target not in df.columns:
        raise SpecError("correlations", "target", target, "must be a column of the table")
    n_boot = check("correlations", "n_boot", Integer(0), n_boot)
    confidence = check("correlations", "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    method = check("correlations", "method", METHODS, method)
    preds = _predictor_list(df, predictors)
    axes = AXES if axes is None else axes
    rows = []
    # The bootstrap's products are small: BLAS threads waking up for each cost more than they save
    # (10x slower on a busy 2-core machine).
    with _blas_threads().limit(limits=1, user_api="blas"):
        for ds, group in _groups(df):
            rows += _dataset_rows(ds, group, target, preds, variants, n_boot, seed, confidence, method, axes)
    out = pd.DataFrame(rows, columns=_CORRELATION_COLUMNS)
    for kind in ("pearson", "spearman", "kendall"):
        out[f"{kind}_p_holm"] = out.groupby("dataset")[f"{kind}_p"].transform(lambda p: holm(p.to_numpy(np.float64)))
    out["rank"] = out.groupby("dataset")["kendall"].transform(lambda t: t.abs().rank(ascending=False, method="min"))
    out["rank"] = out["rank"].astype("Int64")
    # best first within each dataset (datasets in their order; ties, and the predictors without a tau last, in
    # the declaration's order)
    first = {d: i for i, d in enumerate(out["dataset"].unique())}
    return (
        out.assign(_dataset=out["dataset"].map(first))
        .sort_values(["_dataset", "rank"], kind="stable", na_position="last")
        .drop(columns="_dataset")
        .reset_index(drop=True)
    )


def bootstrap_note(corr: pd.DataFrame) -> str | None:
    """The line that says where ``correlations`` bootstrapped a subsample (``subsample``): for each such dataset,
    "bootstrap on 1,500 of 100,000 architectures, sampled" (and of the base draws for Psi), with the rescaling;
    None where every bootstrap resampled the whole sample."""
    parts = []
    for ds, g in corr.groupby("dataset", sort=False) if len(corr) else ():
        r = g.iloc[0]
        text = []
        if r["boot_n"] < r["boot_of"]:
            text.append(f"{r['boot_n']:,} of {r['boot_of']:,} architectures")
        psi = g[(g["psi_boot_n"] > 0) & (g["psi_boot_n"] < g["psi_boot_of"])]  # 0: no test ran, nothing sampled
        if len(psi):
            text.append(f"{psi['psi_boot_n'].iloc[0]:,} of {psi['psi_boot_of'].max():,} base draws for Psi")
        if text:
            parts.append((f"{ds}: " if ds else "") + " and ".join(text))
    if not parts:
        return None
    return (
        f"Bootstrap on {'; '.join(parts)}, sampled at random: intervals from resamples of the sample, their spread "
        "rescaled by √(sampled / all) to the whole study (m-out-of-n bootstrap); the estimates use every "
        "architecture."
    )


@functools.lru_cache(maxsize=1)
def _blas_threads() -> ThreadpoolController:
    return ThreadpoolController()  # finding the BLAS libraries reads /proc: once per process


def _dataset_rows(
    ds: str,
    group: pd.DataFrame,
    target: str,
    preds: list[Predictor],
    variants: Iterable[str] | None,
    n_boot: int,
    seed: int,
    confidence: float,
    method: str,
    axes: dict[str, tuple[str, ...]],
) -> list[dict[str, Any]]:
    """The correlation rows of one dataset."""
    sample = _random_sample(group, variants)
    y_all = sample[target].to_numpy(np.float64)
    sub = subsample(len(sample), seed)
    y_boot = y_all if sub is None else y_all[sub]
    idx = bootstrap_indices(len(y_boot), n_boot, seed) if len(y_boot) else np.zeros((n_boot, 0), int)
    boot = SharedResamples(y_boot, idx, method)
    psi_b = psi_table_tau_b(group, [p.column for p in preds], target, axes)
    tested = (
        psi_test(group, [p.column for p in preds], target, axes, seed=seed, confidence=confidence).set_index(
            "predictor"
        )
        if n_boot
        else None
    )
    cells = _axis_cells(group, axes)
    clusters = _clusters(group)
    rows: list[dict[str, Any]] = []
    abs_tau_boot: dict[str, np.ndarray] = {}
    for p in preds:
        row, abs_tau_boot[p.column] = _one_predictor(
            p, sample[p.column].to_numpy(np.float64), y_all, boot, confidence, sub
        )
        rows.append(
            {
                "dataset": ds,
                "boot_n": len(y_boot),
                "boot_of": len(y_all),
                "predictor": p.column,
                "label": p.label,
                "kind": p.kind,
                "log": p.log,
                "target": target,
                **row,
                **_psi_columns(
                    _jiang_axes(group, p.column, target, axes, cells, clusters),
                    None if tested is None else tested.loc[p.column],
                ),
                **_psi_tau_b_columns(psi_b[psi_b["predictor"] == p.column]),
            }
        )
    _add_lift(rows, ds, abs_tau_boot, confidence)
    return rows


def _psi_columns(per_axis: _PerAxis, tested: pd.Series | None) -> dict[str, float]:
    """Jiang et al.'s Psi with its permutation test and interval (``psi_test``: ``psi_p``; ``psi_boot_n`` of the
    ``psi_boot_of`` base draws tested), and what it averages."""
    used = [(taus, constant) for taus, constant, _ in per_axis.values() if len(taus)]
    t = tested if tested is not None else pd.Series(dtype=float)
    return {
        "psi": _psi_of(per_axis),
        "psi_lo": float(t.get("psi_lo", math.nan)),
        "psi_hi": float(t.get("psi_hi", math.nan)),
        "psi_p": float(t.get("psi_p", math.nan)),
        "psi_boot_n": int(t.get("psi_test_n", 0)),
        "psi_boot_of": int(t.get("psi_test_of", 0)),
        "psi_axes": len(used),
        "psi_cells": int(sum(len(t) for t, _ in used)),
        "psi_constant_cells": int(sum(c.sum() for _, c in used)),
    }


def _psi_tau_b_columns(t: pd.DataFrame) -> dict[str, float]:
    used = t[t["cells"] > 0]
    return {
        "psi_tau_b": float(used["psi"].mean()) if len(used) else math.nan,
        "psi_tau_b_axes": int(len(used)),
        "psi_tau_b_cells": int(used["cells"].sum()),
    }


_CORRELATION_COLUMNS = [
    "dataset",
    "predictor",
    "label",
    "kind",
    "log",
    "target",
    "n",
    "n_pearson",
    "pearson",
    "pearson_p",
    "pearson_p_holm",
    "pearson_lo",
    "pearson_hi",
    "spearman",
    "spearman_p",
    "spearman_p_holm",
    "spearman_lo",
    "spearman_hi",
    "kendall",
    "kendall_p",
    "kendall_p_holm",
    "kendall_lo",
    "kendall_hi",
    "psi",
    "psi_lo",
    "psi_hi",
    "psi_p",
    "psi_axes",
    "psi_cells",
    "psi_constant_cells",
    "psi_tau_b",
    "psi_tau_b_axes",
    "psi_tau_b_cells",
    "best_baseline",
    "lift",
    "lift_lo",
    "lift_hi",
    "boot_n",
    "boot_of",
    "psi_boot_n",
    "psi_boot_of",
]


def _one_predictor(
    p: Predictor,
    x_all: np.ndarray,
    y_all: np.ndarray,
    boot: SharedResamples,
    confidence: float,
    sub: np.ndarray | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """The statistics of one predictor, and |tau| of every resample (for the paired lift interval).
    Each statistic keeps only its own points: finite x and y, and x > 0 for Pearson on a log scale. ``sub``:
    the sample's units that ``boot`` resamples (``subsample``; None: all), whose bootstrap values are
    ``rescaled`` to the whole sample."""
    ok = np.isfinite(x_all) & np.isfinite(y_all)
    x, y = x_all[ok], y_all[ok]
    pearson, pearson_p, n_pearson = pearson_on_scale(x_all, y_all, p.log)
    spearman, spearman_p = statistic_and_p(sps.spearmanr, x, y)
    kendall, kendall_p = statistic_and_p(sps.kendalltau, x, y)
    row = {
        "n": int(ok.sum()),
        "n_pearson": n_pearson,
        "pearson": pearson,
        "pearson_p": pearson_p,
        "spearman": spearman,
        "spearman_p": spearman_p,
        "kendall": kendall,
        "kendall_p": kendall_p,
    }
    x_b, y_b = (x_all, y_all) if sub is None else (x_all[sub], y_all[sub])
    ok_b = np.isfinite(x_b) & np.isfinite(y_b)
    with np.errstate(invalid="ignore"):
        ok_p = ok_b & (x_b > 0) if p.log else ok_b
    values = {
        "pearson": boot.statistic("pearson", x_b, ok_p, np.log10 if p.log else None),
        "spearman": boot.statistic("spearman", x_b, ok_b),
        "kendall": boot.statistic("kendall", x_b, ok_b),
    }
    if sub is not None:
        for kind, mask, n_full in (
            ("pearson", ok_p, n_pearson),
            ("spearman", ok_b, ok.sum()),
            ("kendall", ok_b, ok.sum()),
        ):
            xs = np.log10(x_b[mask]) if kind == "pearson" and p.log else x_b[mask]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                on_sub = _SCIPY[kind](xs, y_b[mask]) if mask.sum() >= 3 else math.nan
            values[kind] = rescaled(values[kind], row[kind], on_sub, int(mask.sum()), int(n_full))
    for kind, v in values.items():
        row[f"{kind}_lo"], row[f"{kind}_hi"] = percentile_interval(v, confidence)
    return row, np.abs(values["kendall"])


def _add_lift(rows: list[dict[str, Any]], ds: str, abs_tau_boot: dict[str, np.ndarray], confidence: float) -> None:
    """lift = |tau| - |tau of the best trivial baseline| (chosen on the full sample), with the interval of
    the same difference over the paired resamples."""
    mine = [r for r in rows if r["dataset"] == ds]
    base = [r for r in mine if r["predictor"] in BASELINES and np.isfinite(r["kendall"])]
    best = max(base, key=lambda r: abs(r["kendall"]), default=None)
    for r in mine:
        if best is None or not np.isfinite(r["kendall"]):
            r.update(
                best_baseline=None if best is None else best["predictor"],
                lift=math.nan,
                lift_lo=math.nan,
                lift_hi=math.nan,
            )
            continue
        diff = abs_tau_boot[r["predictor"]] - abs_tau_boot[best["predictor"]]
        lo, hi = percentile_interval(diff, confidence)
        r.update(best_baseline=best["predictor"], lift=abs(r["kendall"]) - abs(best["kendall"]), lift_lo=lo, lift_hi=hi)


# -- granulated Kendall ---------------------------------------------------------------------------------------


def _codes(df: pd.DataFrame, axes: dict[str, tuple[str, ...]]) -> dict[str, np.ndarray]:
    """Each grouping column (the dataset and every axis' fields) as integer codes, a missing value its own:
    factorized once, then shared by every axis' cells."""
    names = (["dataset"] if "dataset" in df.columns else []) + [
        f for group in axes.values() for f in group if f in df.columns
    ]
    return {f: pd.factorize(df[f], use_na_sentinel=False)[0] for f in dict.fromkeys(names)}


def _cells(
    df: pd.DataFrame, axis: str, axes: dict[str, tuple[str, ...]], codes: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    """Cell id of each row for ``axis``: rows sharing the dataset and every other axis' fields, numbered in the
    order the cells first appear (as ``groupby(..., sort=False).ngroup()`` numbers them)."""
    others = [f for a, group in axes.items() if a != axis for f in group if f in df.columns]
    if "dataset" in df.columns:
        others = ["dataset"] + others
    if not others or not len(df):
        return np.zeros(len(df), dtype=np.int64)
    codes = _codes(df, axes) if codes is None else codes
    rows = np.column_stack([codes[f] for f in others])
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    number = np.empty(len(first), dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(len(first))
    return number[inverse.ravel()]


# A cell of more rows than this has its Kendall sums computed in O(m log m) (``_kendall_sums``) instead of over its
# m (m - 1) / 2 pairs: sibling groups (a handful of rows) stay pairs, and a large study in a small discrete space,
# whose cells hold thousands of coincident draws, costs O(N log N), not O(N^2).
PAIR_CELL_MAX = 64


@dataclass(frozen=True)
class _CellPairs:
    """The cells of an axis as every predictor shares them: ``cell`` (the cell id of each row), all pairs i < j of
    rows in the same cell of at most ``PAIR_CELL_MAX`` rows (``i``, ``j``, ``pair_cell``), and the rows of each
    larger cell (``big``: cell id -> rows)."""

    cell: np.ndarray
    i: np.ndarray
    j: np.ndarray
    pair_cell: np.ndarray
    big: dict[int, np.ndarray]


@functools.lru_cache(maxsize=PAIR_CELL_MAX + 1)
def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(m, k=1)``, computed once per m: a study of 100,000 rows asks for it about 400,000 times."""
    return np.triu_indices(m, k=1)


def _pairs(cell: np.ndarray) -> _CellPairs:
    """The pairs of rows in the same cell, for the cells of at most ``PAIR_CELL_MAX`` rows, and the larger cells'
    rows."""
    order = np.argsort(cell, kind="stable")
    sorted_cells = cell[order]
    bounds = np.flatnonzero(np.diff(sorted_cells)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(cell)]])
    ii, jj, cc = [], [], []
    big = {}
    for s, e in zip(starts, ends):
        m = e - s
        if m < 2:
            continue
        if m > PAIR_CELL_MAX:
            big[int(sorted_cells[s])] = order[s:e]
            continue
        a, b = _upper_pairs(int(m))
        ii.append(order[s + a])
        jj.append(order[s + b])
        cc.append(np.full(len(a), sorted_cells[s]))
    if not ii:
        empty = np.zeros(0, dtype=np.int64)
        return _CellPairs(cell, empty, empty, empty, big)
    return _CellPairs(cell, np.concatenate(ii), np.concatenate(jj), np.concatenate(cc), big)


def _kendall_sums(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Over the m (m - 1) / 2 pairs of m points: sum sign(dx) sign(dy), sum |sign(dx)|, sum |sign(dy)|, in
    O(m log m): the pairs not tied in x are n0 - sum_t t (t - 1) / 2 over x's groups of t equal values (n0 = m (m -
    1) / 2; the same in y), and the first sum is tau-b times the square root of their product (Kendall, *Rank
    Correlation Methods*, tau-b; scipy's ``kendalltau``, by merge sort)."""
    m = len(x)
    n0 = m * (m - 1) / 2

    def untied(v: np.ndarray) -> float:
        t = np.unique(v, return_counts=True)[1].astype(np.float64)
        return float(n0 - (t * (t - 1) / 2).sum())

    ax, ay = untied(x), untied(y)
    if ax == 0 or ay == 0:
        return 0.0, ax, ay
    tau = float(sps.kendalltau(x, y).statistic)
    return float(np.round(tau * math.sqrt(ax * ay))), ax, ay


def _cell_sums(x: np.ndarray, y: np.ndarray, cp: _CellPairs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per cell id, over its rows where x and y are finite: their number, and ``_kendall_sums``' three sums (from
    the pairs of the small cells, in O(m log m) for the large ones)."""
    ok = np.isfinite(x) & np.isfinite(y)
    ncell = int(cp.cell.max()) + 1 if len(cp.cell) else 0
    size = np.bincount(cp.cell[ok], minlength=ncell)
    keep = ok[cp.i] & ok[cp.j]
    i, j, pc = cp.i[keep], cp.j[keep], cp.pair_cell[keep]
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    num = np.bincount(pc, sx * sy, ncell)
    ax = np.bincount(pc, np.abs(sx), ncell)
    ay = np.bincount(pc, np.abs(sy), ncell)
    for c, rows in cp.big.items():
        r = rows[ok[rows]]
        if len(r) >= 2:
            num[c], ax[c], ay[c] = _kendall_sums(x[r], y[r])
    return size, num, ax, ay


def _cell_taus(x: np.ndarray, y: np.ndarray, cp: _CellPairs) -> np.ndarray:
    """Kendall tau-b within every cell that has a defined one (>= 2 points, neither x nor y constant)."""
    _, num, ax, ay = _cell_sums(x, y, cp)
    den = ax * ay
    taus: np.ndarray = num[den > 0] / np.sqrt(den[den > 0])
    return taus


def psi_table_tau_b(
    df: pd.DataFrame,
    predictors: Iterable[str],
    target: str = "test_error",
    axes: dict[str, tuple[str, ...]] | None = None,
) -> pd.DataFrame:
    """The tau-b variant of ``psi_table`` (not Jiang et al.'s definition): psi_i for every predictor and
    axis i is the mean Kendall tau-b between predictor and target over the cells of axis i, a cell being
    the architectures that agree on every other axis (so only axis i varies in it). Cells with fewer than
    2 architectures, or where predictor or target is constant (tau-b undefined), are skipped; ``cells``
    counts those used. Columns: predictor, axis, psi, cells."""
    df = architectures_table(df, "psi_table_tau_b")
    axes = AXES if axes is None else axes
    y = df[target].to_numpy(np.float64)
    rows = []
    codes = _codes(df, axes)
    pairs = {axis: _pairs(_cells(df, axis, axes, codes)) for axis in axes}
    for name in predictors:
        x = df[name].to_numpy(np.float64)
        for axis, cp in pairs.items():
            taus = _cell_taus(x, y, cp)
            rows.append(
                {
                    "predictor": name,
                    "axis": axis,
                    "psi": float(taus.mean()) if len(taus) else math.nan,
                    "cells": int(len(taus)),
                }
            )
    return pd.DataFrame(rows, columns=["predictor", "axis", "psi", "cells"])


def granulated_kendall_tau_b(
    df: pd.DataFrame, predictor: str, target: str = "test_error", axes: dict[str, tuple[str, ...]] | None = None
) -> float:
    """The tau-b variant of ``granulated_kendall``: the mean over axes of ``psi_table_tau_b``'s psi_i, over
    the axes with at least one cell where tau-b is defined. NaN when no axis has one."""
    t = psi_table_tau_b(df, [predictor], target, axes)
    used = t[t["cells"] > 0]
    return float(used["psi"].mean()) if len(used) else math.nan


# Jiang et al. (2020), section 6.1. For the measure mu and the generalization g of a set T of models,
#     tau(T) = 1 / (|T| (|T| - 1)) * sum_{(mu1, g1) in T} sum_{(mu2, g2) in T, != (mu1, g1)}
#                  sign(mu1 - mu2) sign(g1 - g2)                        (their Kendall coefficient)
# (ties count 0 and stay in the denominator: not tau-b). A cell of axis i is the set of models that share
# every other axis' value; psi_i = (1 / m_i) sum over the m_i cells of tau(cell) (eq. 4), and
# Psi = (1 / n) sum_i psi_i (eq. 5). Every cell counts: one where the measure (or g) is constant scores 0.
# Here a cell is the finished architectures of one dataset agreeing on every other axis' fields that have
# at least 2 architectures with a finite measure and target (Jiang et al.'s grid is full, so each of their
# cells holds |Theta_i| >= 2 models; in a random study only sibling groups, and rare coincidences, do); an
# axis without such a cell has no psi_i and is left out of the mean (eq. 5 over the axes that have one).


def _jiang_cell_taus(x: np.ndarray, y: np.ndarray, cp: _CellPairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tau (Jiang et al.'s, above) of every cell with >= 2 rows where x and y are finite, whether x is
    constant there, and the cells' ids."""
    size, agree, ax, _ = _cell_sums(x, y, cp)
    cells = np.flatnonzero(size >= 2)
    m = size[cells].astype(np.float64)
    return agree[cells] / (m * (m - 1) / 2), ax[cells] == 0, cells  # unordered pairs: the ratio of ordered ones


def _axis_cells(df: pd.DataFrame, axes: dict[str, tuple[str, ...]]) -> dict[str, _CellPairs]:
    """{axis: its cells and their pairs (``_pairs``)}: what every predictor shares."""
    codes = _codes(df, axes)
    return {axis: _pairs(_cells(df, axis, axes, codes)) for axis in axes}


# Per axis: the tau of each cell, whether the measure is constant in it, and the cell's cluster (``_clusters``).
_PerAxis = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


def _clusters(df: pd.DataFrame) -> np.ndarray:
    """The cluster of each row: its base draw (dataset and ``index``: a random draw and its siblings), else the
    row itself. In a random study the cells are sibling groups, and the cells of different axes share their base
    draw, so their taus are dependent while base draws are independent: the unit a bootstrap of Psi resamples.
    A cell is given the cluster of its first row (a cell across two base draws, a coincidence of a random study,
    counts with the first)."""
    if "index" not in df.columns:
        return np.arange(len(df))
    key = [df["dataset"].astype(str).to_numpy()] if "dataset" in df.columns else []
    labels: np.ndarray = pd.MultiIndex.from_arrays(key + [df["index"].to_numpy()]).factorize()[0]
    return labels


def _jiang_axes(
    df: pd.DataFrame,
    predictor: str,
    target: str,
    axes: dict[str, tuple[str, ...]],
    cells: dict[str, _CellPairs] | None = None,
    clusters: np.ndarray | None = None,
) -> _PerAxis:
    """{axis: (tau of each cell, whether the measure is constant in it, the cell's cluster)} for
    ``predictor``."""
    x = df[predictor].to_numpy(np.float64)
    y = df[target].to_numpy(np.float64)
    cells = _axis_cells(df, axes) if cells is None else cells
    clusters = _clusters(df) if clusters is None else clusters
    out: _PerAxis = {}
    for axis in axes:
        cell = cells[axis].cell
        taus, constant, ids = _jiang_cell_taus(x, y, cells[axis])
        first = np.full(int(cell.max()) + 1 if len(cell) else 0, len(cell))
        np.minimum.at(first, cell, np.arange(len(cell)))
        out[axis] = (taus, constant, clusters[first[ids]])
    return out


def psi_table(
    df: pd.DataFrame,
    predictors: Iterable[str],
    target: str = "test_error",
    axes: dict[str, tuple[str, ...]] | None = None,
) -> pd.DataFrame:
    """psi_i of Jiang et al. (2020), section 6.1, eq. 4, for every predictor and axis i: the mean over the
    cells of axis i of tau (the average sign agreement over all pairs, ties counting 0), every cell
    counting (see the comment above). Columns: predictor, axis, psi (NaN without cells), cells,
    constant_cells (cells where the predictor is constant, each scoring 0)."""
    df = architectures_table(df, "psi_table")
    axes = AXES if axes is None else axes
    cells = _axis_cells(df, axes)
    rows = []
    for name in predictors:
        for axis, (taus, constant, _) in _jiang_axes(df, name, target, axes, cells).items():
            rows.append(
                {
                    "predictor": name,
                    "axis": axis,
                    "psi": float(taus.mean()) if len(taus) else math.nan,
                    "cells": int(len(taus)),
                    "constant_cells": int(constant.sum()),
                }
            )
    return pd.DataFrame(rows, columns=["predictor", "axis", "psi", "cells", "constant_cells"])


def _psi_of(per_axis: _PerAxis) -> float:
    means = [taus.mean() for taus, _, _ in per_axis.values() if len(taus)]
    return float(np.mean(means)) if means else math.nan


def _psi_bootstrap(per_axis: _PerAxis, n_boot: int, seed: int) -> np.ndarray:
    """Psi of ``n_boot`` resamples of the clusters that hold a cell (``_clusters``: a base draw with its
    siblings), as many as there are, drawn with replacement, the same draw for every axis: a resample weights
    each cell by c_k, how often its cluster k was drawn, psi_i = sum_cells c tau / sum_cells c over the axis'
    cells, Psi their mean over the axes with a drawn cell (as ``_psi_of``). Resampling cells within each axis
    independently held a lone cell fixed in every resample and ignored that a base draw's cells of different
    axes share it: the interval was too narrow (docs/analysis.md, verdict calibration). There is no interval
    (NaN) with fewer than ``MIN_PSI_CLUSTERS`` clusters (a percentile bootstrap of so few units is itself too
    narrow), nor when an axis has a single cell (two base draws that happen to differ along it only): its psi_i
    is that cell's tau in every resample that draws it, +1 or -1 by chance, a sixth of Psi that no resample
    varies."""
    return _psi_resamples(per_axis, n_boot, seed)[0]


def _psi_resamples(per_axis: _PerAxis, n_boot: int, seed: int) -> tuple[np.ndarray, int, int]:
    """``_psi_bootstrap``'s values, the clusters it resampled and those that hold a cell: above
    ``BOOTSTRAP_SAMPLE_MAX`` clusters, a random subsample of them (``subsample``) resampled and ``rescaled`` to
    all of them (Psi is a mean of cell taus over independent clusters)."""
    used = [(taus, cl) for taus, _, cl in per_axis.values() if len(taus)]
    if not used:
        return np.full(n_boot, math.nan), 0, 0
    ids, inverse = np.unique(np.concatenate([cl for _, cl in used]), return_inverse=True)
    if len(ids) < MIN_PSI_CLUSTERS or any(len(taus) < 2 for taus, _ in used):
        return np.full(n_boot, math.nan), 0, len(ids)
    sub = subsample(len(ids), seed)
    column = np.arange(len(ids)) if sub is None else np.full(len(ids), -1)
    if sub is not None:
        column[sub] = np.arange(len(sub))
    m = len(ids) if sub is None else len(sub)
    c = counts(np.random.default_rng(seed).integers(0, m, size=(n_boot, m)), m)
    psis, on_sub, start = [], [], 0
    for taus, cl in used:
        col = column[inverse[start : start + len(cl)]]
        start += len(cl)
        keep = col >= 0
        w = c[:, col[keep]]
        tot = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            psis.append(np.where(tot > 0, (w @ taus[keep]) / np.where(tot > 0, tot, 1.0), np.nan))
        if keep.any():
            on_sub.append(float(taus[keep].mean()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample that drew no cell of any axis: NaN
        values = np.asarray(np.nanmean(np.vstack(psis), axis=0))
    if sub is not None:
        values = rescaled(values, _psi_of(per_axis), float(np.mean(on_sub)) if on_sub else math.nan, m, len(ids))
    return values, m, len(ids)


def granulated_kendall(
    df: pd.DataFrame, predictor: str, target: str = "test_error", axes: dict[str, tuple[str, ...]] | None = None
) -> float:
    """Psi = (1/n) sum_i psi_i (Jiang et al. 2020, section 6.1, eq. 5) over the axes i that have a cell,
    psi_i from ``psi_table``. NaN when no axis has a cell."""
    df = architectures_table(df, "granulated_kendall")
    return _psi_of(_jiang_axes(df, predictor, target, AXES if axes is None else axes))


def granulated_kendall_interval(
    df: pd.DataFrame,
    predictor: str,
    target: str = "test_error",
    axes: dict[str, tuple[str, ...]] | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``granulated_kendall``: base draws (with their siblings) resampled
    with replacement (``_psi_bootstrap``). NaN when no axis has a cell."""
    df = architectures_table(df, "granulated_kendall_interval")
    n_boot = check("granulated_kendall_interval", "n_boot", Integer(1), n_boot)
    confidence = check(
        "granulated_kendall_interval", "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence
    )
    per_axis = _jiang_axes(df, predictor, target, AXES if axes is None else axes)
    return percentile_interval(_psi_bootstrap(per_axis, n_boot, seed), confidence)


# -- paired effects of siblings ----------------------------------------------------------------------------------


def sign_test(d: np.ndarray, confidence: float = 0.95) -> dict[str, float]:
    """Median of the paired differences d, the two-sided sign test of median 0 (zeros dropped, exact
    binomial), and the distribution-free interval for the median that inverts it: [d_(k), d_(n+1-k)]
    with the largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) is at least ``confidence``
    (``ci_level`` is the exact coverage; NaN when even k = 1 falls short, i.e. too few pairs)."""
    d = np.sort(np.asarray(d, dtype=np.float64)[np.isfinite(d)])
    n = len(d)
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    out = {
        "n_pairs": n,
        "n_pos": pos,
        "n_neg": neg,
        "n_zero": n - pos - neg,
        "median": float(np.median(d)) if n else math.nan,
        "p_sign": float(sps.binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else math.nan,
        "ci_lo": math.nan,
        "ci_hi": math.nan,
        "ci_level": math.nan,
    }
    # the coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) of every k at once (it falls as k grows): the largest k that
    # reaches ``confidence`` is the number of k that do (one vectorized cdf: linear in n)
    coverage = 1.0 - 2.0 * sps.binom.cdf(np.arange(n // 2), n, 0.5)
    k_best = int(np.count_nonzero(coverage >= confidence))
    if k_best:
        out.update(
            ci_lo=float(d[k_best - 1]),
            ci_hi=float(d[n - k_best]),
            ci_level=float(1.0 - 2.0 * sps.binom.cdf(k_best - 1, n, 0.5)),
        )
    return out


def sibling_pairs(df: pd.DataFrame, axis: str, a: str, b: str, target: str = "test_error") -> pd.DataFrame:
    """Pairs of architectures of the same dataset and index that differ only along ``axis`` (level a vs
    b): the base draw and its sibling, or two siblings of the same axis (e.g. batch vs layer norm).
    Columns: dataset, index, arch_a, arch_b, <target>_a, <target>_b, nlc_a, nlc_b, and ``context``: what
    else the pair's networks differ in, or share, that the axis' name does not say (``pair_context``)."""
    others = [f for ax, group in AXES.items() if ax != axis for f in group if f in df.columns]
    keep = df[df["variant"].isin(["base", axis])] if "variant" in df.columns else df
    keep = keep.assign(_level=axis_level(keep, axis))
    left = keep[keep["_level"] == a]
    right = keep[keep["_level"] == b]
    key = (["dataset"] if "dataset" in df.columns else []) + ["index"] + others
    extra = [c for c in ("gmp_init",) if c in df.columns and c not in key]
    cols = key + ["arch_id", target, "nlc"] + extra
    merged = left[cols].merge(right[cols], on=key, suffixes=("_a", "_b"))
    merged["context"] = pair_context(merged, axis, a, b)
    return merged[[c for c in merged.columns if c not in others and not c.startswith(tuple(extra))]]


UNIFORM_GMP = "GmP init: uniform angles, λ = 0, r = 1 (Chen and Ge 4.3)"


def pair_context(pairs: pd.DataFrame, axis: str, a: str, b: str) -> pd.Series:
    """For each pair along ``axis`` (level ``a`` vs ``b``), the factors its networks differ in beyond the axis'
    own, or share where the axis' name suggests otherwise: along ``param``, input mean normalization (a pair of
    specs with ``imn = auto``, every spec from before the field and both presets, switches IMN with GmP,
    "IMN off → on, as the parameterization implies"; an explicit ``imn`` stays, "IMN unchanged: off") and a
    GmP side initialized by Chen and Ge's section 4.3 instead of from the SP weights; along ``imn``, the
    parameterization both share. Empty for the other axes (their pairs differ in the axis and the re-solved
    width only)."""
    n = len(pairs)
    if axis == "param":
        imn = pairs["imn"].astype(str) if "imn" in pairs.columns else pd.Series(["auto"] * n, index=pairs.index)
        on = {"sp": "off", "gmp": "on"}
        text = imn.where(imn != "auto", "").map(
            lambda v: f"IMN unchanged: {v}" if v else f"IMN {on[a]} → {on[b]}, as the parameterization implies"
        )
        side = f"gmp_init_{'b' if b == 'gmp' else 'a'}"
        if side in pairs.columns:
            text = text + (pairs[side] == "uniform").map({True: f"; {UNIFORM_GMP}", False: ""})
        return text
    if axis == "width":
        return pd.Series([f"width x{WIDTH_FACTOR}, the parameter budget not kept"] * n, index=pairs.index, dtype=object)
    if axis == "imn" and "param" in pairs.columns:
        return "param: " + pairs["param"].map({"sp": "SP", "gmp": "GmP"}).fillna(pairs["param"].astype(str))
    return pd.Series([""] * n, index=pairs.index, dtype=object)


def paired_effects(df: pd.DataFrame, target: str = "test_error", confidence: float = 0.95) -> pd.DataFrame:
    """For every sibling axis and pair of its levels (dense vs householder, sp vs gmp, each two norm
    kinds, no skips vs skips, IMN off vs on), per dataset and ``context`` (what else the pairs differ in or
    share, ``pair_context``: an effect is labelled by exactly the factors that differ): the pairs' median
    difference ``target``(B) - ``target``(A), with the sign test and the interval of ``sign_test``, and
    ``p_holm``: the sign test's p-value adjusted (``holm``) over every comparison of the dataset, which the
    report tests at once. A positive median: B has the higher error."""
    df = architectures_table(df, "paired_effects")
    confidence = check("paired_effects", "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    rows = []
    if "index" not in df.columns or "variant" not in df.columns or (df["variant"] == "base").all():
        return pd.DataFrame(columns=_PAIRED_COLUMNS)  # no siblings: no pair differs along one axis
    for ds, group in _groups(df):
        for axis, levels in SIBLING_LEVELS.items():
            if axis != "width" and axis not in group.columns:
                continue  # a table without the axis' column (a simulation's, a projection) has no pair along it
            for ia, a in enumerate(levels):
                for b in levels[ia + 1 :]:
                    pairs = sibling_pairs(group, axis, a, b, target)
                    for context in sorted(pairs["context"].unique()) or [""]:
                        part = pairs[pairs["context"] == context]
                        d = (part[f"{target}_b"] - part[f"{target}_a"]).to_numpy(np.float64)
                        rows.append(
                            {
                                "dataset": ds,
                                "axis": axis,
                                "a": a,
                                "b": b,
                                "context": context,
                                **sign_test(d, confidence),
                            }
                        )
    out = pd.DataFrame(rows, columns=_PAIRED_COLUMNS)
    out["p_holm"] = out.groupby("dataset")["p_sign"].transform(lambda p: holm(p.to_numpy(np.float64)))
    return out


_PAIRED_COLUMNS = [
    "dataset",
    "axis",
    "a",
    "b",
    "context",
    "n_pairs",
    "n_pos",
    "n_neg",
    "n_zero",
    "median",
    "p_sign",
    "p_holm",
    "ci_lo",
    "ci_hi",
    "ci_level",
]


# -- granulated Kendall: its test and interval by permutation within base draws --------------------------------------

# The most within-cell pairs a permutation test of Psi handles at once (a random study's cells are sibling groups of a
# few rows; a study in a small discrete space can have cells of thousands): above it, whole base draws are sampled.
PSI_PAIR_MAX = 200_000
PSI_NULL_DRAWS = 999  # permutations for the interval (the null's 2.5% and 97.5% quantiles)


def _all_pairs(cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j of rows in the same cell (``cell``: a cell id per row), with its cell."""
    order = np.argsort(cell, kind="stable")
    sc = cell[order]
    bounds = np.flatnonzero(np.diff(sc)) + 1
    ii, jj, cc = [], [], []
    for s, e in zip(np.r_[0, bounds], np.r_[bounds, len(cell)]):
        if e - s >= 2:
            a, b = _upper_pairs(int(e - s)) if e - s <= PAIR_CELL_MAX else np.triu_indices(int(e - s), k=1)
            ii.append(order[s + a])
            jj.append(order[s + b])
            cc.append(np.full(len(a), sc[s]))
    if not ii:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(ii), np.concatenate(jj), np.concatenate(cc)


def _psi_weights(
    df: pd.DataFrame, predictors: list[str], axes: dict[str, tuple[str, ...]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of rows that share a cell of some axis (``i``, ``j``) and, per predictor, each pair's weight in
    Psi (a column of W): Psi = sum_pairs W sign(y_i - y_j), the weight of a pair being sign(x_i - x_j) over its
    cell's pairs, its axis' cells and the axes with a cell (eq. 4-5 of Jiang et al.: ``granulated_kendall``), over
    the rows where x is finite."""
    codes = _codes(df, axes)
    parts = [_all_pairs(_cells(df, axis, axes, codes)) + (axis,) for axis in axes]
    i = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    j = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    W = np.zeros((len(i), len(predictors)))
    for t, name in enumerate(predictors):
        x = df[name].to_numpy(np.float64)
        ok = np.isfinite(x)
        start, per_axis = 0, []
        for pi, pj, pc, _ in parts:
            keep = ok[pi] & ok[pj]
            w = np.zeros(len(pi))
            if keep.any():
                cells, inverse = np.unique(pc[keep], return_inverse=True)
                pairs = np.bincount(inverse)
                w[keep] = np.sign(x[pi[keep]] - x[pj[keep]]) / pairs[inverse] / len(cells)
            per_axis.append((start, w, bool(keep.any())))
            start += len(pi)
        used = sum(1 for _, _, has in per_axis if has)
        for s, w, _ in per_axis:
            W[s : s + len(w), t] = w / max(used, 1)
    return i, j, W


def _within_clusters(clusters: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """(m, n) row indices: each row a permutation of the rows that keeps every row in its cluster."""
    keys = clusters[None, :] + rng.random((m, len(clusters)))
    order = np.argsort(clusters, kind="stable")
    out = np.empty((m, len(clusters)), dtype=np.int64)
    out[:, order] = np.argsort(keys, axis=1)
    return out


def psi_test(
    df: pd.DataFrame,
    predictors: Iterable[str],
    target: str = "test_error",
    axes: dict[str, tuple[str, ...]] | None = None,
    *,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Jiang et al.'s Psi (``granulated_kendall``) of each predictor with its permutation test and interval: test
    error permuted within each base draw (a random draw and its siblings, ``_clusters``), exact under the null that
    within a base draw test error does not depend on which sibling it is, nor on the predictor. ``psi_p``: the
    two-sided sequential p-value of |Psi| (``permutation.sequential_p``); ``psi_lo``, ``psi_hi``: Psi less the
    null's (1 + c)/2 and (1 - c)/2 quantiles over ``PSI_NULL_DRAWS`` permutations, the interval that inverts the
    test under a shift (clipped to [-1, 1]). A lone cell of an axis, whose tau is +1 or -1 by chance, is permuted
    like any other, so the interval needs no rule for it (the bootstrap of base draws, ``granulated_kendall_interval``,
    holds it fixed). Above ``PSI_PAIR_MAX`` pairs, a random subset of base draws is tested (``psi_test_n`` of
    ``psi_test_of``), its null spread rescaled to all of them. One row per predictor: predictor, psi, psi_lo,
    psi_hi, psi_p, psi_draws, psi_test_n, psi_test_of."""
    from .permutation import sequential_p

    cols = ["predictor", "psi", "psi_lo", "psi_hi", "psi_p", "psi_draws", "psi_test_n", "psi_test_of"]
    names = list(predictors)
    axes = AXES if axes is None else axes
    df = df[np.isfinite(df[target].to_numpy(np.float64))].reset_index(drop=True) if len(df) else df
    clusters = _clusters(df) if len(df) else np.zeros(0, dtype=np.int64)
    of = int(clusters.max()) + 1 if len(clusters) else 0
    full = _psi_weights(df, names, axes) if len(df) else None
    rng = np.random.default_rng([seed, 45])
    sub, n_sub = df, of
    if full is not None and len(full[0]) > PSI_PAIR_MAX:
        n_sub = max(2, int(of * PSI_PAIR_MAX / len(full[0])))
        chosen = np.isin(clusters, rng.choice(of, n_sub, replace=False))
        sub = df[chosen].reset_index(drop=True)
    i, j, W = full if sub is df and full is not None else _psi_weights(sub, names, axes)
    clusters_s = _clusters(sub) if len(sub) else clusters
    y = sub[target].to_numpy(np.float64) if len(sub) else np.zeros(0)
    defined = np.abs(W).sum(axis=0) > 0 if len(i) else np.zeros(len(names), dtype=bool)
    if not len(i) or not defined.any() or int(clusters_s.max()) + 1 < 2:
        rows = [dict(zip(cols, [p, math.nan, math.nan, math.nan, math.nan, 0, 0, of])) for p in names]
        return pd.DataFrame(rows, columns=cols)

    def null(m: int, active: np.ndarray) -> np.ndarray:
        perm = _within_clusters(clusters_s, m, rng)
        yp = y[perm]
        out: np.ndarray = np.sign(yp[:, i] - yp[:, j]) @ W[:, active]
        return out

    observed = np.where(defined, np.sign(y[i] - y[j]) @ W, math.nan)
    a = (1 - confidence) / 2
    q_lo, q_hi = np.quantile(null(PSI_NULL_DRAWS, np.arange(len(names))), [a, 1 - a], axis=0)
    scale = math.sqrt(n_sub / of) if n_sub < of else 1.0
    p, draws = sequential_p(np.abs(observed), lambda m, act: np.abs(null(m, act)))
    psi = np.array(
        [granulated_kendall(df, name, target, axes) if n_sub < of else v for name, v in zip(names, observed)]
    )
    rows = []
    for t, name in enumerate(names):
        ok = defined[t] and np.isfinite(psi[t])
        rows.append(
            {
                "predictor": name,
                "psi": psi[t] if ok else math.nan,
                "psi_lo": max(-1.0, psi[t] - scale * q_hi[t]) if ok else math.nan,
                "psi_hi": min(1.0, psi[t] - scale * q_lo[t]) if ok else math.nan,
                "psi_p": p[t] if ok else math.nan,
                "psi_draws": int(draws[t]),
                "psi_test_n": n_sub,
                "psi_test_of": of,
            }
        )
    return pd.DataFrame(rows, columns=cols)
