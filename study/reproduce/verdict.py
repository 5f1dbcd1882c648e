"""The one rule by which every row of every reproduction is judged: its replicates, the interval they give, and
where that interval lies against the paper's tolerance or the claim's region.

A row holds its replicates (initializations, seeds, draws, runs: ``Evidence.values``) and the interval they
give at ``LEVEL`` (95%), by a method chosen for the quantity and named in ``Evidence.test``:

* ``exact``: a quadrature or closed form (Table 1's lines A, C and E): one value, no interval; it agrees when it
  lies in the region and differs when not.
* ``mean``: Student's t interval of a mean over replicates; ``log_mean``: the same on the logs of a positive
  quantity whose replicates spread by a factor (an NLC, a condition number): the interval of the median of a
  log-normal, exp(mean log x +- t s / sqrt(n)).
* ``welch``: Welch's t interval of a difference of two groups' means (or log means: a log ratio), for a
  comparison of two nets run on separate draws.
* ``shift``: the Hodges-Lehmann shift of one group over another with its exact interval from the Mann-Whitney
  U distribution (Hollander and Wolfe, *Nonparametric Statistical Methods*, section 4.3) and the exact
  permutation p-value of the rank sum (midranks for ties): a rank test where a comparison should not assume
  normal spread (accuracies on one shared test set).
* ``bootstrap``: the percentile interval of a statistic over replicates resampled with replacement (a
  correlation or a slope over architectures), ``BOOTSTRAP`` resamples, seeded.
* ``each``: a claim of the paper about every draw ("always", a theorem's bound): judged replicate by replicate.

The verdict (``judge``), against the region [lo, hi] where ours agrees (a printed number's tolerance band,
``printed_band``, or the claim's half-line or interval):

* fewer than ``MIN_REPLICATES`` replicates, unless exact: "cannot tell";
* agrees when the interval lies within the region (``each``: every replicate does);
* differs when the p-value of "the quantity lies in the region" (the smallest level at which the interval
  excludes the whole region), adjusted by Holm over the page's rows (``holm``), is below ``ALPHA`` (``each``: no
  replicate lies in it);
* cannot tell otherwise.

Each interval covers its quantity at least at ``LEVEL`` where its assumptions hold, so a row whose true value lies
in its region differs at most at ``ALPHA``, and Holm's adjustment keeps the chance that any row of a page differs
below ``ALPHA`` when every one of them holds (Holm, *A simple sequentially rejective multiple test procedure*).
``calibration`` simulates both, and the power against a shifted value; the tests run it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

LEVEL = 0.95  # every interval's confidence
ALPHA = 1.0 - LEVEL  # a row differs when its page-adjusted p-value is below this
MIN_REPLICATES = 3  # fewer: neither agrees nor differs (unless exact)
BOOTSTRAP = 4000  # resamples of a bootstrap interval
EXACT_RANKS = 80  # the rank sum's null distribution is counted exactly up to this many pooled values
AGREES, DIFFERS, CANNOT_TELL = "agrees", "differs", "cannot tell"
INF = math.inf


@dataclass(frozen=True)
class Evidence:
    """A row's replicates and the interval they give for its quantity (module docstring)."""

    values: tuple  # per replicate (a comparison: the row's own group; a bootstrap: its units)
    estimate: float  # the quantity the row states: a mean, a median, a shift, a fraction, ...
    interval: tuple[float, float]  # at LEVEL
    test: str  # how the interval was made
    exact: bool = False  # a quadrature or closed form: no replicates needed
    against: tuple[float, ...] = ()  # a comparison's other group
    each: bool = False  # judged replicate by replicate (a claim about every draw)
    left_out: int = 0  # replicates with no finite value (a diverged run), not in ``values``
    log: bool = False  # the interval was made on the logs (``mean(log=True)``): a spread by a factor
    method: tuple = field(default=(), repr=False, compare=False)  # how ``p`` is computed: (name, *parameters)

    @property
    def replicates(self) -> int:
        """The replicates the interval rests on (a comparison: the smaller group)."""
        return min(len(self.values), len(self.against)) if self.against else len(self.values)

    def p(self, lo: float, hi: float) -> float | None:
        """The p-value of "the quantity lies in [lo, hi]": 1 when the interval's centre does, else twice the
        one-sided p-value against the nearer end (so that p < ALPHA exactly when the LEVEL interval excludes the
        region); None for an exact value or a claim judged replicate by replicate."""
        if self.exact or self.each or not self.method or not math.isfinite(self.estimate):
            return None
        name, *parameters = self.method
        return min(1.0, float(P_VALUES[name](self, lo, hi, *parameters)))


def _finite(values) -> tuple[np.ndarray, int]:
    v = np.asarray([float(x) for x in values], dtype=np.float64)
    ok = np.isfinite(v)
    return v[ok], int((~ok).sum())


def _nothing(test: str, values, left_out: int) -> Evidence:
    return Evidence(tuple(float(x) for x in values), math.nan, (math.nan, math.nan), test, left_out=left_out)


def exact(value: float, how: str = "exact (quadrature or closed form)") -> Evidence:
    """A value computed, not sampled: no interval, no replicates needed."""
    v = float(value)
    return Evidence((v,), v, (v, v), how, exact=True)


def _t_p(_: Evidence, lo: float, hi: float, centre: float, se: float, df: float, log: bool) -> float:
    """Twice the one-sided t p-value of the centre against the nearer end of [lo, hi] (on the logs: ``log``)."""
    from scipy import stats

    if log:
        lo, hi = (math.log(lo) if lo > 0 else -INF), (math.log(hi) if hi > 0 else -INF)
    if lo <= centre <= hi:
        return 1.0
    gap = centre - hi if centre > hi else lo - centre
    if se == 0.0:
        return 0.0
    return 2.0 * float(stats.t.sf(gap / se, df))


def mean(values, *, log: bool = False, shown: Callable | None = None) -> Evidence:
    """Student's t interval of the mean of ``values`` (``log``: of the mean of their logs, reported back on the
    values' scale: the median of a log-normal, the estimate the geometric mean); ``shown``: the estimate shown
    instead (e.g. ``np.median``, the statistic the paper prints), the interval unchanged."""
    from scipy import stats

    v, left = _finite(values)
    if log:
        v = v[v > 0]
    test = "t on logs (median of a log-normal)" if log else "t"
    if len(v) == 0:
        return _nothing(test, values, left)
    x = np.log(v) if log else v
    m = float(x.mean())
    if len(x) < 2:
        back = math.exp(m) if log else m
        return Evidence(tuple(v), back, (-INF, INF), test, left_out=left, log=log)
    se = float(x.std(ddof=1) / math.sqrt(len(x)))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, len(x) - 1)) * se
    est = float(shown(v)) if shown is not None else (math.exp(m) if log else m)
    interval = (math.exp(m - half), math.exp(m + half)) if log else (m - half, m + half)
    method = ("t", m, se, len(x) - 1, log)
    return Evidence(tuple(float(a) for a in v), est, interval, test, left_out=left, log=log, method=method)


def log_mean(values, shown: Callable | None = None) -> Evidence:
    return mean(values, log=True, shown=shown)


def welch(x, y, *, log10: bool = False) -> Evidence:
    """Welch's t interval of mean(x) - mean(y) (``log10``: of mean log10 x - mean log10 y, a log ratio)."""
    from scipy import stats

    a, left_a = _finite(x)
    b, left_b = _finite(y)
    if log10:
        a, b = np.log10(a[a > 0]), np.log10(b[b > 0])
    test = "Welch t on log10" if log10 else "Welch t"
    if len(a) < 2 or len(b) < 2:
        est = float(a.mean() - b.mean()) if len(a) and len(b) else math.nan
        return Evidence(tuple(a), est, (-INF, INF), test, against=tuple(b), left_out=left_a + left_b)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    d = float(a.mean() - b.mean())
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df)) * se
    return Evidence(
        tuple(float(v) for v in a),
        d,
        (d - half, d + half),
        test,
        against=tuple(float(v) for v in b),
        left_out=left_a + left_b,
        method=("t", d, se, df, False),
    )


def _u_counts(m: int, n: int) -> np.ndarray:
    """The number of orderings of m x's and n y's with each Mann-Whitney U = #{x > y} (no ties), U = 0 .. m n."""
    table = {(0, j): np.ones(1) for j in range(n + 1)}
    for i in range(1, m + 1):
        table[(i, 0)] = np.ones(1)
        for j in range(1, n + 1):
            out = np.zeros(i * j + 1)
            out[j : j + len(table[(i - 1, j)])] += table[(i - 1, j)]  # the largest is an x: it beats all j y's
            out[: len(table[(i, j - 1)])] += table[(i, j - 1)]
            table[(i, j)] = out
    return table[(m, n)]


def _rank_sum_p(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided exact permutation p-value of "x tends to exceed y": P(rank sum of x >= observed) over every split
    of the pooled values into groups of their sizes, midranks for ties (the distribution by counting: the number
    of ways to pick k of the first i ranks with each doubled sum), up to ``EXACT_RANKS`` values; beyond, the
    normal approximation."""
    from scipy import stats

    pooled = np.concatenate([x, y])
    doubled = np.rint(2 * stats.rankdata(pooled)).astype(np.int64)  # midranks are multiples of 1/2
    observed = int(doubled[: len(x)].sum())
    m = len(x)
    if len(pooled) > EXACT_RANKS:
        return float(stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic").pvalue)
    ways = np.zeros((m + 1, int(doubled.sum()) + 1))
    ways[0, 0] = 1.0
    for r in doubled:
        ways[1:, r:] += ways[:-1, : ways.shape[1] - r].copy()
    counts = ways[m]
    return float(counts[observed:].sum() / counts.sum())


def shift(x, y) -> Evidence:
    """The Hodges-Lehmann shift of x over y (the median of the pairwise differences x_i - y_j), its exact interval
    from the U distribution (the k-th smallest and largest pairwise differences) and the exact rank-sum p-value
    (module docstring)."""
    a, left_a = _finite(x)
    b, left_b = _finite(y)
    test = "Mann-Whitney (exact), Hodges-Lehmann shift"
    if not len(a) or not len(b):
        return Evidence(tuple(a), math.nan, (math.nan, math.nan), test, against=tuple(b), left_out=left_a + left_b)
    diffs = np.sort((a[:, None] - b[None, :]).ravel())
    counts = _u_counts(len(a), len(b))
    cdf = np.cumsum(counts) / counts.sum()
    k = int(np.searchsorted(cdf, (1 - LEVEL) / 2, side="right"))  # P(U <= k - 1) <= (1 - LEVEL) / 2
    interval = (float(diffs[k]), float(diffs[-1 - k])) if k > 0 else (-INF, INF)

    return Evidence(
        tuple(float(v) for v in a),
        float(np.median(diffs)),
        interval,
        test,
        against=tuple(float(v) for v in b),
        left_out=left_a + left_b,
        method=("shift",),
    )


def _shift_p(e: Evidence, lo: float, hi: float) -> float:
    """Twice the exact one-sided rank-sum p-value of the shift against the nearer end of [lo, hi]."""
    if lo <= e.estimate <= hi:
        return 1.0
    a, b = np.asarray(e.values), np.asarray(e.against)
    return 2.0 * (_rank_sum_p(a - hi, b) if e.estimate > hi else _rank_sum_p(b, a - lo))


def bootstrap(
    units: Sequence | np.ndarray, statistic: Callable, seed: int = 0, what: str = "", batched: bool = False
) -> Evidence:
    """The percentile interval of ``statistic`` over ``BOOTSTRAP`` resamples of the units (numbers, or tuples of
    numbers such as one architecture's pair) with replacement (seeded); ``statistic`` takes an array [n, ...] of
    units, or with ``batched`` an array [resamples, n, ...] and returns one value per resample. A resample whose
    statistic is not finite is left out; ``values`` holds the units."""
    data = np.asarray(units, dtype=np.float64)
    test = "bootstrap percentile" + (f" over {what}" if what else "")

    def of(draws: np.ndarray) -> np.ndarray:  # one resample per row of indices; unbatched, one at a time
        if batched:
            return np.asarray(statistic(data[draws]), dtype=np.float64)
        return np.array([statistic(data[row]) for row in draws], dtype=np.float64)

    estimate = float(of(np.arange(len(data))[None])[0]) if len(data) else math.nan
    values = tuple(tuple(float(v) for v in u) if data.ndim > 1 else float(u) for u in data)
    if len(data) < 2 or not math.isfinite(estimate):
        return Evidence(values, estimate, (-INF, INF), test)
    resampled = of(np.random.default_rng(seed).integers(0, len(data), (BOOTSTRAP, len(data))))
    resampled = resampled[np.isfinite(resampled)]
    lo, hi = np.quantile(resampled, [(1 - LEVEL) / 2, 0.5 + LEVEL / 2])
    return Evidence(values, estimate, (float(lo), float(hi)), test, method=("bootstrap", resampled))


def pearson(x: np.ndarray) -> np.ndarray:
    """Pearson's r of the two columns of each resample of ``x`` [resamples, n, 2] (``bootstrap``'s batched
    statistic); NaN where a column is constant."""
    centred = x - x.mean(axis=1, keepdims=True)
    cov = (centred[..., 0] * centred[..., 1]).sum(axis=1)
    norm = np.sqrt((centred[..., 0] ** 2).sum(axis=1) * (centred[..., 1] ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, cov / norm, np.nan)


def slope(x: np.ndarray) -> np.ndarray:
    """The least-squares slope of the second column on the first in each resample of ``x`` [resamples, n, 2]."""
    centred = x - x.mean(axis=1, keepdims=True)
    var = (centred[..., 0] ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 0, (centred[..., 0] * centred[..., 1]).sum(axis=1) / var, np.nan)


def _bootstrap_p(e: Evidence, a: float, b: float, resampled: np.ndarray) -> float:
    """Twice the share of the resampled statistics beyond the nearer end of [a, b] (the percentile interval's
    own p-value)."""
    if a <= e.estimate <= b:
        return 1.0
    return 2.0 * float(np.mean(resampled <= b) if e.estimate > b else np.mean(resampled >= a))


def each(values, estimate: float | None = None) -> Evidence:
    """A claim about every draw: the replicates judged one by one (``estimate``: the statistic shown, by default
    the median); the interval is their range."""
    v, left = _finite(values)
    test = "each replicate (a claim about every draw)"
    if not len(v):
        return _nothing(test, values, left)
    shown = float(np.median(v)) if estimate is None else float(estimate)
    return Evidence(tuple(v), shown, (float(v.min()), float(v.max())), test, each=True, left_out=left)


P_VALUES: dict[str, Callable[..., float]] = {
    "t": _t_p,
    "shift": _shift_p,
    "bootstrap": _bootstrap_p,
}


# -- the verdict ---------------------------------------------------------------------------------------------


def judge(evidence: Evidence, lo: float, hi: float, p: float | None = None) -> tuple[str, str | None]:
    """(verdict, why it cannot tell or None) of ``evidence`` against the region [lo, hi] by the rule of the
    module docstring; ``p``: the page-adjusted p-value (``holm``), by default the row's own."""
    if not math.isfinite(evidence.estimate):
        return CANNOT_TELL, "nothing was measured (no finite value)"
    if evidence.exact:
        return (AGREES, None) if lo <= evidence.estimate <= hi else (DIFFERS, None)
    n = evidence.replicates
    if n < MIN_REPLICATES:
        return CANNOT_TELL, f"{n} replicate{'s' if n != 1 else ''}: at least {MIN_REPLICATES} are needed for a verdict"
    if evidence.each:
        inside = sum(lo <= v <= hi for v in evidence.values)
        if inside == len(evidence.values) and not evidence.left_out:
            return AGREES, None
        if inside == 0:
            return DIFFERS, None
        return CANNOT_TELL, f"the claim holds for {inside} of {len(evidence.values) + evidence.left_out} replicates"
    a, b = evidence.interval
    if lo <= a and b <= hi:
        return AGREES, None
    p = evidence.p(lo, hi) if p is None else p
    if p is not None and p < ALPHA:
        return DIFFERS, None
    raw = evidence.p(lo, hi)
    excluded = raw is not None and raw < ALPHA
    return CANNOT_TELL, (
        f"the {LEVEL:.0%} interval [{_short(a)}, {_short(b)}] ({n} replicates) "
        + (
            f"excludes [{_short(lo)}, {_short(hi)}] but not after Holm over the page's rows (p {raw:.2g}, "
            f"adjusted {p:.2g})"
            if excluded and p is not None
            else f"neither lies within [{_short(lo)}, {_short(hi)}] nor excludes it"
        )
    )


def _short(x: float) -> str:
    if not math.isfinite(x):
        return "−∞" if x < 0 else "∞"
    return "0" if abs(x) < 1e-300 else f"{x:.4g}"


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values given (None: no test, kept None)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):  # type: ignore[arg-type, return-value]
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))  # type: ignore[arg-type]
        out[i] = running
    return out


def above(x: float) -> tuple[float, float]:
    """The region strictly above ``x`` (an interval [x, x] of tied replicates does not lie in it)."""
    return (math.nextafter(float(x), INF), INF)


def below(x: float) -> tuple[float, float]:
    """The region strictly below ``x``."""
    return (-INF, math.nextafter(float(x), -INF))


PLATEAU = 1e-6  # a sweep's end within this relative loss of its neighbour's: a plateau, not a slope


def bracketed(rates: Sequence[float], chosen: float, losses: Sequence[float] | np.ndarray | None = None) -> str | None:
    """Why a rate chosen from a sweep cannot stand for the optimum, or None: it is the sweep's smallest or largest
    (the sweep did not bracket the optimum), unless ``losses`` (the sweep's, in the order of ``rates``) show a
    plateau there: the end's loss within ``PLATEAU`` (relative) of its neighbour's, as when no rate trains."""
    order = sorted(range(len(rates)), key=lambda i: float(rates[i]))
    ordered = [float(rates[i]) for i in order]
    if len(ordered) < 2 or chosen not in (ordered[0], ordered[-1]):
        return None
    end, neighbour = (order[-1], order[-2]) if chosen == ordered[-1] else (order[0], order[1])
    if losses is not None:
        a, b = float(losses[end]), float(losses[neighbour])
        if math.isfinite(a) and math.isfinite(b) and abs(a - b) <= PLATEAU * max(abs(a), abs(b)):
            return None
    side = "largest" if chosen == ordered[-1] else "smallest"
    return f"the sweep did not bracket the optimum: the chosen rate {chosen:.3g} is its {side}"


# -- calibration: the rule under a simulated null and against a shifted value ------------------------------------


@dataclass(frozen=True)
class Case:
    """One kind of row under simulation: ``make`` turns a draw's replicates into the row's evidence, ``draw(rng,
    truth)`` gives them with the quantity's true value ``truth``, and the row agrees in ``region``; the null is
    ``null`` (a value in the region: the paper's own, or the claim's edge) and the alternative ``shifted``."""

    name: str
    make: Callable[[np.ndarray], Evidence]
    draw: Callable[[np.random.Generator, float], np.ndarray]
    region: tuple[float, float]
    null: float
    shifted: float


def _pairs(rng: np.random.Generator, rho: float, n: int = 40) -> np.ndarray:
    z = rng.standard_normal((n, 2))
    return np.stack([z[:, 0], rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1]], 1)


def _split(make: Callable[[np.ndarray, np.ndarray], Evidence], n: int) -> Callable[[np.ndarray], Evidence]:
    return lambda v: make(v[:n], v[n:])


CASES = (
    # a printed number, its band half a unit of its last digit (0.05) around 1.0, runs spread by sd 1 (the HanNet's
    # initializations spread by about 5 points of accuracy: the scale does not matter); the shift 3 sd
    Case("t, 3 replicates", mean, lambda g, t: g.normal(t, 1.0, 3), (0.95, 1.05), 1.0, 4.0),
    Case("t, 5 replicates", mean, lambda g, t: g.normal(t, 1.0, 5), (0.95, 1.05), 1.0, 4.0),
    # an NLC median spread by a factor 1.1, its band one unit of 7.06; the shift a factor 1.5
    Case("t on logs, 3 replicates", log_mean, lambda g, t: t * np.exp(g.normal(0, 0.1, 3)), (7.05, 7.07), 7.06, 10.6),
    # a comparison of two nets on 3 runs each (Welch), the claim "below 0" at its edge; the shift 3 sd
    Case(
        "Welch, 3 vs 3",
        _split(welch, 3),
        lambda g, t: np.concatenate([g.normal(t, 1.0, 3), g.normal(0.0, 1.0, 3)]),
        below(0.0),
        0.0,
        3.0,
    ),
    # test accuracies on 200 shared points, 10 initializations per parameterization (many ties), the claim
    # "below GmP's" at its edge (equal accuracy 0.9); the shift 3 points
    Case(
        "Mann-Whitney, 10 vs 10 accuracies",
        _split(shift, 10),
        lambda g, t: np.concatenate([g.binomial(200, 0.9 + t, 10), g.binomial(200, 0.9, 10)]) / 200,
        below(0.0),
        0.0,
        0.03,
    ),
    # Pearson's r over 40 architectures by the bootstrap, the claim "at most -0.9" at its edge; the shift -0.7
    Case(
        "bootstrap, Pearson's r over 40",
        lambda v: bootstrap(v, pearson, seed=1, batched=True),
        lambda g, t: _pairs(g, t),
        below(-0.9),
        -0.9,
        -0.7,
    ),
)


def calibration(case: Case, *, truth: float, rows: int = 1, trials: int = 400, seed: int = 0) -> dict[str, float]:
    """How often the rule says each verdict for pages of ``rows`` rows of ``case`` whose quantity's true value is
    ``truth``: per row and per page ("some row of the page differs"), with Holm over the page as ``Result``
    applies it."""
    rng = np.random.default_rng(seed)
    counts = {AGREES: 0, DIFFERS: 0, CANNOT_TELL: 0}
    pages_differing = 0
    lo, hi = case.region
    for _ in range(trials):
        evidence = [case.make(case.draw(rng, truth)) for _ in range(rows)]
        adjusted = holm([e.p(lo, hi) if e.replicates >= MIN_REPLICATES else None for e in evidence])
        verdicts = [judge(e, lo, hi, p)[0] for e, p in zip(evidence, adjusted)]
        for v in verdicts:
            counts[v] += 1
        pages_differing += DIFFERS in verdicts
    total = trials * rows
    return {
        "agrees": counts[AGREES] / total,
        "differs": counts[DIFFERS] / total,
        "cannot_tell": counts[CANNOT_TELL] / total,
        "pages_differing": pages_differing / trials,
    }


def calibration_table(trials: int, page_rows: int = 10) -> list[dict]:
    """Every case of ``CASES``: "differs" per row and per page of ``page_rows`` rows at the null (nominal
    ``ALPHA``), and the power (the rate of "differs") and "agrees" at the shifted value, ``trials`` each."""
    out = []
    for case in CASES:
        row = calibration(case, truth=case.null, trials=trials)
        page = calibration(case, truth=case.null, rows=page_rows, trials=trials)
        moved = calibration(case, truth=case.shifted, trials=trials)
        out.append(
            {
                "case": case.name,
                "null_differs": row["differs"],
                "null_agrees": row["agrees"],
                f"null_page_of_{page_rows}_differs": page["pages_differing"],
                "shifted_differs": moved["differs"],
                "shifted_agrees": moved["agrees"],
                "trials": trials,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m archstudy.study.reproduce.verdict", description="the rule's rates under simulation"
    )
    parser.add_argument("--trials", type=int, default=2000, help="simulated rows per case (default 2000)")
    args = parser.parse_args(argv)
    if args.trials < 10:
        parser.error(f"--trials = {args.trials}: must be at least 10")
    table = calibration_table(args.trials)
    print("| row | null: differs | null: page of 10 differs | shifted: differs (power) | shifted: agrees |")
    print("|---|---|---|---|---|")
    for r in table:
        print(
            f"| {r['case']} | {r['null_differs']:.1%} | {r['null_page_of_10_differs']:.1%} | "
            f"{r['shifted_differs']:.1%} | {r['shifted_agrees']:.1%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
