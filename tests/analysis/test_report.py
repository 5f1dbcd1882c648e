"""The HTML report: every figure and table, self-contained, partial and multi-study, the command line, and
rendering in headless Chromium."""

from __future__ import annotations

import ast
import base64
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis import correlations, load_results, write_report
from archstudy.analysis.figures import COMPARISON_FIGURES, FIGURES, FigureData, correlation_title
from archstudy.analysis.predict import MIN_ROWS
from archstudy.study.experiment.terminal import LOG_COUNTS_S
from archstudy.study.experiment.terminal import StepLine
from archstudy.analysis.study_analysis import ANALYSIS_STEPS
from archstudy.study.cli import main

import synthetic_study as synth

IMG = re.compile(r'<img alt="[^"]*" (?:width="\d+" height="\d+" )?src="data:image/png;base64,([A-Za-z0-9+/=]+)">')
# The figures of a study that switched on no optional metric: all but figure 1 (it needs E.1; the page says so
# in one line instead); of those, the ones of a study without training curves (the synthetic studies write none).
DRAWN = [f for f in FIGURES if f.key != "fig1"]
WITHOUT_CURVES = [f for f in DRAWN if f.group != "training"]
# the joint predictor's figures need a held-out evaluation: at least predict.MIN_ROWS trained architectures
PREDICTING = [f for f in FIGURES if f.section == "predict"]
# drawn only for a study with siblings (the others say in one line why not)
WITH_SIBLINGS = [f for f in FIGURES if f.key == "rate-transfer"]


@pytest.fixture(scope="module")
def report_path(real_study_dir, tmp_path_factory):
    return write_report(real_study_dir, tmp_path_factory.mktemp("report") / "report.html", n_boot=200)


@pytest.fixture(scope="module")
def report(report_path) -> str:
    return report_path.read_text(encoding="utf-8")


def test_the_page_states_its_findings_and_writes_them_beside_it(report, report_path):
    """Every verdict of the page is a test of one family (``analysis.findings``): the page says how many tests it
    made and how they are controlled, no table shows an unadjusted p alone, and the findings are JSON beside it."""
    import json

    found = json.loads((report_path.parent / "report.findings.json").read_text(encoding="utf-8"))
    study = found["studies"][0]
    assert found["alpha"] == 0.05 and "Holm" in found["procedure"] and study["tests"]
    assert {t["family"] for t in study["tests"]} <= {f["key"] for f in found["families"]}
    assert study["summary"] in html_text(report) and "Findings: every verdict of this page" in report
    assert "p (Holm)" not in report and "Kendall p / adjusted" in report and "sign test p / adjusted" in report
    assert "asymptotic with Kish" not in report and "cells resampled within each axis" not in report
    # one initialization per architecture: the seed-noise ceiling is unknown, in the JSON and on the page
    assert study["seed_ceiling"]["inits"] == 1 and study["seed_ceiling"]["why"] in html_text(report)


def html_text(html: str) -> str:
    import html as h

    return h.unescape(html)


def test_report_has_every_figure_as_an_inline_png(report):
    keys = re.findall(r'<figure id="[^"]+" data-figure="([^"]+)"><img', report)
    assert sorted(keys) == sorted(f.key for f in DRAWN)
    assert 'data-missing="fig1">Figure 1 (NLC vs the relative diameter' in report
    assert "could not be drawn" not in report
    pngs = IMG.findall(report)
    assert len(pngs) == len(DRAWN)
    for b64 in pngs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_is_self_contained(report):
    """Images and scripts inline, links within the page; the scripts, Plotly.js and ours, once each (the page's
    behaviour offline is checked in Chromium: tests/analysis/test_interactive_page.py)."""
    from plotly.offline import get_plotlyjs

    from archstudy.analysis.interactive import SCRIPT

    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", report, flags=re.S)
    assert [attrs for attrs, _ in scripts if "application/json" not in attrs] == ["", ""]
    assert report.count(get_plotlyjs()) == 1 and report.count(SCRIPT) == 1
    rest = re.sub(r"<script[^>]*>.*?</script>", "", report, flags=re.S)
    refs = re.findall(r'(?:src|href)="([^"]*)"', rest)
    assert refs and all(r.startswith(("data:image/png;base64,", "#")) for r in refs)
    assert "http://" not in rest and "https://" not in rest and "<link" not in rest
    assert "@import" not in rest and "url(" not in rest


def test_report_has_the_tables_status_and_provenance(report, real_study_dir):
    r = load_results(real_study_dir)
    for text in (
        "What predicts test error",
        "Kendall τ",
        "granulated Kendall Ψ",
        "lift over best baseline",
        "Ψ over defined cells (τ-b)",
        "Window predictors",
        "Granulated Kendall coefficient by axis",
        "Error distributions by axis (EDFs)",
        "largest KS",
        "Good ranges",
        "U-shaped",
        "Paired effects of sibling architectures",
        "sign test p",
        "NLC-guided pruning",
        "regret",
        "Status and provenance",
        "study.yaml",
        "At a glance",
        "Contents",
    ):
        assert text in report, text
    assert "<b>Complete:</b>" in report and "Partial study" not in report
    assert f"all {r.planned:,} planned architectures" in report
    # no window given: the study's own where the study is large enough for it; 3 random draws are not
    a = r.architectures
    n = int(((a["variant"] == "base") & (a["nlc"] > 0) & np.isfinite(a["nlc"]) & np.isfinite(a["test_error"])).sum())
    assert 2 <= n < 20
    assert (
        f"Window: the NLC paper's [1, 3]. The study is not large enough for its own window: {n} architectures: "
        f"a bootstrap subsample holds {max(1, n // 4)} (&lt; 5)"
    ) in report
    # provenance: the study's own values (the synthetic study's host is "testhost"; a runner's is the machine's)
    assert f"{a['host'].iloc[0]} ({(a['host'] == a['host'].iloc[0]).sum()})" in report
    assert f'<td class="l">{r.config["package_version"]}</td>' in report and r.dataset in report
    # every measured predictor has a row; the unmeasured ones are named as such
    c = correlations(a, n_boot=10)
    for label in c[c["n"] >= 3]["label"]:
        assert f'<td class="l">{label}</td>' in report, label
    unmeasured = c[c["n"] < 3]["label"].tolist()
    if unmeasured:
        assert (
            "Fewer than 3 finite values (not switched on, or not finite where measured): " + ", ".join(unmeasured) + "."
        ) in report


def test_the_first_screen_names_the_ranking_charts_top_bar_and_the_lowest_test_errors(report, real_study_dir):
    """ "What predicts test error, and what are the best architectures", answered before any section, by the
    statistic the ranking chart draws (its top bar) and the lowest test errors of the trained architectures."""
    from archstudy.analysis.figures.predictors import fig_ranking
    from archstudy.analysis.html import esc, fmt
    from archstudy.analysis.study_analysis import analyse

    s = analyse(load_results(real_study_dir, runs=False), "x", n_boot=200, seed=0, window=None)
    glance = report.split('<section id="glance">')[1].split("</section>")[0]
    first = report.index('<section id="glance">')
    assert report.index('<nav class="toc">') < first < report.index('<section id="', first + 1)
    bars = [t.get_text() for t in fig_ranking(s).axes[0].get_yticklabels()]
    top = s.ranking[s.ranking["rank"] == 1]
    assert bars[0].startswith(f"1. {top['label'].iloc[0]} (")
    if len(top) == 1:
        assert f"Best predictor: <b>{esc(top['label'].iloc[0])}</b>" in glance
    errors = np.sort(s.arch["test_error"].dropna().to_numpy(np.float64))
    best = glance.split("<h4>Best architectures</h4>")[1]
    assert f"Best test error <b>{fmt(errors[0], 3)}</b>" in best
    cells = re.findall(r"<tr><td>(\d+)</td><td>([^<]+)</td>", best)
    assert [int(k) for k, _ in cells] == list(range(1, len(cells) + 1)) and 1 <= len(cells) <= 5
    assert [float(e) for _, e in cells] == pytest.approx(errors[: len(cells)], abs=5e-4, rel=5e-3)


def test_figure_titles_agree_with_the_correlation_table(tiny_study_dir):
    arch = load_results(tiny_study_dir).architectures
    c = correlations(arch, n_boot=10).set_index("predictor")
    d = FigureData("waveform-noise", arch, c.reset_index())
    title = correlation_title(d.sample, "nlc", "test_error", logx=True)
    assert " = " not in title  # no-break spaces: a wrapped title breaks between the statistics, not inside one
    title = title.replace("\u00a0", " ")
    assert title.startswith(f"r = {c.loc['nlc', 'pearson']:.2f} ") and f"τ = {c.loc['nlc', 'kendall']:.2f}" in title
    assert title.endswith(f"n = {c.loc['nlc', 'n_pearson']}")


def test_partial_and_several_studies_in_one_report(tmp_path, tiny_study_dir):
    partial = synth.write_study(
        tmp_path / "digits",
        n=10,
        dataset="digits",
        study_seed=3,
        failed=(1,),
        in_progress=(2, 3),
        finished=[0, 4, 5, 6, 7, 8],
    )
    told: list[tuple[str, int | None, int | None]] = []
    html = write_report(
        [tiny_study_dir, partial], tmp_path / "both.html", n_boot=50, progress=lambda *a: told.append(a)
    ).read_text(encoding="utf-8")
    # every step told (study.experiment.terminal.StepLine shows them): each study read and analysed, step by step,
    # the figures counted, the waits named
    steps = [t[0] for t in told]
    assert steps[:2] == [f"reading {tiny_study_dir}", f"reading {partial}"]
    assert [t[1:] for t in told if t[0] == "analysing digits: correlations"] == [(0, len(ANALYSIS_STEPS))]
    assert [t[1] for t in told if t[0].startswith("analysing digits: ")] == list(range(len(ANALYSIS_STEPS)))
    drawn = [t for t in told if t[0] == "drawing figures"]
    assert drawn[0][1] == 0 and drawn[-1][1] == drawn[-1][2] > 0 and len(drawn) >= 2
    assert "digits: waiting for the held-out evaluation of the joint predictor" in steps
    assert steps[-1] == "writing the page (tables and the interactive data)"
    assert "<b>Partial study:</b> 6 of 10 planned architectures finished, 1 failed, 2 in progress" in html
    assert "<b>Complete:</b>" in html
    # each study named by its directory (tiny_study_dir is .../study), with its dataset
    assert re.findall(r'<section id="([^"]+)"', html) == ["glance", "compare", "study", "digits"]
    assert '<a href="#digits">digits</a>' in html and "worker lost" in html
    # the two studies side by side: test errors, config differences, good ranges of the same factors, EDFs
    assert '<section id="compare"><h2>Studies side by side</h2>' in html and '<a href="#compare">' in html
    compare = html[
        html.index('<section id="compare">') : html.index("</section>", html.index('<section id="compare">'))
    ]
    assert (
        '<th>study<br><span class="ci">waveform-noise</span></th><th>digits<br><span class="ci">digits</span></th>'
    ) in compare and '<td class="l">NLC</td>' in compare
    from archstudy.analysis.report import COMPARISON_SECTIONS

    assert re.findall(r'data-figure="([^"]+)"><img', compare) == [
        c.key for p in COMPARISON_SECTIONS for c in COMPARISON_FIGURES if c.section == p.key
    ]
    errors = compare.split('id="compare-errors"')[1].split("</table>")[0]
    for label, root in (("study", tiny_study_dir), ("digits", partial)):
        e = load_results(root, runs=False).trained["test_error"].dropna()
        row = errors.split(f'<a href="#{label}">{label}</a>')[1].split("</tr>")[0]
        assert f"<td>{e.min():.3f}</td>" in row and f"<td>{e.median():.3f}</td>" in row, row
    config = compare.split('id="compare-config"')[1].split("<h3")[0]
    differ = config.split("</table>")[0]
    assert '<code>dataset</code></td><td class="l">waveform-noise</td><td class="l">digits</td>' in differ
    # each study's creation time says nothing about how they differ: in neither table
    assert "created" in load_results(partial, runs=False).config and "<code>created</code>" not in config
    # the keys they share, with their value, one row each in a table of their own (not a sentence of ragged lines)
    same = config.split('<details class="same">')[1]
    assert '<tr><td class="l"><code>protocol</code></td>' in same
    # the synthetic studies recorded no training curves: those figures are replaced by a note
    # ... and the digits study's 6 finished architectures are too few for the joint predictor's held-out evaluation
    assert MIN_ROWS > 6
    # ... and has no siblings
    assert len(IMG.findall(html)) == 2 * len(WITHOUT_CURVES) + len(COMPARISON_FIGURES) - len(PREDICTING) - len(
        WITH_SIBLINGS
    )
    assert html.count('data-missing="rate-transfer"') == 1
    assert html.count("No training curves recorded") == 2
    # a study where nothing has finished still gets its section
    empty = synth.write_study(tmp_path / "empty", n=4, dataset="checkerboard", finished=[])
    html = write_report([empty], tmp_path / "empty.html", n_boot=10).read_text(encoding="utf-8")
    assert "0 of 4 planned architectures finished" in html and "No architecture has finished training yet" in html


def test_cli_report_writes_the_file_and_reports_user_errors_in_one_line(tiny_study_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(tiny_study_dir), "--out", str(out), "--n-boot", "20", "--nlc-window", "0.5", "4"]) == 0
    assert out.exists() and "NLC window" in out.read_text(encoding="utf-8") and "[0.5, 4]" in out.read_text()
    assert "Window [0.5, 4]: given" in out.read_text()
    assert f"wrote {out}" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("archstudy report: error: load_results.study_dir = ")
    assert main(["report", str(tiny_study_dir), "--out", str(out), "--nlc-window", "3", "1"]) == 2
    assert "write_report.window = (3.0, 1.0): must be two finite numbers 0 <= lo < hi" in capsys.readouterr().err


def test_cli_report_writes_every_figure_of_the_page_as_a_file_in_the_format_asked(tiny_study_dir, tmp_path, capsys):
    figures, out = tmp_path / "figures", tmp_path / "r.html"
    assert (
        main(
            [
                "report",
                str(tiny_study_dir),
                "--out",
                str(out),
                "--n-boot",
                "5",
                "--figures",
                str(figures),
                "--format",
                "svg",
            ]
        )
        == 0
    )
    assert f"figures as svg in {figures}" in capsys.readouterr().out
    ids = re.findall(r'<figure id="([^"]+)" data-figure="[^"]+"><img', out.read_text(encoding="utf-8"))
    assert len(ids) == len(WITHOUT_CURVES)  # the tiny study recorded no training curves
    assert sorted(p.name for p in figures.iterdir()) == sorted(f"{i}.svg" for i in ids)
    for p in figures.iterdir():
        text = p.read_text(encoding="utf-8")
        assert text.startswith("<?xml") and "<svg" in text and "</svg>" in text
    # --format without --figures, and a figures directory inside the study: one line, exit 2, nothing written
    assert main(["report", str(tiny_study_dir), "--out", str(tmp_path / "x.html"), "--format", "pdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --figures DIR too" in err
    assert (
        main(
            [
                "report",
                str(tiny_study_dir),
                "--out",
                str(tmp_path / "x.html"),
                "--figures",
                str(tiny_study_dir / "figures"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is inside the study" in err
    assert not (tiny_study_dir / "figures").exists() and not (tmp_path / "x.html").exists()


def test_the_report_never_overwrites_a_studys_files_or_a_non_html_file(tiny_study_dir, tmp_path, capsys):
    """``--out`` inside the study (other than STUDY/report.html), a directory, no name, or an existing
    non-HTML file: one line, exit 2, nothing written, no temporary file left; STUDY/report.html is allowed."""
    from archstudy.study.experiment.config import REPORT_NAME  # the file ``archstudy run --report`` writes

    victim = next((tiny_study_dir / "architectures").glob("*.parquet"))
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    before = {p: p.read_bytes() for p in tiny_study_dir.rglob("*") if p.is_file()}
    cases = [
        (tiny_study_dir / "study.yaml", "is inside the study"),
        (victim, "is inside the study"),
        (tiny_study_dir / "architectures" / "report.html", "is inside the study"),
        (tmp_path, "is a directory: give the HTML file to write"),
        ("", "must be a file path"),
        (notes, "exists and is not an HTML file"),
    ]
    for out, expected in cases:
        assert main(["report", str(tiny_study_dir), "--out", str(out), "--n-boot", "5"]) == 2, out
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected in err, err
    assert {p: p.read_bytes() for p in tiny_study_dir.rglob("*") if p.is_file()} == before
    assert notes.read_text() == "mine\n" and not list(tmp_path.glob(".*.tmp"))
    inside = tiny_study_dir / REPORT_NAME
    try:
        assert main(["report", str(tiny_study_dir), "--out", str(inside), "--n-boot", "5"]) == 0
        assert main(["report", str(tiny_study_dir), "--out", str(inside), "--n-boot", "5"]) == 0  # HTML: replaced
    finally:
        inside.unlink(missing_ok=True)


def test_report_command_imports_only_analysis_sampling_and_the_standard_library():
    source = Path(__file__).resolve().parents[2] / "study" / "cli" / "report.py"
    modules = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(
                ".".join(node.module.split(".")[:2])
                if node.module.startswith("archstudy.")
                else node.module.split(".")[0]
            )
    allowed = {"archstudy.analysis", "archstudy.sampling"} | set(sys.stdlib_module_names)
    assert modules and modules <= allowed, modules - allowed
    # and analysis itself never imports torch
    code = "import sys, archstudy.analysis, archstudy.analysis.report; print('torch' in sys.modules)"
    root = str(Path(__file__).resolve().parents[2])
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0 and res.stdout.strip() == "False", res.stderr


def test_the_report_needs_no_matplotlib_backend(tiny_study_dir, tmp_path):
    """The figures are ``Figure`` objects rendered straight to PNG, never through pyplot: with no MPLBACKEND
    and a display that does not exist, the report is written and matplotlib never chose a backend."""
    out = tmp_path / "report.html"
    code = (
        "import matplotlib; from archstudy.analysis import write_report; "
        f"write_report({str(tiny_study_dir)!r}, {str(out)!r}, n_boot=10); "
        "print(matplotlib.rcParams._get_backend_or_none())"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"} | {"DISPLAY": ":99"}
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(Path(__file__).resolve().parents[2]),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0 and res.stdout.strip() == "None", res.stderr[-2000:]
    assert len(IMG.findall(out.read_text(encoding="utf-8"))) == len(WITHOUT_CURVES)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
# Appended to a copy of the report: after load, write into the DOM how many
# images decoded with a size, the page's scroll width beside the viewport's, and how many images are wider than
# their column (the element their figure sits in) or run past its right edge.
PROBE = (
    '<script>window.addEventListener("load", () => { const i = [...document.images]; '
    "const wide = i.filter(x => { const r = x.getBoundingClientRect(), "
    'c = x.closest("figure").parentElement.getBoundingClientRect(); '
    "return r.width > c.width + 0.5 || r.right > c.right + 0.5; }).length; "
    'document.body.setAttribute("data-images", i.filter(x => x.complete && x.naturalWidth > 0).length '
    '+ "/" + i.length); document.body.setAttribute("data-layout", '
    'document.documentElement.scrollWidth + "/" + window.innerWidth + "/" + wide); });</script>'
)
# Where the test run keeps what a reader would look at (git-ignored; CI keeps the folder as an artifact).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package 'chromium')")
def test_report_renders_in_headless_chromium_at_1280_px_without_horizontal_scroll(report, tmp_path):
    """At 1280 px: every image decodes, the page is no wider than the window (no horizontal scroll), no image
    is wider than its column; the first screen is kept as test-artifacts/report-first-screen.png."""
    page = tmp_path / "page.html"
    page.write_text(report.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    url = page.resolve().as_uri()
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900"]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    m = re.search(r'data-images="(\d+)/(\d+)"', dom.stdout)
    assert m, dom.stderr[-2000:]
    assert int(m[1]) == int(m[2]) == len(DRAWN)
    scroll, viewport, wide = map(int, re.search(r'data-layout="(\d+)/(\d+)/(\d+)"', dom.stdout).groups())
    assert viewport == 1280 and scroll == viewport and wide == 0, (scroll, viewport, wide)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-first-screen.png"
    shot.unlink(missing_ok=True)
    subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (900, 1280)
    assert pixels[..., :3].std() > 0.05  # not blank: text and tables
    assert (pixels[..., :3].mean(axis=-1) < 0.5).mean() > 0.005  # some dark ink


def test_report_survives_diverged_nonfinite_and_unmeasured_architectures(tmp_path):
    """What a real study holds besides clean rows: architectures whose every run diverged (their errors those of
    the best state the trainer rewound to: here the initial one, at chance), a non-finite NLC at initialization,
    metrics that were not measured (NaN)."""

    def rows(i, variant, spec, rng):
        row = synth.synthetic_row(i, variant, spec, "checkerboard", 0, rng)
        row.update(nlc_after=np.nan, bias_after=np.nan, snip=np.nan, synflow=np.nan)
        if i % 3 == 0:
            chance = 1.0 - 1.0 / spec.d_out
            row.update(test_error=chance, val_error=chance, train_error=chance, all_diverged=True, n_diverged=40)
        if i % 4 == 1:
            row.update(nlc=np.inf, bias=np.nan, nonfinite_init=True)
        return row

    root = synth.write_study(tmp_path / "s", n=9, dataset="checkerboard", rows=rows)
    html = write_report(root, tmp_path / "r.html", n_boot=20).read_text(encoding="utf-8")
    # 9 test errors, 3 of them at chance: every figure is drawn, the joint predictor's too
    assert "could not be drawn" not in html and len(IMG.findall(html)) == len(WITHOUT_CURVES) - len(WITH_SIBLINGS)
    status = re.search(r"diverged \(every run\)</td><td>(\d+)</td>", html)
    assert status and int(status[1]) == 3
    assert re.search(r"non-finite output at initialization</td><td>(\d+)</td>", html)[1] == "2"


def test_the_regions_figure_draws_the_optional_metrics_and_the_one_over_nlc_line(tiny_study_dir):
    """Figures 1 and 3E: scatter points where E.1 / E.3 were measured (here set to exactly 1/NLC and 2/NLC,
    which the dashed line and the titles' Pearson r = -1 on logs must reflect); where not, one line saying so
    instead of an empty panel."""
    from archstudy.analysis.figures import fig1_fig3e_regions, fig1_regions, fig3
    from archstudy.analysis.figures.base import NothingToDraw, omissions

    arch = load_results(tiny_study_dir).architectures.copy()
    blank = FigureData("waveform-noise", arch)
    with pytest.raises(NothingToDraw, match="need the optional metrics E.1 and E.3"):
        fig1_fig3e_regions(blank)
    assert "needs the optional metric E.1" in next(f for f in FIGURES if f.key == "fig1").skip(blank)
    assert "Panel E not drawn: the optional metric E.3 was not computed" in " ".join(omissions(fig3(blank)))
    arch["lar_diameter"] = 1.0 / arch["nlc"]
    arch["error_perturbation"] = 2.0 / arch["nlc"]
    d = FigureData("waveform-noise", arch)
    n = int((np.isfinite(d.sample["nlc"]) & (d.sample["nlc"] > 0)).sum())  # base architectures, as figure 2
    left, right = fig1_fig3e_regions(d).axes
    assert len(left.collections[0].get_offsets()) == n == len(right.collections[0].get_offsets())
    (line,) = left.lines
    x, y = line.get_data()
    assert np.allclose(np.asarray(x) * np.asarray(y), 1.0)
    for ax in (left, right, fig1_regions(d).axes[0], fig3(d).axes[3]):
        assert ax.get_title().replace("\u00a0", " ").lstrip("E: ").startswith("r = -1.00"), ax.get_title()
    assert not omissions(fig3(d))


def test_a_study_where_nothing_trained_or_too_few_finished_says_so_first(tmp_path):
    """Every run diverged: a warning before any statistic; fewer than 10 architectures: another. A tie for
    the best predictor is shown as a tie, not as whichever name sorted first."""

    def diverged(i, v, s, rng):
        row = synth.synthetic_row(i, v, s, "waveform-noise", 0, rng)
        return {**row, "all_diverged": True, "n_diverged": row["n_runs"]}

    dead = synth.write_study(tmp_path / "dead", n=12, rows=diverged)
    html = write_report(dead, tmp_path / "dead.html", n_boot=5).read_text(encoding="utf-8")
    assert "No architecture trained:" in html and "every run of all 12 finished architectures diverged" in html
    assert "Few architectures" not in html
    few = synth.write_study(tmp_path / "few", n=4)
    html = write_report(few, tmp_path / "few.html", n_boot=5).read_text(encoding="utf-8")
    assert "Few architectures:</b> 4 finished" in html and "No architecture trained" not in html
    # with 4 points several predictors share |tau| = 1 or another top value: the overview names them all
    c = correlations(load_results(few).architectures, n_boot=5)
    top = c[(c["n"] >= 3) & (c["rank"] == 1)]
    if len(top) > 1:
        assert f"tie of {len(top)}: " in html
    else:
        assert f"<td>{top['label'].iloc[0]}</td>" in html or top["label"].iloc[0] in html
    healthy = write_report(synth.write_study(tmp_path / "ok", n=12), tmp_path / "ok.html", n_boot=5)
    text = healthy.read_text(encoding="utf-8")
    assert "No architecture trained" not in text and "Few architectures" not in text


def test_the_analysis_functions_take_a_results_as_well_as_its_table(tiny_study_dir):
    import pandas as pd

    from archstudy.analysis import nlc_pruning, paired_effects
    from archstudy.sampling import SpecError

    results = load_results(tiny_study_dir)
    pd.testing.assert_frame_equal(correlations(results, n_boot=5), correlations(results.architectures, n_boot=5))
    pd.testing.assert_frame_equal(paired_effects(results), paired_effects(results.architectures))
    pd.testing.assert_frame_equal(nlc_pruning(results), nlc_pruning(results.architectures))
    with pytest.raises(SpecError, match="is given twice: each study once"):
        write_report([tiny_study_dir, str(tiny_study_dir) + "/"], tiny_study_dir.parent / "twice.html", n_boot=5)
    with pytest.raises(
        SpecError,
        match=r"^correlations\.df = 'list': must be a pandas DataFrame or an "
        r"analysis\.Results$",
    ):
        correlations([1, 2])


def test_the_pruning_analysis_defaults_to_the_studys_own_window_when_it_is_large_enough():
    """The section's numbers without figures (``analyse``) on a 120-architecture windowed population: the
    study's own NLC window is stable, so pruning uses it, with the paper's [1, 3] beside it; the HTML says
    which window is used and why, prints the study's window beside the paper's, and lists the NLC's window
    score in the window-predictor table. A 30-architecture one keeps the paper's window."""
    from archstudy.analysis import Results
    from archstudy.analysis.report.design import good_ranges_html, nlc_window_html
    from archstudy.analysis.report.predictors import windows_html
    from archstudy.analysis.report.pruning import pruning_html, window_text
    from archstudy.analysis.study_analysis import analyse

    from archstudy.analysis.columns import ARCHITECTURE_DTYPES, ARCHITECTURE_REQUIRED
    from archstudy.analysis.results import typed

    def results(n):  # every other column of the contract present and empty, as for an older runner's files
        arch = typed(
            synth.window_population(n, seed=0).assign(train_s=10.0, total_s=11.0),
            ARCHITECTURE_DTYPES,
            ARCHITECTURE_REQUIRED,
            "synthetic",
        )
        return Results(
            study_dir="synthetic",
            config={"dataset": "waveform-noise"},
            architectures=arch,
            runs=pd.DataFrame(),
            failed=[],
            in_progress=0,
            planned=n,
        )

    s = analyse(results(120), "w", n_boot=20, seed=0, window=None)
    own = s.own_nlc_window.iloc[0]
    assert own["large_enough"] and s.pruning_window == (own["low"], own["high"]) and not s.pruning_window_given
    assert s.pruning["label"].tolist() == ["the study's own", "the NLC paper's"]
    assert s.pruning[["lo", "hi"]].to_numpy().tolist() == [list(s.pruning_window), [1.0, 3.0]]
    html = pruning_html(s)
    assert (
        f"Window: the study's own {window_text(*s.pruning_window)}, its NLC's good range (the paper's is [1, 3])"
        in html
    )
    assert "the study&#x27;s own (used)" in html  # the label, HTML-escaped
    box = nlc_window_html(s)
    assert f"<b>The study's own NLC window:</b> {window_text(own['low'], own['high'])}" in box
    assert "beside the NLC paper's [1, 3]" in box and "it is the pruning analysis' default window" in box
    assert box in good_ranges_html(s)
    nlc_row = s.window_scores.set_index("metric").loc["nlc"]
    assert nlc_row["u_shaped"] and nlc_row["tau"] > nlc_row["raw_tau"]
    assert f"{nlc_row['tau']:.2f} ± {nlc_row['tau_sd']:.2f}" in windows_html(s)

    small = analyse(results(30), "w", n_boot=20, seed=0, window=None)
    assert small.pruning_window == (1.0, 3.0) and small.pruning["label"].tolist()[:1] == ["the NLC paper's"]
    assert small.pruning["label"].tolist()[1:] == ["the study's own (not stable)"]
    assert "The study is not large enough for its own window: the band is not stable" in pruning_html(small)
    given = analyse(results(120), "w", n_boot=20, seed=0, window=(0.5, 4.0))
    assert given.pruning_window == (0.5, 4.0) and given.pruning["label"].tolist() == [
        "given",
        "the NLC paper's",
        "the study's own",
    ]


def test_the_report_shows_both_granulated_kendalls_of_depth(report, real_study_dir):
    """Depth is constant in every sibling cell: Jiang's Ψ counts those cells as 0, the τ-b variant skips them."""
    c = correlations(load_results(real_study_dir).architectures, n_boot=10).set_index("predictor")
    row = re.search(r'<td class="l">depth</td>.*?</tr>', report, re.S)[0]
    cells = re.findall(r"<td>(.*?)</td>", row, re.S)
    psi_cell, tau_b_cell = cells[5], cells[6]  # after n, Pearson, Spearman, Kendall, Kendall p / adjusted
    assert psi_cell.startswith(f"{c.loc['depth', 'psi']:.2f}") and c.loc["depth", "psi_constant_cells"] > 0
    assert (
        f"{int(c.loc['depth', 'psi_cells'])} cells ({int(c.loc['depth', 'psi_constant_cells'])} constant)" in psi_cell
    )
    assert tau_b_cell == ("–" if np.isnan(c.loc["depth", "psi_tau_b"]) else f"{c.loc['depth', 'psi_tau_b']:.2f}")


def test_result_files_of_another_science_config_are_left_out_of_the_report_and_it_says_so(tmp_path):
    import pyarrow.parquet as pq
    import yaml

    root = synth.write_study(tmp_path / "s", n=12)
    config = yaml.safe_load((root / "study.yaml").read_text())
    target = sorted((root / "architectures").glob("*.parquet"))[0]
    df = pq.read_table(target).to_pandas()
    target.unlink()
    synth.write_parquet(df, target, "architectures", science={**{k: config[k] for k in synth.SCIENCE}, "seed": 9})
    html = write_report(root, tmp_path / "r.html", n_boot=5).read_text(encoding="utf-8")
    assert (
        "<b>Left out:</b> 1 result file(s) (1 architecture(s)) that do not belong to this study: computed under "
        "another science config than study.yaml&#x27;s."
    ) in html
    assert "11 of 12 planned architectures finished" in html


@pytest.mark.parametrize(("smallest", "said"), [(0.30, True), (0.01, False)])
def test_the_best_predictor_is_called_chance_when_no_predictor_is_a_finding(smallest, said):
    """Under the null the first of many ranked predictors has an interval away from 0 about half the time
    (docs/analysis.md): the overview names it, and says it is not a finding when no predictor's Kendall p,
    adjusted with every test of the page (``analysis.findings``), is at most 0.05; else it names those that are."""
    from types import SimpleNamespace

    from archstudy.analysis.report.predictors import best_predictor_html

    rk = pd.DataFrame(
        {
            "rank": [1, 2, 3],
            "predictor": ["nlc", "bias", "n_params"],
            "label": ["NLC", "output bias", "parameters"],
            "kind": ["metric", "metric", "baseline"],
            "kendall": [0.31, -0.2, 0.1],
            "abs_tau": [0.31, 0.2, 0.1],
            "abs_lo": [0.05, 0.01, -0.1],
            "abs_hi": [0.5, 0.4, 0.3],
        }
    )
    found = pd.DataFrame(
        {
            "family": ["predictor"] * 3,
            "subject": ["nlc", "bias", "n_params"],
            "p": [smallest / 10, 0.1, 0.5],
            "p_adjusted": [smallest, 0.6, 0.9],
            "finding": [smallest <= 0.05, False, False],
        }
    )
    html = best_predictor_html(SimpleNamespace(ranking=rk, anchor="s0", findings=found))
    assert "<b>NLC</b>" in html
    assert ("No predictor is distinguishable from chance once every test of the page is counted" in html) is said
    assert ("Predictors shown to predict test error" in html) is not said


class _Log(list):
    """A log stream (not a terminal) that keeps what was written."""

    def write(self, text: str) -> None:
        self.append(text)

    def flush(self) -> None:
        pass


def test_the_report_progress_in_a_log_says_each_step_that_lasts_and_nothing_for_a_quick_refusal(monkeypatch):
    import archstudy.study.experiment.terminal as R

    monkeypatch.setattr(R, "LOG_COUNTS_S", 0.05)
    monkeypatch.setattr(R, "TICK_S", 0.01)
    quick = _Log()
    p = StepLine(quick)
    p("reading study", None, None)
    p.close()  # refused at once: no line, the error is the command's only one
    assert quick == [] and LOG_COUNTS_S == 2.0
    log = _Log()
    p = StepLine(log)
    p("reading study", None, None)
    time.sleep(0.5)
    p("drawing figures", 3, 40)
    time.sleep(0.5)
    p("drawing figures", 3, 40)  # no change: no new line
    time.sleep(0.2)
    p.close()
    assert log == ["archstudy: reading study ...\n", "archstudy: drawing figures 3/40 ...\n"]
