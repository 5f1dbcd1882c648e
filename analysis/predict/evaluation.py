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
from ..stats import boot_kendall, boot_spearman, holm, percentile_interval
from .folds import (
    _ranks as _ranks,
    ORDER_STATS,
    STATS,
    CrossValidation,
    boot_counts,
    boot_means,
    corrected_interval as corrected_interval,
    cv_interval,
    paired_interval,
    fold_scores,
    interval_row,
    kendall,
    spearman,
)
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


def group_folds(groups: np.ndarray, folds: int, seed: int, stream: int = 24) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, held-out) row indices of ``GroupKFold`` on ``groups``: no group on both sides. The groups are
    relabelled in a seeded random order first (numpy's generator of (``seed``, ``stream``)), so which base
    architectures share a fold is random, not the order they were drawn in (GroupKFold itself only balances the
    folds' sizes)."""
    from sklearn.model_selection import GroupKFold

    n_groups = int(groups.max()) + 1 if len(groups) else 0
    k = min(folds, n_groups)
    if k < 2:
        raise SpecError("predict_study", "architectures", n_groups, "must hold at least 2 base architectures")
    shuffled = np.random.default_rng([seed, stream]).permutation(n_groups)[groups]
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
    counted as often as its group was drawn (``folds.boot_counts``)."""
    return boot_counts(groups, seed, n_boot)


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
EVALUATION_COLUMNS = (
    ["learner", "label", "kind", "status", "metric", "n", "scored_folds"]
    + [f"{s}{end}" for s in STATS for end in ("", "_lo", "_hi")]
    + ["p"]  # one-sided: held-out rho above 0 (``folds.cv_p``)
)
VERSUS_COLUMNS = ["learner", "versus", "diff", "lo", "hi", "p"]
CANNOT_FIT = "cannot fit"
# At most this many architectures in the held-out evaluation: a larger study is evaluated on a random subsample of
# whole base architectures (``capped_rows``). The evaluation's cost grows with the rows (trees, the window's
# bootstrap, Kendall's tau of each fold's pairs), its verdict's calibration is that of a study of this size
# (analysis.predict_simulation), and at this size the intervals of the scores are already a few hundredths wide.
MAX_ROWS = 2_000
REPEATS = 3  # fold seeds of the repeated grouped cross-validation
INNER_FOLDS = 3  # grouped folds inside a training fold, where the joint learner and the best baseline are chosen
FOLD_ROWS = 4  # base architectures per held-out fold at least: folds = min(FOLDS, groups // FOLD_ROWS)
# Base architectures a training fold must hold before a held-out score supports a verdict: with fewer, the grouped
# bootstrap resamples a handful of groups (3 draws give 10 distinct resamples) and its interval cannot be trusted;
# the scores are shown, and nothing is claimed (no p-value, no verdict, no ranker).
FEWEST_TRAINING = 5


def training_draws(groups: int, folds: int) -> int:
    """The base architectures the smallest training fold holds: all but the largest held-out fold."""
    return groups - math.ceil(groups / folds) if folds > 0 else 0


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


def fold_score(p: np.ndarray, y: np.ndarray, rho_only: bool = False) -> tuple[float, float, float, bool]:
    """(Spearman's rho, Kendall's tau-b, R^2) of predictions ``p`` against ``y`` on one held-out fold, and whether
    the predictions are constant there (``folds.fold_scores``, which also gives the MAE and RMSE)."""
    s, flat = fold_scores(p, y, rho_only)
    return s["spearman"], s["kendall"], s["r2"], flat


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
        self,
        X: pd.DataFrame,
        y: np.ndarray,
        train: np.ndarray,
        test: np.ndarray,
        seed: int,
        groups: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """Fitted on the rows ``train`` (``groups``: every row's base architecture, for the ridge's penalty),
        its predictions on ``test`` and the fitted model (None for a rule)."""
        if self.values is not None:
            return rule_predict(self.values, y, train, test, self.fixed), None
        if self.table is not None:
            X = self.table
        # A feature with no value on the training rows (a metric measured on a few architectures only, all in the
        # held-out fold) has nothing to learn from: scikit-learn's binning refuses an empty column.
        features = [f for f in self.features if _observed(X[f.column].iloc[train])]
        if not features:
            return np.full(len(test), math.nan), None
        g = None if groups is None else groups[train]
        model = make_learner(self.model, features, seed, g).fit(X.iloc[train], y[train])
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
            p, _ = c.fit_predict(X, y, rows[train], rows[test], seed, groups)
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
    the learner most often chosen (nested ones) or the rule's column; each score's mean over the held-out folds
    with its interval (``folds.cv_interval``) and ``p``, the one-sided p-value of rho above 0. ``best``: the joint
    learner chosen on the whole study on folds of its own (``choose_joint``: the one ``fit_predictor`` fits, whose
    importance, dependence and learning curve are shown). ``versus``: the paired differences of the joint model's
    rho with the best baseline's and NLC alone's (``diff``, ``lo``, ``hi``, two-sided ``p``). ``calls``: the
    verdicts as flags (``joint_above_zero``, ``beats_baseline``, ``beats_nlc``: +1 beats, -1 beaten, 0 cannot
    tell); ``verdict``: the plain sentence; ``level``: the report box ("done" when the joint model beats the best
    baseline, else "partial"). ``ranker``: the predictor a ranking should use (``choose_ranker``: ``linear``,
    ``boosted``, ``rule:NAME``, ``descriptors``, or None when none beats chance), ``ranker_why`` in words.
    ``ranking``: top-K precision, NDCG@K, regret and Kendall's tau within the top K per learner, with intervals;
    ``curve``: held-out rho against the number of training architectures. ``held_out``: the first repeat's
    held-out predictions (``joint``, ``nlc``) with ``index``, ``arch_id``, ``variant``, ``fold``; ``cv``: every
    fold's scores and every repeat's held-out predictions (``folds.CrossValidation``); ``importance`` and
    ``dependence``: permutation importance and partial dependence of ``best``; ``transfer``: scores of predictors
    fitted elsewhere."""

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
    cv: CrossValidation | None = None
    ranker: str | None = None
    ranker_why: str = ""
    # the comparisons' p-values adjusted with every other test of a report (``findings.apply_to_prediction``);
    # empty: the calls read the intervals alone
    adjusted: dict[str, float] = field(default_factory=dict)

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
                keys = ("status", "metric", "spearman", "spearman_lo", "spearman_hi", "p")
                out[name] = {k: _plain(r[k]) for k in keys}
        for _, r in self.versus.iterrows():
            out[f"joint_minus_{r['versus']}"] = {k: _plain(r[k]) for k in ("diff", "lo", "hi")}
        if len(self.ranking):
            j = self.ranking[self.ranking["learner"] == "joint"]
            out["ranking"] = [{k: _plain(v) for k, v in r.items()} for r in j.to_dict("records")]
        out["calls"] = dict(self.calls)
        out["verdict"] = self.verdict
        out["ranker"] = self.ranker
        out["ranker_why"] = self.ranker_why
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
    study = _Study.load(results, descriptors, max_rows, seed, joint)
    k = fold_count(study.n_groups, folds)
    if k < 2:
        raise SpecError(where, "base_architectures", study.n_groups, "must hold at least 2 for two held-out folds")
    n = len(study.y)
    step = f"held-out evaluation of {n:,} architectures" + (f" (of {study.of:,})" if study.of > n else "")
    total = repeats * k + 1 + int(with_curve) + int(importance) + int(dependence)
    counter = iter(range(total + 1))

    def tell() -> None:
        done = next(counter)
        if progress is not None:
            progress(step, done, total)

    tell()
    cv, first_splits, first_models = _cross_validate(study, k, repeats, seed, tell)
    out = _prediction(study, cv, k, seed, confidence, max_rows)
    tell()
    if with_ranking:
        out.ranking = ranking_table(study.y, cv.preds, cv.fold_of, ["joint", "baseline", "nlc"], study.groups, seed)
    # what explains the model chosen on the whole study (a fold seed of its own) is read on the first repeat's folds
    best = study.by_name[out.best]
    if with_curve:
        out.curve = learning_curve(best, study.X, study.y, first_splits, seed, confidence, study.groups)
        tell()
    if importance and out.best in first_models:
        out.importance = permutation_importances(
            first_models[out.best], study.X, study.y, first_splits, study.features, seed
        )
    if importance:
        tell()
    if dependence:
        out.dependence, out.values = partial_dependences(
            out.best, study.features, study.X, study.y, out.importance, seed, groups=study.groups
        )
        tell()
    return out


@dataclass
class _Study:
    """The rows ``predict_study`` evaluates (``capped_rows`` of a large study) and what every fold shares: the
    feature table ``X``, the target ``y``, the base architecture of each row (``groups``) and the learners."""

    arch: pd.DataFrame
    features: list[Feature]
    X: pd.DataFrame
    y: np.ndarray
    groups: np.ndarray
    pool: list[_Candidate]
    of: int
    joint: tuple[str, ...]

    @classmethod
    def of_rows(cls, arch: pd.DataFrame, features: list[Feature], joint: Sequence[str], of: int) -> _Study:
        X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
        return cls(arch, features, X, y, base_groups(arch), candidates(arch, features, joint), of, tuple(joint))

    @classmethod
    def load(
        cls, results: Results | pd.DataFrame, descriptors: bool, max_rows: int, seed: int, joint: Sequence[str]
    ) -> _Study:
        where = "predict_study"
        arch = fit_rows(results)
        of = len(arch)
        keep = capped_rows(base_groups(arch), max_rows, seed)
        if keep is not None:
            arch = arch.iloc[keep].reset_index(drop=True)
        if len(arch) < MIN_ROWS:
            raise SpecError(
                where,
                "architectures",
                len(arch),
                f"must hold at least {MIN_ROWS} trained architectures with a test error",
            )
        features = choose_features(arch, descriptors)
        if not features:
            raise SpecError(where, "features", 0, "no init metric has 3 finite, distinct values")
        return cls.of_rows(arch, features, joint, of)

    @property
    def n_groups(self) -> int:
        return int(self.groups.max()) + 1

    @property
    def by_name(self) -> dict[str, _Candidate]:
        return {c.name: c for c in self.pool}

    @property
    def names(self) -> list[str]:
        return ["joint", "baseline"] + [c.name for c in self.pool]


def _cross_validate(
    study: _Study, k: int, repeats: int, seed: int, tell: Callable[[], None]
) -> tuple[CrossValidation, list[tuple[np.ndarray, np.ndarray]], dict[str, list[Any]]]:
    """Every learner fitted and scored on each held-out fold of ``repeats`` grouped ``k``-fold splits (fold seeds
    seed, seed + 1, ...); the joint model and the best baseline chosen inside each training fold (``choose``).
    Returns the scores, the first repeat's splits and its fitted joint models (for the permutation importance)."""
    X, y, groups, by_name = study.X, study.y, study.groups, study.by_name
    joint_pool = [c for c in study.pool if c.kind == "joint"]
    base_pool = [c for c in study.pool if c.kind == "baseline"]
    cv = CrossValidation(study.names, repeats, k, len(y))
    cv.picked = {"joint": [], "baseline": []}
    first_models: dict[str, list[Any]] = {c.name: [] for c in joint_pool}
    first_splits: list[tuple[np.ndarray, np.ndarray]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ridge's near-singular solves, constant columns: expected at these sizes
        for r in range(repeats):
            splits = group_folds(groups, k, seed + r)
            first_splits = first_splits or splits
            for j, (train, test) in enumerate(splits):
                fold_preds = {}
                for c in study.pool:
                    p, model = c.fit_predict(X, y, train, test, seed, groups)
                    fold_preds[c.name] = p
                    if r == 0 and c.name in first_models:
                        first_models[c.name].append(model)
                for nested, candidates_ in (("joint", joint_pool), ("baseline", base_pool)):
                    choice = choose(candidates_, X, y, groups, train, seed + r)
                    cv.picked[nested].append(choice.name if choice else "")
                    fold_preds[nested] = fold_preds[choice.name] if choice else np.full(len(test), np.nan)
                for m in cv.names:
                    rule = by_name.get(cv.picked[m][-1] if m in cv.picked else m)
                    cv.record(m, r, j, test, fold_preds[m], y[test], rule is not None and rule.values is not None)
                tell()
    return cv, first_splits, first_models


def _score_row(study: _Study, cv: CrossValidation, m: str, counts: np.ndarray, confidence: float) -> dict[str, Any]:
    """One learner's row of ``Prediction.scores``: its label, kind, status, what it most often chose (a nested
    one) or its column (a rule), and its scores with their intervals (a rule's order only: it is on its column's
    scale, not the error's)."""
    cand = study.by_name.get(m)
    label = {"joint": JOINT_LABEL, "baseline": BASELINE_LABEL}.get(m, cand.label if cand else m)
    kind = "joint" if m == "joint" or (cand and cand.kind == "joint") else "baseline"
    rule = m == "baseline" or (cand is not None and cand.values is not None)
    rho = cv.matrix(m, "spearman")
    return {
        "learner": m,
        "label": label,
        "kind": kind,
        "status": CANNOT_FIT if cv.constant[m] else "",
        "metric": cv.most_picked(m) if m in cv.picked else (cand.column if cand else ""),
        "n": len(study.y),
        "scored_folds": int(np.isfinite(rho).sum()),
        **interval_row(cv, m, ORDER_STATS if rule else STATS, study.y, counts, confidence),
    }


def _prediction(study: _Study, cv: CrossValidation, k: int, seed: int, confidence: float, max_rows: int) -> Prediction:
    """The evaluation's tables from its cross-validation: the scores, the paired differences, the verdict, the
    predictor a ranking should use (``choose_ranker``) and the first repeat's held-out predictions."""
    counts = boot_counts(study.groups, seed)
    rows = [_score_row(study, cv, m, counts, confidence) for m in cv.names]
    scores = pd.DataFrame(rows, columns=EVALUATION_COLUMNS)
    versus = []
    for other in ("baseline", "nlc"):
        if other not in cv.scores:
            continue
        diff, lo, hi, p = paired_interval(cv, "joint", other, study.y, counts, confidence)
        versus.append({"learner": "joint", "versus": other, "diff": diff, "lo": lo, "hi": hi, "p": p})
    best = choose_joint(study.X, study.y, study.groups, study.features, k, seed, study.joint)
    out = Prediction(
        study.features,
        scores,
        best,
        pd.DataFrame(versus, columns=VERSUS_COLUMNS),
        "",
        pd.DataFrame(),
        pd.DataFrame(),
        pd.DataFrame(),
        groups=study.n_groups,
        folds=k,
        repeats=cv.repeats,
        of=study.of,
        max_rows=max_rows,
    )
    out.cv = cv
    if training_draws(out.groups, out.folds) < FEWEST_TRAINING:  # shown, never claimed (``FEWEST_TRAINING``)
        out.scores["p"] = np.nan
        out.versus["p"] = np.nan
    out.calls = calls(out)
    out.level = "done" if out.calls.get("joint_above_zero") == 1 and out.calls.get("beats_baseline") == 1 else "partial"
    out.ranker, out.ranker_why = choose_ranker(out)
    out.verdict = verdict(out)
    arch = study.arch
    out.held_out = pd.DataFrame(
        {
            "index": arch["index"].to_numpy(),
            "arch_id": arch["arch_id"].astype(str).to_numpy(),
            "variant": arch["variant"].astype(str).to_numpy() if "variant" in arch.columns else "base",
            "fold": cv.fold_of[0],
            TARGET: study.y,
            **{m: cv.preds[m][0] for m in ("joint", "nlc", best) if m in cv.preds},
        }
    )
    return out


# The predictors a ranking may use: the joint model, the best baseline (both chosen inside each training fold) and
# NLC alone, each as the learner or rule the folds chose most often.
RANKER_CANDIDATES = ("joint", "baseline", "nlc")
RANK_ALPHA = 0.025  # one-sided: a ranker beats chance when its Holm-adjusted p of rho <= 0 is at most this


def choose_ranker(p: Prediction) -> tuple[str | None, str]:
    """The predictor a ranking of fresh architectures should use, and why in words: of the joint model, the best
    baseline and NLC alone (``RANKER_CANDIDATES``), those that beat chance (the one-sided p of their held-out rho,
    ``folds.cv_p``, Holm-adjusted over the three, at most ``RANK_ALPHA``: each interval lying above 0), the one of
    the highest held-out rho; named by what the folds chose most often (``linear`` or ``boosted`` for the joint
    model, ``rule:NAME`` for a rule of ``baseline_rules``, ``descriptors``). None when none beats chance. The joint
    model is not a candidate where the best baseline or NLC alone beats it (its paired interval lies below 0),
    even where that one does not itself beat chance."""
    s = p.scores.set_index("learner")
    names = [m for m in RANKER_CANDIDATES if m in s.index and s.at[m, "status"] != CANNOT_FIT]
    pv = np.array([s.at[m, "p"] for m in names], dtype=np.float64)
    adjusted = dict(zip(names, holm(pv))) if len(names) else {}
    beaten = {"joint"} if len(p.versus) and bool((p.versus["hi"] < 0).any()) else set()
    able = [m for m in names if np.isfinite(adjusted[m]) and adjusted[m] <= RANK_ALPHA and m not in beaten]
    scored = ", ".join(
        f"{_who(m)} ρ = {_num(s.at[m, 'spearman'])} (Holm p {_p(adjusted[m])})"
        if m in names
        else f"{_who(m)} cannot fit"
        for m in RANKER_CANDIDATES
        if m in s.index
    )
    if not able:
        lost = "; the joint model is left out: another candidate beats it held out" if beaten else ""
        return None, f"none beats chance ({scored or 'none could be scored'}){lost}"
    top = max(able, key=lambda m: float(s.at[m, "spearman"]))
    cv = p.cv
    picked = cv.most_picked(top) if cv is not None and top in cv.picked else top
    name = picked if picked in JOINT else ("descriptors" if picked == "descriptors" else f"rule:{picked}")
    why = f"{_who(top)} has the highest held-out ρ of those that beat chance ({scored})"
    return name, why


def _who(m: str) -> str:
    return {"joint": "the joint model", "baseline": "the best baseline", "nlc": "NLC alone"}.get(m, m)


def _p(p: float) -> str:
    return "–" if not np.isfinite(p) else (f"{p:.2g}" if p >= 1e-4 else "< 0.0001")


CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of each training fold's base architectures


def learning_curve(
    learner: _Candidate,
    X: pd.DataFrame,
    y: np.ndarray,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    seed: int,
    confidence: float = CONFIDENCE,
    groups: np.ndarray | None = None,
) -> pd.DataFrame:
    """Held-out Spearman's rho of ``learner`` against the number of architectures it was trained on (the practice
    of NASLib, White et al., *How Powerful are Performance Predictors in Neural Architecture Search?*, NeurIPS
    2021, section 4): in each held-out fold of ``splits``, fitted on a seeded random ``CURVE_FRACTIONS`` share of
    the training fold's rows, scored on the held-out fold; ``train``: the mean training rows; the interval
    ``folds.cv_interval`` (one repeat: the bootstrap of its held-out predictions alone). A size at which it cannot
    fit (constant predictions) has NaN."""
    rng = np.random.default_rng([seed, 21])
    counts = boot_counts(np.arange(len(y)) if groups is None else groups, seed)
    fold_of = np.zeros(len(y), dtype=int)
    for j, (_, test) in enumerate(splits):
        fold_of[test] = j
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fraction in CURVE_FRACTIONS:
            rhos: list[float] = []
            sizes: list[int] = []
            preds = np.full(len(y), np.nan)
            flat_any = False
            for train, test in splits:
                m = max(3, round(fraction * len(train)))
                part = np.sort(rng.choice(train, size=min(m, len(train)), replace=False))
                p, _ = learner.fit_predict(X, y, part, test, seed, groups)
                preds[test] = p
                s, flat = fold_scores(p, y[test], rho_only=True)
                flat_any |= flat
                rhos.append(s["spearman"])
                sizes.append(len(part))
            values = np.full(len(rhos), np.nan) if flat_any else np.asarray(rhos)
            boot = boot_means(preds[None, :], y, fold_of[None, :], "spearman", counts)
            m_, lo, hi = cv_interval(values[None, :], boot, confidence, 1.0)
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
CHOICE_STREAM = 25  # the fold stream of ``choose_joint``: other partitions than the evaluation's (stream 24)


def choose_joint(
    X: pd.DataFrame,
    y: np.ndarray,
    groups: np.ndarray,
    features: Sequence[Feature],
    folds: int,
    seed: int,
    joint: Sequence[str] = JOINT,
) -> str:
    """The joint learner a whole study picks (``fit_predictor``'s ``auto``, and the one whose permutation
    importance, partial dependence and learning curve the report shows): the one of ``joint`` with the higher mean
    held-out Spearman's rho over ``folds`` grouped folds of every row, one that cannot fit passed over; the first
    of ``joint`` when none can. Its folds are drawn from a stream of their own (``CHOICE_STREAM``), so the
    evaluation's folds, on which the importance and the learning curve are read, did not pick it."""
    if len(joint) == 1:
        return joint[0]
    pool = [_Candidate(name, LABELS[name], "joint", model=name, features=features) for name in joint]
    g = _relabel(groups)
    k = min(folds, (int(g.max()) + 1) // 2)
    if k < 2:
        return joint[0]
    splits = group_folds(g, k, seed, stream=CHOICE_STREAM)
    scored = []
    rows = np.arange(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in pool:
            rhos: list[float] = []
            for train, test in splits:
                p, _ = c.fit_predict(X, y, rows[train], rows[test], seed, g)
                s, flat = fold_scores(p, y[test], rho_only=True)
                if flat:
                    rhos = []
                    break
                rhos.append(s["spearman"])
            scored.append(float(np.nanmean(rhos)) if rhos and np.isfinite(rhos).any() else -math.inf)
    return joint[int(np.argmax(scored))]


def top_k_sizes(n: int) -> list[int]:
    """The K of the ranking measures: 5 and 10% of the study (at least 1), each at most n, without repeats."""
    return sorted({min(n, 5), min(n, max(1, round(0.1 * n)))})


RANKING_MEASURES = ("precision", "ndcg", "regret", "kendall_top")


def ranking_measures(y: np.ndarray, score: np.ndarray, k: int) -> dict[str, float]:
    """How a ranking by ``score`` (lower: predicted better) picks the best architectures of ``y`` (test error):
    precision of its top k (the share of the k lowest errors among them), NDCG@k with gain max(y) - y (Jarvelin
    and Kekalainen, *Cumulated Gain-Based Evaluation of IR Techniques*, ACM TOIS 2002: DCG = sum of gain_i /
    log2(i + 1) over the top k, divided by the ideal order's), the regret: the lowest error among the top k
    minus the study's lowest, and ``kendall_top``: Kendall's tau-b of score and error among the top k (how well it
    orders the architectures it would pick, as NASLib reports beside the precision; NaN below 3)."""
    order = np.argsort(score, kind="stable")[:k]
    ideal = np.argsort(y, kind="stable")[:k]
    gain = np.max(y) - y
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    idcg = float((gain[ideal] * discount).sum())
    return {
        "precision": len(set(order.tolist()) & set(ideal.tolist())) / k,
        "ndcg": float((gain[order] * discount).sum()) / idcg if idcg > 0 else math.nan,
        "regret": float(y[order].min() - y.min()),
        "kendall_top": kendall(score[order], y[order]) if k >= 3 else math.nan,
    }


RANKING_BOOT = 200  # resamples of base architectures for the ranking measures' intervals


def _centred(p: np.ndarray, fold_of: np.ndarray) -> np.ndarray:
    """Held-out predictions, each fold's centred on its mean (a fold's offset moves no architecture up or down)."""
    p = p.copy()
    for f in np.unique(fold_of):
        p[fold_of == f] -= p[fold_of == f].mean()
    return p


def ranking_table(
    y: np.ndarray,
    preds: Mapping[str, np.ndarray],
    fold_of: np.ndarray,
    learners: Sequence[str],
    groups: np.ndarray | None = None,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """``ranking_measures`` of each learner's held-out predictions pooled over the folds of a repeat (each fold's
    centred, ``_centred``), averaged over the repeats; ``lo``/``hi``: a percentile interval over ``RANKING_BOOT``
    resamples of the base architectures (``groups``; each resample's measures on the repeated rows, averaged over
    the repeats), the fitted predictions held fixed; ``chance``: a random K's expected precision, K/n."""
    groups = np.arange(len(y)) if groups is None else groups
    c = group_counts(groups, RANKING_BOOT, seed).astype(np.int64)
    rows = []
    for learner in [m for m in learners if m in preds]:
        runs = [_centred(p, fold_of[r]) for r, p in enumerate(preds[learner]) if np.all(np.isfinite(p))]
        for k in top_k_sizes(len(y)):
            row: dict[str, Any] = {"learner": learner, "k": k, "chance": k / len(y)}
            point = [ranking_measures(y, p, k) for p in runs]
            boot = [[ranking_measures(np.repeat(y, cb), np.repeat(p, cb), k) for p in runs] for cb in c if runs]
            for m in RANKING_MEASURES:
                row[m] = float(np.mean([d[m] for d in point])) if point else math.nan
                values = np.array([np.mean([d[m] for d in b]) for b in boot]) if boot else np.array([math.nan])
                row[f"{m}_lo"], row[f"{m}_hi"] = percentile_interval(values, confidence)
            rows.append(row)
    return pd.DataFrame(rows)


def calls(p: Prediction) -> dict[str, int]:
    """The verdicts as flags: ``joint_above_zero`` (1 when the joint model's rho interval lies above 0),
    ``beats_baseline`` and ``beats_nlc`` (+1: the paired interval lies above 0, -1: below, 0: it holds 0 or the
    joint model cannot fit)."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    few = training_draws(p.groups, p.folds) < FEWEST_TRAINING
    out = {
        "joint_above_zero": int(
            not few and j["status"] != CANNOT_FIT and np.isfinite(j["spearman_lo"]) and j["spearman_lo"] > 0
        )
    }
    for _, v in p.versus.iterrows():
        call = 0
        if few:
            out[f"beats_{v['versus']}"] = call
            continue
        if np.isfinite(v["lo"]) and v["lo"] > 0:
            call = 1
        elif np.isfinite(v["hi"]) and v["hi"] < 0:
            call = -1
        out[f"beats_{v['versus']}"] = call
    return out


def verdict(p: Prediction) -> str:
    """The plain sentence: how well the joint model predicts on held-out architectures, and whether it beats the
    best baseline and NLC alone (``calls``: each paired interval above 0, or, in a report, a finding of the whole
    family, ``adjusted``), is beaten, or this study cannot tell."""
    s = p.scores.set_index("learner")
    j = s.loc["joint"]
    how = (
        f"On held-out architectures ({p.folds}-fold grouped cross-validation over {p.groups} base architectures, "
        f"repeated with {p.repeats} fold seeds; {int(CONFIDENCE * 100)}% intervals from the folds' variance"
        + ("; verdicts adjusted with every test of this report" if p.adjusted else "")
        + ")"
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
    joint_chose = s.at["joint", "metric"]
    head = (
        f"{how}, the joint model ({LABELS.get(joint_chose, joint_chose) or 'none'} most often chosen) predicts "
        f"test error with {named('joint')}; the best baseline "
        f"({s.at[chosen, 'label'] if chosen in s.index else 'none'}, the one most often chosen) with "
        f"{named('baseline')}; NLC alone (the paper's window) with {named('nlc') if 'nlc' in s.index else '–'}."
    )
    if not p.calls.get("joint_above_zero"):
        few = training_draws(p.groups, p.folds)
        why = (
            f"a training fold holds {few} base architectures, fewer than the {FEWEST_TRAINING} a verdict needs"
            if few < FEWEST_TRAINING
            else f"adjusted p {_p(p.adjusted['joint'])} with every test of this report"
            if "joint" in p.adjusted
            else "its interval does not lie above 0"
        )
        return (
            head + f" The joint model is not shown to predict ({why}): nothing can be told about predicting test "
            f"error from this study ({p.groups} base architectures)."
        )
    parts = []
    for _, v in p.versus.iterrows():
        who = "the best baseline" if v["versus"] == "baseline" else "NLC alone"
        diff = f"{_num(v['diff'], True)} [{_num(v['lo'], True)}, {_num(v['hi'], True)}]"
        key = f"joint vs {v['versus']}"
        adj = f"; adjusted p {_p(p.adjusted[key])}" if key in p.adjusted else ""
        call = p.calls.get(f"beats_{v['versus']}", 0)
        if call == 1:
            parts.append(f"it beats {who} by {diff} in ρ{adj}")
        elif call == -1:
            lost = f"{_num(-v['diff'], True)} [{_num(-v['hi'], True)}, {_num(-v['lo'], True)}]"
            parts.append(f"{who} beats it, by {lost} in ρ{adj}")
        else:
            parts.append(f"it cannot be told from {who} ({diff}{adj})")
    return head + " Against the baselines: " + "; ".join(parts) + "."


def _num(x: float, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:+.2f}" if sign else f"{x:.2f}"
