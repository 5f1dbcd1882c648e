"""How often each verdict of the report fires when nothing predicts test error: null studies and the rates.

A null study is a study plan of ``sampling`` (its spec columns, and siblings where asked: the sibling structure
the paired effects and the granulated Kendall use) whose measured columns are synthetic: every metric, proxy and
trivial baseline depends on the architecture (so they are correlated with each other, as real ones are), and test
error is drawn independently of all of them, i.i.d. over architectures. Under it no metric predicts test error, no
sibling axis changes it and no window exists, so every verdict that says otherwise is a false positive.

``null_rates`` runs R such studies through the report's own functions and counts, for each verdict, how often it
fires: per test (each predictor, comparison or axis a trial) and per study ("any": the study shows at least one).
A verdict at level alpha should fire per test at a rate at most alpha within binomial error
(sd = sqrt(alpha (1 - alpha) / trials)); a verdict adjusted for multiplicity (Holm 1979, *A simple sequentially
rejective multiple test procedure*) should fire per study at a rate at most alpha.

The study's own NLC window ("large enough", ``window_rates``) needs a population whose true band is known: studies
drawn from a windowed population and from one with no NLC effect (``window_study``), the verdict wrong when it
calls a band large enough that lies far from the true one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from archstudy.sampling import BUDGET_AXES, plan_study
from archstudy.study.experiment.window_rule import PAPER_WINDOW, STABILITY_DECADES, STABILITY_RATIO

from .columns import BASELINES, PREDICTORS

# The dimensions and parameter budget the null studies are planned at (a tabular dataset of 40 inputs and 3
# classes, as the README's waveform-noise example).
D_IN, D_OUT, BUDGET = 40, 3, 20_000
SPACE = "extended"


def plan_table(architectures: int, seed: int, *, siblings: bool = False, dataset: str = "null") -> pd.DataFrame:
    """The spec columns of a study plan of ``sampling`` (``architectures`` base draws of seed ``seed``, with
    their siblings when ``siblings``), as the runner writes them: arch_id, index, variant, dataset, the spec
    fields, num_params, flops (2 x num_params), activation_units."""
    axes = BUDGET_AXES if siblings else ()  # the axes the tables of docs/analysis.md were measured with
    rows: list[dict[str, Any]] = []
    for p in plan_study(seed, architectures, D_IN, D_OUT, SPACE, BUDGET, axes):
        s = p.spec
        rows.append(
            {
                "arch_id": s.content_id,
                "index": p.index,
                "variant": p.variant,
                "dataset": dataset,
                **s.to_dict(),
                "num_params": s.num_params,
                "flops": 2.0 * s.num_params,
                "activation_units": s.activation_units,
            }
        )
    return pd.DataFrame(rows)


DIVERGED = 0.08  # the share of rows whose every run diverged: test error at chance, tied


def null_measures(
    plan: pd.DataFrame, seed: int, *, latent: float = 0.0, base_effect: float = 0.0, diverged: float = 0.0
) -> pd.DataFrame:
    """``plan`` (``plan_table``) with synthetic measured columns under the null, drawn with seed ``seed``: each
    metric and proxy of ``columns.PREDICTORS`` is 10^(c_k z + l_k b + e) on a log scale (else c_k z + l_k b + e),
    z = the standardized depth plus a per-activation offset, c_k in [0.2, 1], b a latent of the base draw (shared
    by its siblings) with loadings l_k in [0, ``latent``], e standard normal (so metrics depend on the design, on
    the draw and on each other); the trivial baselines are the spec's; ``test_error`` ~ Beta(4, 8), i.i.d. over
    architectures (``base_effect`` > 0: one Beta(4, 8) per base draw, shared by its siblings, plus N(0,
    ``base_effect``) per architecture), independent of all of them; a share ``diverged`` of the rows, at random, has
    every run diverged (``all_diverged``) and test error at chance, 1 - 1/3 for the plan's 3 classes, tied."""
    df = plan.copy()
    n = len(df)
    rng = np.random.default_rng([seed, 17])
    depth = df["depth"].to_numpy(np.float64)
    act = pd.factorize(df["activation"])[0]
    offset = rng.normal(0, 0.5, int(act.max()) + 1 if n else 0)[act]
    z = (depth - depth.mean()) / (depth.std() or 1.0) + offset if n else depth
    base = pd.factorize(df["index"])[0] if n else np.zeros(0, dtype=np.int64)
    draw_latent = rng.standard_normal(int(base.max()) + 1 if n else 0)[base]
    for k, p in enumerate(q for q in PREDICTORS if q.kind != "baseline"):
        c = 0.2 + 0.8 * ((k * 0.37) % 1.0)
        v = c * z + latent * ((k * 0.61) % 1.0) * draw_latent + rng.standard_normal(n)
        df[p.column] = 10.0**v if p.log else v
    if base_effect > 0:
        per_draw = rng.beta(4.0, 8.0, int(base.max()) + 1 if n else 0)[base]
        df["test_error"] = np.clip(per_draw + rng.normal(0.0, base_effect, n), 0.0, 1.0)
    else:
        df["test_error"] = rng.beta(4.0, 8.0, n)
    gone = rng.random(n) < diverged
    df["all_diverged"] = gone
    df.loc[gone, "test_error"] = 1.0 - 1.0 / D_OUT
    return df


def null_study(
    architectures: int,
    seed: int,
    *,
    siblings: bool = False,
    dataset: str = "null",
    latent: float = 0.0,
    base_effect: float = 0.0,
    diverged: float = 0.0,
) -> pd.DataFrame:
    """A null study: the plan of seed ``seed`` (``plan_table``) with its measured columns (``null_measures``)."""
    plan = plan_table(architectures, seed, siblings=siblings, dataset=dataset)
    return null_measures(plan, seed, latent=latent, base_effect=base_effect, diverged=diverged)


ALPHA = 0.05  # the level of every p-value verdict and the complement of every 95% interval's coverage


@dataclass(frozen=True)
class Verdict:
    """One verdict of the report: ``name``; ``where`` it is computed; ``nominal``, the rate at which it may fire
    under the null (per ``unit``: "test", each trial; "study", at least one per study); ``tables``, what it needs
    computed (``STUDY_TABLES``); ``fires``: from those tables, (trials, fired) of one study."""

    name: str
    where: str
    nominal: float
    unit: str
    tables: tuple[str, ...]
    fires: Callable[[dict[str, Any]], tuple[int, int]]
    siblings: bool = False


def _excludes_zero(lo: pd.Series, hi: pd.Series) -> np.ndarray:
    lo_, hi_ = lo.to_numpy(np.float64), hi.to_numpy(np.float64)
    out: np.ndarray = np.isfinite(lo_) & np.isfinite(hi_) & ((lo_ > 0) | (hi_ < 0))
    return out


def _count(mask: np.ndarray) -> tuple[int, int]:
    return int(len(mask)), int(np.sum(mask))


def _any(mask: np.ndarray) -> tuple[int, int]:
    return 1, int(bool(np.any(mask)))


def _corr(t: dict[str, Any]) -> pd.DataFrame:
    c: pd.DataFrame = t["corr"]
    return c[c["n"] >= 3]


def _not_baseline(c: pd.DataFrame) -> pd.DataFrame:
    return c[~c["predictor"].isin(BASELINES)]


def _p(c: pd.DataFrame, column: str) -> np.ndarray:
    p = c[column].to_numpy(np.float64)
    out: np.ndarray = np.isfinite(p) & (p < ALPHA)
    return out


def _paired(t: dict[str, Any]) -> pd.DataFrame:
    p: pd.DataFrame = t["paired"]
    return p[p["n_pairs"] > 0]


def _edf_top(t: dict[str, Any], p: str, d: str) -> np.ndarray:
    """Per axis, whether the p-value shown beside its largest KS (the report's EDF table) is below ALPHA."""
    ks: pd.DataFrame = t["edf"].ks
    if not len(ks):
        return np.zeros(0, bool)
    top = ks.loc[ks.groupby("axis")[d].idxmax()]
    return _p(top, p)


def _range_rows(t: dict[str, Any]) -> pd.DataFrame:
    w: pd.DataFrame = t["ranges"]
    return w[np.isfinite(w["tau"].to_numpy(np.float64))] if len(w) else w


VERDICTS: tuple[Verdict, ...] = (
    Verdict(
        "Kendall p < 0.05 (each predictor)",
        "stats.correlations: kendall_p",
        ALPHA,
        "test",
        ("corr",),
        lambda t: _count(_p(_corr(t), "kendall_p")),
    ),
    Verdict(
        "Spearman p < 0.05 (each predictor)",
        "stats.correlations: spearman_p",
        ALPHA,
        "test",
        ("corr",),
        lambda t: _count(_p(_corr(t), "spearman_p")),
    ),
    Verdict(
        "Pearson p < 0.05 (each predictor)",
        "stats.correlations: pearson_p",
        ALPHA,
        "test",
        ("corr",),
        lambda t: _count(_p(_corr(t), "pearson_p")),
    ),
    Verdict(
        "Kendall interval excludes 0 (each predictor)",
        "stats.correlations: kendall_lo, kendall_hi",
        ALPHA,
        "test",
        ("corr",),
        lambda t: _count(_excludes_zero(_corr(t)["kendall_lo"], _corr(t)["kendall_hi"])),
    ),
    Verdict(
        "some predictor's Kendall p < 0.05 (study)",
        "stats.correlations: kendall_p",
        ALPHA,
        "study",
        ("corr",),
        lambda t: _any(_p(_corr(t), "kendall_p")),
    ),
    Verdict(
        "some predictor's Kendall p < 0.05 after Holm over the predictors (study)",
        "stats.correlations: kendall_p_holm; ranking.predictor_ranking: p_holm",
        ALPHA,
        "study",
        ("corr",),
        lambda t: _any(_p(_corr(t), "kendall_p_holm")),
    ),
    Verdict(
        "the best-ranked predictor's |tau| interval excludes 0 (study)",
        "ranking.predictor_ranking: abs_lo of rank 1",
        ALPHA,
        "study",
        ("ranking",),
        lambda t: _any(t["ranking"]["abs_lo"].to_numpy(np.float64)[:1] > 0),
    ),
    Verdict(
        "lift over the best baseline: interval above 0 (each metric or proxy)",
        "stats.correlations: lift_lo",
        ALPHA / 2,
        "test",
        ("corr",),
        lambda t: _count(_not_baseline(_corr(t))["lift_lo"].to_numpy(np.float64) > 0),
    ),
    Verdict(
        "granulated Kendall Psi interval excludes 0 (each predictor)",
        "stats.correlations: psi_lo, psi_hi",
        ALPHA,
        "test",
        ("corr",),
        lambda t: _count(_excludes_zero(_corr(t)["psi_lo"], _corr(t)["psi_hi"])),
        siblings=True,
    ),
    Verdict(
        "paired sibling effect: sign test p < 0.05 (each comparison)",
        "stats.paired_effects: p_sign",
        ALPHA,
        "test",
        ("paired",),
        lambda t: _count(_p(_paired(t), "p_sign")),
        siblings=True,
    ),
    Verdict(
        "some paired sibling effect p < 0.05 (study)",
        "stats.paired_effects: p_sign",
        ALPHA,
        "study",
        ("paired",),
        lambda t: _any(_p(_paired(t), "p_sign")),
        siblings=True,
    ),
    Verdict(
        "some paired sibling effect p < 0.05 after Holm over the comparisons (study)",
        "stats.paired_effects: p_holm",
        ALPHA,
        "study",
        ("paired",),
        lambda t: _any(_p(_paired(t), "p_holm")),
        siblings=True,
    ),
    Verdict(
        "U-shaped (each predictor's good range)",
        "good_ranges.good_ranges: u_shaped",
        ALPHA,
        "test",
        ("good",),
        lambda t: _count(
            t["good"].loc[t["good"]["factor"].isin([p.column for p in PREDICTORS]), "u_shaped"].to_numpy(bool)
        ),
    ),
    Verdict(
        "window score: tau interval excludes 0 (each metric)",
        "range_predictors.range_predictors: tau_lo, tau_hi",
        ALPHA,
        "test",
        ("ranges",),
        lambda t: _count(_excludes_zero(_range_rows(t)["tau_lo"], _range_rows(t)["tau_hi"])),
    ),
    Verdict(
        "window beats the raw metric: gain interval above 0 (each metric)",
        "range_predictors.range_predictors: gain_lo",
        ALPHA / 2,
        "test",
        ("ranges",),
        lambda t: _count(_range_rows(t)["gain_lo"].to_numpy(np.float64) > 0),
    ),
    Verdict(
        "error EDFs differ: p of the largest KS < 0.05 (each axis)",
        "edf.edf: ks, p (the report's EDF table)",
        ALPHA,
        "test",
        ("edf",),
        lambda t: _count(_edf_top(t, "p", "ks")),
    ),
    Verdict(
        "normalized error EDFs differ: p of the largest normalized KS < 0.05 (each axis)",
        "edf.edf: ks_normalized, p_normalized",
        ALPHA,
        "test",
        ("edf",),
        lambda t: _count(_edf_top(t, "p_normalized", "ks_normalized")),
    ),
    Verdict(
        "error EDFs differ: Holm p of the largest KS < 0.05 (each axis)",
        "edf.edf: ks, p_holm",
        ALPHA,
        "test",
        ("edf",),
        lambda t: _count(_edf_top(t, "p_holm", "ks")),
    ),
    Verdict(
        "normalized error EDFs differ: Holm p of the largest normalized KS < 0.05 (each axis)",
        "edf.edf: ks_normalized, p_normalized_holm",
        ALPHA,
        "test",
        ("edf",),
        lambda t: _count(_edf_top(t, "p_normalized_holm", "ks_normalized")),
    ),
)
VERDICT_BY_NAME = {v.name: v for v in VERDICTS}


def study_tables(df: pd.DataFrame, needed: Iterable[str], *, n_boot: int, seed: int) -> dict[str, Any]:
    """The report's tables of one study that the verdicts ``needed`` read, computed as ``study_analysis.analyse``
    computes them (``n_boot`` bootstrap resamples, seed ``seed``)."""
    from .edf import edf
    from .good_ranges import good_ranges
    from .ranking import predictor_ranking
    from .stats import correlations, paired_effects
    from .range_predictors import range_predictors

    need = set(needed)
    out: dict[str, Any] = {}
    if need & {"corr", "ranking"}:
        out["corr"] = correlations(df, n_boot=n_boot, seed=seed)
    if need & {"ranges", "ranking"}:
        out["ranges"] = range_predictors(df, seed=seed)
    if "ranking" in need:
        out["ranking"] = predictor_ranking(out["corr"], out["ranges"])
    if "paired" in need:
        out["paired"] = paired_effects(df)
    if "good" in need:
        out["good"] = good_ranges(df, seed=seed)
    if "edf" in need:
        out["edf"] = edf(df)
    return out


NULL_RATE_COLUMNS = [
    "verdict",
    "where",
    "unit",
    "nominal",
    "architectures",
    "replicates",
    "trials",
    "fired",
    "rate",
    "sd",
]


def null_rates(
    sizes: Iterable[int] = (8, 48, 120, 500),
    replicates: int = 200,
    *,
    verdicts: Iterable[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The false-positive rate of each verdict (default all of ``VERDICTS`` and ``WINDOW_VERDICTS``) over
    ``replicates`` null studies (``null_study``, with siblings) of each size in ``sizes`` (base draws); the NLC
    window's verdicts over as many studies of their own populations (``window_rates``). One row per verdict and
    size: verdict, where, unit, nominal, architectures, replicates, trials, fired, rate, and ``sd``, the binomial
    standard error of a rate at the nominal level over those trials (sqrt(nominal (1 - nominal) / trials))."""
    sizes = tuple(sizes)
    names = list(verdicts) if verdicts is not None else [v.name for v in VERDICTS] + list(WINDOW_VERDICTS.values())
    unknown = [v for v in names if v not in VERDICT_BY_NAME and v not in WINDOW_VERDICTS.values()]
    if unknown:
        raise KeyError(unknown[0])
    chosen = [VERDICT_BY_NAME[v] for v in names if v in VERDICT_BY_NAME]
    kinds = [kind for kind, name in WINDOW_VERDICTS.items() if name in names]
    needed = {t for v in chosen for t in v.tables}
    rows = []
    for n in sizes:
        trials = dict.fromkeys([v.name for v in chosen], 0)
        fired = dict.fromkeys([v.name for v in chosen], 0)
        for r in range(replicates):
            df = null_study(n, seed * 100_003 + r, siblings=True)
            tables = study_tables(df, needed, n_boot=n_boot, seed=r)
            for v in chosen:
                k, f = v.fires(tables)
                trials[v.name] += k
                fired[v.name] += f
            if progress is not None and (r + 1) % 10 == 0:
                progress(f"{n} architectures: {r + 1} of {replicates} null studies")
        for v in chosen:
            k = trials[v.name]
            rows.append(
                {
                    "verdict": v.name,
                    "where": v.where,
                    "unit": v.unit,
                    "nominal": v.nominal,
                    "architectures": n,
                    "replicates": replicates,
                    "trials": k,
                    "fired": fired[v.name],
                    "rate": fired[v.name] / k if k else math.nan,
                    "sd": math.sqrt(v.nominal * (1 - v.nominal) / k) if k else math.nan,
                }
            )
    table = pd.DataFrame(rows, columns=NULL_RATE_COLUMNS)
    if kinds:
        window = window_rates(sizes, replicates, kinds=kinds, seed=seed, progress=progress)
        table = pd.concat([table, window[NULL_RATE_COLUMNS]], ignore_index=True)
    return table


# -- the study's own NLC window: "large enough" for a band far from the true one ----------------------------------

# The populations of the window verdict: log10 NLC uniform on [-1, 0] for a fifth of the architectures and on
# [0, 4] for the rest (as real studies spread over decades); "window": test error flat at 0.13 inside the NLC
# paper's [1, 3] and rising with the distance r (decades) outside it, 0.13 + 0.51 (1 - exp(-r^2 / 0.3)), plus
# N(0, 0.025) noise, clipped to [0, 2/3]; "flat": no NLC effect, test error i.i.d. Beta(4, 8). The true band
# (decades): [0, log10 3] where the window is; with no effect a subsample's best is a random architecture and the
# band is the central 95% of log10 NLC, [-0.875, 3.875] (0.025 / 0.2 of the way up [-1, 0]; 0.025 / 0.8 of the way
# down [0, 4]).
WINDOW_TRUTH = {
    "window": (math.log10(PAPER_WINDOW[0]), math.log10(PAPER_WINDOW[1])),
    "flat": (-1.0 + 0.025 / 0.2, 4.0 - 4 * 0.025 / 0.8),
}
FAR_SDS = 2.0  # far: an end off the true one by more than this many times the rule's tolerance of one sd


def window_study(architectures: int, seed: int, kind: str = "window") -> tuple[np.ndarray, np.ndarray]:
    """NLC and test error of a study of ``architectures`` draws of the population ``kind`` ("window" or "flat",
    ``WINDOW_TRUTH``), seed ``seed``."""
    rng = np.random.default_rng([seed, 23])
    n = architectures
    below = rng.random(n) < 0.2
    u = np.where(below, rng.uniform(-1.0, 0.0, n), rng.uniform(0.0, 4.0, n))
    if kind == "window":
        lo, hi = WINDOW_TRUTH["window"]
        r = np.maximum(np.abs(u - (lo + hi) / 2) - (hi - lo) / 2, 0.0)
        error = 0.13 + 0.51 * (1 - np.exp(-(r**2) / 0.3)) + rng.normal(0, 0.025, n)
    else:
        error = rng.beta(4.0, 8.0, n)
    return 10.0**u, np.clip(error, 0.0, 2 / 3)


def window_tolerance(truth: tuple[float, float]) -> float:
    """The rule's own tolerance of one standard deviation of an end (decades): min(width, log10 3) / 3 of the true
    band (``study.experiment.window_rule``: ``STABILITY_RATIO``, ``STABILITY_DECADES``)."""
    return min(STABILITY_RATIO * (truth[1] - truth[0]), STABILITY_DECADES)


def window_miss(low: float, high: float, truth: tuple[float, float]) -> float:
    """How far a band [low, high] (NLC) lies from the true one (decades): the larger of its two ends' distances."""
    if not (low > 0 and high > 0):
        return math.nan
    return max(abs(math.log10(low) - truth[0]), abs(math.log10(high) - truth[1]))


WINDOW_VERDICTS = {
    kind: f"the study's own NLC window is large enough, yet far from the true band ({label})"
    for kind, label in (("window", "test error has the window [1, 3]"), ("flat", "no NLC effect"))
}


def window_rates(
    sizes: Iterable[int] = (20, 48, 120, 500),
    replicates: int = 200,
    *,
    kinds: Iterable[str] = ("window", "flat"),
    rule: Callable[..., dict[str, Any]] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """How often the study's own NLC window is called large enough while it lies far from the true band:
    ``replicates`` studies (``window_study``) of each size and population ``kind``, each through ``rule`` (default
    ``study.experiment.window_rule.window_of``, what ``good_ranges.nlc_good_range`` and pruning at launch use). Far: an
    end more than ``FAR_SDS`` tolerances (``window_tolerance``) off the true one: if the rule's bound on one
    standard deviation held and an end were unbiased and normal, at most 5% of the studies it calls large enough
    would be. One row per kind and size with the columns of ``null_rates`` (``fired``: large enough and far, per
    study) and ``large_enough``, ``far`` (the shares of studies), ``far_if_large`` (the share of the studies
    called large enough that are far) and ``miss`` (the median distance, decades, of those)."""
    from archstudy.study.experiment.window_rule import window_of

    rule = window_of if rule is None else rule
    rows = []
    for kind in kinds:
        truth = WINDOW_TRUTH[kind]
        limit = FAR_SDS * window_tolerance(truth)
        for n in sizes:
            large = far = fired = 0
            misses = []
            for r in range(replicates):
                w = rule(*window_study(n, seed * 100_003 + r, kind), seed=r)
                miss = window_miss(w["low"], w["high"], truth)
                is_far = not miss <= limit
                large += bool(w["large_enough"])
                far += is_far
                fired += bool(w["large_enough"]) and is_far
                if w["large_enough"]:
                    misses.append(miss)
                if progress is not None and (r + 1) % 50 == 0:
                    progress(f"NLC window ({kind}), {n} architectures: {r + 1} of {replicates} studies")
            rows.append(
                {
                    "verdict": WINDOW_VERDICTS[kind],
                    "where": "good_ranges.nlc_good_range: large_enough (study.experiment.window_rule.window_of)",
                    "unit": "study",
                    "nominal": ALPHA,
                    "architectures": n,
                    "replicates": replicates,
                    "trials": replicates,
                    "fired": fired,
                    "rate": fired / replicates,
                    "sd": math.sqrt(ALPHA * (1 - ALPHA) / replicates),
                    "large_enough": large / replicates,
                    "far": far / replicates,
                    "far_if_large": fired / large if large else math.nan,
                    "miss": float(np.median(misses)) if misses else math.nan,
                }
            )
    return pd.DataFrame(rows)


# -- the findings of a whole report: "some finding" under the null, and power with signal -------------------------

# The null of ``findings_rates``: metrics correlated through depth, activation and a latent of the base draw, test
# error a random effect of the base draw plus noise, 8% diverged rows tied at chance.
FINDINGS_NULL: dict[str, Any] = {"latent": 1.0, "base_effect": 0.04, "diverged": DIVERGED}
SIGNAL_NOISE = 0.10  # the power study's noise (sd of test error beyond its two effects)
SIGNAL_SECOND = 0.05  # ... and the second metric's effect per standard deviation of log10 variability


def clopper_pearson(hits: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of a rate (Clopper and Pearson, Biometrika 26, 1934)."""
    from scipy import stats as sps

    a = (1 - confidence) / 2
    lo = float(sps.beta.ppf(a, hits, trials - hits + 1)) if hits > 0 else 0.0
    hi = float(sps.beta.ppf(1 - a, hits + 1, trials - hits)) if hits < trials else 1.0
    return lo, hi


def signal_study(architectures: int, seed: int, *, siblings: bool = False) -> pd.DataFrame:
    """A study with two effects (the power of ``findings_rates``): the null study's design and metrics
    (``null_study`` with ``FINDINGS_NULL``), test error the NLC window, U-shaped in log10 NLC
    (``predict_simulation.nlc_window_error``: 0.13 inside the NLC paper's [1, 3], rising to 0.64 outside), plus
    ``SIGNAL_SECOND`` per standard deviation of log10 variability, plus N(0, ``SIGNAL_NOISE``); diverged rows at
    chance."""
    from .predict_simulation import nlc_window_error

    df = null_study(architectures, seed, siblings=siblings, **FINDINGS_NULL)
    rng = np.random.default_rng([seed, 18])
    v = np.log10(df["variability"].to_numpy(np.float64))
    error = nlc_window_error(np.log10(df["nlc"].to_numpy(np.float64)))
    error = error + SIGNAL_SECOND * (v - v.mean()) / (v.std() or 1.0) + rng.normal(0.0, SIGNAL_NOISE, len(df))
    gone = df["all_diverged"].to_numpy(bool)
    df["test_error"] = np.where(gone, 1.0 - 1.0 / D_OUT, np.clip(error, 0.0, 1.0))
    return df


FINDING_RATE_COLUMNS = ["kind", "architectures", "siblings", "replicates", "what", "fired", "rate", "lo", "hi"]


def findings_rates(
    sizes: Iterable[int] = (48, 120),
    replicates: int = 200,
    *,
    kind: str = "null",
    siblings: Iterable[bool] = (False, True),
    predict: bool = False,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """How often a report's findings (``analysis.findings``) fire: ``replicates`` studies of each size and sibling
    setting, ``kind`` "null" (``null_study`` with ``FINDINGS_NULL``: "some finding" should be at most 5%) or
    "signal" (``signal_study``: the power to find the NLC's U-shape, its good range, the two metrics as
    predictors). ``predict``: with the joint predictor's comparisons (seconds a study). One row per (size,
    siblings, what): ``what`` "some finding", "some finding: FAMILY" per family, and with signal the findings
    looked for; ``fired`` of ``replicates`` with the Clopper-Pearson interval."""
    from .findings import FAMILIES, findings

    make = null_study if kind == "null" else signal_study
    extra = FINDINGS_NULL if kind == "null" else {}
    looked_for = {
        "NLC U-shaped": ("u_shape", "nlc"),
        "NLC good range": ("good_range", "nlc"),
        "NLC predicts": ("predictor", "nlc"),
        "variability predicts": ("predictor", "variability"),
        "the joint model predicts": ("comparison", "joint"),
    }
    rows = []
    for n in sizes:
        for sib in siblings:
            counts: dict[str, int] = {}
            for r in range(replicates):
                df = make(n, seed * 100_003 + r, siblings=sib, **extra)
                found = findings(df, seed=r, predict=predict)
                hit = found[found["finding"]]
                whats = {f"some finding: {f}" for f in hit["family"]}
                whats |= {"some finding"} if whats else set()
                if kind == "signal":
                    pairs = set(zip(hit["family"], hit["subject"]))
                    whats |= {name for name, key in looked_for.items() if key in pairs}
                for w in whats:
                    counts[w] = counts.get(w, 0) + 1
                if progress is not None and (r + 1) % 10 == 0:
                    progress(f"findings ({kind}), {n} architectures, siblings {sib}: {r + 1} of {replicates}")
            names = ["some finding"] + [f"some finding: {f.key}" for f in FAMILIES]
            names += list(looked_for) if kind == "signal" else []
            for w in names:
                k = counts.get(w, 0)
                lo, hi = clopper_pearson(k, replicates)
                rows.append(
                    {
                        "kind": kind,
                        "architectures": n,
                        "siblings": sib,
                        "replicates": replicates,
                        "what": w,
                        "fired": k,
                        "rate": k / replicates,
                        "lo": lo,
                        "hi": hi,
                    }
                )
    return pd.DataFrame(rows, columns=FINDING_RATE_COLUMNS)
