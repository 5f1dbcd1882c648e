"""The figure declarations (analysis.figures): each figure declared once beside its drawing function, in a section of
the report page; on the tiny study each draws or says in one line why it is skipped, and it draws from exactly
the FigureData fields it declares. The predictor grids and the better-than-random threshold come from the
declarations of the columns and the datasets."""

from __future__ import annotations

import dataclasses
import math
import re

import pandas as pd
import pytest
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from archstudy.analysis import load_results
from archstudy.analysis.figures import base as figure_base
from archstudy.analysis.report import page
from archstudy.analysis.columns import PREDICTORS, figure_grid
from archstudy.analysis.figures.base import DATA_FIELDS, FigureData, FigureSpec
from archstudy.analysis.figures import (
    BASELINE_GRID,
    COMPARISON_FIGURES,
    FIGURES,
    METRIC_GRID,
    PROXY_GRID,
    fig7_lr_index_histogram,
    fig_metrics,
)
from archstudy.analysis.figures.base import NothingToDraw
from archstudy.analysis.figures.curves import NO_CURVES, curve_architectures
from archstudy.analysis.plotting import MAX_WIDTH, MIN_PT, THEME, to_png
from archstudy.analysis.study_analysis import analyse
from archstudy.study.experiment.datasets import DATASET_DECLARATIONS


@pytest.fixture(scope="module")
def section(tiny_study_dir):
    return analyse(load_results(tiny_study_dir), "tiny", n_boot=20, seed=0, window=None)


def test_every_figure_is_declared_once_in_a_section_of_the_page():
    keys = [f.key for f in FIGURES] + [c.key for c in COMPARISON_FIGURES]
    assert len(set(keys)) == len(keys) == 30  # 25 + the joint predictor's 3 + the best learning rate's 2
    assert {f.section for f in FIGURES} <= {p.key for p in page.STUDY_SECTIONS}
    assert {c.section for c in COMPARISON_FIGURES} <= {p.key for p in page.COMPARISON_SECTIONS}
    assert all(set(f.needs) <= set(DATA_FIELDS) and f.caption for f in FIGURES)
    with pytest.raises(ValueError, match="figure 'fig2' is declared twice"):
        figure_base.declare_figure(dataclasses.replace(FIGURES[0], key="fig2"))
    with pytest.raises(ValueError, match="needs .'results',.: not fields of FigureData"):
        figure_base.declare_figure(FigureSpec("new", "caption", "more", lambda d: None, needs=("results",)))
    assert len(figure_base.DECLARED) == len(FIGURES)  # neither was registered


@pytest.mark.parametrize("spec", FIGURES, ids=lambda f: f.key)
def test_every_figure_draws_on_the_tiny_study_or_says_why_not(spec, section):
    d = section
    reason = spec.skip(d)
    if reason is not None:  # the tiny study recorded no training curves and switched on no optional metric
        assert reason.strip() and "\n" not in reason
        assert (spec.needs == ("curves",) and not len(d.curves)) or (spec.key == "fig1" and "optional metric" in reason)
        return
    fig = spec.draw(d)
    assert isinstance(fig, Figure) and any(ax.get_visible() for ax in fig.axes)
    assert to_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    # legible at the size the page shows it, never wider than the page's column, nothing drawn past its edges
    small = {t.get_text() for t in fig.findobj(Text) if t.get_text().strip() and t.get_fontsize() < MIN_PT}
    assert not small, small
    assert fig.get_figwidth() <= MAX_WIDTH
    canvas = FigureCanvasAgg(fig)
    with rc_context(THEME):
        canvas.draw()
    box = fig.get_tightbbox(canvas.get_renderer())  # inches, of everything drawn
    w, h = fig.get_size_inches()
    assert box.x0 >= -0.02 and box.y0 >= -0.02 and box.x1 <= w + 0.02 and box.y1 <= h + 0.02, (box, (w, h))


@pytest.mark.parametrize("spec", [f for f in FIGURES if f.group != "training"], ids=lambda f: f.key)
def test_a_figure_draws_from_exactly_what_it_declares(spec, section):
    """Drawn from the architectures and its declared ``needs`` only (every other field left empty), a figure is
    the same picture, byte for byte."""
    full = section
    only = FigureData(full.dataset, full.arch, **{k: getattr(full, k) for k in spec.needs})
    if spec.skip(full) is not None:  # not drawn for these data (figure 1 without its optional metric), nor for less
        assert spec.skip(only) == spec.skip(full)
        return
    assert to_png(spec.draw(only)) == to_png(spec.draw(full))


def test_the_curves_figures_are_skipped_with_one_note_without_curves_and_drawn_with_them(section):
    d = section
    curves, trajectory = (next(f for f in FIGURES if f.key == k) for k in ("curves", "nlc-trajectory"))
    assert curves.skip(d) == trajectory.skip(d) == NO_CURVES and curves.note_skip and not trajectory.note_skip
    html = page.section_html(section)
    assert html.count(NO_CURVES) == 1 and 'data-figure="curves"' not in html
    best = curve_architectures(d.arch)[0][0]  # the first one drawn
    points = pd.DataFrame(
        {
            "arch_id": best["arch_id"],
            "lr_index": best["lr_index"],
            "epoch": [0, 1, 2],
            "train_loss": [math.nan, 1.0, 0.5],
            "monitored_error": [0.5, 0.4, 0.3],
            "monitored": "val",
            "lr": 0.1,
            "nlc": math.nan,
        }
    )
    with_curves = dataclasses.replace(d, curves=points)
    assert curves.skip(with_curves) is None and isinstance(curves.draw(with_curves), Figure)
    other = dataclasses.replace(d, curves=points.assign(lr_index=best["lr_index"] + 1))  # not the selected run
    with pytest.raises(NothingToDraw, match="No curve of the selected run of the architectures drawn"):
        curves.draw(other)  # no empty panels: the page shows this line instead
    assert trajectory.skip(with_curves) == "No NLC trajectory recorded (metrics: nlc_trajectory is off)."
    assert trajectory.skip(dataclasses.replace(with_curves, curves=points.assign(nlc=[2.0, 3.0, 4.0]))) is None


def test_the_page_draws_each_section_s_figures_in_declaration_order(section):
    html = page.section_html(section)
    d = section
    expected = [f.key for p in page.STUDY_SECTIONS for f in FIGURES if f.section == p.key and f.skip(d) is None]
    assert re.findall(r'data-figure="([^"]+)"', html) == expected
    headings = re.findall(r'<h3 id="tiny-([^"]+)">([^<]+)</h3>', html)
    assert headings == [(p.key, p.title) for p in page.STUDY_SECTIONS]  # each with its anchor for the contents
    # each figure below its own section's heading
    for f in FIGURES:
        if f.skip(d) is None:
            after = html.index(f'<h3 id="tiny-{f.section}">')
            following = [
                html.index(f'<h3 id="tiny-{p.key}">')
                for p in page.STUDY_SECTIONS
                if html.index(f'<h3 id="tiny-{p.key}">') > after
            ]
            assert after < html.index(f'data-figure="{f.key}"') < min(following, default=len(html)), f.key


def test_a_new_declaration_is_drawn_in_its_section_and_a_lost_one_is_refused(section, monkeypatch):
    def draw(d):
        fig = Figure()
        fig.subplots().plot([0, 1], [0, 1])
        return fig

    new = FigureSpec("extra", "An extra figure.", "more", draw)
    monkeypatch.setattr(page, "FIGURES", FIGURES + (new,))
    html = page.section_html(section)
    keys = re.findall(r'data-figure="([^"]+)"', html)
    assert keys[-1] == "extra" and keys[-2] == "baselines" and "An extra figure." in html
    monkeypatch.setattr(page, "FIGURES", FIGURES + (dataclasses.replace(new, section="nowhere"),))
    with pytest.raises(LookupError, match="figures declared in no section of the report: extra"):
        page._check_placement()


def test_the_scatter_grids_are_the_predictors_whose_columns_name_them(section):
    assert (METRIC_GRID, PROXY_GRID, BASELINE_GRID) == tuple(
        figure_grid(k) for k in ("metrics", "proxies", "baselines")
    )
    assert METRIC_GRID == ("ar", "variability", "gvcs", "grad_length", "nlc_tau", "linear_approx_error")
    assert PROXY_GRID == ("grad_norm", "snip", "synflow", "jacob_cov", "nwot")
    assert BASELINE_GRID == ("num_params", "width", "flops")
    keys = {f.key for f in FIGURES}
    assert all(p.figure in keys for p in PREDICTORS if p.figure)
    # one visible panel per predictor of the grid, titled by its column's label
    fig = fig_metrics(section)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    labels = {p.column: p.label for p in PREDICTORS}
    assert [ax.get_xlabel() for ax in shown] == [labels[c] for c in METRIC_GRID]


def test_figures_7_and_8_use_the_declared_better_than_random_threshold(section):
    arch = section.arch
    for decl in DATASET_DECLARATIONS:
        d = FigureData(decl.name, arch.assign(d_out=decl.n_classes))
        assert d.threshold == decl.better_than_random, decl.name
    assert FigureData("fashion-mnist", arch).threshold == FigureData("mnist", arch).threshold == 0.8
    assert FigureData("my-data", arch.assign(d_out=4)).threshold == pytest.approx(0.675)
    title = fig7_lr_index_histogram(FigureData("fashion-mnist", arch)).axes[0].get_title()
    n = int((section.sample["test_error"] < 0.8).sum())
    assert title == f"{n} architectures with test error < 0.80"
