"""The parallel-coordinates view (``analysis.parallel_coordinates``): its axes, and in headless Chromium a drag along
an axis that selects the architectures inside the brushed range in the study's plots and table (the report), and marks
them in the scatter plots and the leaderboard (``archstudy serve``'s page)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from archstudy.analysis import load_results
from archstudy.analysis import live_view as lv
from archstudy.analysis.drawing import Drawer
from archstudy.analysis.features import design_axes, measures
from archstudy.analysis.parallel_coordinates import MAX_MEASURES, dimensions
from archstudy.analysis.report import render
from archstudy.analysis.study_analysis import analyse

import synthetic_study as synth

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None
browser_needed = [
    pytest.mark.skipif(sync_playwright is None, reason="the playwright Python package is not installed"),
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package 'chromium')"),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """7 draws, no siblings: fewer than the joint predictor's minimum (no held-out fit, seconds saved)."""
    return synth.write_study(tmp_path_factory.mktemp("parallel") / "study", n=7)


def test_the_axes_are_the_varying_design_axes_the_best_ranked_measures_and_test_error(study):
    s = analyse(load_results(study), "study", n_boot=0, seed=0, window=None, label="study")
    dims = dimensions(s.arch, s.ranking)
    cols = [d["col"] for d in dims]
    varying = [a for a in design_axes(s.arch) if s.arch[a].nunique() > 1]
    assert cols[: len(varying)] == varying and cols[-1] == "test_error"
    shown = cols[len(varying) : -1]
    ranked = [m for m in s.ranking["predictor"] if m in measures(s.arch)]
    assert shown == ranked[:MAX_MEASURES]
    for d in dims:
        if d["kind"] == "category":
            assert d["values"] == sorted({str(v) for v in s.arch[d["col"]]})
        if d["kind"] == "log":
            assert (s.arch[d["col"]] > 0).all() and d["label"].startswith("log10 ")


class WithoutFigures(Drawer):
    def draw_all(self, jobs):
        pass

    def html(self, job):
        return ""


def _drag(page, brush) -> None:
    """A drag along an axis's brush area, from 55% to 98% of its height (a real brush, as a reader makes it)."""
    box = brush.bounding_box()
    x = box["x"] + box["width"] / 2
    page.mouse.move(x, box["y"] + box["height"] * 0.55)
    page.mouse.down()
    page.mouse.move(x, box["y"] + box["height"] * 0.75, steps=6)
    page.mouse.move(x, box["y"] + box["height"] * 0.98, steps=6)
    page.mouse.up()


def _inside(errors: pd.Series, ranges) -> set[int]:
    ranges = ranges if isinstance(ranges[0], list) else [ranges]
    return {i for i, v in errors.items() if any(lo <= v <= hi for lo, hi in ranges)}


@pytest.mark.parametrize("mark", browser_needed)
def test_brushing_an_axis_selects_in_the_plots_and_the_table_of_the_report(study, tmp_path, mark):
    section = analyse(load_results(study), "study", n_boot=20, seed=0, window=None, label="study")
    path = tmp_path / "report.html"
    path.write_text(render([section], drawer=WithoutFigures()), encoding="utf-8")
    arch = section.arch.reset_index(drop=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(180_000)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.resolve().as_uri())
        page.locator("nav.bar a", has_text="Explore").first.click()  # its part folds until opened
        view = page.locator('.iplot[data-plot="parcoords"]')
        view.scroll_into_view_if_needed()
        page.wait_for_function("document.querySelector('.iplot[data-plot=parcoords]').dataset.drawn === '1'")
        assert view.get_attribute("data-lines") == str(len(arch))
        first = page.locator('.iplot[data-plot="scatter"]').first
        first.scroll_into_view_if_needed()
        page.wait_for_function("document.querySelector('.iplot[data-plot=scatter]').dataset.drawn === '1'")
        view.scroll_into_view_if_needed()
        brushes = view.locator(".axis-brush")
        _drag(page, brushes.nth(brushes.count() - 1))  # the last axis: test error
        ranges = page.evaluate(
            "() => { const d = document.querySelector('.iplot[data-plot=parcoords]').data[0].dimensions;"
            " return d[d.length - 1].constraintrange; }"
        )
        expected = _inside(arch["test_error"], ranges)
        assert 0 < len(expected) < len(arch)
        page.wait_for_function(f"document.querySelectorAll('table.leaderboard tr.sel').length === {len(expected)}")
        rows = page.locator("table.leaderboard tr.sel").evaluate_all("trs => trs.map(tr => +tr.dataset.row)")
        assert set(rows) == expected
        picked = first.evaluate("d => d.data[0].selectedpoints.map(k => d.data[0].customdata[k])")
        assert set(picked) == expected & set(first.evaluate("d => d.data[0].customdata"))
        assert page.locator("aside#detail h3").text_content().startswith(f"{len(expected)} selected")
        # clearing the brush clears the selection
        page.evaluate(
            "() => { const d = document.querySelector('.iplot[data-plot=parcoords]');"
            " Plotly.restyle(d, {['dimensions[' + (d.data[0].dimensions.length - 1) + '].constraintrange']: null}); }"
        )
        page.wait_for_function("document.querySelectorAll('table.leaderboard tr.sel').length === 0")
        assert errors == []
        browser.close()


@pytest.mark.parametrize("mark", browser_needed)
def test_brushing_marks_the_architectures_on_the_live_page(study, mark):
    arch = load_results(study).trained.reset_index(drop=True)
    server = lv.LiveServer(str(study), port=0, poll_s=0.5).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(180_000)
            page.goto(server.url)
            page.wait_for_function("document.getElementById('parcoords').dataset.listening === '1'")
            view = page.locator("#parcoords")
            view.scroll_into_view_if_needed()
            brushes = view.locator(".axis-brush")
            _drag(page, brushes.nth(brushes.count() - 1))
            page.wait_for_function("document.getElementById('parcoords').dataset.brushed !== ''")
            ranges = page.evaluate(
                "() => { const d = document.getElementById('parcoords').data[0].dimensions;"
                " return d[d.length - 1].constraintrange; }"
            )
            ids = {arch["arch_id"][i] for i in _inside(arch["test_error"], ranges)}
            assert view.get_attribute("data-brushed") == str(len(ids))
            marked = page.locator("#leaderboard tr.sel code.id").all_text_contents()
            assert set(marked) == ids
            browser.close()
    finally:
        server.stop()
