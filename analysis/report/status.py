"""A study's status and provenance: the status box and table, the excluded and failed architectures, the caveats,
the config."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd
import yaml

from archstudy.study.experiment.provenance import describe

from ..html import esc, fmt, folded, table
from ..results import Results
from ..study_analysis import StudyAnalysis
from ..stats import FEW

if TYPE_CHECKING:
    pass


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
    return head + excluded_html(r) + caveats_html(s) + degenerate_html(s.arch)


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


def degenerate_html(arch: pd.DataFrame) -> str:
    """The degenerate measures of the trained architectures (``analysis.degenerate``): which, of which
    architectures, and why, said once above every number that leaves them out."""
    from ..degenerate import degenerate

    found = degenerate(arch)
    if not len(found):
        return ""
    parts = []
    for why, rows in found.groupby("why", sort=False):
        said = []
        for label, of in rows.groupby("label", sort=False):
            names = [f"#{i}" + ("" if v == "base" else f" {v}") for i, v in zip(of["index"], of["variant"])]
            shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            lo, hi = of["value"].min(), of["value"].max()
            values = f"{lo:.3g}" if lo == hi else f"{lo:.3g} to {hi:.3g}"
            said.append(f"{esc(label)} {values} ({shown})")
        parts.append(f"{esc(why)}: {'; '.join(said)}")
    n = found[["arch_id"]].drop_duplicates().shape[0] if "arch_id" in found.columns else len(found)
    return (
        f'<div class="box partial"><b>Degenerate measures:</b> {len(found):,} value(s) of {n:,} architecture(s) '
        f"are left out of every fit, test and predictor below (the stored rows keep them as measured). "
        f"{'. '.join(parts)}.</div>"
    )


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
        *computed_with_rows(r),
    ]
    return table(None, rows, left=2, cls="kv")


def computed_with_rows(r: Results) -> list[list[str]]:
    """The provenance the result files record (``study.experiment.provenance``): one row per distinct record
    (archstudy's version and commit, Python, the libraries, CUDA and the device) with the architectures it
    computed; the architectures of files written before the record, counted apart."""
    rows = [
        ["computed with" if k == 0 else "", f"{esc(describe(record))} ({n:,} architectures)"]
        for k, (record, n) in enumerate(r.provenance)
    ]
    unrecorded = r.n_finished - sum(n for _, n in r.provenance)
    if unrecorded > 0:
        rows.append(["computed with" if not rows else "", f"not recorded for {unrecorded:,} (written before it was)"])
    return rows


def config_html(cfg: dict[str, Any]) -> str:
    text = yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)
    return f"<details><summary>study.yaml</summary><pre>{esc(text)}</pre></details>"


def failed_html(s: StudyAnalysis) -> str:
    f = s.results.failed
    if not f:
        return ""
    rows = [
        [fmt(int(x.get("index", -1))), esc(x.get("arch_id", "")), esc(x.get("reason", "")), esc(x.get("attempts", "–"))]
        for x in f
    ]
    return "<h3>Failed architectures</h3>" + table(["index", "arch_id", "reason", "attempts"], rows, left=3)
