"""The HTML report: one self-contained file (images, CSS and scripts inline, no network) that reads at a glance,
holds every number behind it, and lets the reader explore every architecture (``analysis.interactive``).

The page opens with its contents and, per study, what predicts test error and which architectures are best (the
predictor ranking's first rows, the same table the ranking chart draws, and the lowest test errors). With several
studies, they follow side by side: each named by its directory (``sections.study_labels``) with its dataset,
their test errors, the keys of their configs that differ, their good ranges and error EDFs. Then a section per
study: status, provenance and config, what predicts test error (correlations, granulated Kendall, lift over
trivial baselines, window scores), the design space (error EDFs, good ranges, the study's own NLC window),
paired sibling effects, NLC pruning (and, for a study pruned at launch, what was pruned by which window),
training curves, the NLC paper's figures and more. Every statistic covers the trained architectures (a study
pruned at launch measured the others at initialization only).

This module is the page: the numbers come from ``analysis.sections`` (``analyse``: one study's, computed once),
the figures from their declarations (``analysis.figures``), drawn by ``analysis.drawing`` (which can also write
each as a file). The page is a list of sections (``STUDY_SECTIONS``, ``COMPARISON_SECTIONS``): each a heading,
its tables and notes, and then every figure whose declaration names the section, in declaration order; adding
a section is one entry there. The HTML pieces the reproductions' pages share are in ``analysis.html``.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass
from functools import partial
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import yaml

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, Integer, check
from archstudy.study.experiment.config import N_BOOT_MAX, REPORT_NAME, package_version
from archstudy.study.experiment.good_range import STABILITY_DRAWS

from .columns import AXES, PREDICTOR_BY_COLUMN
from .drawing import Drawer, FigureJob, check_figures_dir
from .figures import COMPARISON_FIGURES, FIGURES, FigureSpec, fmt_p
from .html import CSS, emphasised, esc, fmt, folded, interval, slug, table, with_interval
from .interactive import DETAIL_HTML, explore_html, scripts_html, spec_parts
from .plotting import FORMATS
from .predict import predict_html, predictor_from
from .pruning import check_window
from .results import Results, load_results, local_root
from .sections import StudyAnalysis, analyse, study_labels
from .edf import permutation_note
from .stats import FEW, bootstrap_note

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_SECTIONS",
    "N_BOOT_MAX",
    "STUDY_SECTIONS",
    "PageSection",
    "StudyAnalysis",
    "analyse",
    "check_out",
    "render",
    "write_report",
]


# -- progress -------------------------------------------------------------------------------------------------

# What a progress callback of the report (``write_report``'s ``progress``) and of ``predict_study`` is called with:
# a step's label, and where the step's work can be counted, how much of it is done of how much.
ProgressFn = Callable[[str, int | None, int | None], None]
TICK_S = 0.5  # a terminal's line is redrawn at least this often (study.execution.progress's TICK_S)
LOG_COUNTS_S = 2.0  # in a log, a counted step's line at most this often (study.execution.progress's LOG_COUNTS_S)


class ReportProgress:
    """The report's progress on ``stream`` (stderr by default), as ``study.execution.progress`` shows a study's (a
    module of the study library, which the analysis layer may not import: it imports sampling and study.experiment only,
    docs/layout.md): on a terminal one tqdm line, the step's label, its count and the time left (tqdm's estimate from
    the rate so far) where the step can be counted, and the elapsed time, redrawn every ``TICK_S`` by a thread so that
    nothing is silent while a step blocks (reading a study, waiting for the held-out evaluation); erased at the end. In
    a log (stream not a terminal) a plain line with the step and its count whenever ``LOG_COUNTS_S`` passed without one
    and the step or its count changed; a command refused within that time (a missing study) prints its one error line
    only. Called as ``progress(label, done, total)``."""

    def __init__(self, stream: Any = None) -> None:
        import sys
        import threading
        import time

        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.state: tuple[str, int | None, int | None] | None = None  # the step now
        self.shown: tuple[str, int | None, int | None] | None = None  # the step the log's last line said
        self.last = time.monotonic()
        self.bar: Any = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="archstudy-report", daemon=True)
        self.ticker.start()

    def _tick(self) -> None:
        import time

        while not self.stop.wait(TICK_S):
            with self.lock:
                if self.tty:
                    if self.bar is not None:
                        self.bar.refresh()
                elif self.state not in (None, self.shown) and time.monotonic() - self.last >= LOG_COUNTS_S:
                    self._line()

    def _line(self) -> None:
        import time

        assert self.state is not None
        label, done, total = self.state
        counted = f" {done:,}/{total:,}" if total and done is not None else ""
        self.stream.write(f"archstudy: {label}{counted} ...\n")
        self.stream.flush()
        self.shown, self.last = self.state, time.monotonic()

    def __call__(self, label: str, done: int | None = None, total: int | None = None) -> None:
        with self.lock:
            same = self.state is not None and self.state[0] == label
            self.state = (label, done, total)
            if not self.tty:
                return
            from tqdm import tqdm

            if same and self.bar is not None:
                self.bar.n = done or 0
                self.bar.refresh()
                return
            if self.bar is not None:
                self.bar.close()
            counted = "{n_fmt}/{total_fmt} {elapsed} (about {remaining} left)"
            self.bar = tqdm(
                total=total,
                initial=done or 0,
                desc=label,
                file=self.stream,
                bar_format="archstudy: {desc} " + (counted if total else "{elapsed}"),
                leave=False,
                mininterval=0.0,
                dynamic_ncols=True,
            )

    def close(self) -> None:
        """Ends the ticker and erases the line."""
        self.stop.set()
        self.ticker.join()
        with self.lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


# -- rendering ------------------------------------------------------------------------------------------------


def status_box(s: StudyAnalysis) -> str:
    """The boxes above a study's numbers: complete or partial, pruned at launch, files left out, caveats."""
    r = s.results
    n = r.n_finished
    planned = "unknown" if r.planned is None else f"{r.planned:,}"
    if r.complete:
        head = (
            f'<div class="box done"><b>Complete:</b> all {planned} planned architectures are finished or failed.</div>'
        )
    else:
        why = "" if r.planned is not None else f" ({esc(r.planned_note)})"
        head = (
            f'<div class="box partial"><b>Partial study:</b> {n:,} of {planned} planned architectures finished'
            f"{why}, {r.n_failed:,} failed, {r.in_progress:,} in progress. Every number below covers the "
            f"finished architectures only.</div>"
        )
    pruned = len(r.pruned)
    if pruned:
        head += (
            f'<div class="box partial"><b>Pruned at launch:</b> {pruned:,} of {n:,} finished architectures were '
            "measured at initialization and not trained (their NLC lay outside the study's window, see NLC-guided "
            "pruning). Every statistic below covers the trained architectures only, all inside the window.</div>"
        )
    return head + excluded_html(r) + caveats_html(s)


def status_table(s: StudyAnalysis) -> str:
    """The counts: planned, finished (pruned, trained), failed, in progress, diverged, flagged."""
    r, h = s.results, s.health
    n = r.n_finished
    planned = "unknown" if r.planned is None else f"{r.planned:,}"
    pruned = len(r.pruned)
    rows = [
        ["planned", planned],
        ["finished", fmt(n)],
        *(
            [
                ["&nbsp;&nbsp;pruned at launch (measured, not trained)", fmt(pruned)],
                ["&nbsp;&nbsp;trained", fmt(n - pruned)],
            ]
            if s.launch is not None or pruned
            else []
        ),
        ["failed (after retries)", fmt(r.n_failed)],
        ["in progress (checkpoint present)", fmt(r.in_progress)],
        ["diverged (every run)", fmt(h["all_diverged"])],
        ["flagged", fmt(h["flagged"])],
        ["&nbsp;&nbsp;selected run among the 5 lowest/highest rates", fmt(h["lr_edge"])],
        ["&nbsp;&nbsp;non-finite output at initialization", fmt(h["nonfinite_init"])],
        ["high output bias (> 1000) at initialization", fmt(h["high_bias"])],
    ]
    note = f'<p class="muted">Planned count: {esc(r.planned_note)}.</p>'
    return table(["architectures", "count"], rows) + note


def excluded_html(r: Results) -> str:
    """Result files left out of every number: those of another science config (``Results.excluded``: a study
    holds one), and those that cannot be read whole (``Results.corrupt``: a resume redoes them)."""
    out = ""
    corrupt = getattr(r, "corrupt", {})
    if corrupt:
        first, problem = next(iter(corrupt.items()))
        out += (
            f'<div class="box partial"><b>Unreadable:</b> {len(corrupt):,} result file(s) left out of every number '
            f"below, e.g. {esc(first)}: {esc(problem)} (`archstudy status` lists them; `archstudy resume` redoes "
            "them).</div>"
        )
    if not r.excluded:
        return out
    reasons = sorted(set(r.excluded.values()))
    n = sum(1 for k in r.excluded if k.startswith("architectures/"))
    return out + (
        f'<div class="box partial"><b>Left out:</b> {len(r.excluded):,} result file(s) ({n:,} '
        f"architecture(s)) that do not belong to this study: {esc('; '.join(reasons))}. They are in none of "
        "the numbers below (`archstudy status` lists them; a resume refuses to run beside them).</div>"
    )


# The works the notes cite besides the NLC paper.
JIANG = "Jiang et al., <i>Fantastic Generalization Measures and Where to Find Them</i>, 2020"
RADOSAVOVIC_2019 = "Radosavovic et al., <i>On Network Design Spaces for Visual Recognition</i>, 2019"
RADOSAVOVIC_2020 = "Radosavovic et al., <i>Designing Network Design Spaces</i>, 2020"


def caveats_html(s: StudyAnalysis) -> str:
    """Warnings that change how every number below reads: no architecture trained (every run of every
    architecture diverged: the test errors are an untrained network's), or too few architectures."""
    n = len(s.arch)
    boxes = []
    diverged = s.health["all_diverged"]
    if n and diverged == n:
        boxes.append(
            f"<b>No architecture trained:</b> every run of all {n:,} finished architectures diverged, so "
            "each test error is that of the untrained network and the statistics below say nothing about "
            "what predicts the error of a trained one. Check the protocol's learning rates."
        )
    elif n and diverged / n > 0.5:
        boxes.append(f"<b>Most architectures did not train:</b> {diverged:,} of {n:,} diverged at every learning rate.")
    if 0 < n < FEW:
        boxes.append(
            f"<b>Few architectures:</b> {n} finished; with fewer than {FEW} no correlation is "
            "significant and the intervals are wide. Read the p-values, not the coefficients."
        )
    return "".join(f'<div class="box partial">{b}</div>' for b in boxes)


def provenance_html(s: StudyAnalysis) -> str:
    r, p, cfg = s.results, s.provenance, s.results.config

    def distinct(col: str) -> str:
        counts = p[col]
        return "–" if counts is None else ", ".join(f"{esc(k)} ({v})" for k, v in counts)

    def value(key: str) -> str:  # a config value; a mapping (e.g. a custom protocol) as JSON, folded when long
        v = cfg.get(key, "–")
        if isinstance(v, (dict, list)):
            return folded(json.dumps(v, default=str), full=json.dumps(v, default=str, indent=1))
        return folded(str(v))

    finished = p["finished"]
    rows = [
        ["study", esc(r.study_dir)],
        ["dataset", esc(r.dataset)],
        ["study seed", value("seed")],
        ["preset", value("preset")],
        ["parameter budget", value("param_budget")],
        ["protocol", value("protocol")],
        ["siblings", value("siblings")],
        ["package version (study.yaml)", value("package_version")],
        ["package version (architectures)", distinct("package_version")],
        ["created", value("created")],
        ["finished between", f"{esc(finished[0])} and {esc(finished[1])}" if finished else "–"],
        ["machines (host)", distinct("host")],
        ["devices", distinct("device")],
        ["recorded compute", f"{fmt(p['compute_h'])} h" if p["compute_h"] is not None else "–"],
    ]
    return table(None, rows, left=2, cls="kv")


def config_html(cfg: dict[str, Any]) -> str:
    text = yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)
    return f"<details><summary>study.yaml</summary><pre>{esc(text)}</pre></details>"


def correlations_html(s: StudyAnalysis) -> str:
    c = s.corr
    if not len(c):
        return "<p>No finished architectures yet.</p>"
    chart = dict(zip(s.ranking["predictor"], s.ranking["rank"])) if len(s.ranking) else {}
    measured = (
        c[c["n"] >= 3]
        .assign(chart=lambda t: t["predictor"].map(chart))
        .sort_values(["chart", "rank"], kind="stable", na_position="last")
    )
    missing = c[c["n"] < 3]
    rows, classes = [], []
    for _, r in measured.iterrows():
        p = PREDICTOR_BY_COLUMN.get(r["predictor"])
        rows.append(
            [
                fmt(int(r["chart"])) if np.isfinite(r["chart"]) else "–",
                esc(r["label"]),
                esc(r["kind"]),
                "log" if r["log"] else "linear",
                fmt(int(r["n"])),
                with_interval(r["pearson"], r["pearson_lo"], r["pearson_hi"]),
                fmt_p(r["pearson_p"]),
                with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                fmt_p(r["spearman_p"]),
                with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                f"{fmt_p(r['kendall_p'])} ({fmt_p(r.get('kendall_p_holm', np.nan))})",
                psi_cell(r),
                fmt(r["psi_tau_b"], 2),
                with_interval(r["lift"], r["lift_lo"], r["lift_hi"]),
            ]
        )
        classes.append("baseline" if p is not None and p.kind == "baseline" else "")
    best = measured["best_baseline"].dropna()
    out = table(
        [
            "rank",
            "predictor",
            "kind",
            "scale",
            "n",
            "Pearson r",
            "p",
            "Spearman ρ",
            "p",
            "Kendall τ",
            "p (Holm)",
            "granulated Kendall Ψ",
            "Ψ over defined cells (τ-b)",
            "lift over best baseline",
        ],
        rows,
        left=4,
        row_classes=classes,
    )
    notes = [
        "Pearson on log10 of the predictor where the scale says log (the NLC paper correlates on the log of "
        "what it plots on a log axis); intervals: percentile bootstrap over architectures "
        f"(the random draws, n above); rank: the place in the ranking chart below (by |τ|, beside the window "
        "scores). Lift = |τ| − |τ| of the best trivial baseline "
        f"({esc(best.iloc[0]) if len(best) else '–'}), with its paired bootstrap interval.",
        f"Ψ ({JIANG}, section 6.1, eq. 4-5, as defined there): the mean over sampled axes of the mean, "
        "over the cells of architectures that differ only along that axis, of τ = the average sign agreement of "
        "all pairs in the cell (ties count 0); every cell counts, one where the predictor is constant scores 0. "
        "Interval: cells resampled within each axis. Such cells come from sibling architectures (a random draw "
        "almost never repeats every other axis), so without siblings Ψ is undefined (–). The τ-b column is "
        "another statistic: it averages τ-b over the cells where τ-b is defined, so it skips the cells where the "
        "predictor is constant (a trivial baseline such as depth is constant in every sibling cell but the depth "
        "axis', and there the two differ most).",
    ]
    sampled = bootstrap_note(c)  # a large study's bootstrap ran on a subsample: say so
    if sampled:
        notes.append(esc(sampled))
    if len(missing):
        notes.append(
            "Fewer than 3 finite values (not switched on, or not finite where measured): "
            + ", ".join(esc(v) for v in missing["label"])
            + "."
        )
    return out + "".join(f'<p class="muted">{n}</p>' for n in notes)


def psi_cell(r: pd.Series) -> str:
    """Jiang et al.'s Ψ with its interval and what it averages."""
    if not r["psi_cells"]:
        return "–"
    ci = interval(r["psi_lo"], r["psi_hi"])
    return (
        f'{fmt(r["psi"], 2)}{"<br>" + ci if ci else ""}<br><span class="ci">{int(r["psi_axes"])} axes, '
        f"{int(r['psi_cells'])} cells ({int(r['psi_constant_cells'])} constant)</span>"
    )


def psi_html(s: StudyAnalysis) -> str:
    t = s.psi
    if not len(t) or not (t["cells"] > 0).any():
        return "<p>No cells: no two architectures differ along exactly one sampled axis (turn siblings on).</p>"
    axes = [a for a in AXES if (t[t["axis"] == a]["cells"] > 0).any()]
    order = s.corr[s.corr["n"] >= 3].sort_values("rank")["predictor"].tolist()
    rows = []
    for pred in order:
        sub = t[t["predictor"] == pred].set_index("axis")
        label = PREDICTOR_BY_COLUMN[pred].label if pred in PREDICTOR_BY_COLUMN else pred
        rows.append(
            [esc(label)]
            + [
                f"{fmt(sub.at[a, 'psi'], 2)} ({int(sub.at[a, 'cells'])}"
                + (f", {int(sub.at[a, 'constant_cells'])} constant)" if sub.at[a, "constant_cells"] else ")")
                if sub.at[a, "cells"]
                else "–"
                for a in axes
            ]
        )
    return table(["predictor"] + [esc(a) for a in axes], rows) + (
        f'<p class="muted">ψ of each axis ({JIANG}, eq. 4): the mean over the cells where only that axis '
        "varies of τ, the average sign agreement of predictor and test error over the cell's pairs (number of "
        "cells in brackets; a cell where the predictor is constant scores 0 and is counted as constant).</p>"
    )


def paired_html(s: StudyAnalysis) -> str:
    p = s.paired
    if not len(p) or not (p["n_pairs"] > 0).any():
        return "<p>No sibling pairs in this study (siblings are off, or none finished yet).</p>"
    rows = []
    for _, r in p[p["n_pairs"] > 0].iterrows():
        level = "–" if not np.isfinite(r["ci_level"]) else f"{100 * r['ci_level']:.1f}%"
        effect = f"{esc(r['a'])} → {esc(r['b'])}" + (f" ({esc(r['context'])})" if r["context"] else "")
        rows.append(
            [
                esc(r["axis"]),
                effect,
                fmt(int(r["n_pairs"])),
                fmt(r["median"], 4),
                f"{interval(r['ci_lo'], r['ci_hi'], 4) or '–'} ({level})",
                f"{int(r['n_pos'])} / {int(r['n_neg'])} / {int(r['n_zero'])}",
                f"{fmt_p(r['p_sign'])} ({fmt_p(r.get('p_holm', np.nan))})",
            ]
        )
    return table(
        [
            "axis",
            "A → B",
            "pairs",
            "median Δ test error (B − A)",
            "interval for the median (coverage)",
            "B worse / better / equal",
            "sign test p (Holm)",
        ],
        rows,
        left=2,
    ) + (
        '<p class="muted">Pairs: architectures of the same draw that differ only along the axis (everything else, '
        "the seed included, shared; the width re-solved to the parameter budget). In brackets, what else the pair "
        "differs in or shares: a GmP sibling of a spec with <code>imn: auto</code> (every spec from before that "
        "field, and both presets) also switches input mean normalization (Chen and Ge, eq. 16), as GmP always "
        "did; with <code>imn</code> off, GmP from the SP weights is the same function as its SP twin at "
        "initialization (for relu and abs without norms or skips). Interval: the distribution-free order-statistic "
        "interval that inverts the sign test (at least 95%; – with fewer than 6 pairs).</p>"
    )


def launch_how(w: dict[str, Any]) -> str:
    """Where the window of pruning at launch (``sections.launch_window``) came from, in one clause."""
    if w["given"]:
        return "given (<code>nlc_window</code>, <code>--nlc-window</code>)"
    why = (
        "its NLC good range"
        if w["source"] == "study"
        else f"the NLC paper's, as the pilot's own band is not usable: {esc(w['reason'])}"
    )
    return (
        f"<code>auto</code>: from the pilot, the {w['pilot']:,} finished architectures of indices below "
        f"{w['pilot_indices']:,}, all trained; {why}"
    )


def launch_html(s: StudyAnalysis) -> str:
    """What a study pruned at launch pruned, by which window, and the compute that saved (estimated)."""
    w, r, c = s.launch, s.results, s.savings
    if w is None:
        return ""
    pruned, trained = r.pruned, r.trained
    out = [
        f"<p><b>Pruned at launch</b> with the NLC window {window_text(w['lo'], w['hi'])}, {launch_how(w)}: "
        f"{len(pruned):,} of {r.n_finished:,} finished architectures were measured at initialization "
        f"({fmt(c['measure_h'])} h to build and measure them) and not trained; {len(trained):,} trained. Training "
        f"time saved, estimated: {fmt(c['saved_h'])} h (their FLOPs per example times the trained architectures' "
        f"training seconds per FLOP, {fmt(c['s_per_flop'] * 1e9, 3)} s per GFLOP: an estimate, since a pruned "
        "architecture might have trained for more or fewer epochs than a trained one).</p>"
    ]
    if len(pruned):
        show = pruned.sort_values(["index", "variant", "arch_id"]).head(100)
        rows = [
            [
                fmt(int(x["index"])),
                esc(x["arch_id"]),
                esc(x["variant"]),
                fmt(x["nlc"], 3),
                "below" if x["nlc"] < w["lo"] else "above" if x["nlc"] > w["hi"] else "not finite",
            ]
            for _, x in show.iterrows()
        ]
        more = f'<p class="muted">and {len(pruned) - len(show):,} more.</p>' if len(pruned) > len(show) else ""
        out.append(table(["index", "arch_id", "variant", "NLC at init", "window"], rows, left=3) + more)
    return "".join(out)


def pruning_html(s: StudyAnalysis) -> str:
    p = s.pruning
    if not len(p):
        return launch_html(s) + "<p>No trained architectures yet.</p>"
    rows = [
        [
            esc(r["label"]) + (" (used)" if k == 0 else ""),
            window_text(r["lo"], r["hi"]),
            fmt(int(r["n"])),
            fmt(int(r["n_kept"])),
            fmt(int(r["n_skipped"])),
            f"{fmt(r['saved_s'] / 3600)} h of {fmt(r['total_s'] / 3600)} h ({fmt(100 * r['saved_fraction'], 1)}%)",
            fmt(r["best_error"], 4),
            fmt(r["best_error_kept"], 4),
            fmt(r["regret"], 4),
        ]
        for k, (_, r) in enumerate(p.iterrows())
    ]
    return (
        launch_html(s)
        + window_choice_html(s)
        + table(
            [
                "window",
                "NLC window",
                "architectures",
                "kept",
                "skipped",
                "training time saved",
                "best test error",
                "best kept",
                "regret",
            ],
            rows,
            left=2,
        )
        + (
            '<p class="muted">An architecture is trained only if its NLC at initialization lies in the window (the '
            "NLC paper: optimal test error needs an initial NLC of about 1 to 3). The NLC is measured before training, "
            "so skipping saves the recorded training time; regret = best test error among the kept − best overall. "
            "All finished architectures count, siblings included.</p>"
        )
    )


def window_text(lo: float, hi: float) -> str:
    """[lo, hi] with 3 significant digits ("[0.912, 3.47]"; the paper's "[1, 3]")."""
    return f"[{lo:.3g}, {hi:.3g}]"


def window_choice_html(s: StudyAnalysis) -> str:
    """Which window the pruning analysis uses, and why."""
    w = s.own_nlc_window
    if s.pruning_window_given:
        return f"<p>Window {window_text(*s.pruning_window)}: given (<code>--nlc-window</code>).</p>"
    if not len(w):
        return "<p>Window: the NLC paper's [1, 3] (no finite NLC and test error to find the study's own).</p>"
    r = w.iloc[0]
    if r["large_enough"]:
        return (
            f"<p>Window: the study's own {window_text(r['lo'], r['hi'])}, its NLC's good range (the paper's "
            "is [1, 3]): the study is large enough, each end moving by at most "
            f"{fmt(max(r['sd_low'], r['sd_high']), 2)} decades over resamples of the study (see Good ranges).</p>"
        )
    return (
        f"<p>Window: the NLC paper's [1, 3]. The study is not large enough for its own window: {esc(r['reason'])}.</p>"
    )


def windows_html(s: StudyAnalysis) -> str:
    """The window scores beside the raw metrics, out of sample."""
    w = s.window_scores
    if not len(w):
        return "<p>Too few architectures to fit a window (at least 8 with a finite metric and test error).</p>"
    w = w.assign(key=(~w["u_shaped"]).astype(int)).sort_values(["key", "gain"], ascending=[True, False])
    rows = [
        [
            esc(r["label"]),
            "yes" if r["u_shaped"] else "no",
            fmt(int(r["n"])),
            fmt(r["centre"], 3),
            f"{fmt(r['tau'], 2)} ± {fmt(r['tau_sd'], 2)}<br>{interval(r['tau_lo'], r['tau_hi'])}",
            f"{fmt(r['raw_tau'], 2)} ± {fmt(r['raw_tau_sd'], 2)}",
            with_interval(r["gain"], r["gain_lo"], r["gain_hi"]),
            fmt(r["kendall_full"], 2),
        ]
        for _, r in w.iterrows()
    ]
    splits = int(w["splits"].max()) if len(w) else 0
    return table(
        [
            "metric",
            "U-shaped",
            "n",
            "window centre",
            "τ of the window distance (held out)",
            "τ of the raw metric (same halves)",
            "gain |τ| − |τ raw|",
            "τ raw, all",
        ],
        rows,
    ) + (
        '<p class="muted">Window distance: |log10 x − centre| (linear for metrics not on a log scale), the centre '
        "being the middle of the metric's good range fitted on a random half of the architectures; Kendall τ with "
        f"test error on the other half; {splits} random splits: mean ± sd, bracket: the central 95% of splits. "
        "The raw metric's τ is taken on the same held-out halves. U-shaped: at least 10% of the architectures lie "
        "on each side of the metric's good range; those, and the NLC, join the predictor ranking above (green).</p>"
    )


def edf_html(s: StudyAnalysis) -> str:
    e = s.edf
    if e is None or not len(e.levels):
        return "<p>No sampled axis has two levels among the finished random draws.</p>"
    ks = e.ks
    rows = []
    for axis in dict.fromkeys(e.levels["axis"]):
        lv = e.levels[e.levels["axis"] == axis]
        k = ks[ks["axis"] == axis]
        top = k.loc[k["ks"].idxmax()] if len(k) else None
        differ = int(lv["bins"].max()) > 1
        rows.append(
            [
                esc(axis),
                "<br>".join(
                    f"{esc(r['level'])}: {int(r['n'])} | {fmt(r['min'], 3)} | {fmt(r['mean'], 3)}"
                    for _, r in lv.iterrows()
                ),
                "–" if top is None else f"{fmt(top['ks'], 2)} ({esc(top['a'])} vs {esc(top['b'])})",
                "–" if top is None else f"{fmt_p(top['p'])} ({fmt_p(top.get('p_holm', np.nan))})",
                "levels of one size"
                if not differ
                else "–"
                if top is None
                else f"{fmt(k['ks_normalized'].max(), 2)} "
                f"(p ≈ {fmt_p(k.loc[k['ks_normalized'].idxmax(), 'p_normalized'])}, Holm "
                f"{fmt_p(k.loc[k['ks_normalized'].idxmax()].get('p_normalized_holm', np.nan))})",
            ]
        )
    return table(
        [
            "axis",
            "level: n | min | mean test error",
            "largest KS",
            "p (KS test; Holm)",
            f"largest KS, normalized by {esc(e.complexity)}",
        ],
        rows,
        left=2,
    ) + (
        f'<p class="muted">Error EDFs ({RADOSAVOVIC_2019}, section 3) of the random draws per level of each '
        "sampled axis (depth in bins). KS: the largest distance between two levels' EDFs, with scipy's two-sample "
        "p-value. Normalized: each level reweighted so that its distribution of the complexity column is uniform "
        "over the complexity bins (a tenth of a decade) that every level occupies; levels of one size (all in "
        "one bin, as at one parameter budget) have normalized EDFs equal to their EDFs. Its p-value is "
        "asymptotic with Kish's effective sample sizes (approximate).</p>"
        + (f'<p class="muted">{esc(note)}</p>' if (note := permutation_note(e)) else "")
    )


def good_ranges_html(s: StudyAnalysis) -> str:
    g = s.good
    if not len(g):
        return "<p>No finished architectures yet.</p>"
    g = g[(g["n"] >= 3) & np.isfinite(g["low"])]
    rows, classes = [], []
    for _, r in g.iterrows():
        p = PREDICTOR_BY_COLUMN.get(r["factor"])
        rows.append(
            [
                esc(r["label"]),
                fmt(int(r["n"])),
                fmt(r["low"], 3),
                fmt(r["best"], 3),
                fmt(r["high"], 3),
                f"{fmt(r['min'], 3)} – {fmt(r['max'], 3)}",
                f"{fmt(100 * r['below'], 0)}% / {fmt(100 * r['above'], 0)}%",
                "yes" if r["u_shaped"] else "no",
            ]
        )
        classes.append("baseline" if p is not None and p.kind == "baseline" else "")
    return (
        nlc_window_html(s)
        + table(
            ["factor", "n", "low", "best", "high", "observed range", "below / above", "U-shaped"],
            rows,
            row_classes=classes,
        )
        + (
            f'<p class="muted">pycls\'s empirical bootstrap ({RADOSAVOVIC_2020}, section 3.1): 2,500 subsamples of '
            "25% of the random draws (with replacement), the factor's value at each subsample's lowest test error; low "
            "and high are the 2.5th and 97.5th percentiles of those values and best their median (on a log scale "
            "where the factor is plotted on one). Below / above: the share of all architectures outside the range.</p>"
        )
    )


def nlc_window_html(s: StudyAnalysis) -> str:
    w = s.own_nlc_window
    if not len(w):
        return ""
    r = w.iloc[0]
    if not np.isfinite(r["low"]):
        return ""
    verdict = (
        "large enough: it is the pruning analysis' default window"
        if r["large_enough"]
        else f"not large enough to replace the paper's window: {esc(r['reason'])}"
    )
    sd = (
        f", each end moving by {fmt(r['sd_low'], 2)} / {fmt(r['sd_high'], 2)} decades (root mean square) over "
        f"{STABILITY_DRAWS} resamples of the study"
        if np.isfinite(r["sd_low"])
        else ""
    )
    return (
        f'<div class="box {"done" if r["large_enough"] else "partial"}"><b>The study\'s own NLC window:</b> '
        f"{window_text(r['low'], r['high'])} (best {r['best']:.3g}), beside the NLC paper's [1, 3]; "
        f"{fmt(int(r['n']))} architectures{sd}; {verdict}.</div>"
    )


def failed_html(s: StudyAnalysis) -> str:
    f = s.results.failed
    if not f:
        return ""
    rows = [
        [fmt(int(x.get("index", -1))), esc(x.get("arch_id", "")), esc(x.get("reason", "")), esc(x.get("attempts", "–"))]
        for x in f
    ]
    return "<h3>Failed architectures</h3>" + table(["index", "arch_id", "reason", "attempts"], rows, left=3)


# -- the page: its sections, each a heading, its tables and notes, and the figures declared in it -----------------


@dataclass(frozen=True)
class PageSection:
    """A section of the page: ``key`` (what a figure declaration names as its ``section``, and the anchor of its
    heading), the heading and the HTML of its tables and notes (``html``: of a ``StudyAnalysis``, or of the studies
    side by side; None: figures only). The figures declared in it follow, in declaration order."""

    key: str
    title: str
    html: Callable[..., str] | None = None
    short: str = ""  # its name in the navigation bar (default: the title)


def status_part_html(s: StudyAnalysis) -> str:
    """The counts of the status table beside the provenance, then study.yaml and the failed architectures."""
    return (
        f'<div class="cols"><div>{status_table(s)}</div><div>{provenance_html(s)}</div></div>'
        + config_html(s.results.config)
        + failed_html(s)
    )


# A study's section, after its status box (``FigureSpec.section`` names one of these keys).
STUDY_SECTIONS: tuple[PageSection, ...] = (
    PageSection("status", "Status and provenance", status_part_html, short="Status"),
    PageSection("predictors", "What predicts test error", correlations_html, short="Predictors"),
    PageSection("explore", "Explore every architecture (interactive)", explore_html, short="Explore"),
    PageSection("windows", "Window predictors", windows_html, short="Windows"),
    PageSection(
        "predict", "Predicting test error from everything measured at initialization", predict_html, short="Prediction"
    ),
    PageSection("psi", "Granulated Kendall coefficient by axis", psi_html, short="Ψ by axis"),
    PageSection("edf", "Error distributions by axis (EDFs)", edf_html, short="EDFs"),
    PageSection("good-ranges", "Good ranges", good_ranges_html, short="Good ranges"),
    PageSection("paired", "Paired effects of sibling architectures", paired_html, short="Paired effects"),
    PageSection("pruning", "NLC-guided pruning", pruning_html, short="Pruning"),
    PageSection("curves", "Training curves", short="Curves"),
    PageSection("paper", "The NLC paper's figures", short="Paper figures"),
    PageSection("more", "More predictors", short="More"),
)
# The parts shown for a study where no architecture has finished training.
EMPTY_PARTS = ("status",)


def figure_job(s: StudyAnalysis, spec: FigureSpec) -> FigureJob:
    """The study's figure ``spec``, drawn from the study's analysis (a ``FigureData``), as a job of the drawer: its
    id in the page is ``<study anchor>-<key>``."""
    return FigureJob(
        f"{s.anchor}-{spec.key}",
        spec.key,
        spec.caption,
        s.results.study_dir,
        partial(spec.draw, s),
        skip=spec.skip(s),
        note_skip=spec.note_skip,
    )


def study_jobs(s: StudyAnalysis, without: str | None = None) -> list[tuple[str, FigureJob]]:
    """(section key, job) of every figure of a study with trained architectures, in declaration order
    (``without``: leaving out the figures that need that field of ``FigureData``)."""
    if not len(s.arch):
        return []
    return [(f.section, figure_job(s, f)) for f in FIGURES if without not in f.needs]


def figure_html(s: StudyAnalysis, spec: FigureSpec, drawer: Drawer | None = None) -> str:
    """One figure of the study (``Drawer.html``): the image, or the one line that says why it is not drawn."""
    return (drawer or Drawer()).html(figure_job(s, spec))


def section_html(s: StudyAnalysis, drawer: Drawer | None = None) -> str:
    """A study's section: its heading (name, dataset, directory), its status box, and every part."""
    drawer = drawer or Drawer()
    r = s.results
    jobs = study_jobs(s)
    parts = [
        f'<section id="{s.anchor}"><h2>{esc(s.name)} <span class="muted">{esc(r.dataset)} · '
        f"{esc(r.study_dir)}</span></h2>",
        status_box(s),
    ]
    trained = len(s.arch) > 0
    for part in STUDY_SECTIONS:
        if not trained and part.key not in EMPTY_PARTS:
            continue
        parts += [f'<h3 id="{s.anchor}-{part.key}">{part.title}</h3>', *([part.html(s)] if part.html else [])]
        parts += [html for key, job in jobs if key == part.key if (html := drawer.html(job))]
    if not trained:
        parts.append("<p>No architecture has finished training yet: no statistics or figures.</p>" + launch_html(s))
    parts.append("</section>")
    return "\n".join(parts)


def _tau_text(r: pd.Series) -> str:
    ci = interval(r["abs_lo"], r["abs_hi"])
    return f"{r['abs_tau']:.2f}{' ' + ci if ci else ''}"


def best_predictor_html(s: StudyAnalysis) -> str:
    """The first rows of the predictor ranking (the ranking chart's table): the best predictor named, the best
    trivial baseline beside it, and the top five."""
    rk = s.ranking
    if not len(rk):
        return "<p>No predictor has three finite values with a test error yet.</p>"
    top = rk[rk["rank"] == 1]
    link = f'<a href="#{s.anchor}-predictors">ranking chart</a>'
    if len(top) == 1:
        head = (
            f"<p>Best predictor: <b>{esc(top['label'].iloc[0])}</b>, |Kendall τ| with test error "
            f"{_tau_text(top.iloc[0])}, first in the {link}."
        )
    else:
        head = (
            f"<p>Best predictors, tied first in the {link}: "
            + ", ".join(f"<b>{esc(v)}</b>" for v in top["label"])
            + f" (|Kendall τ| {top['abs_tau'].iloc[0]:.2f})."
        )
    adjusted = rk["p_holm"].to_numpy(np.float64) if "p_holm" in rk.columns else np.array([])
    adjusted = adjusted[np.isfinite(adjusted)]
    if len(adjusted) and adjusted.min() >= 0.05:
        # Ranking many predictors, the first has an interval away from 0 in about half of the null studies
        # (docs/analysis.md, verdict calibration): only Holm's adjusted p-value is a verdict.
        head += (
            f" No predictor is distinguishable from chance once all {len(adjusted)} are tested (smallest "
            f"Holm-adjusted Kendall p {fmt_p(float(adjusted.min()))}): the order is not a finding."
        )
    base = rk[rk["kind"] == "baseline"]
    if len(base):
        b = base.iloc[0]
        head += f" The best trivial baseline, {esc(b['label'])}, reaches {b['abs_tau']:.2f} (rank {int(b['rank'])})."
    head += "</p>"
    rows = [
        [fmt(int(r["rank"])), esc(r["label"]) + f" ({'+' if r['kendall'] >= 0 else '−'})", esc(r["kind"]), _tau_text(r)]
        for _, r in rk.head(5).iterrows()
    ]
    return head + table(["rank", "predictor (sign of τ)", "kind", "|τ| [95% interval]"], rows, left=3)


def best_architectures_html(s: StudyAnalysis) -> str:
    """The lowest test errors, with what each architecture is."""
    b = s.best
    errors = s.arch["test_error"].to_numpy(np.float64) if len(s.arch) else np.array([])
    errors = errors[np.isfinite(errors)]
    if not len(b) or not len(errors):
        return "<p>No architecture has a test error yet.</p>"
    head = (
        f"<p>Best test error <b>{fmt(float(errors.min()), 3)}</b>, median {fmt(float(np.median(errors)), 3)} "
        f"over {len(errors):,} trained architectures.</p>"
    )
    rows = []
    row_of = {a: k for k, a in enumerate(s.arch["arch_id"].astype(str))}  # its place in the study's data block
    for _, r in b.iterrows():
        t = spec_parts(r)
        variant = "" if r.get("variant", "base") == "base" else f' <span class="ci">{esc(r["variant"])} sibling</span>'
        rows.append(
            [
                fmt(int(r["rank"])),
                fmt(r["test_error"], 3),
                fmt(r["nlc"], 3),
                t["net"],
                esc(t["activation"]),
                esc(t["norm"]),
                esc(t["skip"]),
                esc(t["layers"]),
                f'<a href="#" class="arch" data-study="{esc(s.anchor)}" data-row="{row_of[str(r["arch_id"])]}">'
                f'<code class="id">{esc(r["arch_id"])}</code></a>{variant}',
            ]
        )
    return head + table(
        ["#", "test error", "NLC", "depth × width", "activation", "norm", "skip", "weights, param", "arch_id"],
        rows,
        left=(4, 5, 6, 7, 8),
        cls="words",
    )


def glance_html(sections: list[StudyAnalysis]) -> str:
    """The first screen: per study, what predicts test error and the best architectures."""
    out = ['<section id="glance"><h2>At a glance</h2>']
    for s in sections:
        r = s.results
        planned = "?" if r.planned is None else f"{r.planned:,}"
        state = "complete" if r.complete else "partial"
        out.append(
            f'<div class="study"><h3><a href="#{s.anchor}">{esc(s.name)}</a> <span class="muted">'
            f"{esc(r.dataset)} · {r.n_finished:,} of {planned} architectures · {state}</span></h3>"
            + caveats_html(s)
            + f'<div class="cols"><div><h4>What predicts test error</h4>{best_predictor_html(s)}</div>'
            f'<div class="wide"><h4>Best architectures</h4>{best_architectures_html(s)}</div></div></div>'
        )
    return "\n".join(out + ["</section>"])


def bar_html(sections: list[StudyAnalysis], compare: bool, reproductions: bool) -> str:
    """The navigation bar that stays on screen: the overview, the studies side by side, each study (one study: each
    of its parts) and the reproductions."""
    links = [("glance", "At a glance")]
    if compare:
        links.append(("compare", "Side by side"))
    if len(sections) == 1:
        s = sections[0]
        links += [
            (f"{s.anchor}-{p.key}", p.short or p.title) for p in STUDY_SECTIONS if len(s.arch) or p.key in EMPTY_PARTS
        ]
    else:
        links += [(s.anchor, s.name) for s in sections]
    if reproductions:
        links.append(("reproductions", "Reproductions"))
    items = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in links)
    return f'<nav class="bar"><a href="#top" class="top">↑</a>{items}</nav>'


def toc_html(sections: list[StudyAnalysis], compare: bool) -> str:
    """The table of contents: the overview, the comparison, and every study's parts."""
    items = ['<li><a href="#glance">At a glance</a></li>']
    if compare:
        items.append(
            '<li><a href="#compare">Studies side by side</a>: '
            + " · ".join(f'<a href="#compare-{p.key}">{esc(p.title)}</a>' for p in COMPARISON_SECTIONS)
            + "</li>"
        )
    for s in sections:
        keys = [p for p in STUDY_SECTIONS if len(s.arch) or p.key in EMPTY_PARTS]
        items.append(
            f'<li><a href="#{s.anchor}">{esc(s.name)}</a> <span class="muted">{esc(s.results.dataset)}'
            "</span>: " + " · ".join(f'<a href="#{s.anchor}-{p.key}">{esc(p.title)}</a>' for p in keys) + "</li>"
        )
    return f'<nav class="toc"><b>Contents</b><ul>{"".join(items)}</ul></nav>'


def errors_compare_html(have: list[StudyAnalysis]) -> str:
    """The studies' test errors side by side: best (and which architecture), quartiles, the best predictor."""
    rows = []
    for s in have:
        e = s.arch["test_error"].to_numpy(np.float64)
        e = e[np.isfinite(e)]
        best = s.best.iloc[0] if len(s.best) else None
        top = s.ranking[s.ranking["rank"] == 1] if len(s.ranking) else s.ranking
        rows.append(
            [
                f'<a href="#{s.anchor}">{esc(s.name)}</a>',
                esc(s.results.dataset),
                fmt(len(s.arch)),
                fmt(float(e.min()), 3) if len(e) else "–",
                f"<code>{esc(best['arch_id'])}</code>" if best is not None else "–",
                fmt(float(np.percentile(e, 25)), 3) if len(e) else "–",
                fmt(float(np.median(e)), 3) if len(e) else "–",
                (", ".join(esc(v) for v in top["label"]) + f" ({top['abs_tau'].iloc[0]:.2f})") if len(top) else "–",
            ]
        )
    return table(
        [
            "study",
            "dataset",
            "trained",
            "best test error",
            "its architecture",
            "25th percentile",
            "median",
            "best predictor (|τ|)",
        ],
        rows,
        left=2,
    )


# Keys every study has its own value of: they say nothing about how the studies differ (each study's provenance
# shows them).
PER_STUDY_KEYS = ("created",)


def config_diff_html(have: list[StudyAnalysis]) -> str:
    """The study.yaml keys whose values differ between the studies, one column per study, and the keys they share
    with their one value, in a table of their own (``PER_STUDY_KEYS`` in neither)."""

    def text(v: object) -> str:
        if v is None:
            return "–"
        return json.dumps(v, default=str, sort_keys=True) if isinstance(v, (dict, list)) else str(v)

    configs = [s.results.config for s in have]
    keys = [k for k in dict.fromkeys(k for c in configs for k in c) if k not in PER_STUDY_KEYS]
    differ = [k for k in keys if len({text(c.get(k)) for c in configs}) > 1]
    same = [k for k in keys if k not in differ]
    out = ""
    if differ:
        out += table(
            ["study.yaml key"] + [esc(s.name) for s in have],
            [[f"<code>{esc(k)}</code>"] + [folded(text(c.get(k))) for c in configs] for k in differ],
            left=len(have) + 1,
        )
    else:
        out += "<p>The studies' configs are identical (their creation times aside).</p>"
    if same:
        out += (
            f'<details class="same"><summary>The same in every study: {len(same)} keys</summary>'
            + table(None, [[f"<code>{esc(k)}</code>", folded(text(configs[0].get(k)))] for k in same], left=2, cls="kv")
            + "</details>"
        )
    return out


def good_ranges_compare_html(have: list[StudyAnalysis]) -> str:
    """The good range of every factor per study, one column per study."""
    factors = list(
        dict.fromkeys(f for s in have for f in s.good.loc[(s.good["n"] >= 3) & np.isfinite(s.good["low"]), "factor"])
    )
    rows = []
    for f in factors:
        cells = []
        for s in have:
            r = s.good[s.good["factor"] == f]
            cells.append(
                "–"
                if not len(r) or not np.isfinite(r["low"].iloc[0])
                else f'[{r["low"].iloc[0]:.3g}, {r["high"].iloc[0]:.3g}]<br><span class="ci">best '
                f"{r['best'].iloc[0]:.3g}</span>"
            )
        label = PREDICTOR_BY_COLUMN[f].label if f in PREDICTOR_BY_COLUMN else f
        rows.append([esc(label)] + cells)
    return table(
        ["factor"] + [f'{esc(s.name)}<br><span class="ci">{esc(s.results.dataset)}</span>' for s in have], rows
    )


# The section of several studies side by side (``ComparisonSpec.section`` names one of these keys).
COMPARISON_SECTIONS: tuple[PageSection, ...] = (
    PageSection("errors", "Test errors", errors_compare_html),
    PageSection("config", "How the configs differ", config_diff_html),
    PageSection("good-ranges", "Good ranges", good_ranges_compare_html),
    PageSection("edf", "Error EDFs"),
)


def comparison_html(sections: list[StudyAnalysis], drawer: Drawer | None = None) -> str:
    """Several studies side by side (pycls compares sweeps): their test errors and config differences, the good
    ranges of the same factors, the EDFs of the same axes; each study named by its directory and dataset."""
    drawer = drawer or Drawer()
    have = [s for s in sections if len(s.arch)]
    if len(have) < 2:
        return ""
    jobs = comparison_jobs(sections)
    parts = ['<section id="compare"><h2>Studies side by side</h2>']
    if len(have) < len(sections):
        parts.append(
            '<p class="muted">Without a trained architecture, not compared: '
            + ", ".join(esc(s.name) for s in sections if not len(s.arch))
            + ".</p>"
        )
    for part in COMPARISON_SECTIONS:
        parts += [f'<h3 id="compare-{part.key}">{part.title}</h3>', *([part.html(have)] if part.html else [])]
        parts += [html for key, job in jobs if key == part.key if (html := drawer.html(job))]
    return "\n".join(parts + ["</section>"])


def comparison_jobs(sections: list[StudyAnalysis]) -> list[tuple[str, FigureJob]]:
    """(comparison section key, job) of every figure of the studies side by side (those with trained
    architectures, at least two)."""
    have = [s for s in sections if len(s.arch)]
    if len(have) < 2:
        return []
    return [
        (c.section, FigureJob(c.key, c.key, c.caption, "the comparison", partial(c.draw, have)))
        for c in COMPARISON_FIGURES
    ]


def _check_placement() -> None:
    """Every declared figure names a section of the page (a typo would leave it out of every report)."""
    lost = [f.key for f in FIGURES if f.section not in {p.key for p in STUDY_SECTIONS}]
    lost += [c.key for c in COMPARISON_FIGURES if c.section not in {p.key for p in COMPARISON_SECTIONS}]
    if lost:
        raise LookupError(f"figures declared in no section of the report: {', '.join(lost)}")


_check_placement()


def reproductions_html(directory: str | os.PathLike[str], out: Path) -> str:
    """The verdicts of the paper reproductions (``archstudy reproduce``) whose ``NAME.json`` files lie in
    ``directory``, each linked to its page; only when the user names the directory (``--reproductions``)."""
    found, skipped = [], []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            # "ok" means agrees; a row that cannot tell (its own "verdict") is neither agreeing nor differing
            rows = [(str(r["quantity"]), r["ok"] is True, r.get("verdict")) for r in d["rows"]]
            found.append((path, d, rows))
        except (OSError, ValueError, KeyError, TypeError) as e:
            skipped.append(f"{path.name} ({type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})")
            continue  # another JSON file, not a reproduction's
    if not found:
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        named = f"; its JSON files are not: {', '.join(skipped[:3])}{more}"
        raise SpecError(
            "write_report",
            "reproductions",
            os.fspath(directory),
            "holds no reproduction results (NAME.json files of `archstudy reproduce`)" + (named if skipped else ""),
        )
    table_rows = []
    for path, d, rows in found:
        page = path.with_suffix(".html")
        name = esc(d.get("name", path.stem))
        if page.is_file():
            name = f'<a href="{esc(Path(os.path.relpath(page.resolve(), out.resolve().parent)).as_posix())}">{name}</a>'
        untold = [q for q, _, verdict in rows if verdict == "cannot tell"]
        differ = [q for q, ok, verdict in rows if not ok and verdict != "cannot tell"]
        table_rows.append(
            [
                name,
                emphasised(d.get("paper", "")),
                esc(d.get("source", "")),
                esc(d.get("scale", "")),
                fmt(d.get("seconds")),
                f"{len(rows) - len(differ) - len(untold)} / {len(rows)}",
                esc(", ".join(differ)) or "–",
                esc(", ".join(untold)) or "–",
            ]
        )
    return (
        f'<h2 id="reproductions">Reproductions <span class="muted">{esc(os.fspath(directory))}</span></h2>'
        + table(
            [
                "reproduction",
                "paper",
                "table or figure",
                "scale",
                "seconds",
                "rows agreeing",
                "rows that differ",
                "rows that cannot tell",
            ],
            table_rows,
            left=4,
        )
        + '<p class="muted">Written by <code>archstudy reproduce</code> and linked here on request: the papers\' '
        "own experiments run with this pipeline, their numbers beside the papers'.</p>"
    )


DRAW_BATCH = 8  # figures drawn between two progress counts (each batch in parallel where ``workers`` allows)


def _draw(drawer: Drawer, jobs: list[FigureJob], progress: ProgressFn | None, label: str) -> None:
    """``drawer.draw_all(jobs)``, counted by ``progress`` in batches of ``DRAW_BATCH`` figures."""
    todo = [j for j in jobs if j.skip is None]
    if progress is None:
        drawer.draw_all(todo)
        return
    for k in range(0, len(todo), DRAW_BATCH):
        progress(label, k, len(todo))
        drawer.draw_all(todo[k : k + DRAW_BATCH])
    progress(label, len(todo), len(todo))


def render(
    sections: list[StudyAnalysis], extra: str = "", drawer: Drawer | None = None, progress: ProgressFn | None = None
) -> str:
    """The whole HTML document (``extra``: HTML after the overview, e.g. the reproductions' verdicts;
    ``drawer``: draws the figures, and writes them as files where it was given a directory; ``progress``: told
    each step, ``ReportProgress``)."""
    drawer = drawer or Drawer()
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    compare = sum(1 for s in sections if len(s.arch)) > 1
    names = ", ".join(f"{s.name} ({s.results.dataset})" for s in sections)
    # the figures that need no held-out prediction first, while it is still computing beside them (``analyse``'s
    # ``wait=False``: on two cores one would otherwise sit idle), then the rest
    _draw(drawer, [job for s in sections for _, job in study_jobs(s, without="predict")], progress, "drawing figures")
    for s in sections:
        if progress is not None:
            progress(f"{s.name}: waiting for the held-out evaluation of the joint predictor", None, None)
        s.settle()
    _draw(
        drawer,
        [job for s in sections for _, job in study_jobs(s)] + [job for _, job in comparison_jobs(sections)],
        progress,
        "drawing the remaining figures",
    )
    if progress is not None:
        progress("writing the page (tables and the interactive data)", None, None)
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>archstudy report: {esc(names)}</title>",
        f"<style>{CSS}</style></head><body>",
        '<h1 id="top">archstudy report: what predicts test error</h1>',
        f'<p class="muted">{esc(names)}. Drawn {now} by archstudy {esc(package_version())} on '
        f"{esc(platform.node())} (Python {platform.python_version()}).</p>",
        bar_html(sections, compare, 'id="reproductions"' in extra),
        toc_html(sections, compare),
        glance_html(sections),
        extra,
        comparison_html(sections, drawer),
        *[section_html(s, drawer) for s in sections],
        DETAIL_HTML,
        scripts_html(interactive=any(len(s.arch) for s in sections)),
        "</body></html>",
    ]
    return "\n".join(body)


def write_report(
    study_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    window: Any = None,
    reproductions: str | os.PathLike[str] | None = None,
    figures: str | os.PathLike[str] | None = None,
    figure_format: str = "png",
    predict_from: str | os.PathLike[str] | None = None,
    progress: ProgressFn | bool = True,
) -> Path:
    """Analyse one study or several (e.g. one per dataset) and write one self-contained HTML report.

    ``study_dirs``: a study directory (or object-storage prefix) or a list of them; ``out``: the HTML path (written
    whole, then renamed). ``n_boot`` / ``seed``: the bootstrap (at most ``N_BOOT_MAX`` resamples); ``window``: the
    NLC window of the pruning analysis (default None: each study's own NLC window where the study is large enough
    for it, else the NLC paper's [1, 3]; ``good_ranges.nlc_good_range``); ``reproductions``: a directory of ``archstudy
    reproduce`` results to list with links (none unless given); ``figures``: a directory to also write every figure
    to as a file, ``<study>-<figure>.<figure_format>`` (png, svg or pdf; ``compare-<figure>`` for several studies
    side by side); ``predict_from``: a study directory (or a saved predictor, ``analysis.predict``) whose predictor
    is fitted there and scored on each study too (transfer); ``progress``: True shows each step on stderr
    (``ReportProgress``: a line with the time left where the step can be counted), False nothing, or a callable
    ``progress(label, done, total)`` is told each step. Works on partly finished studies and says so."""
    if progress is True:
        steps = ReportProgress()
        try:
            return write_report(
                study_dirs,
                out,
                n_boot=n_boot,
                seed=seed,
                window=window,
                reproductions=reproductions,
                figures=figures,
                figure_format=figure_format,
                predict_from=predict_from,
                progress=steps,
            )
        finally:
            steps.close()
    tell = progress or None
    dirs = [study_dirs] if isinstance(study_dirs, (str, os.PathLike)) else list(study_dirs)
    if not dirs:
        raise SpecError("write_report", "study_dirs", dirs, "must name at least one study directory")
    seen = set()
    for d in dirs:
        root = local_root(d)
        key = Path(root).resolve() if root is not None else os.fspath(d).rstrip("/")
        if key in seen:
            raise SpecError("write_report", "study_dirs", os.fspath(d), "is given twice: each study once")
        seen.add(key)
    n_boot = check("write_report", "n_boot", Integer(0, N_BOOT_MAX), n_boot)
    seed = check("write_report", "seed", Integer(0), seed)
    window = None if window is None else check_window(window, "write_report")
    figure_format = check("write_report", "figure_format", Choice(FORMATS), figure_format)
    out = check_out(out, dirs)  # before the work: a bad path should not cost the analysis
    figures = None if figures is None else check_figures_dir(figures, dirs)
    if reproductions is not None and not Path(reproductions).is_dir():
        raise SpecError(
            "write_report",
            "reproductions",
            os.fspath(reproductions),
            "must be a directory (the --out of `archstudy reproduce`)",
        )
    if predict_from is not None and tell is not None:
        tell(f"fitting the predictor of {os.fspath(predict_from)}", None, None)
    predictor = None if predict_from is None else predictor_from(predict_from)
    results = []
    for d in dirs:
        if tell is not None:
            tell(f"reading {os.fspath(d)}", None, None)
        results.append(load_results(d))  # with the runs: each architecture's detail panel lists them
    labels = study_labels(dirs)
    sections = []
    try:
        for r, a, lbl in zip(results, _unique_anchors(labels), labels):
            sections.append(
                analyse(
                    r,
                    a,
                    n_boot=n_boot,
                    seed=seed,
                    window=window,
                    predictor=predictor,
                    label=lbl,
                    wait=False,
                    progress=tell,
                )
            )
        drawer = Drawer(figures, figure_format)
        extra = reproductions_html(reproductions, out) if reproductions is not None else ""
        text = render(sections, extra, drawer, tell)
    finally:
        for s in sections:  # a prediction still computing when something failed: ended, not left behind
            s.cancel()
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _unique_anchors(labels: list[str]) -> list[str]:
    """An anchor per study from its label; ``glance``, ``compare`` and ``reproductions`` are the page's own."""
    out, seen = [], {"glance", "compare", "reproductions"}
    for lbl in labels:
        base = slug(lbl)
        base = f"study-{base}" if base in seen or base.startswith("compare-") else base
        a, k = base, 2
        while a in seen:
            a, k = f"{base}-{k}", k + 1
        seen.add(a)
        out.append(a)
    return out


def _is_html(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(512).lstrip().lower()
    return head.startswith(b"<!doctype html") or head.startswith(b"<html")


def check_out(out: object, study_dirs: Iterable[str | os.PathLike[str]]) -> Path:
    """The report's path, refused where writing it could lose something: a directory, no name, a file
    inside a study other than ``STUDY/report.html`` (the study's files are never overwritten, and a stray
    file in ``architectures/`` would break ``pandas.read_parquet`` of it), or an existing file that is not
    an HTML page."""
    text = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if not text or not Path(text).name or Path(text).name in (".", ".."):
        raise SpecError(
            "write_report", "out", text if text is not None else out, "must be a file path such as report.html"
        )
    path = Path(text)
    if path.is_dir():
        raise SpecError("write_report", "out", text, f"is a directory: give a file path such as {path / REPORT_NAME}")
    if not path.parent.is_dir():
        raise SpecError("write_report", "out", text, "must be in an existing directory")
    target = path.resolve()
    for d in study_dirs:
        root = local_root(d)
        if root is None:
            continue
        study_root = Path(root).resolve()
        if target.is_relative_to(study_root) and target != study_root / REPORT_NAME:
            raise SpecError(
                "write_report",
                "out",
                text,
                f"is inside the study {d}: there a report may only be "
                f"{Path(d) / REPORT_NAME} (the study's own files are never overwritten)",
            )
    if path.exists() and not _is_html(path):
        raise SpecError("write_report", "out", text, "exists and is not an HTML file: it is not overwritten")
    return path
