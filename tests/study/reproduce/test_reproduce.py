"""``archstudy reproduce``: every reproduction at its tiny scale writes the issue's JSON shape with every key and
finite values, and a self-contained page; Table 1's line A matches the paper to 0.5%; the claims of figure 2
are computed right (and can fail); the report lists the verdicts only when asked; bad input is one line."""

from __future__ import annotations

import json
import math
import pickle
import re

import numpy as np
import pandas as pd
import pytest

from archstudy.sampling import PAPER_ACTIVATIONS, SpecError, UserError
from archstudy.study.cli import main
from archstudy.study.reproduce import REPRODUCTIONS, SCALES, Row
from archstudy.study.reproduce import nlc_figure2, nlc_table1, resnet_hessian
from archstudy.study.reproduce.result import ROW_KEYS, format_table
from archstudy.study.reproduce.verdict import exact, mean

TOP_KEYS = ("name", "paper", "scale", "seconds", "rows")


def expected_keys(name: str, settings) -> set[str]:
    """The quantity keys of the issue (Table 2 and figure 4 at the depths of the scale)."""
    if name == "nlc-table1":
        return {
            f"{line}:{a}"
            for line in ("nlc_tau", "nlc_depth2_bn", "nlc_tau_power48", "nlc_depth49_bn", "linear_approx_error")
            for a in PAPER_ACTIVATIONS
        }
    if name == "nlc-table2":
        return {f"nlc:depth={d}" for d in (2, 5, 10, 15, 20, 25, 50)}
    if name == "nlc-figure2":
        return {
            "spearman:nlc_vs_test_error",
            "median_test_error:nlc_in_1_3",
            "median_test_error:nlc_above_100",
            "median_test_error:high_bias",
        }
    if name == "han-checkerboard":
        return {
            f"test_accuracy:{layers}+{act}:{frame}"
            for layers in ("H", "FC")
            for act in ("ABS", "ReLU")
            for frame in ("20x30", "100x17")
        } | {"test_accuracy:FCNet1:6x100", "test_accuracy:FCNet2:10x100", "test_accuracy:FCNet3:6x300"}
    assert name == "resnet-hessian"
    return {
        f"condition_number:{k}:depth={d}"
        for k in resnet_hessian.KINDS
        if k != "shortcut3"
        for d in resnet_hessian.depths(k, settings.max_depth)
    } | {
        f"{q}:shortcut3:depth={d}"
        for q in ("largest_eigenvalue", "largest_eigenvalue_shrinks")
        for d in resnet_hessian.depths("shortcut3", settings.max_depth)
    }


def check_outputs(name: str, out, scale="tiny") -> dict:
    """The JSON has the issue's shape, every key, finite values; the page is one self-contained file."""
    d = json.loads((out / f"{name}.json").read_text())
    assert tuple(d)[:5] == TOP_KEYS and d["name"] == name and d["scale"] == scale and d["seconds"] > 0
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and isinstance(r["ok"], bool) and isinstance(r["tolerance"], str)
        assert r["measured"] is not None and math.isfinite(r["measured"]), r
        assert r["paper"] is None or math.isfinite(r["paper"])
        # the comparison: its replicates (no verdict on fewer than 3 unless exact), interval, test and p
        assert r["replicates"] >= 1 and len(r["interval"]) == 2 and r["test"] and isinstance(r["exact"], bool)
        assert r["verdict"] == "cannot tell" or r["exact"] or r["replicates"] >= 3, r
        assert r["exact"] or len(r["values"]) == r["replicates"] or r["against"]
    quantities = [r["quantity"] for r in d["rows"]]
    assert len(quantities) == len(set(quantities))
    assert set(quantities) == expected_keys(name, REPRODUCTIONS[name].scales[scale])
    page = (out / f"{name}.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('src="data:image/png;base64,') >= 1
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from a network
    for r in d["rows"]:
        assert r["quantity"] in page
    return d


@pytest.fixture(scope="module")
def tiny(tiny_runs):
    """Each reproduction once at its tiny scale (``conftest.TinyRuns``), into one directory."""
    results = {name: tiny_runs.run(name)[1] for name in REPRODUCTIONS}
    return tiny_runs.out, results


@pytest.mark.parametrize("name", ["nlc-table1", "nlc-table2", "nlc-figure2", "resnet-hessian", "han-checkerboard"])
def test_every_reproduction_writes_every_key_with_finite_values(tiny, name):
    out, results = tiny
    d = check_outputs(name, out)
    assert d == json.loads(json.dumps(results[name].to_dict()))  # what was written is what was returned
    lines = format_table(results[name], wide=True).splitlines()[1 : len(d["rows"]) + 1]
    for line, r in zip(lines, d["rows"], strict=True):  # the verdict first, then the quantity
        assert line.startswith(r["verdict"] if r["verdict"] != "differs" else "DIFFERS") and r["quantity"] in line
    page = (out / f"{name}.html").read_text(encoding="utf-8")
    title, h1 = page.split("<title>")[1].split("</title>")[0], page.split("<h1>")[1].split("</h1>")[0]
    assert "*" not in title + h1 and "<i>" in h1  # the paper's *short title* in italics, not in asterisks


def test_every_reproduction_page_has_legible_figures_no_wider_than_the_page(tiny, tiny_runs):
    """As the report's figures: no text under ``MIN_PT`` at the size the page shows it (``page.figure_html`` shows a
    figure at its size in inches), no figure wider than the page's column, each shown at its size."""
    from matplotlib.text import Text

    from archstudy.analysis.plotting import MAX_WIDTH, MIN_PT

    out, _ = tiny
    figures_of = tiny_runs.figures
    assert set(figures_of) == set(REPRODUCTIONS) and all(figures_of.values())
    for name, figures in figures_of.items():
        page = (out / f"{name}.html").read_text(encoding="utf-8")
        for caption, fig in figures:
            small = {t.get_text() for t in fig.findobj(Text) if t.get_text().strip() and t.get_fontsize() < MIN_PT}
            assert not small, (name, caption, small)
            assert fig.get_figwidth() <= MAX_WIDTH, (name, caption)
            assert f'width="{round(fig.get_figwidth() * 96)}"' in page, (name, caption)


def test_nlc_table1_lines_a_c_e_match_the_paper_and_b_lies_close_to_a(tiny):
    out, _ = tiny
    d = json.loads((out / "nlc-table1.json").read_text())
    assert d["data"].startswith("waveform-noise, training split") and "500 points" in d["data"]
    rows = {r["quantity"]: r for r in d["rows"]}
    for act, printed in nlc_table1.LINE_A.items():
        assert rows[f"nlc_tau:{act}"]["measured"] == pytest.approx(float(printed), rel=0.005)
        # lines A, C and E: computed, every row agrees with the paper by the one rule
        assert rows[f"nlc_tau:{act}"]["ok"] and rows[f"nlc_tau_power48:{act}"]["ok"]
        assert rows[f"linear_approx_error:{act}"]["ok"]
        # line B: close to line A (section 5's "close match"); one orthogonally initialized net of width 100 on
        # real data lies within about 10% of it (quick, 5 nets per activation: 0.91 to 1.15 of line A)
        b = d["line_b_values"][act]
        assert all(0.85 < v / float(printed) < 1.2 for v in b), (act, b)
        assert len(d["line_d_values"][act]) == nlc_table1.SCALES["tiny"].deep_inits


def test_nlc_table2_grows_with_depth_as_compounded_relu_layers(tiny):
    out, _ = tiny
    d = json.loads((out / "nlc-table2.json").read_text())
    assert d["data"].startswith("waveform-noise")
    measured = {int(r["quantity"].split("=")[1]): r["measured"] for r in d["rows"]}
    for depth, value in measured.items():  # within a factor 2 of NLC_relu(1)^(depth - 1) even at depth 50
        assert 0.5 < value / 1.2112 ** (depth - 1) < 2.0, (depth, value)


def test_row_helpers_compare_as_they_say():
    assert Row.close("q", 1.22, exact(1.2249), 0.005, "x").ok and not Row.close("q", 1.22, exact(1.2251), 0.005, "x").ok
    assert Row.close("q", 1.0, exact(float("nan")), 1.0, "x").verdict == "cannot tell"
    assert Row.ratio("q", 2.0, exact(2.9), 1.5, "x").ok and not Row.ratio("q", 2.0, exact(1.3), 1.5, "x").ok
    assert Row.claim("q", mean([]), (0.0, 1.0), "x").why_cannot_tell == "nothing was measured (no finite value)"


# -- nlc-figure2 -------------------------------------------------------------------------------------------------


def _arch(rows):
    return pd.DataFrame(rows, columns=["nlc", "test_error", "high_bias"]).assign(variant="base")


def test_figure2_claims_are_the_medians_of_the_nlc_groups_and_can_fail():
    window = [(1.0 + k / 3, 0.10 + 0.01 * k, False) for k in range(6)]  # [1, 3]
    middle = [(10.0 * (k + 1), 0.30 + 0.02 * k, False) for k in range(6)]  # (3, 100]
    far = [(200.0 * 10**k, 0.60 + 0.01 * k, False) for k in range(6)]  # above 100
    biased = [(2.0, 0.67, True), (1e4, 0.55, True), (50.0, 0.61, True)]
    good = _arch(window + middle + far + biased)
    rows, facts = nlc_figure2.claims(good, threshold=0.5)
    r = {row.quantity: row for row in rows}
    assert facts["group_sizes"] == {"[1, 3]": 6, "(3, 100]": 6, "above 100": 6} and facts["n_high_bias"] == 3
    medians = {"[1, 3]": 0.125, "(3, 100]": 0.35, "above 100": 0.625}
    assert facts["group_medians"] == pytest.approx(medians)
    # each group's median less the lowest (highest) of the other two: the claims' measured gaps
    assert r["median_test_error:nlc_in_1_3"].measured == pytest.approx(0.125 - 0.35)
    assert r["median_test_error:nlc_above_100"].measured == pytest.approx(0.625 - 0.35)
    assert r["median_test_error:high_bias"].measured == pytest.approx(0.61)
    nets = window + middle + far
    assert r["spearman:nlc_vs_test_error"].measured == pytest.approx(
        pd.Series([n for n, _, _ in nets]).rank().corr(pd.Series([e for _, e, _ in nets]).rank())
    )
    assert r["spearman:nlc_vs_test_error"].evidence.replicates == 18
    assert all(row.verdict == "agrees" for row in rows) and all(row.paper is None for row in rows)
    # the far nets better than the window's, a high-bias net that trained: those claims fail
    swapped = [(n, 0.75 - e, b) for n, e, b in nets] + [(2.0, 0.20, True), (3.0, 0.25, True), (9.0, 0.1, True)]
    r = {row.quantity: row for row in nlc_figure2.claims(_arch(swapped), threshold=0.5)[0]}
    assert {q: row.verdict for q, row in r.items()} == {q: "differs" for q in r}
    # no high-bias net drawn: nothing to measure, and the row says so
    r = {row.quantity: row for row in nlc_figure2.claims(good[~good["high_bias"]], threshold=0.5)[0]}
    assert r["median_test_error:high_bias"].measured is None and not r["median_test_error:high_bias"].ok
    assert r["median_test_error:high_bias"].verdict == "cannot tell"
    # nothing trained: every net at a random test error, so no claim can be tested (the high-bias one would agree)
    untrained = good.assign(test_error=0.6 + 0.01 * np.arange(len(good)))
    verdicts = {row.quantity: row.verdict for row in nlc_figure2.claims(untrained, threshold=0.5)[0]}
    assert set(verdicts.values()) == {"cannot tell"}, verdicts


def test_figure2_keeps_its_study_for_the_report_which_lists_the_verdicts_only_when_asked(tiny, tmp_path):
    from archstudy.analysis import load_results, write_report

    out, results = tiny
    study = out / "nlc-figure2-tiny-seed3"
    arch = load_results(study, runs=False).architectures
    assert len(arch) == nlc_figure2.SCALES["tiny"].architectures == results["nlc-figure2"].extra["architectures"]
    rows = {r.quantity: r.measured for r in results["nlc-figure2"].rows}
    low = arch[~arch["high_bias"]]
    # the [1, 3] group's median test error less the lower of the other two groups' medians
    middle, far = low[(low.nlc > 3) & (low.nlc <= 100)], low[low.nlc > 100]
    in_window = low[(low.nlc >= 1) & (low.nlc <= 3)]["test_error"].median()
    gap = in_window - min(middle["test_error"].median(), far["test_error"].median())
    assert rows["median_test_error:nlc_in_1_3"] == pytest.approx(gap, rel=1e-12, abs=1e-15)
    plain = write_report(study, tmp_path / "plain.html", n_boot=10).read_text()
    assert 'id="reproductions"' not in plain
    linked = write_report(study, tmp_path / "linked.html", n_boot=10, reproductions=out).read_text()
    section = linked.split('id="reproductions"')[1].split("</table>")[0]
    for name, result in results.items():
        assert f'{out.name}/{name}.html"' in section
        assert f"{result.passed} / {len(result.rows)}" in section
    assert "<i>The Nonlinearity Coefficient</i>" in section and "*" not in section
    with pytest.raises(SpecError, match="holds no reproduction results"):
        write_report(study, tmp_path / "x.html", n_boot=10, reproductions=tmp_path)


# -- resnet-hessian --------------------------------------------------------------------------------------------


def _moments(rng, m=50, d=3, whitened=False):
    x = rng.standard_normal((m, d)) @ rng.standard_normal((d, d))
    if whitened:
        x = resnet_hessian.whiten(x, d)
    y = resnet_hessian.one_hot(rng.integers(0, d, m), d)
    return x, y, resnet_hessian.Moments.of(x, y)


@pytest.mark.parametrize("shortcut,depth", [(0, 3), (1, 3), (2, 4), (3, 3)])
def test_loss_is_the_mean_squared_error_and_its_hessian_the_finite_difference_one(shortcut, depth):
    import torch

    rng = np.random.default_rng(shortcut)
    x, y, data = _moments(rng)
    theta = torch.from_numpy(rng.standard_normal(depth * 9) * 0.5)
    w = resnet_hessian.end_to_end(theta, depth, shortcut, 3).numpy()
    direct = 0.5 * np.mean(np.sum((y - x @ w.T) ** 2, axis=1))
    assert float(resnet_hessian.loss(theta, depth, shortcut, data)) == pytest.approx(direct, rel=1e-12)
    h = resnet_hessian.hessian(theta, depth, shortcut, data).numpy()
    grad = torch.func.grad(lambda t: resnet_hessian.loss(t, depth, shortcut, data))
    eps = 1e-6
    fd = np.stack(
        [
            (grad(theta + eps * e) - grad(theta - eps * e)).numpy() / (2 * eps)
            for e in torch.eye(len(theta), dtype=torch.float64)
        ]
    )
    assert np.allclose(h, h.T, atol=1e-12)
    assert np.abs(h - fd).max() < 1e-7 * max(1.0, np.abs(h).max())


@pytest.mark.parametrize("depth", [2, 4, 6])
def test_theorem2_at_zero_the_two_shortcut_hessian_has_eigenvalues_plus_minus_the_singular_values(depth):
    """Theorem 2 (eq. 22-26): at zero, eigs(H) = +-sigma_k(Sxx - Syx), each d R times; so its condition number
    is eq. 9's whatever the depth."""
    import torch

    x, y, data = _moments(np.random.default_rng(1))
    h = resnet_hessian.hessian(torch.zeros(depth * 9, dtype=torch.float64), depth, 2, data)
    eig = np.sort(resnet_hessian.spectrum(h))
    sigma = np.linalg.svd(x.T @ x / len(x) - y.T @ x / len(x), compute_uv=False)
    expected = np.sort(np.repeat(np.concatenate([sigma, -sigma]), 3 * depth // 2))
    assert np.allclose(eig, expected, atol=1e-12)
    assert resnet_hessian.condition_number_of(eig) == pytest.approx(
        resnet_hessian.theorem2_condition_number(data), rel=1e-10
    )


def test_theorem2_the_three_shortcut_hessian_is_zero_and_the_one_shortcut_blocks_are_sxx():
    import torch

    x, y, data = _moments(np.random.default_rng(2))
    zero = torch.zeros(6 * 9, dtype=torch.float64)
    assert np.abs(resnet_hessian.hessian(zero, 6, 3, data).numpy()).max() == 0.0  # Theorem 2.1, n = 3
    h = resnet_hessian.hessian(zero[:27], 3, 1, data).numpy()
    block = np.kron(np.eye(3), x.T @ x / len(x))  # eq. 29 (rows of W, row-major): d2L/dW_ij dW_kl = delta_ik Sxx_jl
    for r in range(3):
        assert np.allclose(h[9 * r : 9 * r + 9, 9 * r : 9 * r + 9], block, atol=1e-12)


def test_condition_number_is_the_largest_over_the_tenth_percentile_of_absolute_eigenvalues():
    eig = -np.arange(1.0, 12.0)  # |lambda| = 1..11: the 10th percentile is 2 (linear interpolation)
    assert resnet_hessian.condition_number_of(eig) == pytest.approx(11 / 2)


def test_whitened_data_from_mnist_files_and_a_missing_root(tmp_path):
    rng = np.random.default_rng(0)
    n, side = 200, 8
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 256, (n, side, side)).astype(np.uint8)
    for stem, a in [
        ("train-images-idx3-ubyte", images),
        ("train-labels-idx1-ubyte", labels),
        ("t10k-images-idx3-ubyte", images[:20]),
        ("t10k-labels-idx1-ubyte", labels[:20]),
    ]:
        header = bytes([0, 0, 0x08, a.ndim]) + b"".join(k.to_bytes(4, "big") for k in a.shape)
        (tmp_path / stem).write_bytes(header + a.tobytes())
    x, y, what = resnet_hessian.load_data(tmp_path)
    assert what.startswith("MNIST training images (200") and x.shape == (200, 10)
    assert np.allclose(x.T @ x / n, np.eye(10), atol=1e-10) and np.allclose(x.mean(axis=0), 0, atol=1e-10)
    assert np.array_equal(y.argmax(axis=1), labels) and y.sum() == n
    # the same as whitening the raw pixels independently: the same 10 principal directions, up to sign
    raw = images.reshape(n, -1).astype(np.float64)
    eigval, eigvec = np.linalg.eigh(np.cov(raw.T, bias=True))
    ref = (raw - raw.mean(0)) @ eigvec[:, ::-1][:, :10] / np.sqrt(eigval[::-1][:10])
    assert np.allclose(np.abs(x), np.abs(ref), atol=1e-8)
    with pytest.raises(UserError, match="mnist"):
        resnet_hessian.load_data(tmp_path / "nothing")


def test_resnet_hessian_claims_shortcut2_flat_the_others_growing(tiny):
    out, results = tiny
    d = json.loads((out / "resnet-hessian.json").read_text())
    assert d["data"].startswith("scikit-learn's bundled digits")
    rows = {r["quantity"]: r for r in d["rows"]}
    theorem = d["theorem2_condition_number"]
    for L in resnet_hessian.depths("shortcut2", 6):
        assert rows[f"condition_number:shortcut2:depth={L}"]["measured"] == pytest.approx(theorem, rel=0.02)
    for kind in ("shortcut1", "orthogonal", "xavier"):
        logs = {int(L): np.log10(v) for L, v in d["condition_numbers"][kind].items()}
        first, last = min(logs), max(logs)
        assert logs[last].mean() > logs[first].mean() + math.log10(2)  # grows with depth
        for L, v in logs.items():  # each row: the log10 ratio of its depth's geometric mean over the other end's
            other = logs[last] if L == first else logs[first]
            assert rows[f"condition_number:{kind}:depth={L}"]["measured"] == pytest.approx(v.mean() - other.mean())
    # two runs at tiny: no row agrees or differs
    assert all(r["verdict"] == "cannot tell" and r["replicates"] == 2 for r in rows.values())
    # Theorem 2.1: the 3-shortcut nets' perturbed zero is far flatter than the 2-shortcut nets', in proportion to
    # the perturbation; the 2-shortcut nets' largest |eigenvalue| at the perturbed zero is Theorem 2's sigma_max
    sigma_max = d["theorem2_largest_eigenvalue"]
    assert np.mean(d["largest_eigenvalue"]["shortcut2"]["2"]) == pytest.approx(sigma_max, rel=0.05)
    for L in resnet_hessian.depths("shortcut3", 6):
        big, small = (
            d["largest_eigenvalue"]["shortcut3"][str(L)],
            d["largest_eigenvalue_shortcut3_smaller_perturbation"][str(L)],
        )
        geometric = float(np.exp(np.mean(np.log(big))))
        assert rows[f"largest_eigenvalue:shortcut3:depth={L}"]["measured"] == pytest.approx(geometric)
        assert np.max(big) < 0.1 * sigma_max
        ratio = rows[f"largest_eigenvalue_shrinks:shortcut3:depth={L}"]  # run by run, their geometric mean
        each = np.array(small) / np.array(big)
        assert ratio["measured"] == pytest.approx(np.exp(np.mean(np.log(each)))) and ratio["paper"] == 0.1
        assert ratio["values"] == pytest.approx(each.tolist()) and ratio["measured"] == pytest.approx(0.1, rel=0.05)
    # the rows check six claims: figure 4's one per kind of net (none of the 3-shortcut nets), Theorem 2.1's two
    claims = results["resnet-hessian"].claims
    assert list(claims) == [*resnet_hessian.CLAIMS.values(), resnet_hessian.FLAT_CLAIM, resnet_hessian.SHRINK_CLAIM]
    for kind, claim in resnet_hessian.CLAIMS.items():
        assert [r.quantity for r in claims[claim]] == [
            f"condition_number:{kind}:depth={L}" for L in resnet_hessian.depths(kind, 6)
        ]
    assert sum(len(rows) for rows in claims.values()) == len(d["rows"])


# -- the command line --------------------------------------------------------------------------------------------


def _cifar(folder):
    """A tiny CIFAR-10 folder in the python-pickle format."""
    rng = np.random.default_rng(0)
    folder.mkdir()
    for name, n in [(f"data_batch_{i}", 30) for i in range(1, 6)] + [("test_batch", 20)]:
        batch = {b"labels": rng.integers(0, 10, n).tolist(), b"data": rng.integers(0, 256, (n, 3072)).astype(np.uint8)}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    return folder


def test_nlc_table2_reads_cifar10_from_root_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARCHSTUDY_CACHE", str(tmp_path / "cache"))
    root = _cifar(tmp_path / "cifar")
    code = main(["reproduce", "nlc-table2", "--scale", "tiny", "--root", str(root), "--out", str(tmp_path / "out")])
    assert code in (0, 1)
    d = check_outputs("nlc-table2", tmp_path / "out")
    assert d["data"].startswith("CIFAR10 (from")
    assert "nlc:depth=25" in capsys.readouterr().out


def test_list_names_every_reproduction_with_its_paper_and_costs_within_100_columns(capsys):
    assert main(["reproduce", "--list"]) == 0
    text = capsys.readouterr().out
    assert max(len(x) for x in text.splitlines()) <= 100
    for name, r in REPRODUCTIONS.items():
        entry = r.line()
        assert entry.startswith(f"{name}: ") and entry in text
        words = " ".join(entry.split())  # unwrapped
        assert r.paper in words and r.summary in words and all(f"{s}: {r.cost[s]}" in words for s in SCALES)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["reproduce", "nlc-table9"], "reproduce.name = 'nlc-table9': must be one of 'nlc-table1'"),
        (["reproduce", "nlc-table1", "--scale", "huge"], "reproduce.scale = 'huge': must be one of 'tiny', 'quick'"),
        (["reproduce", "nlc-table2", "--root", "/nonexistent/cifar"], "cifar10"),
        (["reproduce", "resnet-hessian", "--root", "/nonexistent/mnist"], "mnist"),
        (
            ["reproduce", "nlc-figure2", "--root", "/tmp"],
            "reproduce.root = '/tmp': must not be given: nlc-figure2 reads",
        ),
        (["reproduce", "nlc-table1", "--seed", "-1"], "reproduce.seed = -1"),
        (["reproduce", "nlc-table1", "--device", "nodevice"], "reproduce.device = 'nodevice'"),
        (["reproduce", "nlc-table1", "--threads", "0"], "reproduce.threads = 0: must be an integer >= 1"),
        (["reproduce", "all", "--jobs", "0"], "reproduce.jobs = 0: must be an integer >= 1"),
        (["reproduce", "nlc-table1", "--jobs", "2"], "reproduce.jobs = 2: only with `reproduce all`"),
        (["reproduce"], "name a reproduction"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    code = main([*argv, "--out", str(out)] if argv[1:] else argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (out / "nlc-table1.json").exists()


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("keep me\n")
    assert main(["reproduce", "nlc-table1", "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err and f.read_text() == "keep me\n"
