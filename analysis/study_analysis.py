"""One study's numbers for the report, computed once (``analyse``) and rendered by ``analysis.report``: over the
trained architectures (a study pruned at launch measured the others at initialization only), the correlation
table, the predictor ranking (``analysis.ranking``: what the overview and the ranking chart both show), the best
architectures, the granulated Kendall cells, the paired sibling effects, the NLC pruning table (the window used
beside the paper's and the study's own), the design space (error EDFs, good ranges, the study's NLC window,
window predictors), the health counts of the status table and the provenance, the window a study pruned at
launch with and what that saved, the training curves of the architectures the report draws and the selected
run's curve of every trained architecture (its detail panel); and the name each study goes by in a report of
several (``study_labels``: its directory).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from archstudy.sampling import SpecError
from archstudy.study.experiment.window_rule import PAPER_WINDOW

from .processes import Background
from .edf import edf
from .findings import apply_to_prediction, family_tests, finalized
from .columns import UNIT_KEY
from .figures.base import FigureData
from .figures.curves import curve_architectures
from .good_ranges import good_ranges, nlc_good_range
from .predict import report_prediction
from .pruning import nlc_pruning, pilot_window
from .ranking import predictor_ranking
from .results import Results, read_curves
from .stats import correlations, paired_effects, psi_table
from .range_predictors import range_predictors
from .seed_ceiling import seed_ceiling


def flag(arch: pd.DataFrame, column: str) -> pd.Series:
    """A boolean column with missing values read as False."""
    return arch[column].fillna(False).astype(bool)


def health(arch: pd.DataFrame) -> dict[str, int]:
    """The status table's counts: ``all_diverged`` (every run diverged), ``lr_edge`` (selected run among the
    protocol's lowest/highest rates), ``nonfinite_init``, ``flagged`` (either of the last two), ``high_bias``."""
    edge, nonfinite = flag(arch, "lr_edge"), flag(arch, "nonfinite_init")
    return {
        "all_diverged": int(flag(arch, "all_diverged").sum()),
        "lr_edge": int(edge.sum()),
        "nonfinite_init": int(nonfinite.sum()),
        "flagged": int((edge | nonfinite).sum()),
        "high_bias": int(flag(arch, "high_bias").sum()),
    }


def provenance(arch: pd.DataFrame) -> dict[str, Any]:
    """Where and when the architectures were computed: for ``package_version``, ``host`` and ``device`` the
    (value, count) pairs, most frequent first (None without a value); ``finished``, the first and last
    ``finished_at`` (None without one); ``compute_h``, the recorded hours (Σ ``total_s``; None without rows)."""

    def distinct(col: str) -> list[tuple[str, int]] | None:
        if col not in arch.columns or not arch[col].notna().any():
            return None
        return [(k, int(v)) for k, v in arch[col].astype(str).value_counts().items()]

    finished = arch["finished_at"].dropna() if "finished_at" in arch.columns else pd.Series(dtype=object)
    return {
        **{col: distinct(col) for col in ("package_version", "host", "device")},
        "finished": (finished.min(), finished.max()) if len(finished) else None,
        "compute_h": float(arch["total_s"].sum()) / 3600 if len(arch) else None,
    }


# The spec fields that name an architecture at a glance (the overview's table of the best architectures).
KEY_FIELDS = ("depth", "width", "activation", "norm", "skip", "skip_length", "weights", "param")


def best_architectures(arch: pd.DataFrame, k: int = 5, target: str = "test_error") -> pd.DataFrame:
    """The ``k`` architectures of lowest ``target`` (ties by arch_id), every variant (a sibling is an architecture
    too), with their key spec fields (``KEY_FIELDS``), NLC and ``rank`` (1 = best)."""
    if not len(arch) or target not in arch.columns:
        return pd.DataFrame(columns=["rank", "arch_id", "variant", target, *KEY_FIELDS, "nlc"])
    a = arch[np.isfinite(arch[target].to_numpy(np.float64))]
    a = a.sort_values([target, "arch_id"], kind="stable").head(k)
    cols = ["arch_id", "variant", target, *[f for f in KEY_FIELDS if f in a.columns], "nlc"]
    return a[[c for c in cols if c in a.columns]].assign(rank=np.arange(1, len(a) + 1)).reset_index(drop=True)


def study_labels(study_dirs: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The name of each study in a report: its directory's name, with as many parent directories as make the
    names distinct ("wave" and "wave-2", or "a/wave" and "b/wave"); an object-storage prefix likewise."""
    parts = [
        [p for p in os.fspath(d).replace("\\", "/").split("/") if p and not p.endswith(":")] or [os.fspath(d)]
        for d in study_dirs
    ]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            break
        depth += 1
    seen: dict[str, int] = {}
    out = []
    for n in names:  # the same path twice (refused by write_report) would still get two names
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


@dataclass(kw_only=True)
class StudyAnalysis(FigureData):
    """One study's numbers, computed once and rendered into HTML: what its figures draw from (``FigureData``,
    whose fields it has: the report hands it to the figures as it is) and the rest of its page. ``label``: the
    study's name in the report (``study_labels``); ``ranking``: the predictor ranking
    (``ranking.predictor_ranking``); ``best``: the best architectures (``best_architectures``); ``predict``: the
    joint predictor's evaluation (``analysis.predict.report_prediction``), the line saying why there is none, or
    while ``analyse(wait=False)`` leaves it computing, that computation (``settle`` waits for it)."""

    results: Results
    anchor: str
    psi: pd.DataFrame = field(default_factory=pd.DataFrame)
    paired: pd.DataFrame = field(default_factory=pd.DataFrame)
    pruning: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per window compared, ``label`` naming it
    pruning_window_given: bool = True  # ``pruning_window`` was given, not chosen (the first row of ``pruning``)
    # The study's own NLC window (``good_ranges.nlc_good_range``: its NLC's good range, its stability over resamples,
    # whether the study is large enough for it to be the pruning window)
    own_nlc_window: pd.DataFrame = field(default_factory=pd.DataFrame)
    launch: dict[str, Any] | None = None  # the window of pruning at launch (``launch_window``), None without one
    health: dict[str, int] = field(default_factory=dict)  # ``health`` of the trained architectures
    savings: dict[str, float] = field(default_factory=dict)  # ``launch_savings``: what pruning at launch cost, saved
    provenance: dict[str, Any] = field(default_factory=dict)  # ``provenance`` of the trained architectures
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    best: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the training curve of every trained architecture's selected run (``selected_curves``), for its detail panel
    selected_curves: pd.DataFrame = field(default_factory=pd.DataFrame)
    # every verdict the page states, controlled as one family (``analysis.findings``; computed by ``settle``, once
    # the held-out prediction, whose comparisons are a family, is there)
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the seed-noise ceiling (``seed_ceiling.seed_ceiling``: the initializations' agreement; unknown with one)
    ceiling: dict[str, Any] = field(default_factory=dict)

    def settle(self) -> StudyAnalysis:
        """The section with its held-out prediction computed (``analyse(wait=False)`` leaves it computing in a
        forked process while the report draws the figures that do not need it), and its findings: every test of
        the page controlled together (``findings.finalized``), the prediction's verdicts read from them
        (``findings.apply_to_prediction``)."""
        if isinstance(self.predict, Background):
            self.predict = self.predict.result()
        if not len(self.findings) and len(self.arch):
            tests = family_tests(self.corr, self.good, self.corr, self.paired, self.edf, self.predict)
            self.findings = finalized(tests)
            apply_to_prediction(self.predict, self.findings)
        return self

    def cancel(self) -> None:
        """Ends a prediction still computing (the report failed and will not ask for it)."""
        if isinstance(self.predict, Background):
            self.predict.cancel()
            self.predict = None

    @property
    def name(self) -> str:
        """The study's name in the report: its label, else its directory."""
        return self.label or self.results.study_dir


def launch_window(results: Results) -> dict[str, Any] | None:
    """The NLC window a study pruned at launch with (study.yaml's ``nlc_window``), None without one: ``lo``,
    ``hi`` and ``given`` (True: the config's own pair). For ``auto``, the window of its pilot's rows,
    recomputed as the runner computed it (``pruning.pilot_window``), with ``pilot`` (the pilot's finished
    architectures), ``pilot_indices`` (``nlc_pilot``: the indices below it), ``source`` ("study": the pilot's NLC
    good range; else the paper's) and ``reason`` (why the pilot's own band is not usable)."""
    from archstudy.study.experiment.config import StudyConfig

    cfg = results.config
    try:
        w = StudyConfig.normalize("nlc_window", cfg.get("nlc_window"))
    except SpecError:
        return None
    if w is None:
        return None
    if w != "auto":
        return {"lo": w[0], "hi": w[1], "given": True}
    n = int(cfg.get("nlc_pilot", StudyConfig.default("nlc_pilot")))
    arch = results.architectures
    pilot = arch[arch["index"] < n] if len(arch) else arch
    p = pilot_window(pilot, seed=int(cfg.get("seed", StudyConfig.default("seed"))))
    return {
        "lo": p["lo"],
        "hi": p["hi"],
        "given": False,
        "pilot": len(pilot),
        "pilot_indices": n,
        "source": p["source"],
        "reason": p["reason"],
    }


def launch_savings(results: Results) -> dict[str, float]:
    """What pruning at launch cost and saved: ``measure_h``, the hours spent building and measuring the pruned
    architectures; ``s_per_flop``, the trained architectures' training seconds per FLOP (Σ train_s / Σ flops);
    ``saved_h``, the training time saved, estimated as the pruned architectures' FLOPs per example times
    ``s_per_flop`` (an estimate: a pruned architecture might have trained for more or fewer epochs)."""
    pruned, trained = results.pruned, results.trained
    measure_h = float(pruned["total_s"].sum()) / 3600 if len(pruned) else 0.0
    flops_t = float(trained["flops"].sum()) if len(trained) else 0.0
    per_flop = float(trained["train_s"].sum()) / flops_t if flops_t > 0 else math.nan
    saved_h = float(pruned["flops"].sum()) * per_flop / 3600 if len(pruned) else 0.0
    return {"measure_h": measure_h, "s_per_flop": per_flop, "saved_h": saved_h}


def analyse(
    results: Results,
    anchor: str,
    *,
    n_boot: int,
    seed: int,
    window: tuple[float, float] | None,
    predictor: Any = None,
    label: str = "",
    wait: bool = True,
    progress: Callable[[str, int | None, int | None], None] | None = None,
) -> StudyAnalysis:
    """The section's numbers, over the trained architectures. ``window``: the pruning window, or None for the
    study's own NLC window where the study is large enough for it (``good_ranges.nlc_good_range``), else the NLC
    paper's [1, 3]. ``predictor``: a predictor fitted elsewhere (``analysis.predict``) to score on this study too.
    ``label``: the study's name in the report (``study_labels``). ``wait=False``: the held-out prediction may still
    be computing when this returns (``StudyAnalysis.settle`` waits for it), so that figures can be drawn beside it.
    ``progress``: told each step, ``progress(label, done, total)`` (``study.experiment.terminal.StepLine``)."""
    arch = results.trained  # the trained architectures: what every statistic and figure covers
    launch = launch_window(results)
    savings = launch_savings(results) if launch is not None else {}
    if not len(arch):
        return StudyAnalysis(
            dataset=results.dataset,
            arch=arch,
            results=results,
            anchor=anchor,
            pruning_window=window or PAPER_WINDOW,
            pruning_window_given=window is not None,
            launch=launch,
            health=health(arch),
            savings=savings,
            provenance=provenance(arch),
            label=label,
            ranking=predictor_ranking(pd.DataFrame()),
            best=best_architectures(arch),
        )
    # the held-out prediction (seconds of scikit-learn) in a forked process, beside the statistics below
    prediction = Background(report_prediction, arch, n_boot=n_boot, seed=seed, predictor=predictor)
    try:
        section = _analyse(results, arch, anchor, n_boot, seed, window, label, launch, savings, prediction, progress)
        return section.settle() if wait else section
    except BaseException:
        prediction.cancel()
        raise


def _analyse(
    results: Results,
    arch: pd.DataFrame,
    anchor: str,
    n_boot: int,
    seed: int,
    window: tuple[float, float] | None,
    label: str,
    launch: dict[str, Any] | None,
    savings: dict[str, float],
    prediction: Background,
    progress: Callable[[str, int | None, int | None], None] | None = None,
) -> StudyAnalysis:
    steps = ANALYSIS_STEPS
    name = label or results.study_dir

    def step(what: str) -> None:
        if progress is not None:
            progress(f"analysing {name}: {what}", steps.index(what), len(steps))

    step("correlations")
    corr = correlations(arch, n_boot=n_boot, seed=seed)
    step("seed-noise ceiling")
    ceiling = seed_ceiling(results.runs, arch, seed=seed)
    step("granulated Kendall")
    psi = psi_table(arch, [c for c in corr["predictor"].unique()], "test_error")
    step("paired effects")
    paired = paired_effects(arch)
    step("NLC window")
    own = nlc_good_range(arch, seed=seed)
    used = (
        window
        if window is not None
        else ((float(own["lo"].iloc[0]), float(own["hi"].iloc[0])) if len(own) else PAPER_WINDOW)
    )
    drawn = [str(r["arch_id"]) for r, _ in curve_architectures(arch)]
    step("window predictors")
    scores = range_predictors(arch, seed=seed)
    step("error EDFs")
    edfs = edf(arch, seed=seed)
    step("good ranges")
    good = good_ranges(arch, seed=seed)
    step("training curves")
    curves = read_curves(results.study_dir, drawn)
    chosen = selected_curves(results.study_dir, detailed(arch))
    step("pruning")
    return StudyAnalysis(
        dataset=results.dataset,
        arch=arch,
        corr=corr,
        pruning_window=used,
        edf=edfs,
        good=good,
        window_scores=scores,
        curves=curves,
        predict=prediction,
        label=label,
        results=results,
        anchor=anchor,
        psi=psi,
        paired=paired,
        pruning=pruning_table(arch, used, window is not None, own),
        pruning_window_given=window is not None,
        own_nlc_window=own,
        launch=launch,
        health=health(arch),
        savings=savings,
        provenance=provenance(arch),
        ranking=predictor_ranking(corr, scores),
        best=best_architectures(arch),
        selected_curves=chosen,
        ceiling=ceiling,
    )


# The steps of ``analyse`` its progress counts, in order.
ANALYSIS_STEPS = (
    "correlations",
    "seed-noise ceiling",
    "granulated Kendall",
    "paired effects",
    "NLC window",
    "window predictors",
    "error EDFs",
    "good ranges",
    "training curves",
    "pruning",
)


# The architectures whose runs and selected curve the page holds for its detail panel: all of a study up to this
# many, else this many of the lowest test error. Every architecture keeps its point, spec and metrics; the runs
# would be 40 rows each (4 million at 100,000 architectures: a page of hundreds of MB, written for a minute).
DETAIL_MAX = 2_000


def detailed(arch: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``arch`` whose runs and curve the page holds (``DETAIL_MAX``): every row, or the ``DETAIL_MAX``
    of the lowest test error (ties by arch_id and index)."""
    if len(arch) <= DETAIL_MAX:
        return arch
    order = [c for c in ("test_error", "arch_id", "index") if c in arch.columns]
    return arch.sort_values(order, kind="stable", na_position="last").head(DETAIL_MAX)


def selected_curves(study_dir: str, arch: pd.DataFrame) -> pd.DataFrame:
    """The curves table (``results.read_curves``) of ``arch``'s architectures, of the selected run of each (its
    ``lr_index``) only."""
    if not len(arch) or "lr_index" not in arch.columns:
        return pd.DataFrame()
    curves = read_curves(study_dir, arch["arch_id"].astype(str))
    return of_selected_runs(curves, arch) if len(curves) else curves


def of_selected_runs(curves: pd.DataFrame, arch: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``curves`` of each architecture's selected run: its arch_id at its index (``columns.UNIT_KEY``;
    the arch_id alone in a table without index) and its ``lr_index``."""
    on = [c for c in UNIT_KEY if c in curves.columns and c in arch.columns] + ["lr_index"]
    return curves.merge(arch[on].dropna(), on=on, how="inner")


def pruning_table(arch: pd.DataFrame, used: tuple[float, float], given: bool, own: pd.DataFrame) -> pd.DataFrame:
    """``nlc_pruning`` for the window used and, beside it, the NLC paper's [1, 3] and the study's own good
    range where each is not the one used; ``label`` names each."""
    windows = [
        (
            "given"
            if given
            else ("the study's own" if len(own) and own["source"].iloc[0] == "study" else "the NLC paper's"),
            used,
        )
    ]
    if tuple(used) != tuple(PAPER_WINDOW):
        windows.append(("the NLC paper's", PAPER_WINDOW))
    if len(own) and np.isfinite(own["low"].iloc[0]) and own["low"].iloc[0] < own["high"].iloc[0]:
        band = (float(own["low"].iloc[0]), float(own["high"].iloc[0]))
        if band != tuple(used):
            windows.append(("the study's own" + ("" if bool(own["large_enough"].iloc[0]) else " (not stable)"), band))
    return pd.concat([nlc_pruning(arch, w).assign(label=name) for name, w in windows], ignore_index=True)
