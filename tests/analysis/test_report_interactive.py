"""The interactive report's data (``analysis.interactive``): what the browser draws is the study's frames, the runs
of each architecture, the selected run's curve; the scripts are in the page once; ``write_report`` bounds its
bootstrap as the command does; two studies' configs compare without ``created`` and without ragged lines."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from archstudy.analysis import load_results, write_report
from archstudy.analysis.drawing import Drawer
from archstudy.analysis.columns import unit_keys
from archstudy.analysis.figures.curves import selected_curves
from archstudy.analysis.interactive import CURVE_POINTS, _curves, _json_block, _runs, design_axes, study_data
from archstudy.analysis.report import N_BOOT_MAX, render
from archstudy.analysis.report.comparison import config_diff_html
from archstudy.analysis.study_analysis import analyse, of_selected_runs
from archstudy.sampling import SpecError


class WithoutFigures(Drawer):
    """The page without its static figures (test_report.py checks those)."""

    def draw_all(self, jobs):
        pass

    def html(self, job):
        return ""


@pytest.fixture(scope="module")
def section(tiny_study_dir):
    """The study's numbers, its held-out prediction left computing and then ended (no test here looks at it)."""
    s = analyse(load_results(tiny_study_dir), "study", n_boot=20, seed=0, window=None, label="study", wait=False)
    s.cancel()
    yield s


def sig(x: float) -> float:
    return float(f"{x:.4g}")


def test_the_pages_data_are_the_studys_frames(section, tiny_study_dir):
    d = study_data(section)
    arch = section.arch.reset_index(drop=True)
    cols = d["columns"]
    assert cols["arch_id"] == arch["arch_id"].tolist()
    for c in ("test_error", "nlc", "bias", "lr", "depth", "width"):
        page = np.array([np.nan if v is None else v for v in cols[c]], dtype=np.float64)
        want = np.array([sig(v) if np.isfinite(v) else np.nan for v in arch[c].to_numpy(np.float64)])
        np.testing.assert_array_equal(page, want, err_msg=c)
    assert cols["activation"] == arch["activation"].tolist()
    # the correlation scatter plots: every predictor of the table, in the ranking's order, with its Kendall tau
    corr = section.corr[section.corr["n"] >= 3].set_index("predictor")
    assert sorted(p["col"] for p in d["scatter"]) == sorted(corr.index)
    order = [p for p in section.ranking["predictor"] if p in corr.index]
    assert [p["col"] for p in d["scatter"]][: len(order)] == order
    for p in d["scatter"]:
        assert p["tau"] == sig(corr.at[p["col"], "kendall"])
    # each architecture's runs: one per learning rate, lowest first, the selected one at the architecture's lr
    runs = load_results(tiny_study_dir).runs
    for _, a in arch.iterrows():
        r = d["runs"][f"{a['arch_id']}@{a['index']}"]
        mine = runs[(runs["arch_id"] == a["arch_id"]) & (runs["index"] == a["index"])].sort_values("lr_index")
        assert len(r["lr"]) == len(r["val"]) == len(r["div"]) == len(mine) == int(a["n_runs"])
        assert r["div"] == "".join("1" if v else "0" for v in mine["diverged"]) and "1" in r["div"]
        assert r["lr"] == sorted(r["lr"]) and r["val"] == [
            sig(v) if np.isfinite(v) else None for v in mine["val_error"]
        ]
        assert r["lr"][r["sel"]] == sig(a["lr"])


def test_the_design_space_plots_take_categories_as_strips_and_spans_of_a_decade_on_a_log_axis():
    arch = pd.DataFrame(
        {
            "depth": np.arange(1, 21),  # 20 values over a decade and more: log
            "activation": ["relu", "tanh"] * 10,  # words: categories
            "norm": ["none"] * 20,  # one value: no plot
            "init_scale": np.linspace(0.5, 2.0, 20),  # within a decade: linear
            "width": [64, 128] * 10,  # a quantity, however few its values: numeric
            "lr": [5.189e-10, 0.4345, 1e-3, 2e-2] * 5,  # the selected rates of a small study: a log axis, not words
            "dilation": [0.8, 1.0, 1.2, 1.0] * 5,  # three numbers of a sampled axis: categories
        }
    )
    got = {a["col"]: a["kind"] for a in design_axes(arch)}
    want = {"depth": "log", "activation": "category", "init_scale": "linear", "width": "linear", "lr": "log"}
    assert got == {**want, "dilation": "category"}


def test_the_detail_panels_curve_is_the_selected_runs_at_most_60_epochs_the_last_kept():
    epochs = np.arange(1, 201)
    curves = pd.DataFrame(
        {
            "arch_id": "a",
            "epoch": epochs,
            "monitored_error": 1.0 / epochs,
            "train_loss": 2.0 / epochs,
            "monitored": "val",
        }
    )
    c = _curves(curves)["a"]
    assert len(c["epoch"]) == CURVE_POINTS and c["epoch"][0] == 1 and c["epoch"][-1] == 200
    assert c["error"] == [sig(1.0 / e) for e in c["epoch"]] and c["monitored"] == "val"
    assert _curves(curves.head(10))["a"]["epoch"] == list(range(1, 11))


def test_a_data_block_cannot_close_its_script():
    block = _json_block("data-x", {"spec": "</script><script>alert(1)</script>"})
    inner = block[block.index(">") + 1 : -len("</script>")]
    assert "</" not in inner and json.loads(inner.replace("<\\/", "</"))["spec"].startswith("</script>")


def test_the_scripts_are_in_the_page_once_for_two_studies(section):
    from plotly.offline import get_plotlyjs

    other = dataclasses.replace(section, anchor="again", label="again")
    page = render([section, other], drawer=WithoutFigures())
    assert page.count(get_plotlyjs()) == 1
    assert len(re.findall(r'<script type="application/json" id="data-(study|again)">', page)) == 2
    # the navigation bar stays on screen (CSS) and links every study
    assert re.search(r"nav\.bar \{ position: sticky; top: 0;", page)
    bar = page.split('<nav class="bar">')[1].split("</nav>")[0]
    assert '<a href="#study">study</a>' in bar and '<a href="#again">again</a>' in bar


def test_write_report_bounds_its_bootstrap_as_the_command_does(tiny_study_dir, tmp_path):
    from archstudy.study.cli.report import N_BOOT_MAX as COMMANDS

    assert N_BOOT_MAX == COMMANDS == 100_000
    for bad in (N_BOOT_MAX + 1, -1, 10**12):
        with pytest.raises(SpecError) as e:
            write_report(tiny_study_dir, tmp_path / "r.html", n_boot=bad)
        assert str(e.value) == f"write_report.n_boot = {bad}: must be an integer in [0, {N_BOOT_MAX}]"
    assert not (tmp_path / "r.html").exists()


class Nesting(HTMLParser):
    """Records every element opened while a <p> is open (a block there breaks the paragraph apart)."""

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.inside_p: list[str] = []

    def handle_starttag(self, tag, attrs):
        if "p" in self.open:
            self.inside_p.append(tag)
        if tag not in ("br", "img", "meta"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag) :]


def test_two_configs_compare_without_created_and_without_a_paragraph_broken_by_a_long_value():
    protocol = {"kind": "custom", "learning_rates": [10.0**-k for k in range(40)], "epochs": 7}
    base = {"dataset": "digits", "seed": 0, "protocol": protocol, "param_budget": 20000}
    studies = [
        SimpleNamespace(name=name, results=SimpleNamespace(config={**base, "seed": seed, "created": created}))
        for name, seed, created in (("a", 0, "2026-11-01T00:00:00+00:00"), ("b", 1, "2026-11-02T00:00:00+00:00"))
    ]
    out = config_diff_html(studies)
    assert "created" not in out and "2026-11-0" not in out
    assert "<code>seed</code>" in out.split("</table>")[0]  # differs
    parser = Nesting()
    parser.feed(out)
    assert not {"details", "table", "div", "pre"} & set(parser.inside_p), parser.inside_p
    assert "<code>protocol</code>" in out and '<details class="fold">' in out  # the long value folds, in a cell
    text = re.sub(r"<[^>]+>", "\n", out)
    assert not [line for line in text.splitlines() if line.strip().startswith(";")]


def test_an_arch_id_sampled_at_two_indices_keeps_each_units_runs_and_curve_apart():
    """A large study samples some specs twice (the same arch_id at two indices, each trained on its own): the page's
    runs and curves, and the figures' selected curve, are each unit's own, not a mix of the two."""
    arch = pd.DataFrame({"arch_id": ["aa", "aa", "bb"], "index": [3, 7, 5], "lr_index": [1, 0, 0]})
    runs = pd.DataFrame(
        {
            "arch_id": ["aa"] * 4 + ["bb"] * 2,
            "index": [3, 3, 7, 7, 5, 5],
            "lr_index": [0, 1, 0, 1, 0, 1],
            "lr": [0.1, 1.0, 0.1, 1.0, 0.1, 1.0],
            "val_error": [0.5, 0.2, 0.3, 0.6, 0.4, 0.4],
            "diverged": [False, False, False, True, False, False],
            "selected": [False, True, True, False, True, False],
        }
    )
    curves = pd.DataFrame(
        {"arch_id": ["aa"] * 4, "index": [3, 3, 7, 7], "lr_index": [1, 1, 0, 0], "epoch": [1, 2, 1, 2]}
        | {"monitored_error": [0.3, 0.2, 0.5, 0.3], "train_loss": [1.0, 0.5, 2.0, 1.0], "monitored": ["val"] * 4}
    )
    keys = unit_keys(arch)
    assert keys == ["aa@3", "aa@7", "bb@5"]
    got = _runs(runs, keys)
    assert got["aa@3"]["div"] == "00" and got["aa@3"]["sel"] == 1
    assert got["aa@7"]["div"] == "01" and got["aa@7"]["sel"] == 0
    assert _curves(of_selected_runs(curves, arch))["aa@7"]["error"] == [0.5, 0.3]
    for (_, row), want in zip(arch.iterrows(), ([0.3, 0.2], [0.5, 0.3], [])):
        assert selected_curves(curves, row)["monitored_error"].tolist() == want


def test_a_large_study_keeps_the_runs_and_curves_of_its_best_architectures_only(section, monkeypatch):
    """Above ``study_analysis.DETAIL_MAX`` architectures the page holds the runs of the lowest-test-error ones only
    (every point keeps its hover and metrics), and says how many of how many."""
    import archstudy.analysis.study_analysis as sections_module

    arch = section.arch.reset_index(drop=True)
    full = study_data(section)
    monkeypatch.setattr(sections_module, "DETAIL_MAX", 3)
    d = study_data(section)
    best = arch.sort_values(["test_error", "arch_id", "index"], kind="stable").head(3)
    assert set(d["runs"]) == set(unit_keys(best)) and len(arch) > 3
    assert all(d["runs"][k] == full["runs"][k] for k in d["runs"])
    assert d["detail"] == {"max": 3, "of": len(arch)} and d["columns"] == full["columns"]
