"""The report's interactive page in headless Chromium (Playwright driving the system's Chromium, no browser
download): a hover on a scatter point shows its architecture, a click on a header sorts a table, a click on a point
opens its detail panel with its runs, a box selection shows in every plot, the navigation bar stays on screen, the
page fits 1280 px, nothing is fetched from the network and no script fails."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from archstudy.analysis import load_results
from archstudy.analysis.drawing import Drawer
from archstudy.analysis.report import render
from archstudy.analysis.study_analysis import analyse

import synthetic_study as synth

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None

pytestmark = [
    pytest.mark.skipif(sync_playwright is None, reason="the playwright Python package is not installed"),
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package 'chromium')"),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """A finished synthetic study of 7 draws, no siblings: fewer than ``predict.MIN_ROWS``, so that no held-out
    prediction is fitted (seconds of CPU that this test does not look at)."""
    from archstudy.analysis.predict import MIN_ROWS

    assert MIN_ROWS > 7
    return synth.write_study(tmp_path_factory.mktemp("interactive") / "study", n=7)


class WithoutFigures(Drawer):
    """Draws none of the static figures (tests/analysis/test_report.py draws them and checks their layout in
    Chromium): the page is otherwise ``write_report``'s, in a few seconds."""

    def draw_all(self, jobs):
        pass

    def html(self, job):
        return ""


@pytest.fixture(scope="module")
def page_path(study, tmp_path_factory) -> Path:
    section = analyse(load_results(study), "study", n_boot=20, seed=0, window=None, label="study")
    out = tmp_path_factory.mktemp("page") / "report.html"
    out.write_text(render([section], drawer=WithoutFigures()), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def test_the_interactive_page_in_headless_chromium(page_path, study, browser):
    arch = load_results(study).trained
    ids = set(arch["arch_id"].astype(str))
    runs = load_results(study).runs
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(120_000)  # a loaded machine parses the 5 MB of Plotly.js slowly; an idle one in 1 s
    errors, fetched = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):  # the page works offline: anything but the file itself is refused, and counted
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            fetched.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(page_path.resolve().as_uri())

    # without a scroll every plot is drawn once the page is idle, those of folded parts too (a print or a full-page
    # capture finds none blank); the parts after the first few fold, so the page is short
    drawn = "document.querySelectorAll('.iplot[data-drawn]').length"
    n_drawn = page.locator(".iplot[data-plot]").count()
    page.wait_for_function(f"{drawn} === {n_drawn}", timeout=120_000)
    assert page.evaluate("document.documentElement.scrollHeight") < 8000
    assert page.evaluate("document.querySelectorAll('details.part:not([open])').length") >= 10
    # a link of the navigation bar opens its folded part, at the width its plots were drawn for
    page.locator("nav.bar a", has_text="Explore").first.click()
    assert page.evaluate("document.getElementById('study-explore').closest('details').open")
    svg = page.locator("#study-explore").locator("xpath=ancestor::details").locator(".iplot .main-svg").first
    assert abs(float(svg.get_attribute("width")) - svg.evaluate("s => s.closest('.iplot').clientWidth")) < 4
    # printing opens every part
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert page.evaluate("document.querySelectorAll('details.part:not([open])').length") == 0

    # every plot draws (each as it scrolls into view); then the page is no wider than the window
    plots = page.locator(".iplot")
    n_plots = plots.count()
    assert n_plots >= 10
    for k in range(n_plots):
        plots.nth(k).scroll_into_view_if_needed()
    page.wait_for_function(f"document.querySelectorAll('.iplot[data-drawn]').length === {n_plots}", timeout=120_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280

    # hovering a scatter point shows a tooltip naming an architecture of the study
    first = page.locator('.iplot[data-plot="scatter"]').first
    first.scroll_into_view_if_needed()
    point = first.locator(".scatterlayer .points path").first
    point.hover(force=True)
    tip = first.locator(".hoverlayer .hovertext")
    tip.wait_for()
    named = set(re.findall(r"[0-9a-f]{16}", tip.text_content())) & ids
    assert len(named) == 1, tip.text_content()

    # a click on it opens its detail panel: its id, spec and one row per run
    point.click(force=True)
    panel = page.locator("aside#detail")
    panel.wait_for(state="visible")
    (arch_id,) = named
    assert arch_id in panel.locator("h3").text_content()
    assert panel.locator("table.runs tbody tr").count() == int((runs["arch_id"] == arch_id).sum()) > 1
    panel.locator("button.close").click()
    assert panel.is_hidden()
    # so does a click on the id of the best architecture at a glance
    best = page.locator("#glance a.arch").first
    best.click()
    panel.wait_for(state="visible")
    assert best.text_content() in panel.locator("h3").text_content()
    assert best.text_content() == arch.sort_values(["test_error", "arch_id"])["arch_id"].iloc[0]
    panel.locator("button.close").click()

    # a click on a header sorts the table of every architecture by that column, again: the other way
    table = page.locator("table.leaderboard")
    table.scroll_into_view_if_needed()

    def column(k: int) -> list[float]:
        cells = table.locator(f"tbody tr td:nth-child({k})").all_text_contents()
        return [float(c.replace(",", "").replace("−", "-")) for c in cells]

    nlc = column(3)
    assert nlc != sorted(nlc)  # ordered by test error, not by NLC: the sort has something to do
    pairs = sorted(zip(column(2), nlc))
    table.locator("thead th", has_text="NLC").click()
    assert column(3) == sorted(nlc)
    table.locator("thead th", has_text="NLC").click()
    assert column(3) == sorted(nlc, reverse=True)
    assert sorted(zip(column(2), column(3))) == pairs  # rows moved whole: each test error beside its NLC
    # and every table of the page with a header row sorts so
    headed = "[...document.querySelectorAll('table')].filter(t => t.tHead)"
    assert page.evaluate(f"{headed}.length") > 5
    assert page.evaluate(f"{headed}.filter(t => !t.tHead.querySelector('th.sort')).length") == 0

    # a box selection in one plot shows in every drawn plot of the study and is listed in the panel
    first.scroll_into_view_if_needed()
    page.evaluate("d => Plotly.relayout(d, {dragmode: 'select'})", first.element_handle())
    box = first.locator(".nsewdrag").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2, steps=8)
    page.mouse.up()
    panel.wait_for(state="visible")
    assert re.match(r"\d+ selected", panel.locator("h3").text_content())
    selected = page.evaluate(
        "[...document.querySelectorAll('.iplot[data-drawn]:not(.parcoords)')]"
        ".map(d => (d.data[0].selectedpoints || []).length)"  # the parallel coordinates mark by line colour
    )
    assert min(selected) > 0, selected

    # the navigation bar stays on screen
    page.mouse.wheel(0, 6000)
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY") > 3000
    assert abs(page.evaluate("document.querySelector('nav.bar').getBoundingClientRect().top")) < 1

    assert not fetched, fetched
    assert not errors, errors
    page.close()
