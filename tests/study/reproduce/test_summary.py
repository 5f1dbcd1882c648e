"""``archstudy reproduce all`` (``study.reproduce.summary``) and four of the reproductions ("part B"): each at its
tiny scale writes every key with finite values; the summary (table, summary.json, index page) adds up and links
every page; side by side in their own processes they measure what they measure in one; the up-front estimate
follows the declared costs and the plan; the papers' experiments not offered are listed with their reasons; the
claims are computed right and can fail."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re

import pytest

from archstudy.analysis.html import esc
from archstudy.sampling import SpecError, UserError
from archstudy.study.cli import main
from archstudy.study.reproduce import NOT_OFFERED, REPRODUCTIONS, nlc_figure1, reproduce_all
from archstudy.study.reproduce import resnet_depth, resnet_hessian, variability_collapse, yz_variability_depth
from archstudy.study.reproduce.result import ROW_KEYS
from archstudy.study.reproduce.reproduction import Reproduction, RunOptions
from archstudy.study.reproduce.summary import (
    cost_seconds,
    estimated_seconds,
    order,
    planned_seconds,
    run_all,
    summary_table,
)

PART_B = {
    "nlc-figure1": nlc_figure1,
    "yz-variability-depth": yz_variability_depth,
    "variability-collapse": variability_collapse,
    "resnet-depth": resnet_depth,
}


def expected_keys(name: str) -> set[str]:
    if name == "nlc-figure1":
        return {"pearson_log:nlc_vs_lar_diameter", "slope_log:lar_diameter_on_nlc"}
    if name == "yz-variability-depth":
        last = yz_variability_depth.SCALES["tiny"].depths[-1]
        return {
            "peak_depth:FC+ReLU",
            "min_variability_below_27:FC+ReLU",
            "max_variability_from_27:FC+ReLU",
            "peak_depth:FC+ABS",
            "min_variability:FC+ABS",
            f"variability:HanNet:L={last}",
            "deepest_over_shallowest:HanNet",
        }
    if name == "resnet-depth":
        tiny = resnet_depth.SCALES["tiny"]
        last, relu = tiny.depths[-1], tiny.relu_depths[-1]
        return {
            f"log10_excess_loss:shortcut2:depth={last}",
            "log10_excess_loss_growth:shortcut2",
            f"log10_optimal_lr:shortcut2_over_orthogonal:depth={last}",
            f"log10_final_loss:shortcut2-relu:depth={relu}",
        }
    last = variability_collapse.SCALES["tiny"].depth
    return {
        f"log10_c_over_g:ReLU:L={last}",
        f"log10_c_relu_over_abs:L={last}",
        f"g_orthogonality_error:HanNet:L={last}",
    }


@pytest.fixture(scope="module")
def tiny_all(tmp_path_factory):
    """The part-B reproductions through ``run_all`` at the tiny scale, two side by side in their own processes,
    their progress lines kept (the five others run in test_reproduce)."""
    from archstudy.study.reproduce.summary import run_all

    out, progress, echo = tmp_path_factory.mktemp("all"), io.StringIO(), io.StringIO()
    entries, json_path, html_path = run_all(
        {n: REPRODUCTIONS[n] for n in PART_B}, out, RunOptions(scale="tiny", jobs=2, progress=progress, echo=echo)
    )
    return out, entries, json.loads(json_path.read_text()), html_path.read_text(), progress.getvalue(), echo.getvalue()


@pytest.mark.parametrize("name", list(PART_B))
def test_every_part_b_reproduction_writes_every_key_with_finite_values(tiny_all, name):
    out = tiny_all[0]
    d = json.loads((out / f"{name}.json").read_text())
    assert d["name"] == name and d["scale"] == "tiny" and d["seconds"] > 0
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and r["measured"] is not None and math.isfinite(r["measured"]), r
    assert {r["quantity"] for r in d["rows"]} == expected_keys(name)
    page = (out / f"{name}.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'src="data:image/png;base64,' in page


def test_summary_json_and_index_add_up_and_link_every_page(tiny_all):
    out, entries, summary, index = tiny_all[:4]
    assert [e["name"] for e in summary["reproductions"]] == list(PART_B)
    for e in summary["reproductions"]:
        d = json.loads((out / e["json"]).read_text())
        assert e["rows"] == len(d["rows"]) and e["agreeing"] == sum(r["verdict"] == "agrees" for r in d["rows"])
        assert e["agreeing"] == sum(r["ok"] for r in d["rows"])  # "ok" is "agrees" for a reader of the old key
        assert e["differing"] == [r["quantity"] for r in d["rows"] if r["verdict"] == "differs"]
        assert e["cannot_tell"] == [r["quantity"] for r in d["rows"] if r["verdict"] == "cannot tell"]
        # every row under exactly one claim: its own
        under = [(c["claim"], r) for c in e["claims"] for r in c["rows"]]
        assert sorted(r["quantity"] for _, r in under) == sorted(r["quantity"] for r in d["rows"])
        assert all(r in d["rows"] and r["claim"] == claim for claim, r in under)
        assert e["claims_agreeing"] == sum(c["verdict"] == "agrees" for c in e["claims"])
        assert e["seconds"] == d["seconds"] and (out / e["html"]).exists()
        assert f'href="{e["html"]}"' in index and f"{e['agreeing']} / {e['rows']}" in index
    assert summary["agreeing"] == sum(e["agreeing"] for e in summary["reproductions"])
    assert summary["rows"] == sum(e["rows"] for e in summary["reproductions"])
    assert summary["claims"] == sum(len(e["claims"]) for e in summary["reproductions"])
    assert summary["claims_agreeing"] == sum(e["claims_agreeing"] for e in summary["reproductions"])
    assert f"{summary['claims_agreeing']} of {summary['claims']} claims" in index
    assert summary["seconds"] >= max(e["seconds"] for e in summary["reproductions"])  # side by side: not the sum
    assert len(summary["not_offered"]) == len(NOT_OFFERED) and all(esc(n.reason) in index for n in NOT_OFFERED)
    assert not re.search(r'(src|href)="(https?:)?//', index)
    table = summary_table(entries, summary["seconds"]).splitlines()
    assert table[-1].split()[:7] == [
        "all",
        str(summary["claims_agreeing"]),
        "/",
        str(summary["claims"]),
        str(summary["agreeing"]),
        "/",
        str(summary["rows"]),
    ]
    assert max(len(line) for line in table) <= 100


def test_costs_parse_and_the_estimate_is_the_sum_of_the_declared_times():
    assert cost_seconds("3 min") == 180 and cost_seconds("40 s") == 40 and cost_seconds("1.5 h (est.)") == 5400
    assert cost_seconds("hours (estimated): a GPU job") is None and cost_seconds("to be measured") is None
    total, unknown = estimated_seconds(REPRODUCTIONS, "quick")
    declared = [cost_seconds(r.cost["quick"]) for r in REPRODUCTIONS.values()]
    assert total == sum(x for x in declared if x is not None)
    assert unknown == [n for n, x in zip(REPRODUCTIONS, declared) if x is None]
    for name in PART_B:  # the part-B reproductions declare their times at tiny and quick
        assert all(cost_seconds(REPRODUCTIONS[name].cost[s]) is not None for s in ("tiny", "quick"))


def test_side_by_side_processes_give_the_numbers_of_one_process_in_catalogue_order(tiny_all, tiny_runs):
    """The four part-B reproductions, run two at a time in their own processes, measure exactly what each measures
    alone in the test process (``tiny_runs``, test_reproduce's runs): every draw comes from the reproduction's
    own seeds. The summary keeps the catalogue's order; each worker's progress lines reach ``progress``."""
    entries, summary, progress, echo = tiny_all[1], tiny_all[2], tiny_all[4], tiny_all[5]
    assert [e.name for e in entries] == list(PART_B) and summary["jobs"] == 2 and summary["threads"] == 1
    for e in entries:
        alone = tiny_runs.run(e.name)[1]
        assert [(r.quantity, r.measured, r.ok) for r in e.result.rows] == [
            (r.quantity, r.measured, r.ok) for r in alone.rows
        ], e.name
        assert f"] {e.name} done in " in echo
    for name in ("yz-variability-depth", "variability-collapse", "resnet-depth"):  # nlc-figure1 says nothing at tiny
        assert f"\n{name}: " in "\n" + progress
    assert echo.index("side by side in 2 processes: resnet-depth") < echo.index("] resnet-depth done in ")


def fake(name: str, seconds: float, whole_machine: bool = False) -> Reproduction:
    return Reproduction(
        name,
        "p",
        "s",
        "x",
        scales={s: None for s in ("tiny", "quick", "paper")},
        cost={"tiny": "1 s", "quick": f"{seconds:g} s", "paper": "days"},
        reproduce=print,
        whole_machine=whole_machine,
    )


def test_the_plan_runs_whole_machine_ones_alone_then_the_rest_longest_first_on_the_first_free_process():
    rs = {r.name: r for r in (fake("a", 10), fake("study", 50, True), fake("b", 40), fake("c", 30), fake("d", 20))}
    assert order(rs, "quick", 1) == (["a", "study", "b", "c", "d"], [])  # one job: the catalogue, in this process
    assert order(rs, "quick", 2) == (["study"], ["b", "c", "d", "a"])
    assert planned_seconds(rs, "quick", 1) == 150 == estimated_seconds(rs, "quick")[0]
    # two processes: b (40) | c (30), then d on c's (50), a on b's (50): the study's 50 + 50
    assert planned_seconds(rs, "quick", 2) == 100
    assert planned_seconds(rs, "quick", 3) == 50 + 40 and planned_seconds(rs, "quick", 8) == 50 + 40
    assert planned_seconds(rs, "paper", 2) == 0  # no time stated: counts 0 (and is named up front)


def test_a_mistake_found_in_a_worker_is_its_one_line_and_a_crash_names_the_reproduction(tmp_path):
    """A ``UserError`` raised inside a side-by-side process reaches the caller as the same one line (the command
    line prints it, exit status 2); anything else names the reproduction with its last lines. Nothing is
    half-written either way."""
    name = "variability-collapse"
    r = REPRODUCTIONS[name]
    mistaken = dataclasses.replace(r, scales={**r.scales, "tiny": dataclasses.replace(r.scales["tiny"], width=0)})
    with pytest.raises(UserError, match=r"^ArchSpec.width = 0: must be an integer >= 1$"):
        run_all(
            {name: mistaken, "resnet-norms": REPRODUCTIONS["resnet-norms"]},
            tmp_path,
            RunOptions(scale="tiny", jobs=2, progress=io.StringIO(), echo=None),
        )
    crashing = dataclasses.replace(r, scales={**r.scales, "tiny": dataclasses.replace(r.scales["tiny"], points="x")})
    failed = f"(?s)reproduce all: {name} failed in its process .*its last lines:\n.*Error"
    with pytest.raises(RuntimeError, match=failed):
        run_all({name: crashing}, tmp_path, RunOptions(scale="tiny", jobs=2, progress=io.StringIO(), echo=None))
    assert not (tmp_path / f"{name}.json").exists() and not (tmp_path / "summary.json").exists()


def test_all_prints_its_estimate_before_any_work_and_refuses_bad_input_first(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "all", "--scale", "huge", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "reproduce.scale = 'huge'" in err and err.count("\n") == 1 and not out.exists()
    assert main(["reproduce", "all", "--device", "nodevice", "--out", str(out)]) == 2
    assert "reproduce.device = 'nodevice'" in capsys.readouterr().err and not out.exists()
    assert main(["reproduce", "all", "--root", str(tmp_path), "--out", str(out)]) == 2
    assert "holds none of the data sets" in capsys.readouterr().err and not out.exists()
    with pytest.raises(SpecError, match="reproduce.seed = -1"):
        reproduce_all(out, scale="tiny", seed=-1, echo=None, progress=None)


def test_list_names_the_experiments_not_offered_with_their_reasons(capsys):
    assert main(["reproduce", "--list"]) == 0
    text = capsys.readouterr().out
    for n in NOT_OFFERED:
        assert n.line() in text and n.reason
    papers = {n.paper for n in NOT_OFFERED} | {r.paper for r in REPRODUCTIONS.values()}
    for author in ("Philipp and Carbonell", "Yu and Zhang", "Chen and Ge", "Demystifying ResNet", "variability"):
        assert any(author in p for p in papers)


# -- the claims of each part-B reproduction: computed right, and able to fail ------------------------------------


def test_yz_claims_pass_on_the_papers_picture_and_fail_without_collapse():
    depths = list(range(3, 46, 3))
    relu = {d: (0.0 if d >= 27 else 10.0 - abs(d - 15) / 3) for d in depths}  # peak at 15, C2C from 27
    abs_ = {d: 20.0 - abs(d - 21) / 3 for d in depths}
    han = {d: 30.0 + d / 45 for d in depths}
    rows = {
        r.quantity: r for r in yz_variability_depth.claims({"FC+ReLU": relu, "FC+ABS": abs_, "HanNet": han}, depths)
    }
    assert all(r.ok for r in rows.values()) and rows["peak_depth:FC+ReLU"].measured == 15
    relu[45] = 1.0  # one depth from 27 on without Collapse to Constants
    rows = {
        r.quantity: r for r in yz_variability_depth.claims({"FC+ReLU": relu, "FC+ABS": abs_, "HanNet": han}, depths)
    }
    assert not rows["max_variability_from_27:FC+ReLU"].ok and rows["max_variability_from_27:FC+ReLU"].measured == 1.0


def test_yz_nets_are_about_4000_parameters_and_the_hannet_shares_the_fc_abs_frame():
    for hidden in (3, 24, 45):
        fc = yz_variability_depth.spec_of("FC+ReLU", hidden)
        han = yz_variability_depth.spec_of("HanNet", hidden)
        assert fc.depth == hidden + 1 and (fc.d_in, fc.d_out) == (2, 2)
        # the width closest to 4,000: one more or one less is no closer
        for w in (fc.width - 1, fc.width + 1):
            assert abs(fc.replace(width=w).num_params - 4000) >= abs(fc.num_params - 4000)
        assert (han.depth, han.width, han.activation) == (fc.depth, fc.width, "abs") and han.num_params < 1000


def test_nlc_figure1_claims_on_exact_inverse_points_and_on_unrelated_ones():
    import numpy as np

    nlcs = np.geomspace(1.0, 1000.0, 12)
    inverse = [{"nlc": float(v), "lar_diameter": float(1 / v)} for v in nlcs]
    rows, facts = nlc_figure1.claims(inverse)
    assert all(r.ok for r in rows) and rows[1].measured == pytest.approx(-1.0)
    assert facts["median_product"] == pytest.approx(1.0) and facts["censored"] == 0
    flat = [{"nlc": float(v), "lar_diameter": 0.1 * (1 + 0.01 * (i % 2))} for i, v in enumerate(nlcs)]
    rows, _ = nlc_figure1.claims(flat + [{"nlc": 5.0, "lar_diameter": float("nan")}])
    assert not any(r.ok for r in rows)


def test_resnet_depth_nets_are_resnet_hessians_and_descent_reaches_the_least_squares_optimum():
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    for shortcut, depth in [(0, 4), (1, 3), (2, 4), (3, 6)]:
        theta = torch.from_numpy(rng.standard_normal(depth * 100) * 0.3)
        ours = resnet_depth.end_to_end(theta.reshape(1, depth, 10, 10), shortcut)[0]
        assert torch.allclose(ours, resnet_hessian.end_to_end(theta, depth, shortcut, 10), atol=1e-12)
    # the moments form of the loss equals the data form; the optimum is least squares' (an independent solve)
    x = rng.standard_normal((200, 10))
    y = resnet_hessian.one_hot(rng.integers(0, 10, 200), 10)
    data = resnet_hessian.Moments.of(x, y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    layers = torch.from_numpy(rng.standard_normal((2, 3, 10, 10)) * 0.2)
    w = resnet_depth.end_to_end(layers, 1)
    direct = 0.5 * ((yt[None] - xt[None] @ w.transpose(1, 2)) ** 2).sum(dim=2).mean(dim=1)
    assert torch.allclose(resnet_depth.losses(layers, 1, False, xt, yt, data), direct, atol=1e-12)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    assert resnet_depth.optimal_loss(data) == pytest.approx(
        0.5 * np.mean(np.sum((y - x @ beta) ** 2, axis=1)), rel=1e-10
    )
    # one layer without shortcut is least squares itself: gradient descent at a good rate reaches the optimum; a
    # rate far too large diverges and counts as infinite
    final = resnet_depth.train(torch.zeros(100, dtype=torch.float64), 1, 0, False, (0.5, 1e3), 400, xt, yt, data)
    assert final[0] == pytest.approx(resnet_depth.optimal_loss(data), rel=1e-6) and final[1] == math.inf


def test_resnet_depth_claims_pass_on_the_papers_picture_and_fail_on_its_opposite():
    def entry(loss, lr):
        return {"final_loss": loss, "optimal_lr": lr}

    good = {
        "linear": {
            "shortcut2": {6: entry(1.0 + 1e-8, 0.1), 96: entry(1.0 + 1e-8, 0.1)},
            "orthogonal": {6: entry(1.0 + 1e-8, 0.1), 96: entry(1.01, 0.01)},
            "xavier": {6: entry(1.0 + 1e-6, 0.1), 96: entry(1.4, 0.001)},
        },
        "relu": {
            "shortcut2": {64: entry(0.5, 0.1)},
            "orthogonal": {64: entry(0.9, 0.1)},
            "xavier": {64: entry(1.4, 0.1)},
        },
    }
    assert all(r.ok for r in resnet_depth.claims(good, 1.0))
    bad = {
        "linear": {
            "shortcut2": good["linear"]["xavier"],
            "orthogonal": good["linear"]["orthogonal"],
            "xavier": good["linear"]["shortcut2"],
        },
        "relu": {
            "shortcut2": good["relu"]["xavier"],
            "orthogonal": good["relu"]["orthogonal"],
            "xavier": good["relu"]["shortcut2"],
        },
    }
    rows = {r.quantity: r for r in resnet_depth.claims(bad, 1.0)}
    assert not any(r.ok for r in rows.values())
    assert rows["log10_excess_loss_growth:shortcut2"].measured == pytest.approx(math.log10(0.4) + 6)
