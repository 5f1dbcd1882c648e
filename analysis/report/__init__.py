"""The HTML report: one self-contained file that reads at a glance, holds every number and explores every architecture.

It is one file (images, CSS and scripts inline, no network); every architecture can be explored in it
(``analysis.interactive``).

The page opens with its contents and, per study, what predicts test error and which architectures are best (the
predictor ranking's first rows, the same table the ranking chart draws, and the lowest test errors). With several
studies, they follow side by side: each named by its directory (``study_analysis.study_labels``) with its dataset,
their test errors, the keys of their configs that differ, their good ranges and error EDFs. Then a section per
study: status, provenance and config, what predicts test error (correlations, granulated Kendall, lift over
trivial baselines, window scores), the design space (error EDFs, good ranges, the study's own NLC window),
paired sibling effects, NLC pruning (and, for a study pruned at launch, what was pruned by which window),
training curves, the NLC paper's figures and more. Every statistic covers the trained architectures (a study
pruned at launch measured the others at initialization only).

The package mirrors ``analysis.figures``: one module per topic of the page's sections (``status``, ``predictors``,
``design``, ``siblings``, ``pruning``, ``glance``, ``comparison``, ``reproductions``), each holding the HTML of its
tables and notes; ``page`` holds the page: its sections (``STUDY_SECTIONS``, ``COMPARISON_SECTIONS``: each a heading,
its tables and notes, and then every figure whose declaration names the section, in declaration order; adding a
section is one entry there), their assembly and ``write_report``; ``output`` where a report may be written. The
numbers come from ``analysis.study_analysis`` (``analyse``: one study's, computed once), the figures from their
declarations (``analysis.figures``), drawn by ``analysis.drawing`` (which can also write each as a file). The HTML
pieces the reproductions' pages share are in ``analysis.html``; the progress line is ``study.experiment.terminal``'s.
"""

from __future__ import annotations

from archstudy.study.experiment.config import N_BOOT_MAX

from ..study_analysis import StudyAnalysis, analyse
from .output import check_out
from .page import COMPARISON_SECTIONS, STUDY_SECTIONS, render, write_report
from .section import PageSection

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
