"""A fitted predictor as data (``fit_predictor``, ``FittedPredictor``, ``load_predictor``) and its transfer to
another study (``score_predictor``), scored on new designs only as well.

Only scikit-learn's public API is read. The ridge and the window are stored as their numbers (public fitted
attributes) and evaluated by numpy. The boosted trees are stored as their recipe: the training table, the
target, the seed, the estimator's parameters and the scikit-learn version that fitted them, with the predictions
the fitted model made on its training rows. Loading refits them (``HistGradientBoostingRegressor.fit``) and
compares: predictions equal to the stored ones, bit for bit, load; any other refit (another scikit-learn that
grows other trees) is refused in one line naming both versions."""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.regular_files import write_whole
from archstudy.sampling.constraints import Choice, Integer, check

from ..results import Results, architectures_table
from .learners import (
    BOOSTED,
    DESCRIPTOR_FEATURES,
    CONFIDENCE,
    FOLDS,
    Feature,
    KNOWN,
    LABELS,
    LEARNERS,
    MIN_ROWS,
    N_BOOT,
    TARGET,
    _split,
    choose_features,
    feature_table,
    fit_rows,
    make_learner,
)
from .evaluation import SCORE_COLUMNS, _relabel, base_groups, choose_joint, group_counts, held_out_scores, one_thread

# -- fitting on a whole study, saved as data ------------------------------------------------------------------

FORMAT, VERSION = "archstudy.predictor", 2  # 2: the boosted trees as a recipe
MAX_BYTES = 64 * 2**20


def _study_identity(results: Results | pd.DataFrame, arch: pd.DataFrame) -> dict[str, Any]:
    """Where a predictor learned: the study's location, dataset, science fingerprint (``StudyConfig``), and its
    rows (how many, and a hash of their architecture ids and test errors)."""
    from archstudy.study.experiment.config import StudyConfig

    config = results.config if isinstance(results, Results) else {}
    try:
        fingerprint = StudyConfig.from_dict(config).science_fingerprint if config else None
    except (UserError, TypeError, ValueError):
        fingerprint = None
    rows = sorted(zip(arch["arch_id"].astype(str), arch[TARGET].astype(float).map(repr)))
    return {
        "location": results.study_dir if isinstance(results, Results) else None,
        "dataset": str(arch["dataset"].dropna().iloc[0])
        if "dataset" in arch.columns and arch["dataset"].notna().any()
        else None,
        "science_fingerprint": fingerprint,
        "rows": len(arch),
        "rows_sha256": hashlib.sha256(json.dumps(rows).encode()).hexdigest(),
    }


def fit_predictor(
    results: str | os.PathLike[str] | Results | pd.DataFrame,
    learner: str = "auto",
    *,
    descriptors: bool = False,
    seed: int = 0,
    folds: int = FOLDS,
) -> "FittedPredictor":
    """A predictor fitted on every trained architecture of a study (``results``: ``load_results``, a study
    directory, or an architectures DataFrame). ``learner``: one of ``LEARNERS``; ``auto``: the joint learner with
    the higher mean held-out rho in a grouped cross-validation of the study (``choose_joint``); ``rule:NAME``: an
    unfitted baseline of ``evaluation.baseline_rules`` (its sign, and a line to the error's scale, fitted:
    ``fit_rule``); ``descriptors``: the ridge on the descriptors alone (what ``Prediction.ranker`` may name)."""
    if isinstance(results, (str, os.PathLike)):
        from ..results import load_results

        results = load_results(results, runs=False)
    arch = fit_rows(results)
    if len(arch) < MIN_ROWS:
        raise SpecError(
            "fit_predictor",
            "architectures",
            len(arch),
            f"must hold at least {MIN_ROWS} trained architectures with a test error",
        )
    if learner.startswith(RULE_PREFIX):
        return fit_rule(results, arch, learner[len(RULE_PREFIX) :])
    only_descriptors = learner == "descriptors"
    learner = "linear" if only_descriptors else learner
    learner = check("fit_predictor", "learner", Choice(("auto", "descriptors") + LEARNERS), learner)
    features = (
        [f for f in DESCRIPTOR_FEATURES if f.column in arch.columns]
        if only_descriptors
        else choose_features(arch, descriptors)
    )
    X, y = feature_table(arch, features), arch[TARGET].to_numpy(np.float64)
    if learner == "auto":
        with one_thread():
            learner = choose_joint(X, y, base_groups(arch), features, folds, seed)
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore")
        model = make_learner(learner, features, seed, base_groups(arch)).fit(X, y)
    source = _study_identity(results, arch)
    source["designs"] = sorted(set(design_keys(arch)))
    exported = export(learner, model, features, X, y, seed)
    return FittedPredictor(learner, list(features), exported, source, estimator=model if learner == "boosted" else None)


RULE_PREFIX = "rule:"  # a predictor that is one unfitted baseline (``fit_rule``)


def fit_rule(results: Results | pd.DataFrame, arch: pd.DataFrame, name: str) -> "FittedPredictor":
    """The baseline ``name`` of ``evaluation.baseline_rules`` as a predictor: its value (the column on its scale,
    or the NLC paper's window distance), a missing value set to the study's median, its sign that of its Spearman
    rho with test error (fixed for the window), and a least-squares line from the signed value to test error, so
    that its predictions are on the error's scale and order the architectures as the rule does."""
    from .evaluation import baseline_rules
    from .folds import spearman

    rules = {r.name: r for r in baseline_rules(arch, choose_features(arch))}
    if name not in rules:
        raise SpecError("fit_predictor", "learner", f"{RULE_PREFIX}{name}", f"must name a rule: {', '.join(rules)}")
    r = rules[name]
    v, y = r.values(arch), arch[TARGET].to_numpy(np.float64)
    ok = np.isfinite(v)
    fill = float(np.median(v[ok]))
    sign = 1.0 if r.fixed or spearman(v[ok], y[ok]) >= 0 else -1.0
    score = sign * np.where(ok, v, fill)
    slope, intercept = np.polyfit(score, y, 1) if np.ptp(score) > 0 else (0.0, float(y.mean()))
    model = {
        "rule": name,
        "column": r.column,
        "log": r.log,
        "window": None if r.window is None else [float(r.window[0]), float(r.window[1])],
        "sign": sign,
        "fill": fill,
        "slope": float(slope),
        "intercept": float(intercept),
    }
    source = _study_identity(results, arch)
    source["designs"] = sorted(set(design_keys(arch)))
    features = [KNOWN[r.column]] if r.column in KNOWN else []
    return FittedPredictor(RULE_PREFIX + name, features, model, source)


def scikit_learn_version() -> str:
    import sklearn

    return str(sklearn.__version__)


def export(
    learner: str, model: Any, features: Sequence[Feature], X: pd.DataFrame, y: npt.ArrayLike, seed: int
) -> dict[str, Any]:
    """A fitted learner as plain data (the module docstring): the ridge's and the window's numbers; the boosted
    trees' recipe (``X``, ``y``, ``seed``, ``BOOSTED``, the scikit-learn version) and their predictions on ``X``."""
    numeric, categorical = _split(features)
    if learner == "boosted":
        return {
            "scikit_learn": scikit_learn_version(),
            "seed": int(seed),
            "params": dict(BOOSTED),
            "rows": {
                f.column: [str(v) for v in X[f.column]]
                if f.categorical
                else [None if math.isnan(v) else v for v in _floats(X[f.column])]
                for f in features
            },
            "target": _floats(y),
            "fitted": _floats(model.predict(X)),
        }
    if learner in ("window", "nlc"):
        return {
            "metric": model.metric_,
            "centre": float(model.centre_),
            "slope": float(model.slope_),
            "intercept": float(model.intercept_),
            "fill": float(model.fill_),
        }
    columns = model.named_steps["columns"]  # the ridge
    levels = [list(map(str, c)) for c in columns.named_transformers_["cat"].categories_] if categorical else []
    out = {
        "levels": levels,
        "coef": _floats(model.named_steps["ridge"].coef_),
        "intercept": float(model.named_steps["ridge"].intercept_),
    }
    if numeric:
        u = columns.named_transformers_["num"]
        rank = u.named_steps["rank"]
        out.update(
            quantiles=[_floats(q) for q in np.asarray(rank.quantiles_).T],
            references=_floats(rank.references_),
            median=_floats(u.named_steps["impute"].statistics_),
            mean=_floats(u.named_steps["scale"].mean_),
            scale=_floats(u.named_steps["scale"].scale_),
        )
    else:
        out.update(quantiles=[], references=[], median=[], mean=[], scale=[])
    return out


def _floats(values: npt.ArrayLike) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]


@dataclass
class FittedPredictor:
    """A fitted predictor as data (module docstring): ``learner``, ``features``, ``model`` (the learner's numbers,
    ``export``) and ``source`` (the study it learned from); ``held_out``: how well it predicted there, on
    architectures it never saw (``Prediction.summary``), where that was measured; ``estimator``: the boosted
    trees' fitted scikit-learn estimator (refitted from ``model`` by ``from_dict``). ``predict`` evaluates the
    ridge and the window with numpy, the trees with scikit-learn; ``save`` / ``load_predictor`` write and read it
    as JSON with its sha256."""

    learner: str
    features: list[Feature]
    model: dict[str, Any]
    source: dict[str, Any]
    held_out: dict[str, Any] | None = None
    estimator: Any = field(default=None, compare=False, repr=False)

    # -- prediction --
    def matrix(self, arch: pd.DataFrame) -> np.ndarray:
        """The ridge's numeric input: the numeric features, then each category's one-hot levels."""
        X = feature_table(arch, self.features)
        numeric, categorical = _split(self.features)
        parts = [X[c].to_numpy(np.float64)[:, None] for c in numeric]
        for col, levels in zip(categorical, self.model.get("levels", [])):
            parts += [(X[col].to_numpy() == level).astype(np.float64)[:, None] for level in levels]
        return np.hstack(parts) if parts else np.zeros((len(arch), 0))

    def predict(self, arch: pd.DataFrame) -> np.ndarray:
        """Predicted test error of each row of an architectures table (``load_results(...).architectures``)."""
        arch = architectures_table(arch, "FittedPredictor.predict").reset_index(drop=True)
        m = self.model
        if self.learner.startswith(RULE_PREFIX):
            from .evaluation import Rule

            bounds = None if m["window"] is None else (m["window"][0], m["window"][1])
            v = Rule(m["rule"], m["column"], m["log"], m["rule"], bounds).values(arch)
            score = m["sign"] * np.where(np.isfinite(v), v, m["fill"])
            ruled: np.ndarray = m["intercept"] + m["slope"] * score
            return ruled
        if self.learner in ("window", "nlc"):
            if not m["metric"]:
                return np.full(len(arch), m["fill"])
            x = feature_table(arch, [f for f in self.features if f.column == m["metric"]])[m["metric"]]
            d = np.abs(x.to_numpy(np.float64) - m["centre"])
            window: np.ndarray = np.where(np.isfinite(d), m["intercept"] + m["slope"] * d, m["fill"])
            return window
        if self.learner == "linear":
            n_num = len(m["median"])
            X = self.matrix(arch)
            num, cat = X[:, :n_num].copy(), X[:, n_num:]
            ref = np.asarray(m["references"])
            for j, q in enumerate(m["quantiles"]):  # QuantileTransformer's uniform output: the interpolation both
                q, x = np.asarray(q), num[:, j].copy()  # ways averaged (ties), then its ends exactly 1 and 0
                ok = ~np.isnan(x)
                num[ok, j] = 0.5 * (np.interp(x[ok], q, ref) - np.interp(-x[ok], -q[::-1], -ref[::-1]))
                num[x == q[-1], j] = 1.0
                num[x == q[0], j] = 0.0
            u = np.where(np.isnan(num), np.asarray(m["median"]), num)
            z = (np.hstack([u, u * u]) - np.asarray(m["mean"])) / np.asarray(m["scale"])
            linear: np.ndarray = np.hstack([z, cat]) @ np.asarray(m["coef"]) + m["intercept"]
            return linear
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a level the trees never saw: one-hot encoded as none
            trees: np.ndarray = np.asarray(self.estimator.predict(feature_table(arch, self.features)), np.float64)
        return trees

    # -- as data --
    def to_dict(self) -> dict[str, Any]:
        body = {
            "format": FORMAT,
            "version": VERSION,
            "learner": self.learner,
            "features": [f.to_dict() for f in self.features],
            "model": self.model,
            "source": self.source,
        }
        if self.held_out is not None:
            body["held_out"] = self.held_out
        return {**body, "sha256": _digest(body)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the predictor as JSON (whole, then renamed)."""
        path = Path(path)
        write_whole(path, json.dumps(self.to_dict(), indent=1, allow_nan=True) + "\n", what="a predictor")
        return path

    @classmethod
    def from_dict(cls, d: Any, where: str = "predictor") -> "FittedPredictor":
        """A predictor from its dict form, checked field by field; anything else is a one-line ``UserError``."""
        try:
            predictor = _validated(d)
        except _Invalid as e:
            raise UserError(f"{where}: not a valid archstudy predictor: {e}") from None
        if predictor.learner == "boosted":
            predictor.estimator = refit(predictor, where)
        return predictor


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()).hexdigest()


def load_predictor(path: str | os.PathLike[str]) -> FittedPredictor:
    """Read a predictor saved by ``FittedPredictor.save``: JSON only (no code runs), every field checked, the
    sha256 compared; a file that is not one, or was changed after it was saved, is refused in one line."""
    shown = os.fspath(path)
    p = Path(shown)
    if not p.is_file():
        raise SpecError(
            "load_predictor", "path", shown, "must be a predictor file (`archstudy rank` writes DIR/predictor.json)"
        )
    if p.stat().st_size > MAX_BYTES:
        raise UserError(f"{shown}: not a valid archstudy predictor: larger than {MAX_BYTES // 2**20} MiB")
    try:
        d = json.loads(p.read_bytes())
    except (ValueError, RecursionError) as e:
        raise UserError(
            f"{shown}: not a valid archstudy predictor: not JSON ({str(e).splitlines()[0][:100]})"
        ) from None
    return FittedPredictor.from_dict(d, shown)


class _Invalid(ValueError):
    pass


def _need(ok: object, why: str) -> None:
    if not ok:
        raise _Invalid(why)


def _float_list(v: Any, name: str, n: int | None = None, finite: bool = True) -> list[float]:
    _need(
        isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v),
        f"{name} must be a list of numbers",
    )
    _need(n is None or len(v) == n, f"{name} must have {n} entries, not {len(v)}")
    _need(not finite or all(math.isfinite(x) for x in v), f"{name} must be finite")
    return [float(x) for x in v]


def _number(v: Any, name: str) -> float:
    _need(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v), f"{name} must be a finite number"
    )
    return float(v)


def _validated(d: Any) -> FittedPredictor:
    _need(isinstance(d, dict), "not a JSON object")
    keys = {"format", "version", "learner", "features", "model", "source", "sha256"}
    _need(set(d) - {"held_out"} == keys, f"its keys must be {', '.join(sorted(keys))} (and held_out)")
    _need(isinstance(d.get("held_out", {}), dict), "held_out must be an object")
    _need(d["format"] == FORMAT and d["version"] == VERSION, f"format must be {FORMAT!r} version {VERSION}")
    body = {k: v for k, v in d.items() if k != "sha256"}
    _need(
        d["sha256"] == _digest(body),
        "its sha256 does not match its content (the file was changed after archstudy saved it)",
    )
    learner = d["learner"]
    is_rule = isinstance(learner, str) and learner.startswith(RULE_PREFIX)
    _need(learner in LEARNERS or is_rule, f"learner must be one of {', '.join(LEARNERS)} or {RULE_PREFIX}NAME")
    _need(isinstance(d["features"], list) and (d["features"] or is_rule), "features must be a non-empty list")
    features = []
    for f in d["features"]:
        _need(
            isinstance(f, dict) and set(f) == {"column", "log", "kind", "categorical"},
            "a feature must have column, log, kind, categorical",
        )
        _need(f["column"] in KNOWN, f"feature {str(f['column'])[:40]!r} is not an init metric or descriptor")
        known = KNOWN[f["column"]]
        _need(Feature(**f) == known, f"feature {f['column']!r} must be {known.to_dict()}")
        features.append(known)
    _need(len({f.column for f in features}) == len(features), "a feature is listed twice")
    numeric, categorical = _split(features)
    m = d["model"]
    _need(isinstance(m, dict), "model must be an object")
    _need(isinstance(d["source"], dict), "source must be an object")
    if is_rule:
        _check_rule(m, learner)
        return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))
    if learner in ("window", "nlc"):
        _need(
            set(m) == {"metric", "centre", "slope", "intercept", "fill"},
            "a window model has metric, centre, slope, intercept, fill",
        )
        _need(m["metric"] == "" or m["metric"] in numeric, "the window's metric must be one of the features")
        for k in ("centre", "slope", "intercept", "fill"):
            _number(m[k], f"model.{k}")
        return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))
    if learner == "boosted":
        _check_recipe(m, features)
        return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))
    levels = m.get("levels")
    _need(
        isinstance(levels, list)
        and len(levels) == len(categorical)
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in levels),
        "model.levels must list each category's levels",
    )
    width = len(numeric) + sum(len(v) for v in levels)
    _need(
        set(m) == {"levels", "quantiles", "references", "median", "mean", "scale", "coef", "intercept"},
        "a linear model has levels, quantiles, references, median, mean, scale, coef, intercept",
    )
    ref = _float_list(m["references"], "model.references")
    _need(ref == sorted(ref), "model.references must be increasing")
    _need(
        isinstance(m["quantiles"], list) and len(m["quantiles"]) == len(numeric),
        "model.quantiles must list each numeric feature's quantiles",
    )
    for j, q in enumerate(m["quantiles"]):
        q = _float_list(q, f"model.quantiles[{j}]", len(ref))
        _need(q == sorted(q), f"model.quantiles[{j}] must be increasing")
    _float_list(m["median"], "model.median", len(numeric))
    _float_list(m["mean"], "model.mean", 2 * len(numeric))
    scale = _float_list(m["scale"], "model.scale", 2 * len(numeric))
    _need(all(s > 0 for s in scale), "model.scale must be positive")
    _float_list(m["coef"], "model.coef", 2 * len(numeric) + width - len(numeric))
    _number(m["intercept"], "model.intercept")
    return FittedPredictor(learner, features, m, d["source"], d.get("held_out"))


def _check_rule(m: dict[str, Any], learner: str) -> None:
    """A rule's model (``fit_rule``), checked field by field."""
    from ..columns import PREDICTOR_BY_COLUMN

    _need(
        set(m) == {"rule", "column", "log", "window", "sign", "fill", "slope", "intercept"},
        "a rule has rule, column, log, window, sign, fill, slope, intercept",
    )
    _need(learner == RULE_PREFIX + str(m["rule"]), "the rule must be the one its learner names")
    _need(m["column"] in PREDICTOR_BY_COLUMN, f"the rule's column {str(m['column'])[:40]!r} is not a predictor")
    _need(isinstance(m["log"], bool), "model.log must be true or false")
    _need(m["window"] is None or len(_float_list(m["window"], "model.window", 2)) == 2, "model.window: 2 numbers")
    _need(m["sign"] in (1.0, -1.0), "model.sign must be 1 or -1")
    for k in ("fill", "slope", "intercept"):
        _number(m[k], f"model.{k}")


def _check_recipe(m: dict[str, Any], features: list[Feature]) -> None:
    """A boosted model's recipe (``export``), checked field by field."""
    _need(
        set(m) == {"scikit_learn", "seed", "params", "rows", "target", "fitted"},
        "a boosted model has scikit_learn, seed, params, rows, target, fitted",
    )
    _need(
        isinstance(m["scikit_learn"], str) and 0 < len(m["scikit_learn"]) <= 40, "model.scikit_learn must be a version"
    )
    _need(
        isinstance(m["seed"], int) and not isinstance(m["seed"], bool) and 0 <= m["seed"] < 2**32,
        "model.seed must be an integer in [0, 2^32)",
    )
    _need(m["params"] == BOOSTED, f"model.params must be {BOOSTED} (the trees archstudy fits)")
    target = _float_list(m["target"], "model.target")
    n = len(target)
    _need(n >= MIN_ROWS, f"model.target must hold at least {MIN_ROWS} rows")
    _float_list(m["fitted"], "model.fitted", n)
    rows = m["rows"]
    _need(
        isinstance(rows, dict) and list(rows) == [f.column for f in features],
        "model.rows must hold each feature's column, in order",
    )
    for f in features:
        v = rows[f.column]
        name = f"model.rows[{f.column!r}]"
        if f.categorical:
            _need(
                isinstance(v, list) and len(v) == n and all(isinstance(x, str) for x in v),
                f"{name} must be {n} strings",
            )
        else:
            _need(isinstance(v, list) and len(v) == n, f"{name} must have {n} entries")
            _float_list([x for x in v if x is not None], name)


def refit(predictor: FittedPredictor, where: str = "predictor") -> Any:
    """The boosted trees fitted again from their stored recipe (the module docstring), public API only: their
    predictions on the training rows must equal the stored ones bit for bit, or the file is refused in one line
    naming the scikit-learn that saved it and the one here."""
    m = predictor.model
    X = pd.DataFrame(
        {
            f.column: np.asarray(m["rows"][f.column], dtype=object).astype(str)
            if f.categorical
            else np.array([np.nan if v is None else v for v in m["rows"][f.column]], dtype=np.float64)
            for f in predictor.features
        }
    )
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore")
        model = make_learner("boosted", predictor.features, m["seed"]).fit(X, np.asarray(m["target"], np.float64))
        got = np.asarray(model.predict(X), dtype=np.float64)
    want = np.asarray(m["fitted"], dtype=np.float64)
    if not np.array_equal(got, want):
        here, saved = scikit_learn_version(), m["scikit_learn"]
        raise UserError(
            f"{where}: its boosted trees were fitted by scikit-learn {saved} and scikit-learn {here} here fits "
            f"other trees from the same rows (predictions differ by up to {np.max(np.abs(got - want)):.3g}): load it "
            f"with scikit-learn {saved}, or fit it again here (`archstudy rank STUDY`)"
        )
    return model


# -- transfer: a predictor fitted on one study, scored on another ---------------------------------------------

TRANSFER_COLUMNS = ["source", "source_dataset", "learner", "label", "metric"] + SCORE_COLUMNS[3:]
TRANSFER_COLUMNS += ["shared", "n_new", "spearman_new", "spearman_new_lo", "spearman_new_hi"]
NOT_DESIGN = ("width", "d_in", "d_out")  # what a study's budget and dataset decide: the same design otherwise


def design_keys(arch: pd.DataFrame) -> list[str]:
    """Each row's design: 16 hex digits of the sha256 of its spec without width and the data's dimensions (every
    ``ArchSpec`` field the table has but ``NOT_DESIGN``). The same study seed draws the same designs on every
    dataset and budget (only the width is solved anew), so two such studies share their designs."""
    from archstudy.sampling.spec import SPEC_FIELDS

    cols = [c for c in SPEC_FIELDS if c not in NOT_DESIGN and c in arch.columns]
    keys = []
    for values in arch[cols].itertuples(index=False, name=None):
        plain = [
            None if (isinstance(v, float) and math.isnan(v)) else (v.item() if hasattr(v, "item") else v)
            for v in values
        ]
        text = json.dumps(dict(zip(cols, plain)), sort_keys=True, separators=(",", ":"), default=str)
        keys.append(hashlib.sha256(text.encode()).hexdigest()[:16])
    return keys


def score_predictor(
    predictor: FittedPredictor,
    results: Results | pd.DataFrame,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """How a predictor fitted elsewhere ranks this study's trained architectures: Spearman, Kendall and R^2 of
    its predictions against their test errors, with bootstrap intervals over base architectures (one row); and
    Spearman's rho again on the new designs only (``design_keys`` not among the predictor's source's): a design
    it was trained on, at another width or on another dataset, is not a test of transfer. ``shared``: how many
    rows share a design with the source (NaN where the predictor does not list its designs)."""
    n_boot = check("score_predictor", "n_boot", Integer(1), n_boot)
    arch = fit_rows(results)
    if len(arch) < 3:
        raise SpecError("score_predictor", "architectures", len(arch), "must hold at least 3 trained architectures")
    y = arch[TARGET].to_numpy(np.float64)
    predicted = predictor.predict(arch)
    groups = base_groups(arch)
    s = held_out_scores(y, predicted, group_counts(groups, n_boot, seed), confidence)
    src = predictor.source
    new: dict[str, Any] = {"shared": math.nan, "n_new": math.nan}
    new.update(spearman_new=math.nan, spearman_new_lo=math.nan, spearman_new_hi=math.nan)
    if isinstance(src.get("designs"), list):
        fresh = ~np.isin(design_keys(arch), src["designs"])
        new["shared"], new["n_new"] = int((~fresh).sum()), int(fresh.sum())
        if fresh.sum() >= 3:
            g = _relabel(groups[fresh])
            t = held_out_scores(y[fresh], predicted[fresh], group_counts(g, n_boot, seed), confidence)
            new.update(spearman_new=t["spearman"], spearman_new_lo=t["spearman_lo"], spearman_new_hi=t["spearman_hi"])
    return pd.DataFrame(
        [
            {
                "source": src.get("location"),
                "source_dataset": src.get("dataset"),
                "learner": predictor.learner,
                "label": label_of(predictor.learner),
                "metric": predictor.model.get("metric", ""),
                **{k: v for k, v in s.items() if not k.startswith("_")},
                **new,
            }
        ],
        columns=TRANSFER_COLUMNS,
    )


def label_of(learner: str) -> str:
    """A fitted predictor's learner in words (``LABELS``; a rule by its name)."""
    if learner.startswith(RULE_PREFIX):
        return f"the rule {learner[len(RULE_PREFIX) :]} alone (its sign and a line fitted)"
    return LABELS.get(learner, learner)


def predictor_from(source: FittedPredictor | str | os.PathLike[str] | Results | pd.DataFrame) -> FittedPredictor:
    """A predictor from a study directory (fitted on it, ``fit_predictor``) or a saved predictor file."""
    if isinstance(source, FittedPredictor):
        return source
    if isinstance(source, (str, os.PathLike)) and Path(source).is_file():
        return load_predictor(source)
    return fit_predictor(source)


def rank_rows(predictor: FittedPredictor, arch: pd.DataFrame) -> pd.DataFrame:
    """``arch`` with ``predicted_test_error`` and ``predicted_rank`` (1 = lowest predicted error; ties in the
    table's order), sorted by it."""
    out = arch.reset_index(drop=True).copy()
    out["predicted_test_error"] = predictor.predict(out)
    order = np.argsort(out["predicted_test_error"].to_numpy(np.float64), kind="stable")
    rank = np.empty(len(out), dtype=np.int64)
    rank[order] = np.arange(1, len(out) + 1)
    out["predicted_rank"] = rank
    return out.sort_values("predicted_rank", kind="stable").reset_index(drop=True)
