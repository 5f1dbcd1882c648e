"""The leaderboard: a study's best architectures and its leading predictors of test error, as ``archstudy top``
prints them.

``leaderboard(results, k, by)`` orders the finished architectures by one column and keeps the first ``k``, each
with its errors, the spec fields that describe it at a glance and its metrics at initialization; beside them,
the predictors of test error ranked as the report ranks them (``analysis.stats.correlations``: |Kendall tau|
over the trained architectures of the random sample, rank 1 first).

The order of ``by``:

* an error (``test_error``, ``val_error``, ``train_error``): lowest first; architectures without one (pruned at
  launch, every run diverged; every one of a study that measures only, ``MEASURED_ONLY``) are left out;
* a predictor (``nlc``, ``variability``, ``grad_norm``, any column of ``analysis.columns.PREDICTORS``): closest
  to where the best architectures of this study lie first, by its range score (``analysis.range_predictors``):
  the distance from the centre of the predictor's good range (``analysis.good_ranges``; on log10 where the
  predictor is plotted so), fitted on the trained architectures of the random sample. So a predictor whose
  best values lie at one end of its range ranks from that end, and one with a window, as the NLC has (NLC paper,
  section 4: an initial NLC of about 1 to 3), ranks from inside the window out. For the NLC the window is the one
  the report and pruning at launch use (``good_ranges.nlc_good_range``: the study's own band once the study is large
  enough for it, else the paper's [1, 3]). Another predictor needs ``MIN_FIT`` trained architectures for a good
  range; with fewer, the order is plainly ascending and ``Leaderboard.order`` says so. Every finished
  architecture is ranked, those pruned at launch too (ranking by a metric at initialization is what pruning at
  launch does).

Reads the results tables only (no torch). The ranking needs no bootstrap and no granulated Kendall
(``correlations(..., n_boot=0, axes={})``); the findings run every test of the report, the held-out evaluation
of the joint predictor among them (seconds; ``findings=False`` leaves them out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, Integer, check
from archstudy.study.experiment.window_rule import PAPER_WINDOW

from .columns import PREDICTOR_BY_COLUMN, PREDICTORS
from .findings import summary
from .good_ranges import good_ranges, nlc_good_range
from .results import Results, _trained
from .stats import correlations
from .range_predictors import MIN_POINTS, range_distance
from .seed_ceiling import seed_ceiling

ERRORS = ("test_error", "val_error", "train_error")
# What describes an architecture at a glance (the sampled axes that matter most, and its size).
SPEC_SHOWN = ("depth", "width", "activation", "norm", "skip", "weights", "param")
# Metrics at initialization every row shows; the leading predictors' columns join them.
METRICS_SHOWN = ("nlc", "bias")
IDENTITY = ("index", "variant", "arch_id")
TARGET = "test_error"
MIN_FIT = MIN_POINTS  # trained architectures a predictor's good range is fitted on, at least (range_predictors)
# Why no architecture of a study that measures only (``measure_only``, as `archstudy rank` makes one: the metrics at
# initialization, no training) has an error: said in these words by the leaderboard, `archstudy top` and `status`.
MEASURED_ONLY = "measured only (no training asked)"


def untrained_row(measure_only: bool, pruning: str) -> tuple[str, str]:
    """The label and the words of the finished architectures that were not trained, as `archstudy status` shows
    them: ``MEASURED_ONLY`` in a study that measures only; else pruned at launch by ``pruning`` (the study's NLC
    window, in words)."""
    if measure_only:
        return "  untrained", f"{MEASURED_ONLY}: the metrics at initialization alone, as `archstudy rank` asks"
    return "  pruned", f"{pruning}: NLC at initialization outside it, not trained"


def untrained_why(measure_only: bool) -> str:
    """Why finished architectures have no error (test, validation, training): ``MEASURED_ONLY``, or pruned at
    launch (NLC at initialization outside the study's window) or every run diverged."""
    return MEASURED_ONLY if measure_only else "pruned at launch, or every run diverged"


@dataclass(frozen=True)
class Leaderboard:
    """A study's best ``k`` architectures by ``by`` and its top predictors of test error.

    ``architectures``: one row per architecture shown, best first, with ``rank`` (1 = best), the identity, the
    errors, ``SPEC_SHOWN``, ``num_params`` and the metrics shown (``metrics``); ``predictors``: the top rows of
    ``correlations`` (predictor, label, kind, n, kendall, kendall_p, ``p_adjusted`` and ``finding`` (the
    predictor's test among every test of the report, ``analysis.findings``: what "it predicts test error" may
    read), spearman, lift over ``best_baseline``, rank); ``findings``: the sentence the report states about its
    findings (how many tests, how controlled, how many findings), "" where they were not computed. ``order``:
    how the rows are ordered, in words. ``finished``/``trained``/``planned``: how far the study is
    (``planned`` None where ``load_results`` cannot know it)."""

    study: str
    dataset: str
    by: str
    order: str
    architectures: pd.DataFrame
    predictors: pd.DataFrame
    metrics: tuple[str, ...]
    finished: int
    trained: int
    planned: int | None = None
    candidates: int = 0  # architectures that had a value of ``by``
    notes: list[str] = field(default_factory=list)
    measure_only: bool = False  # a study that measures only: nothing trained, no errors (``MEASURED_ONLY``)
    findings: str = ""
    ceiling: str = ""  # the seed-noise ceiling in one sentence (``ceiling_line``), "" without the study's runs

    def to_dict(self) -> dict[str, Any]:
        """The leaderboard as JSON-ready data (NaN as None)."""
        return {
            "study": self.study,
            "dataset": self.dataset,
            "by": self.by,
            "order": self.order,
            "finished": self.finished,
            "trained": self.trained,
            "planned": self.planned,
            "candidates": self.candidates,
            "metrics": list(self.metrics),
            "notes": list(self.notes),
            "measure_only": self.measure_only,
            "findings": self.findings,
            "ceiling": self.ceiling,
            "architectures": _records(self.architectures),
            "predictors": _records(self.predictors),
        }

    def text(self) -> str:
        """The leaderboard as the terminal shows it: a header, the architectures' table, the predictors' table."""
        planned = f" of {self.planned}" if self.planned is not None else ""
        lines = [
            f"{self.study}: {self.dataset}, {self.finished}{planned} architectures finished ({self.trained} trained)"
        ]
        if len(self.architectures):
            lines.append(f"best {len(self.architectures)} of {self.candidates} by {_label(self.by)}: {self.order}")
            lines += _table(self.architectures, self.metrics)
        elif self.measure_only and self.by in ERRORS:
            lines.append(f"no {self.by}: every architecture is {MEASURED_ONLY}")
        else:
            lines.append(f"no architecture has a value of {self.by} yet")
        lines += [f"note: {n}" for n in self.notes]
        if len(self.predictors):
            n = int(self.predictors["n"].max())
            lines.append(
                f"top predictors of test error (|Kendall tau| over {n} trained architectures of the random "
                "sample, as the report ranks them):"
            )
            lines += _predictor_table(self.predictors)
        if self.findings:
            lines.append(f"findings: {self.findings}")
        if self.ceiling:
            lines.append(f"seed-noise ceiling: {self.ceiling}")
        return "\n".join(lines)


def _label(column: str) -> str:
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p is not None else column.replace("_", " ")


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in df.to_dict("records"):
        clean = {}
        for k, v in row.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (np.floating, float)):
                v = None if not math.isfinite(float(v)) else float(v)
            elif isinstance(v, np.bool_):
                v = bool(v)
            elif v is pd.NA or (not isinstance(v, str) and pd.isna(v)):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def allowed_columns() -> tuple[str, ...]:
    """What ``by`` may name: the errors, then every predictor column."""
    return ERRORS + tuple(p.column for p in PREDICTORS)


def leaderboard(
    results: Results | pd.DataFrame,
    k: int = 10,
    by: str = TARGET,
    *,
    predictors: int = 5,
    study: str | None = None,
    measure_only: bool | None = None,
    findings: bool = True,
) -> Leaderboard:
    """The best ``k`` architectures of ``results`` (a ``load_results`` ``Results`` or its architectures
    DataFrame) by ``by`` (see the module docstring), and the ``predictors`` leading predictors of test error.
    ``measure_only``: whether the study measures only (None: what a ``Results``' study.yaml says; a DataFrame:
    no). ``findings``: each predictor's verdict read from every test of the report (``analysis.findings``)."""
    k = check("leaderboard", "k", Integer(1), k)
    predictors = check("leaderboard", "predictors", Integer(0), predictors)
    by = check("leaderboard", "by", Choice(allowed_columns()), by)
    arch = results.architectures if isinstance(results, Results) else results
    if not isinstance(arch, pd.DataFrame):
        raise SpecError(
            "leaderboard",
            "results",
            type(results).__name__,
            "must be an analysis.Results or a DataFrame of architectures",
        )
    trained = arch[_trained(arch)]
    # The same statistics, population and order as the report's predictor ranking: the trained architectures.
    corr = correlations(trained, n_boot=0, axes={}) if len(trained) else pd.DataFrame()
    ranked = _ranked(corr)
    notes: list[str] = []
    if by in ERRORS:
        value = arch[by].to_numpy("float64")
        pool, key, order = arch[np.isfinite(value)], value[np.isfinite(value)], "lowest first"
    else:
        pool, key, order = _by_window(arch, trained, by)
    if measure_only is None:
        measure_only = isinstance(results, Results) and bool(results.config.get("measure_only"))
    if len(pool) < len(arch):
        if by in ERRORS and measure_only:
            notes.append(
                f"{len(arch) - len(pool)} finished architectures have no {by}: {MEASURED_ONLY}; a metric at "
                "initialization ranks them (`--by nlc`)"
            )
        else:
            why = untrained_why(False) if by in ERRORS else "not measured, or not positive on a log scale"
            notes.append(f"{len(arch) - len(pool)} finished architectures have no {by} ({why}) and are not ranked")
    shown_metrics = _metrics_shown(ranked, by)
    top = pool.assign(_key=key).sort_values(["_key", "index", "variant"], kind="stable").head(k)
    columns = [c for c in (*IDENTITY, *ERRORS, *SPEC_SHOWN, "num_params", *shown_metrics) if c in top.columns]
    table = top[columns].reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    found = None
    if findings and len(trained):
        found = _reported(results)
        found = _findings(trained) if found is None else found
    ranked = _with_verdicts(ranked, found)
    keep = [
        "predictor",
        "label",
        "kind",
        "n",
        "kendall",
        "kendall_p",
        "p_adjusted",
        "finding",
        "spearman",
        "lift",
        "best_baseline",
        "rank",
    ]
    best = ranked[keep].head(predictors).reset_index(drop=True) if len(ranked) else pd.DataFrame(columns=keep)
    planned = results.planned if isinstance(results, Results) else None
    name = study or (results.study_dir if isinstance(results, Results) else "architectures")
    dataset = (
        results.dataset
        if isinstance(results, Results)
        else (
            str(arch["dataset"].dropna().iloc[0]) if "dataset" in arch and arch["dataset"].notna().any() else "unknown"
        )
    )
    return Leaderboard(
        name,
        dataset,
        by,
        order,
        table,
        best,
        shown_metrics,
        len(arch),
        len(trained),
        planned,
        len(pool),
        notes,
        measure_only=bool(measure_only),
        findings=summary(found) if found is not None and len(found) else "",
        ceiling=ceiling_line(seed_ceiling(results.runs, arch)) if isinstance(results, Results) and len(trained) else "",
    )


def ceiling_line(c: dict[str, Any]) -> str:
    """The seed-noise ceiling (``seed_ceiling.seed_ceiling``) in one sentence: the initializations' Kendall tau and the
    most a predictor's |tau| can reach, each with its interval, or why it is not known."""
    if c.get("why"):
        return str(c["why"])
    return (
        f"{c['inits']} initializations agree by Kendall tau {c['kendall']:.2f} [{c['kendall_lo']:.2f}, "
        f"{c['kendall_hi']:.2f}] over {c['n']} base architectures: a predictor's |tau| can reach "
        f"{c['kendall_ceiling']:.2f} [{c['kendall_ceiling_lo']:.2f}, {c['kendall_ceiling_hi']:.2f}]"
    )


def _reported(results: Results | pd.DataFrame) -> pd.DataFrame | None:
    """The findings of the study's own report (``STUDY/report.findings.json``, ``report.page.findings_json``) where
    they were computed from the finished rows the study holds now (``findings.table_digest``); else None. The
    held-out evaluation among them takes seconds: a ``top`` after a ``report`` reads what the report stated."""
    import json

    from archstudy.study.experiment.config import REPORT_NAME

    from .findings import table_digest

    if not isinstance(results, Results):
        return None
    path = Path(results.study_dir) / Path(REPORT_NAME).with_suffix(".findings.json").name
    try:
        studies = json.loads(path.read_text(encoding="utf-8"))["studies"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no report yet, an object store, or a file that is not one
    digest = table_digest(results.architectures)
    for s in studies if isinstance(studies, list) else []:
        if isinstance(s, dict) and s.get("digest") == digest and s.get("tests"):
            found = pd.DataFrame(s["tests"])
            return found if {"family", "subject", "p", "p_adjusted", "finding"} <= set(found.columns) else None
    return None


def _findings(trained: pd.DataFrame) -> pd.DataFrame | None:
    """Every test of the report on the trained architectures (``analysis.findings``), None where there are too few
    to test anything, or where the table is not a study's (no ``num_params``: a frame of a few columns)."""
    from .findings import findings

    return findings(trained, seed=0) if "num_params" in trained.columns else None


def _with_verdicts(ranked: pd.DataFrame, found: pd.DataFrame | None) -> pd.DataFrame:
    """``ranked`` with each predictor's adjusted p-value and finding from the report's tests (NaN and False where
    they were not computed)."""
    if not len(ranked):
        return ranked.assign(p_adjusted=pd.Series(dtype=float), finding=pd.Series(dtype=bool))
    if found is None or not len(found):
        return ranked.assign(p_adjusted=np.nan, finding=False)
    f = found[found["family"] == "predictor"].set_index("subject")
    return ranked.assign(
        p_adjusted=ranked["predictor"].map(f["p_adjusted"]).astype(float),
        finding=ranked["predictor"].map(f["finding"]).fillna(False).astype(bool),
    )


def _ranked(corr: pd.DataFrame) -> pd.DataFrame:
    """The correlation rows with a Kendall tau, best rank first (ties in the declaration's order)."""
    if not len(corr):
        return corr
    ok = corr[np.isfinite(corr["kendall"].to_numpy("float64"))]
    return ok.sort_values("rank", kind="stable")


def _by_window(arch: pd.DataFrame, trained: pd.DataFrame, by: str) -> tuple[pd.DataFrame, np.ndarray, str]:
    """The architectures with a value of ``by``, their sort key, ascending (the distance from the centre of
    ``by``'s good range, or the value itself), and the order in words (module docstring)."""
    log = PREDICTOR_BY_COLUMN[by].log
    x = arch[by].to_numpy("float64")
    ok = np.isfinite(x) & ((x > 0) if log else True)
    pool, x = arch[ok], x[ok]
    label = _label(by)
    if by == "nlc":
        w = nlc_good_range(trained) if len(trained) else pd.DataFrame()
        lo, hi = (float(w["lo"].iloc[0]), float(w["hi"].iloc[0])) if len(w) else PAPER_WINDOW
        whose = (
            "the study's own NLC window"
            if len(w) and w["source"].iloc[0] == "study"
            else "the NLC paper's window (the study is too small for its own)"
        )
        return pool, range_distance(x, lo, hi, True), f"closest to {whose} [{lo:.3g}, {hi:.3g}] first"
    fitted = int((trained["variant"] == "base").sum()) if "variant" in trained else len(trained)
    g = good_ranges(trained, [by]) if fitted >= MIN_FIT else pd.DataFrame()
    if not len(g) or not np.isfinite(g["low"].iloc[0]):
        return pool, x, (f"ascending ({fitted} trained architectures: a good range of {label} needs {MIN_FIT})")
    lo, hi = float(g["low"].iloc[0]), float(g["high"].iloc[0])
    return (
        pool,
        range_distance(x, lo, hi, log),
        f"closest to the centre of {label}'s good range in this study [{lo:.3g}, {hi:.3g}] first",
    )


def _metrics_shown(ranked: pd.DataFrame, by: str) -> tuple[str, ...]:
    """NLC and bias, the column ranked by, and the two leading predictors that are metrics or proxies."""
    lead = [
        c
        for c in (ranked["predictor"] if len(ranked) else [])
        if PREDICTOR_BY_COLUMN[c].kind != "baseline" and c not in METRICS_SHOWN
    ][:2]
    out = list(METRICS_SHOWN)
    for c in ([by] if by not in ERRORS else []) + lead:
        if c not in out and c not in SPEC_SHOWN:
            out.append(c)
    return tuple(out)


# -- text ------------------------------------------------------------------------------------------------
_SHORT = {
    "index": "index",
    "variant": "variant",
    "arch_id": "arch_id",
    "test_error": "test",
    "val_error": "val",
    "train_error": "train",
    "num_params": "params",
    "activation": "activation",
}


def _cell(value: object, error: bool = False) -> str:
    """A table cell: an error (a fraction) to three decimals, other numbers to three significant digits."""
    if value is None or value is pd.NA:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return "-"
        return f"{v:.3f}" if error else f"{v:.3g}"
    return str(value)


def _grid(header: list[str], rows: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    fmt: Callable[[list[str]], str] = lambda cells: "  ".join(
        c.ljust(w) if i in left else c.rjust(w)  # noqa: E731
        for i, (c, w) in enumerate(zip(cells, widths))
    ).rstrip()
    return ["  " + fmt(header)] + ["  " + fmt(r) for r in rows]


def _table(df: pd.DataFrame, metrics: tuple[str, ...]) -> list[str]:
    cols = [c for c in df.columns if c != "arch_id" and not (c == "variant" and set(df["variant"]) <= {"base"})]
    header = [
        "#" if c == "rank" else _SHORT.get(c, c if c not in PREDICTOR_BY_COLUMN else _short_label(c)) for c in cols
    ]
    errors = [c in ERRORS for c in cols]
    rows = [[_cell(v, e) for v, e in zip(row, errors)] for row in df[cols].itertuples(index=False)]
    left = {i for i, c in enumerate(cols) if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])}
    return _grid(header, rows, left)


def _short_label(column: str) -> str:
    label = PREDICTOR_BY_COLUMN[column].label
    return label if len(label) <= 12 else column


def _predictor_table(df: pd.DataFrame) -> list[str]:
    header = ["rank", "predictor", "kind", "tau", "p", "p adjusted", "finding", "spearman", "lift", "over"]
    rows = [
        [
            _cell(r.rank),
            r.label,
            r.kind,
            f"{r.kendall:+.3f}",
            f"{r.kendall_p:.2g}",
            "-" if not np.isfinite(r.p_adjusted) else f"{r.p_adjusted:.2g}",
            "yes" if r.finding else "no",
            "-" if not np.isfinite(r.spearman) else f"{r.spearman:+.3f}",
            "-" if not np.isfinite(r.lift) else f"{r.lift:+.3f}",
            "-"
            if r.best_baseline is None or (isinstance(r.best_baseline, float) and math.isnan(r.best_baseline))
            else PREDICTOR_BY_COLUMN[r.best_baseline].label,
        ]
        for r in df.itertuples(index=False)
    ]
    return _grid(header, rows, {1, 2, 6, 9})
