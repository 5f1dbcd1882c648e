"""The joint predictor's held-out evaluation (``predict_study``): repeated grouped cross-validation, the baselines as
learners, per-fold scores with corrected resampled-t intervals, the ranking measures and the verdict."""

from __future__ import annotations

import math
import os
import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, overload

import numpy as np
import pandas as pd
from scipy import stats as sps

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, Integer, Real, check
from archstudy.study.experiment.window_rule import PAPER_WINDOW

from ..columns import PREDICTORS
from ..results import Results
from ..stats import boot_kendall, boot_spearman, percentile_interval
from .learners import (
    CONFIDENCE,
    DESCRIPTOR_FEATURES,
    FOLDS,
    Feature,
    JOINT,
    LABELS,
    MIN_ROWS,
    N_BOOT,
    TARGET,
    _numeric,
    choose_features,
    feature_table,
    fit_rows,
    make_learner,
)
from .explanation import partial_dependences, permutation_importances

# -- held-out evaluation -----------------------------------------------------------------------------------


def base_groups(arch: pd.DataFrame) -> np.ndarray:
    """The base architecture of each row, as an integer group: a draw and its siblings share (study seed, index)."""
    seed = arch["study_seed"].astype("Int64").fillna(-1).astype(str) if "study_seed" in arch.columns else ""
    key = seed + ":" + arch["index"].astype(str)
    codes: np.ndarray = pd.factorize(key, sort=True)[0]
    return codes


def group_folds(groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, held-out) row indices of ``GroupKFold`` on ``groups``: no group on both sides. The groups are
    relabelled in a seeded random order first, so which base architectures share a fold is random, not the
    order they were drawn in (GroupKFold itself only balances the folds' sizes)."""
    from sklearn.model_selection import GroupKFold

    n_groups = int(groups.max()) + 1 if len(groups) else 0
    k = min(folds, n_groups)
    if k < 2:
        raise SpecError("predict_study", "architectures", n_groups, "must hold at least 2 base architectures")
    shuffled = np.random.default_rng([seed, 24]).permutation(n_groups)[groups]
    return list(GroupKFold(n_splits=k).split(np.zeros(len(groups)), groups=shuffled))


def capped_rows(groups: np.ndarray, max_rows: int, seed: int) -> np.ndarray | None:
    """The rows the held-out evaluation keeps of a study larger than ``max_rows``: None (all of them) up to
    ``max_rows``, else whole base architectures (``groups``) in a seeded random order (a stream of its own), as
    many as hold at most ``max_rows`` rows together (the first always), their rows in ascending order. A random
    sample of base architectures is itself a study of that size drawn the same way, so the verdicts keep the
    calibration measured at that size (``analysis.predict_simulation``)."""
    if len(groups) <= max_rows:
        return None
    sizes = np.bincount(groups)
    order = np.random.default_rng([seed, 0x9D5]).permutation(len(sizes))
    fits = np.cumsum(sizes[order]) <= max_rows
    fits[0] = True
    keep = np.zeros(len(sizes), dtype=bool)
    keep[order[fits]] = True
    rows: np.ndarray = np.flatnonzero(keep[groups])
    return rows


def group_counts(groups: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) bootstrap counts of the rows: base architectures (groups) drawn with replacement, each row
    counted as often as its group was drawn."""
    n_groups = int(groups.max()) + 1
    draws = np.random.default_rng([seed, 2024]).integers(0, n_groups, size=(n_boot, n_groups))
    per_group = np.zeros((n_boot, n_groups))
    np.add.at(per_group, (np.repeat(np.arange(n_boot), n_groups), draws.ravel()), 1.0)
    return per_group[:, groups]


@overload
def _r2(y: np.ndarray, p: np.ndarray, c: None = None) -> float: ...
@overload
def _r2(y: np.ndarray, p: np.ndarray, c: np.ndarray) -> np.ndarray: ...
def _r2(y: np.ndarray, p: np.ndarray, c: np.ndarray | None = None) -> np.ndarray | float:
    """R^2 = 1 - sum (y - p)^2 / sum (y - mean y)^2, with row weights ``c`` (B, n) per resample when given."""
    if c is None:
        ss = float(((y - y.mean()) ** 2).sum())
        return 1.0 - float(((y - p) ** 2).sum()) / ss if ss > 0 else math.nan
    mean = (c * y).sum(axis=1, keepdims=True) / c.sum(axis=1, keepdims=True)
    ss = (c * (y - mean) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss > 0, 1.0 - (c * (y - p) ** 2).sum(axis=1) / np.where(ss > 0, ss, 1.0), np.nan)


def held_out_scores(y: np.ndarray, p: np.ndarray, c: np.ndarray, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Spearman, Kendall and R^2 of predictions ``p`` against ``y``, each with its percentile-bootstrap interval
    over the resamples ``c`` (``group_counts``), and the resampled rho (``_rho``) for paired differences."""
    out: dict[str, Any] = {"n": len(y)}
    constant = np.ptp(p) == 0 or np.ptp(y) == 0
    statistics: tuple[tuple[str, Callable[[], float], Callable[[], np.ndarray]], ...] = (
        ("spearman", lambda: float(sps.spearmanr(p, y).statistic), lambda: boot_spearman(p, y, c)),
        ("kendall", lambda: float(sps.kendalltau(p, y).statistic), lambda: boot_kendall(p, y, c)),
        ("r2", lambda: _r2(y, p), lambda: _r2(y, p, c)),
    )
    for name, point, boot in statistics:
        values = np.full(len(c), np.nan) if constant and name != "r2" else boot()
        out[name] = math.nan if constant and name != "r2" else point()
        out[f"{name}_lo"], out[f"{name}_hi"] = percentile_interval(values, confidence)
        out[f"_{name}"] = values
    return out


SCORE_COLUMNS = [
    "learner",
    "label",
    "metric",
    "n",
    "spearman",
    "spearman_lo",
    "spearman_hi",
    "kendall",
    "kendall_lo",
    "kendall_hi",
    "r2",
    "r2_lo",
    "r2_hi",
]
EVALUATION_COLUMNS = ["learner", "label", "kind", "status", "metric", "n", "scored_folds"] + SCORE_COLUMNS[4:]
CANNOT_FIT = "cannot fit"
# At most this many architectures in the held-out evaluation: a larger study is evaluated on a random subsample of
# whole base architectures (``capped_rows``). The evaluation's cost grows with the rows (trees, the window's
# bootstrap, Kendall's tau of each fold's pairs), its verdict's calibration is that of a study of this size
# (analysis.predict_simulation), and at this size the intervals of the scores are already a few hundredths wide.
MAX_ROWS = 2_000
REPEATS = 3  # fold seeds of the repeated grouped cross-validation
INNER_FOLDS = 3  # grouped folds inside a training fold, where the joint learner and the best baseline are chosen
FOLD_ROWS = 4  # base architectures per held-out fold at least: folds = min(FOLDS, groups // FOLD_ROWS)


@dataclass(frozen=True)
class Rule:
    """An unfitted baseline: a column of the architectures table as it is (on log10 where its scale is log: the
    order is the same), its sign chosen on the training rows (the sign of its Spearman rho with test error there)
    unless ``fixed``; a missing value gets the training rows' median. ``window``: the value is instead the
    distance of log10 x from the interval [log10 lo, log10 hi] (0 inside), the NLC paper's rule that error grows
    outside a fixed good range (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 7: NLC in [1, 3])."""

    name: str
    column: str
    log: bool
    label: str
    window: tuple[float, float] | None = None
    fixed: bool = False

    def values(self, arch: pd.DataFrame) -> np.ndarray:
        if self.column not in arch.columns:
            return np.full(len(arch), np.nan)
        x = _numeric(arch[self.column], self.log or self.window is not None)
        if self.window is None:
            return x
        lo, hi = math.log10(self.window[0]), math.log10(self.window[1])
        return np.where(np.isfinite(x), np.maximum(np.maximum(lo - x, x - hi), 0.0), np.nan)


NLC_RULE = Rule("nlc", "nlc", True, "NLC alone (the NLC paper's window [1, 3], unfitted)", PAPER_WINDOW, fixed=True)


def baseline_rules(arch: pd.DataFrame, features: Sequence[Feature]) -> list[Rule]:
    """The unfitted baselines a study has: the NLC paper's window, each metric and proxy raw (``raw:COLUMN``),
    and the trivial ones, parameter count, depth, width and FLOPs (``columns.PREDICTORS`` of kind baseline),
    where a column has 3 finite values, two of them distinct."""
    rules = [NLC_RULE] if "nlc" in arch.columns else []
    for f in features:
        if f.kind in ("metric", "proxy"):
            rules.append(Rule(f"raw:{f.column}", f.column, f.log, f"{f.label} raw (sign from the training folds)"))
    for p in PREDICTORS:
        if p.kind == "baseline" and p.column in arch.columns:
            x = _numeric(arch[p.column], p.log)
            if np.isfinite(x).sum() >= 3 and np.nanmax(x) > np.nanmin(x):
                rules.append(Rule(p.column, p.column, p.log, f"{p.label} (sign from the training folds)"))
    return rules


def rule_predict(v: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, fixed: bool) -> np.ndarray:
    """A rule's held-out values: s * v on ``test``, s = the sign of Spearman's rho of v and y on ``train`` (+1 when
    ``fixed``), a missing v set to the median of v on ``train``; NaN throughout when ``train`` has no finite v."""
    vt = v[train]
    ok = np.isfinite(vt)
    if not ok.any():
        return np.full(len(test), np.nan)
    sign = 1.0
    if not fixed and ok.sum() >= 3 and np.ptp(vt[ok]) > 0 and np.ptp(y[train][ok]) > 0:
        sign = 1.0 if spearman(vt[ok], y[train][ok]) >= 0 else -1.0
    x = v[test]
    return sign * np.where(np.isfinite(x), x, float(np.median(vt[ok])))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, tied values at their mean rank (``scipy.stats.rankdata``'s "average")."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    out = np.empty(len(x))
    out[order] = np.repeat(mean_rank, ends - starts)
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the ranks (ties at their mean rank); NaN where either is constant."""
    ra, rb = _ranks(a), _ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum()) / den if den > 0 else math.nan


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b: sum over pairs of sign(a_i - a_j) sign(b_i - b_j), over the square root of the product of
    each side's untied pairs (Kendall, *The treatment of ties in ranking problems*, Biometrika 33, 1945)."""
    sa = np.sign(a[:, None] - a[None, :])
    sb = np.sign(b[:, None] - b[None, :])
    den = math.sqrt(float(np.abs(sa).sum()) * float(np.abs(sb).sum()))
    return float((sa * sb).sum()) / den if den > 0 else math.nan


def fold_score(p: np.ndarray, y: np.ndarray, rho_only: bool = False) -> tuple[float, float, float, bool]:
    """(Spearman's rho, Kendall's tau-b, R^2) of predictions ``p`` against ``y`` on one held-out fold, and whether
    the predictions are constant there (the learner could not fit: no order to score). A fold with a constant
    ``y`` or under 3 rows scores NaN."""
    if not np.all(np.isfinite(p)):
        return math.nan, math.nan, math.nan, True
    if len(p) >= 2 and np.ptp(p) == 0:
        return math.nan, math.nan, math.nan, True
    if len(y) < 3 or np.ptp(y) == 0:
        return math.nan, math.nan, math.nan, False
    if rho_only:
        return spearman(p, y), math.nan, math.nan, False
    return spearman(p, y), kendall(p, y), _r2(y, p), False


def corrected_interval(
    values: np.ndarray, test_over_train: float, confidence: float = CONFIDENCE, bound: float = math.inf
) -> tuple[float, float, float]:
    """(mean, lo, hi) of per-fold scores of repeated k-fold cross-validation: the corrected resampled t of Nadeau
    and Bengio (*Inference for the Generalization Error*, Machine Learning 52, 2003, section 4), in the r x k
    form of Bouckaert and Frank (*Evaluating the Replicability of Significance Tests*, PAKDD 2004, section 3):
    the J = r k scores x with mean m and variance s^2, var(m) = (1/J + n_test/n_train) s^2 (the second term for
    the overlap of the training sets), m +- t_{J-1} sqrt(var(m)), clipped to [-bound, bound] (a correlation's
    range). Non-finite scores are left out; NaN below 2."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        m = float(x.mean()) if len(x) else math.nan
        return m, math.nan, math.nan
    m, s2 = float(x.mean()), float(x.var(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1)) * math.sqrt((1 / len(x) + test_over_train) * s2)
    return m, max(m - half, -bound), min(m + half, bound)


def fold_count(n_groups: int, folds: int) -> int:
    """Held-out folds for ``n_groups`` base architectures: ``folds``, fewer so that each holds ``FOLD_ROWS``, but
    two wherever there are two base architectures (a study too small to tell shows it in its intervals)."""
    return min(n_groups, max(2, min(folds, n_groups // FOLD_ROWS)))


def _relabel(groups: np.ndarray) -> np.ndarray:
    codes: np.ndarray = pd.factorize(groups, sort=True)[0]
    return codes


@dataclass
class _Candidate:
    """One learner of the evaluation: a scikit-learn model (``model``: a ``LEARNERS`` name, on ``features``) or a
    ``Rule`` (``values``: its column, ``fixed``: its sign)."""

    name: str
    label: str
    kind: str  # "joint" or "baseline"
    model: str = ""
    features: Sequence[Feature] = ()
    values: np.ndarray | None = None
    fixed: bool = False
    column: str = ""
    table: pd.DataFrame | None = None  # its own features' table (the descriptors alone), else the study's

    def fit_predict(
        self, X: pd.DataFrame, y: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int
    ) -> tuple[np.ndarray, Any]:
        if self.values is not None:
            return rule_predict(self.values, y, train, test, self.fixed), None
        if self.table is not None:
            X = self.table
        # A feature with no value on the training rows (a metric measured on a few architectures only, all in the
        # held-out fold) has nothing to learn from: scikit-learn's binning refuses an empty column.
        features = [f for f in self.features if _observed(X[f.column].iloc[train])]
        if not features:
            return np.full(len(test), math.nan), None
        model = make_learner(self.model, features, seed).fit(X.iloc[train], y[train])
        return np.asarray(model.predict(X.iloc[test]), dtype=np.float64), model


def _observed(values: pd.Series) -> bool:
    """Whether a feature column holds at least one value (a finite number, or a category)."""
    if pd.api.types.is_numeric_dtype(values):
        return bool(np.isfinite(values.to_numpy(np.float64)).any())
    return bool(values.notna().any())


def candidates(arch: pd.DataFrame, features: Sequence[Feature], joint: Sequence[str] = JOINT) -> list[_Candidate]:
    """Every learner the evaluation scores: the joint ones (``joint``, on every feature), then the baselines: the
    unfitted rules (``baseline_rules``) and, where the study has them, the descriptors alone (the ridge on depth,
    width and the categories)."""
    out = [_Candidate(name, LABELS[name], "joint", model=name, features=features) for name in joint]
    for r in baseline_rules(arch, features):
        out.append(_Candidate(r.name, r.label, "baseline", values=r.values(arch), fixed=r.fixed, column=r.column))
    described = [f for f in DESCRIPTOR_FEATURES if f.column in arch.columns]
    if any(f.column == "depth" for f in described):
        out.append(
            _Candidate(
                "descriptors",
                "the descriptors alone (ridge on depth, width, categories)",
                "baseline",
                model="linear",
                features=described,
                table=feature_table(arch, described),
            )
        )
    return out


def choose(
    pool: Sequence[_Candidate], X: pd.DataFrame, y: np.ndarray, groups: np.ndarray, rows: np.ndarray, seed: int
) -> _Candidate | None:
    """The learner of ``pool`` with the highest mean Spearman's rho over ``INNER_FOLDS`` grouped folds of
    ``rows`` only (the rows it is judged on never take part); a learner with constant predictions in a fold cannot
    fit and is passed over. None when none can (or ``rows`` hold too few base architectures to split)."""
    if len(pool) == 1:
        return pool[0]  # nothing to choose: a learner that cannot fit shows it on the held-out fold
    g = _relabel(groups[rows])
    k = min(INNER_FOLDS, (int(g.max()) + 1) // 2) if len(g) else 0
    if k < 2:
        return None
    splits = group_folds(g, k, seed)
    best, best_score = None, -math.inf
    for c in pool:
        rhos: list[float] = []
        for train, test in splits:
            p, _ = c.fit_predict(X, y, rows[train], rows[test], seed)
            rho, _, _, constant = fold_score(p, y[rows[test]], rho_only=True)
            if constant and (c.values is None or not np.all(np.isfinite(p))):
                rhos = []
                break
            rhos.append(rho)
        score = float(np.nanmean(rhos)) if rhos and np.isfinite(rhos).any() else math.nan
        if np.isfinite(score) and score > best_score:
            best, best_score = c, score
    return best


@dataclass
class Prediction:
    """One study's held-out evaluation (``predict_study``).

    ``scores``: a row per learner (``EVALUATION_COLUMNS``): ``joint`` (the joint learner chosen inside each
    training fold), ``baseline`` (the best baseline, chosen the same way), ``linear`` and ``boosted``, then every
    baseline; ``status`` "cannot fit" where a learner's predictions were constant in a held-out fold; ``metric``:
    the learner most often chosen (nested ones) or the rule's column. ``best``: the joint learner chosen on the
    whole study (the one ``fit_predictor`` fits). ``versus``: the paired differences of the joint model's rho with
    the best baseline's and NLC alone's (``diff``, ``lo``, ``hi``, per fold, corrected resampled t). ``calls``:
    the verdicts as flags (``joint_above_zero``, ``beats_baseline``, ``beats_nlc``: +1 beats, -1 beaten, 0 cannot
    tell); ``verdict``: the plain sentence; ``level``: the report box ("done" when the joint model beats the best
    baseline, else "partial"). ``ranking``: top-K precision, NDCG@K and regret per learner; ``curve``: held-out
    rho against the number of training architectures. ``held_out``: the first repeat's held-out predictions
    (``joint``, ``nlc``) with ``index``, ``arch_id``, ``variant``, ``fold``; ``importance`` and ``dependence``:
    permutation importance and partial dependence of ``best``; ``transfer``: scores of predictors fitted elsewhere."""

    features: list[Feature]
    scores: pd.DataFrame
    best: str
    versus: pd.DataFrame
    verdict: str
    held_out: pd.DataFrame
    importance: pd.DataFrame
    dependence: pd.DataFrame
    values: dict[str, np.ndarray] = field(default_factory=dict)
    groups: int = 0
    folds: int = 0
    repeats: int = 0
    of: int = 0  # the study's trained architectures with a test error (more than ``scores``'s ``n`` where capped)
    max_rows: int = MAX_ROWS  # the cap the evaluation ran under
    calls: dict[str, int] = field(default_factory=dict)
    level: str = "partial"
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)

    def summary(self) -> dict[str, Any]:
        """The held-out scores as plain data (``predictor.json``, ``ranked.parquet``'s metadata)."""
        s = self.scores.set_index("learner")
        out: dict[str, Any] = {
            "evaluated": True,
            "folds": self.folds,
            "repeats": self.repeats,
            "groups": self.groups,
            "rows": int(self.scores["n"].iloc[0]) if len(self.scores) else 0,
            "of": self.of,
            "best": self.best,
        }
        for name in ("joint", "baseline", "nlc"):
            if name in s.index:
                r = s.loc[name]
                out[name] = {k: _plain(r[k]) for k in ("status", "metric", "spearman", "spearman_lo", "spearman_hi")}
        for _, r in self.versus.iterrows():
            out[f"joint_minus_{r['versus']}"] = {k: _plain(r[k]) for k in ("diff", "lo", "hi")}
        if len(self.ranking):
            j = self.ranking[self.ranking["learner"] == "joint"]
            out["ranking"] = [{k: _plain(v) for k, v in r.items()} for r in j.to_dict("records")]
        out["calls"] = dict(self.calls)
        out["verdict"] = self.verdict
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    return v


def one_thread() -> AbstractContextManager[Any]:
    """scikit-learn's OpenMP and BLAS pools held to one thread: a tree's prediction on a few dozen rows is
    microseconds of work, and waking a pool of threads for each of the thousands of them permutation importance
    makes costs milliseconds (on a busy machine most of the time went there). threadpoolctl limits the pools of
    the libraries loaded when it is entered, so scikit-learn's compiled modules are loaded first."""
    import sklearn.ensemble  # noqa: F401 (its OpenMP runtime)
    import sklearn.linear_model  # noqa: F401 (BLAS)
    from threadpoolctl import threadpool_limits

    from contextlib import ExitStack

    from sklearn import config_context

    stack = ExitStack()
    stack.enter_context(threadpool_limits(limits=1))
    # the estimators are built here with valid parameters: scikit-learn's check of them on every fit is overhead
    stack.enter_context(config_context(skip_parameter_validation=True))
    return stack


def predict_study(
    results: str | os.PathLike[str] | Results | pd.DataFrame,
    *,
    descriptors: bool = False,
    folds: int = FOLDS,
    repeats: int = REPEATS,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    importance: bool = True,
    dependence: bool = True,
    joint: Sequence[str] = JOINT,
    ranking: bool = True,
    curve: bool = True,
    max_rows: int = MAX_ROWS,
    progress: Callable[[str, int | None, int | None], None] | None = None,
) -> Prediction:
    """Held-out evaluation of the joint predictor and its baselines on one study's trained architectures (module
    docstring): grouped cross-validation on the base architecture with ``folds`` folds (fewer on a small study),
    repeated with ``repeats`` fold seeds; scores per held-out fold, intervals by the corrected resampled t; the
    joint learner (among ``joint``) and the best baseline chosen inside each training fold. ``results``: a study
    directory, ``load_results`` or an architectures table. ``descriptors``: the architecture's own depth, width
    and categories join the metrics. ``ranking``: the top-K measures; ``curve``: held-out rho against the number
    of training architectures (``learning_curve``). ``max_rows``: above this many architectures, a seeded random
    subsample of whole base architectures holding at most that many is evaluated (``capped_rows``; ``of`` counts
    them all). ``progress``: told after each held-out fold and each explanation, ``progress(label, done, total)``
    (``study.experiment.terminal.StepLine``). ``n_boot`` is kept for callers; no bootstrap is drawn."""
    if isinstance(results, (str, os.PathLike)):
        from ..results import load_results

        results = load_results(results, runs=False)
    with one_thread():
        return _predict_study(
            results,
            descriptors,
            folds,
            repeats,
            seed,
            confidence,
            importance,
            dependence,
            tuple(joint),
            ranking,
            curve,
            max_rows,
            progress,
        )


def _predict_study(
    results: Results | pd.DataFrame,
    descriptors: bool,
    folds: int,
    repeats: int,
    seed: int,
    confidence: float,
    importance: bool,
    dependence: bool,
    joint: tuple[str, ...],
    with_ranking: bool,
    with_curve: bool,
    max_rows: int,
    progress: Callable[[str, int | None, int | None], None] | None = None,
) -> Prediction:
    where = "predict_study"
    folds = check(where, "folds", Integer(2), folds)
    repeats = check(where, "repeats", Integer(1), repeats)
    seed = check(where, "seed", Integer(0), seed)
    confidence = check(where, "confidence", Real(0.0, 1.0, lo_open=True, hi_open=True), confidence)
    for name in joint:
        check(where, "joint", Choice(JOINT), name)
    max_rows = check(where, "max_rows", Integer(MIN_ROWS), max_rows)
    arch = fit_rows(results)
    of = len(arch)
    keep = capped_rows(base_groups(arch), max_rows, seed)
    if keep is not None:
        arch = arch.iloc[keep].reset_index(drop=True)
    if len(arch) < MIN_ROWS:
        raise SpecError(
            where, "architectures", len(arch), f"must hold at least {MIN_ROWS} trained architectures with a test error"
        )
    features = choose_features(arch, descriptors)
    if not features:
        raise SpecError(where, "features", 0, "no init metric has 3 finite, distinct values")
    X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
    groups = base_groups(arch)
    n_groups = int(groups.max()) + 1
    k = fold_count(n_groups, folds)
    if k < 2:
        raise SpecError(where, "base_architectures", n_groups, "must hold at least 2 for two held-out folds")
    pool = candidates(arch, features, joint)
    by_name = {c.name: c for c in pool}
    joint_pool = [c for c in pool if c.kind == "joint"]
    base_pool = [c for c in pool if c.kind == "baseline"]
    names = ["joint", "baseline"] + [c.name for c in pool]
    n = len(y)
    # per (repeat, fold): each learner's held-out predictions, scores, and the nested choices
    rho: dict[str, list[float]] = {m: [] for m in names}
    tau: dict[str, list[float]] = {m: [] for m in names}
    r2: dict[str, list[float]] = {m: [] for m in names}
    constant = {m: False for m in names}
    picked: dict[str, list[str]] = {"joint": [], "baseline": []}
    test_over_train: list[float] = []
    preds = {m: np.full((repeats, n), np.nan) for m in names}
    fold_of = np.zeros((repeats, n), dtype=int)
    first_models: dict[str, list[Any]] = {c.name: [] for c in joint_pool}
    first_splits: list[tuple[np.ndarray, np.ndarray]] = []
    step = f"held-out evaluation of {n:,} architectures" + (f" (of {of:,})" if of > n else "")
    total = repeats * k + 1 + int(with_curve) + int(importance) + int(dependence)
    done = 0

    def tell() -> None:
        nonlocal done
        if progress is not None:
            progress(step, done, total)
        done += 1

    tell()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ridge's near-singular solves, constant columns: expected at these sizes
        for r in range(repeats):
            splits = group_folds(groups, k, seed + r)
            if r == 0:
                first_splits = splits
            for j, (train, test) in enumerate(splits):
                fold_of[r, test] = j
                test_over_train.append(len(test) / len(train))
                fold_preds = {}
                for c in pool:
                    p, model = c.fit_predict(X, y, train, test, seed)
                    fold_preds[c.name] = p
                    if r == 0 and c.name in first_models:
                        first_models[c.name].append(model)
                for nested, candidates_ in (("joint", joint_pool), ("baseline", base_pool)):
                    choice = choose(candidates_, X, y, groups, train, seed + r)
                    picked[nested].append(choice.name if choice else "")
                    fold_preds[nested] = fold_preds[choice.name] if choice else np.full(len(test), np.nan)
                for m in names:
                    p = fold_preds[m]
                    preds[m][r, test] = p
                    a, b, c2, flat = fold_score(p, y[test])
                    # a rule constant on a fold (depth, on a fold of one depth) has no order there: not scored;
                    # a fitted model with constant predictions could not fit
                    rule = by_name.get(picked[m][-1] if m in picked else m)
                    if rule is not None and rule.values is not None and np.all(np.isfinite(p)):
                        flat = False
                    constant[m] |= flat
                    rho[m].append(a)
                    tau[m].append(b)
                    r2[m].append(c2)
                tell()
    ratio = float(np.mean(test_over_train))
    rows = []
    for m in names:
        cand = by_name.get(m)
        label = {"joint": JOINT_LABEL, "baseline": BASELINE_LABEL}.get(m, cand.label if cand else m)
        kind = "joint" if m == "joint" or (cand and cand.kind == "joint") else "baseline"
        if m in picked:
            chosen = pd.Series([c for c in picked[m] if c])
            metric = str(chosen.mode().iloc[0]) if len(chosen) else ""
        else:
            metric = cand.column if cand else ""
        row: dict[str, Any] = {
            "learner": m,
            "label": label,
            "kind": kind,
            "status": CANNOT_FIT if constant[m] else "",
            "metric": metric,
            "n": n,
            "scored_folds": int(np.isfinite(rho[m]).sum()),
        }
        for stat, values in (("spearman", rho[m]), ("kendall", tau[m]), ("r2", r2[m])):
            v = np.asarray(values) if not constant[m] else np.full(len(values), np.nan)
            if stat == "r2" and (m == "baseline" or (cand is not None and cand.values is not None)):
                v = np.full(len(values), np.nan)  # a rule is on its column's scale, not the error's
            bound = 1.0 if stat != "r2" else math.inf
            row[stat], row[f"{stat}_lo"], row[f"{stat}_hi"] = corrected_interval(v, ratio, confidence, bound)
        rows.append(row)
    scores = pd.DataFrame(rows, columns=EVALUATION_COLUMNS)
    versus = []
    for other in ("baseline", "nlc"):
        if other not in rho:
            continue
        d = np.asarray(rho["joint"]) - np.asarray(rho[other])
        if constant["joint"] or constant[other]:
            d = np.full(len(d), np.nan)
        diff, lo, hi = corrected_interval(d, ratio, confidence, 2.0)
        versus.append({"learner": "joint", "versus": other, "diff": diff, "lo": lo, "hi": hi})
    best = choose_joint(X, y, groups, features, k, seed, joint)
    tell()
    out = Prediction(
        features,
        scores,
        best,
        pd.DataFrame(versus, columns=["learner", "versus", "diff", "lo", "hi"]),
        "",
        pd.DataFrame(),
        pd.DataFrame(),
        pd.DataFrame(),
        groups=n_groups,
        folds=k,
        repeats=repeats,
        of=of,
        max_rows=max_rows,
    )
    out.calls = calls(out)
    out.level = "done" if out.calls.get("joint_above_zero") == 1 and out.calls.get("beats_baseline") == 1 else "partial"
    out.verdict = verdict(out)
    out.held_out = pd.DataFrame(
        {
            "index": arch["index"].to_numpy(),
            "arch_id": arch["arch_id"].astype(str).to_numpy(),
            "variant": arch["variant"].astype(str).to_numpy() if "variant" in arch.columns else "base",
            "fold": fold_of[0],
            TARGET: y,
            **{m: preds[m][0] for m in ("joint", "nlc", best) if m in preds},
        }
    )
    if with_ranking:
        out.ranking = ranking_table(y, preds, fold_of, [m for m in ("joint", "baseline", "nlc") if m in preds])
    if with_curve:
        out.curve = learning_curve(by_name[best], X, y, first_splits, seed, confidence)
        tell()
    if importance and best in first_models:
        out.importance = permutation_importances(first_models[best], X, y, first_splits, features, seed)
    if importance:
        tell()
    if dependence:
        out.dependence, out.values = partial_dependences(best, features, X, y, out.importance, seed)
        tell()
    return out


CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of each training fold's base architectures


def learning_curve(
    learner: _Candidate,
    X: pd.DataFrame,
    y: np.ndarray,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    seed: int,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Held-out Spearman's rho of ``learner`` against the number of architectures it was trained on (the practice
    of NASLib, White et al., *How Powerful are Performance Predictors in Neural Architecture Search?*, NeurIPS
    2021, section 4): in each held-out fold of ``splits``, fitted on a seeded random ``CURVE_FRACTIONS`` share of
    the training fold's rows, scored on the held-out fold; ``train``: the mean training rows; the interval by the
    corrected resampled t over the folds. A size at which it cannot fit (constant predictions) has NaN."""
    rng = np.random.default_rng([seed, 21])
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fraction in CURVE_FRACTIONS:
            rhos: list[float] = []
            sizes: list[int] = []
            ratios: list[float] = []
            flat_any = False
            for train, test in splits:
                m = max(3, round(fraction * len(train)))
                part = np.sort(rng.choice(train, size=min(m, len(train)), replace=False))
                p, _ = learner.fit_predict(X, y, part, test, seed)
                rho, _, _, flat = fold_score(p, y[test], rho_only=True)
                flat_any |= flat
                rhos.append(rho)
                sizes.append(len(part))
                ratios.append(len(test) / len(part))
            values = np.full(len(rhos), np.nan) if flat_any else np.asarray(rhos)
            m_, lo, hi = corrected_interval(values, float(np.mean(ratios)), confidence, 1.0)
            rows.append(
                {
                    "fraction": fraction,
                    "train": float(np.mean(sizes)),
                    "spearman": m_,
                    "spearman_lo": lo,
                    "spearman_hi": hi,
                }
            )
    return pd.DataFrame(rows)


JOINT_LABEL = "joint model (ridge or boosted trees, chosen inside each training fold)"
BASELINE_LABEL = "best baseline (chosen inside each training fold)"


def choose_joint(
    X: pd.DataFrame,
    y: np.ndarray,
    groups: np.ndarray,
    features: Sequence[Feature],
    folds: int,
    seed: int,
    joint: Sequence[str] = JOINT,
) -> str:
    """The joint learner a whole study picks (``fit_predictor``'s ``auto``): the one of ``joint`` with the higher
    mean held-out Spearman's rho over ``folds`` grouped folds of every row, one that cannot fit passed over; the
    first of ``joint`` when none can."""
    if len(joint) == 1:
        return joint[0]
    pool = [_Candidate(name, LABELS[name], "joint", model=name, features=features) for name in joint]
    g = _relabel(groups)
    k = min(folds, (int(g.max()) + 1) // 2)
    if k < 2:
        return joint[0]
    splits = group_folds(g, k, seed)
    scored = []
    rows = np.arange(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in pool:
            rhos: list[float] = []
            for train, test in splits:
                p, _ = c.fit_predict(X, y, rows[train], rows[test], seed)
                rho, _, _, flat = fold_score(p, y[test], rho_only=True)
                if flat:
                    rhos = []
                    break
                rhos.append(rho)
            scored.append(float(np.nanmean(rhos)) if rhos and np.isfinite(rhos).any() else -math.inf)
    return joint[int(np.argmax(scored))]


def top_k_sizes(n: int) -> list[int]:
    """The K of the ranking measures: 5 and 10% of the study (at least 1), each at most n, without repeats."""
    return sorted({min(n, 5), min(n, max(1, round(0.1 * n)))})


def ranking_measures(y: np.ndarray, score: np.ndarray, k: int) -> dict[str, float]:
    """How a ranking by ``score`` (lower: predicted better) picks the best architectures of ``y`` (test error):
    precision of its top k (the share of the k lowest errors among them), NDCG@k with gain max(y) - y (Jarvelin
    and Kekalainen, *Cumulated Gain-Based Evaluation of IR Techniques*, ACM TOIS 2002: DCG = sum of gain_i /
    log2(i + 1) over the top k, divided by the ideal order's), and the regret: the lowest error among the top k
    minus the study's lowest."""
    order = np.argsort(score, kind="stable")[:k]
    ideal = np.argsort(y, kind="stable")[:k]
    gain = np.max(y) - y
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    idcg = float((gain[ideal] * discount).sum())
    return {
        "precision": len(set(order.tolist()) & set(ideal.tolist())) / k,
        "ndcg": float((gain[order] * discount).sum()) / idcg if idcg > 0 else math.nan,
        "regret": float(y[order].min() - y.min()),
    }


def ranking_table(
    y: np.ndarray, preds: Mapping[str, np.ndarray], fold_of: np.ndarray, learners: Sequence[str]
) -> pd.DataFrame:
    """``ranking_measures`` of each learner's held-out predictions pooled over the folds of a repeat, each fold's
    predictions centred on their fold mean first (a fold's calibration offset moves no architecture up or down),
    averaged over the repeats (``lo``/``hi``: their range); ``chance``: a random K's expected precision, K/n."""
    rows = []
    for learner in learners:
        p_all = preds[learner]
        for k in top_k_sizes(len(y)):
            per = []
            for r in range(len(p_all)):
                p = p_all[r].copy()
                if not np.all(np.isfinite(p)):
                    continue
                for f in np.unique(fold_of[r]):
                    p[fold_of[r] == f] -= p[fold_of[r] == f].mean()
                per.append(ranking_measures(y, p, k))
            row: dict[str, Any] = {"learner": learner, "k": k, "chance": k / len(y)}
            for m in ("precision", "ndcg", "regret"):
                v = np.array([d[m] for d in per]) if per else np.array([math.nan])
                row[m] = float(np.mean(v))
                row[f"{m}_lo"], row[f"{m}_hi"] = float(np.min(v)), float(np.max(v))
            rows.append(row)
    return pd.DataFrame(rows)


def calls(p: Prediction) -> dict[str, int]:
    """The verdicts as flags: ``joint_above_zero`` (1 when the joint model's rho interval lies above 0),
    ``beats_baseline`` and ``beats_nlc`` (+1: the paired interval lies above 0, -1: below, 0: it holds 0 or the
    joint model cannot fit)."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    out = {
        "joint_above_zero": int(j["status"] != CANNOT_FIT and np.isfinite(j["spearman_lo"]) and j["spearman_lo"] > 0)
    }
    for _, v in p.versus.iterrows():
        call = 0
        if np.isfinite(v["lo"]) and v["lo"] > 0:
            call = 1
        elif np.isfinite(v["hi"]) and v["hi"] < 0:
            call = -1
        out[f"beats_{v['versus']}"] = call
    return out


def verdict(p: Prediction) -> str:
    """The plain sentence: how well the joint model predicts on held-out architectures, and whether it beats the
    best baseline and NLC alone (each paired interval lies above 0), is beaten, or this study cannot tell."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    how = (
        f"On held-out architectures ({p.folds}-fold grouped cross-validation over {p.groups} base architectures, "
        f"repeated with {p.repeats} fold seeds; {int(CONFIDENCE * 100)}% intervals by the corrected resampled t)"
    )
    if j["status"] == CANNOT_FIT or not np.isfinite(j["spearman"]):
        return (
            f"{how}, the joint model cannot fit: in a held-out fold it could not be chosen or fitted (too few "
            f"architectures to train on: constant predictions). Nothing can be told about predicting test error "
            f"from this study ({p.groups} base architectures)."
        )

    def named(name: str) -> str:
        r = s.loc[name]
        if r["status"] == CANNOT_FIT:
            return f"{r['label']}: cannot fit"
        return f"ρ = {_num(r['spearman'])} [{_num(r['spearman_lo'])}, {_num(r['spearman_hi'])}]"

    chosen = s.at["baseline", "metric"] if "baseline" in s.index else ""
    head = (
        f"{how}, the joint model predicts test error with {named('joint')}; the best baseline "
        f"({s.at[chosen, 'label'] if chosen in s.index else 'none'}, the one most often chosen) with "
        f"{named('baseline')}; NLC alone (the paper's window) with {named('nlc') if 'nlc' in s.index else '–'}."
    )
    if not p.calls.get("joint_above_zero"):
        return (
            head + " The joint model's interval does not lie above 0: nothing can be told about predicting test "
            f"error from this study ({p.groups} base architectures)."
        )
    parts = []
    for _, v in p.versus.iterrows():
        who = "the best baseline" if v["versus"] == "baseline" else "NLC alone"
        diff = f"{_num(v['diff'], True)} [{_num(v['lo'], True)}, {_num(v['hi'], True)}]"
        call = p.calls.get(f"beats_{v['versus']}", 0)
        if call == 1:
            parts.append(f"it beats {who} by {diff} in ρ")
        elif call == -1:
            parts.append(f"{who} beats it, by {diff} in ρ")
        else:
            parts.append(f"it cannot be told from {who} ({diff}: the interval holds 0)")
    return head + " Against the baselines: " + "; ".join(parts) + "."


def _num(x: float, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:+.2f}" if sign else f"{x:.2f}"
