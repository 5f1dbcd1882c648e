"""The page: its sections (``STUDY_SECTIONS``, ``COMPARISON_SECTIONS``), their assembly, and ``write_report``."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from archstudy.sampling import SpecError
from archstudy.sampling.regular_files import write_whole
from archstudy.sampling.constraints import Choice, Integer, check
from archstudy.study.experiment import provenance
from archstudy.study.experiment.config import N_BOOT_MAX

from ..drawing import Drawer, FigureJob, check_figures_dir
from ..figures import COMPARISON_FIGURES, FIGURES, FigureSpec
from ..findings import ALPHA, FAMILIES, PROCEDURE, record, summary, table_digest
from ..html import CSS, esc, slug
from ..interactive import DETAIL_HTML, explore_html, scripts_html
from ..plotting import FORMATS
from ..predict import predict_html, predictor_from
from ..pruning import check_window
from ..results import load_results, local_root
from ..study_analysis import StudyAnalysis, analyse, study_labels
from ..study_notes import notes_html, read_notes

if TYPE_CHECKING:
    pass

from archstudy.study.experiment.terminal import ProgressFn, StepLine

from .ceiling import ceiling_html
from .comparison import config_diff_html, errors_compare_html, good_ranges_compare_html
from .design import edf_html, good_ranges_html
from .findings import findings_html
from .glance import glance_html
from .importance import importance_html
from .learning_rates import learning_rates_html
from .output import check_out
from .predictors import correlations_html, psi_html, windows_html
from .pruning import launch_html, pruning_html
from .reproductions import reproductions_html
from .section import PageSection
from .siblings import paired_html
from .status import config_html, failed_html, provenance_html, status_box, status_table


def status_part_html(s: StudyAnalysis) -> str:
    """The counts of the status table beside the provenance, the study's notes, then study.yaml and the failed
    architectures."""
    return (
        f'<div class="cols"><div>{status_table(s)}</div><div>{provenance_html(s)}</div></div>'
        + notes_html(read_notes(s.results.study_dir))
        + config_html(s.results.config)
        + failed_html(s)
    )


# A study's section, after its status box (``FigureSpec.section`` names one of these keys).
# The parts of a study open when the page loads (the others fold under their headings; a link to one, the
# navigation bar's, or printing opens it).
OPEN_PARTS = ("status", "findings", "predictors", "ceiling")
STUDY_SECTIONS: tuple[PageSection, ...] = (
    PageSection("status", "Status and provenance", status_part_html, short="Status"),
    PageSection("findings", "Findings: every verdict of this page, tested together", findings_html, short="Findings"),
    PageSection("predictors", "What predicts test error", correlations_html, short="Predictors"),
    PageSection("ceiling", "The seed-noise ceiling", ceiling_html, short="Seed ceiling"),
    PageSection("explore", "Explore every architecture (interactive)", explore_html, short="Explore"),
    PageSection(
        "importance", "Importance of the design axes and measures (fANOVA)", importance_html, short="Importance"
    ),
    PageSection("windows", "Window predictors", windows_html, short="Windows"),
    PageSection(
        "predict", "Predicting test error from everything measured at initialization", predict_html, short="Prediction"
    ),
    PageSection("learning-rates", "The best learning rate", learning_rates_html, short="Best rate"),
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
        # each part folds under its heading; the first ones open (the page of 8 architectures was 25,000 px tall)
        opened = " open" if part.key in OPEN_PARTS else ""
        parts += [
            f'<details class="part"{opened}><summary><h3 id="{s.anchor}-{part.key}">{part.title}</h3></summary>',
            *([part.html(s)] if part.html else []),
        ]
        parts += [html for key, job in jobs if key == part.key if (html := drawer.html(job))]
        parts.append("</details>")
    if not trained:
        parts.append("<p>No architecture has finished training yet: no statistics or figures.</p>" + launch_html(s))
    parts.append("</section>")
    return "\n".join(parts)


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
    each step, ``StepLine``)."""
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
        f'<p class="muted">{esc(names)}. Drawn {now} on {esc(platform.node())} by '
        f"{esc(provenance.describe(provenance.current()))}.</p>",
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
    (``StepLine``: a line with the time left where the step can be counted), False nothing, or a callable
    ``progress(label, done, total)`` is told each step. Works on partly finished studies and says so."""
    if progress is True:
        steps = StepLine()
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
    write_whole(out, text, what="a report")  # a full disk is the error naming the report's path
    findings = json.dumps(findings_json(sections), indent=1, allow_nan=False) + "\n"
    write_whole(findings_path(out), findings, what="a report's findings")
    return out


def findings_path(out: Path) -> Path:
    """Where a report's findings are written as JSON: beside the page, ``NAME.findings.json`` for ``NAME.html``."""
    return out.with_name(f"{out.stem}.findings.json")


def findings_json(sections: list[StudyAnalysis]) -> dict[str, Any]:
    """Every study's findings (``analysis.findings``) as the JSON beside the page: per study its name, directory,
    dataset, the sentence the page states (``findings.summary``), every test (``findings.FINDING_COLUMNS``), the
    ``digest`` of the finished rows they were computed from (``findings.table_digest``) and the seed-noise ceiling
    (``seed_ceiling.seed_ceiling``; NaN as None)."""
    studies = []
    for s in sections:
        f = s.findings
        studies.append(
            {
                "study": s.name,
                "location": s.results.study_dir,
                "dataset": s.results.dataset,
                "summary": summary(f) if len(f) else "no test: no finished architectures",
                "digest": table_digest(s.results.architectures),  # what they were computed from
                "tests": record(f) if len(f) else [],
                # the seed-noise ceiling every predictor's score is read against (``analysis.seed_ceiling``)
                "seed_ceiling": {k: (None if isinstance(v, float) and v != v else v) for k, v in s.ceiling.items()},
            }
        )
    return {"alpha": ALPHA, "procedure": PROCEDURE, "families": [f.__dict__ for f in FAMILIES], "studies": studies}


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
