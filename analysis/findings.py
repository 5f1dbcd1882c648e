"""The findings of a study: every verdict the report, ``archstudy top`` and ``archstudy serve`` state, as one family
of tests whose error is controlled as a whole.

A report tests many things at once: some twenty predictors, as many good ranges and U-shapes, the granulated Kendall
coefficient of every predictor, every pair of levels of every sampled axis, every sibling comparison, the joint
predictor against its baselines. Each test at 5% is calibrated on its own, yet a study where test error depends on
nothing would show some finding in most reports. Here every verdict belongs to a declared family (``FAMILIES``) and
the whole set is controlled together:

**Procedure** (``control``): Holm's sequentially rejective procedure with weights (Holm, *A simple sequentially
rejective multiple test procedure*, Scandinavian Journal of Statistics 6, 1979, section 5; Benjamini and Hochberg,
*Multiple hypotheses testing with weights*, 1997): each family that has a test gets an equal share of the weight,
split equally among its tests (w = 1 / (F m_f)); the tests are taken in the order of p / w, and the j-th is a
finding while p_(j) <= alpha w_(j) / (the weight of the tests not yet found), i.e. its adjusted p-value

    p~_(j) = max_{i <= j} min(1, p_(i) W_i / w_(i)),   W_i = the sum of the weights from the i-th on,

is at most alpha = 0.05. It keeps the probability of any false finding in the report at most alpha whatever the
dependence between the tests (they share the architectures, and the metrics are correlated), which is what "a
report of pure noise states no finding" asks. Benjamini and Hochberg's false discovery rate would control that
only when every null holds and the tests are positively dependent; a gate per axis would leave the families
without an axis (predictors, comparisons) to another budget. The equal shares keep a family of many tests (the
45 pairs of activations) from drowning a family of few (the sibling comparisons).

``findings(table, seed=0)`` computes every family's tests from an architectures table (``load_results(...)
.architectures``); ``study_findings`` reads them from a study's analysis (``study_analysis.StudyAnalysis``), which
is what the report, ``findings.json`` and ``top`` state. Each p-value is exact or calibrated on simulated studies
(docs/analysis.md, "Findings"): permutation tests use sequential p-values fine enough for the family
(``analysis.permutation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .columns import PREDICTOR_BY_COLUMN, PREDICTORS
from .good_ranges import is_u_shaped

ALPHA = 0.05  # the report's error budget: the probability of any false finding
PROCEDURE = (
    "Holm's sequentially rejective procedure with weights (Holm 1979, section 5): every family with a test an "
    "equal share of the weight, split equally among its tests; a finding where the adjusted p-value is at most "
    "alpha and the verdict's own condition holds"
)


@dataclass(frozen=True)
class Family:
    """A family of verdicts: ``key``; ``name``, what it says in a heading; ``test``, its method in words (the
    captions of the report's tables come from it); ``where``, the function its p-values come from."""

    key: str
    name: str
    test: str
    where: str


FAMILIES: tuple[Family, ...] = (
    Family(
        "predictor",
        "a predictor significant",
        "Kendall's τ-b of the predictor with test error over the random draws, with scipy's two-sided p-value "
        "(tie-corrected)",
        "stats.correlations: kendall, kendall_p",
    ),
    Family(
        "u_shape",
        "U-shaped",
        "the best architectures lie inside the factor's range: u = min(below, above), the shares of the "
        "architectures on either side of the good range the empirical bootstrap converges to, at least 10% and "
        "larger than chance: its permutation p-value (test error dealt to the architectures at random, sequential)",
        "good_ranges.good_ranges: u_p (good_ranges.range_test)",
    ),
    Family(
        "psi",
        "Ψ excluding 0",
        "Jiang et al.'s granulated Kendall Ψ (every cell counts) against its permutation null: test error "
        "permuted within each base draw (a draw and its siblings), two-sided, sequential; the interval is Ψ less "
        "the null's 97.5% and 2.5% quantiles (the test inverted under a shift)",
        "stats.psi_test: psi, psi_p",
    ),
    Family(
        "paired",
        "a paired sibling effect",
        "the median test-error difference of sibling pairs (same draw, one factor changed), exact two-sided sign test",
        "stats.paired_effects: median, p_sign",
    ),
    Family(
        "edf",
        "an EDF pair differing",
        "Kolmogorov-Smirnov distance between two levels' error EDFs, scipy's two-sample p-value; where the levels "
        "differ in size, also the complexity-normalized EDFs' distance with its permutation p-value (999 "
        "permutations of the levels' weighted errors)",
        "edf.edf: ks, p, ks_normalized, p_normalized",
    ),
    Family(
        "good_range",
        "a good range",
        "the best architectures lie in part of the factor's range: the share of the architectures outside the good "
        "range the empirical bootstrap converges to, larger than chance: its permutation p-value (sequential)",
        "good_ranges.good_ranges: outside, outside_p (good_ranges.range_test)",
    ),
    Family(
        "comparison",
        "the predictor comparisons",
        "held-out Spearman ρ of the joint predictor, above 0 (one-sided), and its paired per-fold differences with "
        "the best baseline and NLC alone (two-sided), by the t of the cross-validation's variance (predict.folds)",
        "predict.predict_study: scores p, versus p",
    ),
    Family(
        "other",
        "any other",
        "any verdict without a family of its own (none is stated today: the lift over the best baseline, the "
        "window scores and the NLC window's stability are estimates with intervals, not verdicts)",
        "–",
    ),
)
FAMILY_BY_KEY = {f.key: f for f in FAMILIES}
FINDING_COLUMNS = [
    "family",
    "dataset",
    "subject",
    "statistic",
    "p",
    "weight",
    "p_adjusted",
    "finding",
    "claim",
]


def weighted_holm(p: Iterable[float], w: Iterable[float]) -> np.ndarray:
    """Holm's weighted step-down adjusted p-values (module docstring): tests in the order of p / w, p~_(j) =
    max_{i <= j} min(1, p_(i) W_i / w_(i)) with W_i the total weight of the tests from the i-th on. NaN p-values
    are left out (their weight too); equal weights give Holm's unweighted procedure."""
    p = np.asarray(list(p), dtype=np.float64)
    w = np.asarray(list(w), dtype=np.float64)
    out = np.full(len(p), math.nan)
    ok = np.flatnonzero(np.isfinite(p) & (w > 0))
    if not len(ok):
        return out
    order = ok[np.argsort(p[ok] / w[ok], kind="stable")]
    remaining = np.cumsum(w[order][::-1])[::-1]
    out[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * remaining / w[order]))
    return out


def control(tests: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """``tests`` (family, p, and ``eligible``: whether the verdict's own condition beyond its p holds) with each
    test's ``weight`` (equal shares of the families with a test, split equally within each), its ``p_adjusted``
    (``weighted_holm``) and ``finding``: adjusted p at most ``alpha`` and eligible."""
    t = tests.copy()
    has = t[np.isfinite(t["p"].to_numpy(np.float64))]
    sizes = has.groupby("family").size()
    t["weight"] = [
        1.0 / (len(sizes) * sizes[f]) if f in sizes.index and np.isfinite(p) else 0.0
        for f, p in zip(t["family"], t["p"])
    ]
    t["p_adjusted"] = weighted_holm(t["p"], t["weight"])
    t["finding"] = (t["p_adjusted"] <= alpha) & t["eligible"].astype(bool)
    return t


def _label(column: str) -> str:
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p is not None else column


def _rows(
    family: str, frame: pd.DataFrame, subject: Any, statistic: str, p: str, claim: Any, eligible: Any = True
) -> list[dict[str, Any]]:
    """One test per row of ``frame``: ``subject`` and ``claim`` (callables of the row), its ``statistic`` and
    ``p`` columns, ``eligible`` (a callable, or True)."""
    out = []
    for _, r in frame.iterrows():
        out.append(
            {
                "family": family,
                "dataset": str(r.get("dataset", "")),
                "subject": subject(r),
                "statistic": float(r[statistic]),
                "p": float(r[p]),
                "eligible": bool(eligible(r)) if callable(eligible) else True,
                "claim": claim(r),
            }
        )
    return out


def _predictor_tests(corr: pd.DataFrame) -> list[dict[str, Any]]:
    c = corr[(corr["n"] >= 3) & np.isfinite(corr["kendall_p"].to_numpy(np.float64))] if len(corr) else corr
    return _rows(
        "predictor",
        c,
        lambda r: str(r["predictor"]),
        "kendall",
        "kendall_p",
        lambda r: f"{r['label']} predicts test error (Kendall τ {r['kendall']:+.2f})",
    )


def _range_tests(good: pd.DataFrame) -> list[dict[str, Any]]:
    if not len(good):
        return []
    g = good[good["n"] >= 3]
    out = _rows(
        "u_shape",
        g[np.isfinite(g["u_p"].to_numpy(np.float64))],
        lambda r: str(r["factor"]),
        "u",
        "u_p",
        lambda r: (
            f"{r['label']} is U-shaped: the best architectures lie inside [{r['low']:.3g}, {r['high']:.3g}], "
            f"{100 * r['below']:.0f}% of all below and {100 * r['above']:.0f}% above"
        ),
        lambda r: is_u_shaped(r["below"], r["above"]),
    )
    out += _rows(
        "good_range",
        g[np.isfinite(g["outside_p"].to_numpy(np.float64))],
        lambda r: str(r["factor"]),
        "outside",
        "outside_p",
        lambda r: (
            f"the best architectures lie where {r['label']} is in [{r['low']:.3g}, {r['high']:.3g}] "
            f"({100 * r['outside']:.0f}% of all outside)"
        ),
    )
    return out


def _psi_tests(psi: pd.DataFrame, dataset: str = "") -> list[dict[str, Any]]:
    t = psi[np.isfinite(psi["psi_p"].to_numpy(np.float64))] if len(psi) else psi
    return _rows(
        "psi",
        t.assign(dataset=t["dataset"] if "dataset" in t.columns else dataset),
        lambda r: str(r["predictor"]),
        "psi",
        "psi_p",
        lambda r: f"{_label(r['predictor'])} orders test error within sibling cells (Ψ {r['psi']:+.2f})",
    )


def paired_subject(r: pd.Series) -> str:
    """A sibling comparison's name among the findings: "axis: a → b (context)"."""
    return f"{r['axis']}: {r['a']} → {r['b']}" + (f" ({r['context']})" if r["context"] else "")


def edf_subject(axis: str, a: str, b: str, complexity: str | None = None) -> str:
    """A pair of levels' name among the findings: "axis: a vs b", "(normalized by COMPLEXITY)" for the
    complexity-normalized EDFs."""
    return f"{axis}: {a} vs {b}" + (f" (normalized by {complexity})" if complexity else "")


def _paired_tests(paired: pd.DataFrame) -> list[dict[str, Any]]:
    p = paired[(paired["n_pairs"] > 0) & np.isfinite(paired["p_sign"].to_numpy(np.float64))] if len(paired) else paired
    subject = paired_subject
    return _rows(
        "paired",
        p,
        subject,
        "median",
        "p_sign",
        lambda r: f"{subject(r)} changes test error by {r['median']:+.4f} (median of {int(r['n_pairs'])} pairs)",
    )


def _edf_tests(result: Any) -> list[dict[str, Any]]:
    if result is None or not len(result.ks):
        return []
    ks = result.ks
    sized = result.levels.groupby(["dataset", "axis"])["bins"].max() > 1

    def subject(r: pd.Series) -> str:
        return edf_subject(r["axis"], r["a"], r["b"])

    out = _rows(
        "edf",
        ks[np.isfinite(ks["p"].to_numpy(np.float64))],
        subject,
        "ks",
        "p",
        lambda r: f"{subject(r)}: their error distributions differ (KS {r['ks']:.2f})",
    )
    norm = ks[[bool(sized.get((d, a), False)) for d, a in zip(ks["dataset"], ks["axis"])]]
    norm = norm[np.isfinite(norm["p_normalized"].to_numpy(np.float64))]
    out += _rows(
        "edf",
        norm,
        lambda r: edf_subject(r["axis"], r["a"], r["b"], result.complexity),
        "ks_normalized",
        "p_normalized",
        lambda r: (
            f"{subject(r)}: their error distributions differ at equal {result.complexity} (KS {r['ks_normalized']:.2f})"
        ),
    )
    return out


COMPARISONS = {
    "joint": "the joint model predicts test error on held-out architectures",
    "baseline": "the joint model and the best baseline",
    "nlc": "the joint model and NLC alone",
}


def _comparison_tests(prediction: Any, dataset: str = "") -> list[dict[str, Any]]:
    """The joint model's held-out rho above 0, and its paired differences with the best baseline and NLC alone."""
    from .predict import CANNOT_FIT, Prediction

    if not isinstance(prediction, Prediction):
        return []
    out = []
    j = prediction.scores.set_index("learner").loc["joint"]
    if j["status"] != CANNOT_FIT and np.isfinite(j["p"]):
        out.append(
            {
                "family": "comparison",
                "dataset": dataset,
                "subject": "joint",
                "statistic": float(j["spearman"]),
                "p": float(j["p"]),
                "eligible": True,
                "claim": f"{COMPARISONS['joint']} (ρ {j['spearman']:.2f})",
            }
        )
    for _, v in prediction.versus.iterrows():
        if not np.isfinite(v["p"]):
            continue
        other = "the best baseline" if v["versus"] == "baseline" else "NLC alone"
        claim = f"the joint model beats {other}" if v["diff"] > 0 else f"{other} beats the joint model"
        out.append(
            {
                "family": "comparison",
                "dataset": dataset,
                "subject": f"joint vs {v['versus']}",
                "statistic": float(v["diff"]),
                "p": float(v["p"]),
                "eligible": True,
                "claim": f"{claim} (by {abs(v['diff']):.2f} in held-out ρ)",
            }
        )
    return out


def family_tests(
    corr: pd.DataFrame | None = None,
    good: pd.DataFrame | None = None,
    psi: pd.DataFrame | None = None,
    paired: pd.DataFrame | None = None,
    edf_result: Any = None,
    prediction: Any = None,
    dataset: str = "",
) -> pd.DataFrame:
    """Every test of every family from a study's tables (any may be None: its family has no test), before
    control: family, dataset, subject, statistic, p, eligible, claim."""
    rows: list[dict[str, Any]] = []
    if corr is not None:
        rows += _predictor_tests(corr)
    if good is not None:
        rows += _range_tests(good)
    if psi is not None:
        rows += _psi_tests(psi, dataset)
    if paired is not None:
        rows += _paired_tests(paired)
    rows += _edf_tests(edf_result)
    rows += _comparison_tests(prediction, dataset)
    cols = ["family", "dataset", "subject", "statistic", "p", "eligible", "claim"]
    return pd.DataFrame(rows, columns=cols)


def finalized(tests: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """``control`` of ``tests``, in the order of ``FAMILIES`` and then of adjusted p, with ``FINDING_COLUMNS``."""
    t = control(tests, alpha)
    t["_family"] = t["family"].map({f.key: i for i, f in enumerate(FAMILIES)})
    t = t.sort_values(["_family", "p_adjusted", "p"], kind="stable", na_position="last")
    return t[FINDING_COLUMNS].reset_index(drop=True)


def findings(
    table: pd.DataFrame,
    seed: int = 0,
    *,
    predict: bool = True,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """The verdicts a report of ``table`` (an architectures table, ``load_results(...).architectures``, or a
    ``Results``) would state, one row per test of every family (``FAMILIES``): ``family``, ``dataset``,
    ``subject`` (the predictor, factor, comparison or pair of levels), ``statistic`` (its value: Kendall's tau, the
    shares outside a good range, Psi, the median difference, the KS distance, rho or a difference of rho), ``p``
    (the test's own), ``weight``, ``p_adjusted`` (``control``: the whole set at once) and ``finding`` (adjusted p
    at most ``alpha``, and the verdict's own condition: a U-shape's 10% on each side), ``claim`` (what the report
    says when it is a finding). Over the trained architectures, as the report; ``seed`` seeds every resampling.
    ``predict``: with the joint predictor's held-out comparisons (seconds of scikit-learn; without them, their
    family has no test)."""
    from .edf import edf
    from .good_ranges import good_ranges
    from .predict import predict_study
    from .results import Results, _trained, architectures_table
    from .stats import correlations, paired_effects, psi_test

    if isinstance(table, Results):
        arch = table.trained
    else:
        arch = architectures_table(table, "findings")
        arch = arch[_trained(arch)] if "trained" in arch.columns else arch
    corr = correlations(arch, n_boot=0, axes={})
    preds = [p.column for p in PREDICTORS if p.column in arch.columns]
    psi = (
        pd.concat([psi_test(g, preds, seed=seed).assign(dataset=ds) for ds, g in _datasets(arch)], ignore_index=True)
        if len(arch)
        else None
    )
    prediction = None
    if predict and len(arch):
        try:
            prediction = predict_study(arch, seed=seed, importance=False, dependence=False, curve=False, ranking=False)
        except Exception as e:  # noqa: BLE001 - a study too small for it: its family has no test
            from archstudy.sampling import SpecError

            if not isinstance(e, SpecError):
                raise
    tests = family_tests(
        corr, good_ranges(arch, seed=seed), psi, paired_effects(arch), edf(arch, seed=seed), prediction
    )
    return finalized(tests, alpha)


def _datasets(arch: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "dataset" not in arch.columns:
        return [("", arch)]
    return [(str(ds), g) for ds, g in arch.groupby(arch["dataset"].astype(str), sort=True)]


def summary(found: pd.DataFrame, alpha: float = ALPHA) -> str:
    """The sentence a page states about its findings: how many tests, how controlled, how many findings."""
    tested = found[np.isfinite(found["p"].to_numpy(np.float64))]
    families = tested["family"].nunique()
    k = int(found["finding"].sum())
    return (
        f"{len(tested)} tests in {families} families, controlled together (Holm's procedure with equal weight per "
        f"family): the chance of any false finding in this study is at most {alpha:.0%}. "
        + (f"{k} finding{'s' if k != 1 else ''}." if k else "No finding: nothing here can be told from chance.")
    )


def record(found: pd.DataFrame) -> list[dict[str, Any]]:
    """The findings as JSON-ready records (``findings.json``: NaN as None)."""
    out = []
    for r in found.to_dict("records"):
        out.append(
            {
                k: (
                    None
                    if isinstance(v, float) and not math.isfinite(v)
                    else (bool(v) if isinstance(v, np.bool_) else v)
                )
                for k, v in r.items()
            }
        )
    return out


# What a study's findings were computed from: every finished row's identity, whether it trained and its errors.
DIGEST_COLUMNS = ("index", "variant", "arch_id", "trained", "val_error", "test_error")


def table_digest(arch: pd.DataFrame) -> str:
    """16 hex digits of the sha256 of ``arch``'s ``DIGEST_COLUMNS`` in (index, variant, arch_id) order: equal for two
    reads of a study exactly when no architecture has finished, been redone or been removed in between (the
    findings file beside a report records it; ``top`` reuses those findings while the study's digest matches)."""
    import hashlib

    cols = [c for c in DIGEST_COLUMNS if c in arch.columns]
    t = arch[cols].sort_values([c for c in ("index", "variant", "arch_id") if c in cols], kind="stable")
    h = hashlib.sha256(pd.util.hash_pandas_object(t.astype(str), index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def apply_to_prediction(prediction: Any, found: pd.DataFrame) -> None:
    """The joint predictor's verdicts (``Prediction.calls``, ``verdict``, ``level``) read from the report's
    findings: "the joint model predicts" and "beats" only where its comparison is a finding of the whole family
    (``adjusted``: each comparison's adjusted p-value). Nothing to do without a ``Prediction``."""
    from .predict import Prediction
    from .predict.evaluation import verdict

    if not isinstance(prediction, Prediction):
        return
    comp = found[found["family"] == "comparison"].set_index("subject") if len(found) else pd.DataFrame()

    def found_(subject: str) -> bool:
        return subject in comp.index and bool(comp.at[subject, "finding"])

    calls = {"joint_above_zero": int(found_("joint"))}
    for other in ("baseline", "nlc"):
        key = f"joint vs {other}"
        if key in comp.index:
            calls[f"beats_{other}"] = int(np.sign(comp.at[key, "statistic"])) if found_(key) else 0
    prediction.calls = calls
    prediction.adjusted = {str(k): float(v) for k, v in comp["p_adjusted"].items()} if len(comp) else {}
    prediction.level = "done" if calls["joint_above_zero"] and calls.get("beats_baseline") == 1 else "partial"
    prediction.verdict = verdict(prediction)
