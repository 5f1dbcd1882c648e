"""gmp-banana (Chen and Ge, figure 3) as the authors' notebook runs it: the banana file read in its common forms
and split as the notebook splits it, the four parameterizations' units as their formulas say, Keras's plateau and
early-stopping rules, GmP's boundary turning per step by at most Adam's bound (Theorem 3), the Levy regression of
figure 2(c), and the tiny run's rows (a stand-in without the file, labelled on every row)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from archstudy.sampling import UserError
from archstudy.study.reproduce import REPRODUCTIONS, banana
from archstudy.study.reproduce import gmp_banana as gb
from archstudy.study.reproduce.result import ROW_KEYS


@pytest.fixture(scope="module")
def tiny(tiny_runs):
    out, result = tiny_runs.run("gmp-banana")
    return (
        result,
        json.loads((out / "gmp-banana.json").read_text()),
        (out / "gmp-banana.html").read_text(encoding="utf-8"),
    )


def test_tiny_writes_every_key_and_labels_the_stand_in(tiny):
    result, d, page = tiny
    assert "gmp-banana" in REPRODUCTIONS
    assert tuple(d)[:5] == ("name", "paper", "scale", "seconds", "rows") and d["scale"] == "tiny"
    expected = {"max_angle_step_deg:GmP:lr=0.1"}
    expected |= {
        f"log10_{w}_over_gmp:{k}:lr=0.1" for w in ("max_angle_step_deg", "max_location_step") for k in gb.OTHERS
    }
    expected |= {f"test_accuracy_minus_gmp:{k}:lr=0.01" for k in gb.OTHERS}
    expected |= {f"log2_max_location_step:{k}:levy" for k in gb.PARAMETERIZATIONS}
    expected |= {f"test_accuracy_large_minus_small_rate:{k}" for k in gb.PARAMETERIZATIONS}
    assert {r["quantity"] for r in d["rows"]} == expected and len(d["rows"]) == len(expected)
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and r["paper"] is None and math.isfinite(r["measured"]), r
        assert r["quantity"] in page and r["replicates"] == gb.SCALES["tiny"].inits
        if not r["quantity"].endswith(":levy"):  # every row on the banana data says it ran on the stand-in
            assert "stand-in" in r["tolerance"]
        if r["quantity"].startswith("test_accuracy"):
            assert r["verdict"] == "cannot tell" and "the banana file is not here" in r["cannot_tell"]
    assert d["stand_in"] and "STAND-IN" in d["data"] and page.count('src="data:image/png;base64,') == 4
    assert d == json.loads(json.dumps(result.to_dict()))
    for k in gb.PARAMETERIZATIONS:  # every accuracy a fraction of the 200 test points, every turn within [0, 180]
        assert all(0 <= a <= 1 and abs(200 * a - round(200 * a)) < 1e-9 for a in d["test_accuracy"][k])
        assert all(0 <= a <= 180 for a in d["max_angle_step_deg"][k])


def test_gmp_turns_its_boundaries_by_at_most_adams_step(tiny):
    """Theorem 3 (eq. 13) in 2-D: the boundary turns by |Delta theta| <= Adam's largest step at the model's rate."""
    _, d, _ = tiny
    n = gb.SCALES["tiny"].inits
    for j, lr in enumerate(gb.LRS):
        for a in d["max_angle_step_deg"]["GmP"][j * n : (j + 1) * n]:
            assert 0 < a <= math.degrees(gb.adam_bound(lr)) * (1 + 1e-9)
    assert gb.adam_bound(0.1) == pytest.approx(0.1 * 0.1 / math.sqrt(0.001))


def test_the_banana_file_is_read_in_its_common_forms(tmp_path):
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=(1200, 2)), 3)
    y = rng.integers(0, 2, 1200)
    forms = {
        "2d_banana.csv": "At1,At2,Class\n" + "".join(f"{a},{b},{2 * c - 1}\n" for (a, b), c in zip(x, y)),
        "banana.dat": "@relation banana\n@attribute At1 real\n@attribute At2 real\n@attribute Class {-1.0,1.0}\n"
        "@data\n" + "".join(f"{a}, {b}, {2.0 * c - 1}\n" for (a, b), c in zip(x, y)),
        "banana.csv": '"V1","V2","Class"\n' + "".join(f"{a},{b},{c + 1}\n" for (a, b), c in zip(x, y)),
    }
    for name, text in forms.items():
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        (folder / name).write_text(text)
        assert banana.locate(folder) == folder / name
        got_x, got_y = banana.read(folder / name)
        np.testing.assert_array_equal(got_x, x)
        np.testing.assert_array_equal(got_y, y)
    label_first = tmp_path / "label_first.csv"
    label_first.write_text("class x1 x2\n" + "".join(f"{2 * c - 1} {a} {b}\n" for (a, b), c in zip(x, y)))
    got_x, got_y = banana.read(label_first)  # a header names the label column wherever it is
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_y, y)
    with pytest.raises(UserError, match="holds none of 2d_banana.csv"):
        banana.locate(tmp_path)
    bad = tmp_path / "bad.csv"
    for text, message in (
        ("At1,At2,Class\n1,2,3\n" * 2, "two classes"),
        ("1,2\n", "two features and a label"),
        ("1,2,1\nx,y,z\n", "every row must be numbers"),
        ("1,2,1\n" * 10, "at least 1000"),
    ):
        bad.write_text(
            text if message != "two classes" else "At1,At2,Class\n" + "".join(f"1,2,{k % 3}\n" for k in range(1200))
        )
        with pytest.raises(UserError, match=message) as caught:
            banana.read(bad)
        assert "\n" not in str(caught.value) and str(bad) in str(caught.value)


def test_the_split_is_the_authors_notebooks():
    """1,000 rows by numpy's legacy choice, scikit-learn's train_test_split(test_size=0.2, random_state=seed),
    standardized by the training split (TensorFlow's reduce_std: over n); at seed 0 the notebook's own draws."""
    from sklearn.model_selection import train_test_split

    x = np.stack([np.arange(5300.0), np.arange(5300.0) ** 0.5], 1)
    y = (np.arange(5300) % 2).astype(float)
    x_tr, y_tr, x_te, y_te = banana.authors_split(x, y, 0)
    np.random.seed(0)
    idx = np.random.choice(5300, size=1000, replace=False)
    a_tr, a_te, b_tr, b_te = train_test_split(x[idx], y[idx], test_size=0.2, random_state=0)
    mean, sd = a_tr.mean(0), a_tr.std(0)
    np.testing.assert_allclose(x_tr, (a_tr - mean) / sd)
    np.testing.assert_allclose(x_te, (a_te - mean) / sd)
    np.testing.assert_array_equal(y_tr, b_tr)
    np.testing.assert_array_equal(y_te, b_te)
    assert x_tr.shape == (800, 2) and x_te.shape == (200, 2)


def test_the_plateau_and_early_stopping_are_keras_rules():
    """Accuracies that rise for 10 epochs (0 .. 9), then stay: Keras's ReduceLROnPlateau (patience 50, factor 0.1)
    waits from epoch 10 and cuts the rate when 50 epochs have not improved, at epoch 59; EarlyStopping (patience
    100) stops at epoch 109 with epoch 9 the best to restore."""
    sched = gb.Schedule.start(torch.tensor([0.1], dtype=torch.float64))
    lrs, active = [], []
    for epoch in range(120):
        acc = torch.tensor([min(epoch, 9) / 10.0], dtype=torch.float64)
        sched.epoch_end(acc, epoch)
        lrs.append(float(sched.lr[0]))
        active.append(bool(sched.active[0]))
    assert lrs[58] == pytest.approx(0.1) and lrs[59] == pytest.approx(0.01)
    assert lrs[108] == pytest.approx(0.01) and lrs[109] == pytest.approx(0.001)
    assert active[108] and not active[109] and int(sched.best_epoch[0]) == 9


@pytest.mark.parametrize("kind", gb.PARAMETERIZATIONS)
def test_effective_units_are_the_parameterizations_formulas(kind):
    """Each parameterization's hidden units at test time equal scale * ReLU(w_eff^T x + b_eff), the boundary form
    every row reads (eq. 7-9), against the formulas written out independently."""
    torch.manual_seed(0)
    x = torch.randn(50, 2, dtype=torch.float64)
    p = gb.initial(kind, [11, 12])
    for v in p.values():  # move away from initialization: random values of every parameter
        v.add_(0.3 * torch.randn_like(v))
    moving = gb.Moving(torch.randn(2, gb.UNITS, dtype=torch.float64), torch.rand(2, gb.UNITS, dtype=torch.float64))
    w, b, scale = gb.effective(kind, p, moving)
    if kind == "SP":
        pre, out = x @ p["w"][0].T + p["b"][0], torch.ones(gb.UNITS, dtype=torch.float64)
    elif kind == "WN":  # Salimans and Kingma, eq. 2
        pre = p["g"][0] * (x @ p["v"][0].T) / p["v"][0].norm(dim=-1) + p["b"][0]
        out = torch.ones(gb.UNITS, dtype=torch.float64)
    elif kind == "BN":  # Ioffe and Szegedy at inference: the moving statistics
        h = x @ p["w"][0].T + p["b"][0]
        pre = p["gamma"][0] * (h - moving.mean[0]) / torch.sqrt(moving.var[0] + gb.BN_EPS) + p["beta"][0]
        out = torch.ones(gb.UNITS, dtype=torch.float64)
    else:  # Chen and Ge, eq. 15 in 2-D
        t = p["theta"][0]
        pre, out = x[:, :1] * torch.cos(t) + x[:, 1:] * torch.sin(t) + p["lam"][0], p["r"][0]
    torch.testing.assert_close(scale[0] * torch.relu(x @ w[0].T + b[0]), out * torch.relu(pre))
    # the spatial location lies on the boundary and is its point nearest the origin (eq. 8)
    _, phi = gb.boundaries(kind, p, moving)
    torch.testing.assert_close((w * phi).sum(-1) + b, torch.zeros_like(b), atol=1e-12, rtol=0)
    torch.testing.assert_close(phi.norm(dim=-1), b.abs() / w.norm(dim=-1))


def test_every_parameterization_starts_as_the_same_glorot_draw():
    """Keras's Glorot-uniform weights (limits sqrt(6 / 12) and sqrt(6 / 11)) and zero biases; WN's g = |v| and
    GmP's r = |w| (the authors' initializers), so SP, WN and GmP start as the same function and BN as its
    standardization."""
    seeds = [21, 22, 23]
    sp = gb.initial("SP", seeds)
    assert sp["w"].abs().max() <= math.sqrt(0.5) and sp["a"].abs().max() <= math.sqrt(6 / 11)
    x = torch.randn(64, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).expand(3, 64, 2)
    moving = gb.Moving(torch.zeros(3, gb.UNITS, dtype=torch.float64), torch.ones(3, gb.UNITS, dtype=torch.float64))
    for kind in ("WN", "GmP"):
        torch.testing.assert_close(gb.logits(kind, gb.initial(kind, seeds), x, None), gb.logits("SP", sp, x, None))
        for a, b in zip(gb.boundaries(kind, gb.initial(kind, seeds), None), gb.boundaries("SP", sp, None)):
            torch.testing.assert_close(a, b)
    bn = gb.initial("BN", seeds)
    z = gb.logits("BN", bn, x, moving, train=True)  # the batch's statistics: standardized pre-activations
    pre = torch.einsum("mud,mnd->mnu", sp["w"], x)
    hidden = torch.relu(
        (pre - pre.mean(1, keepdim=True)) / torch.sqrt(pre.var(1, unbiased=False, keepdim=True) + gb.BN_EPS)
    )
    torch.testing.assert_close(z, torch.einsum("mnu,mu->mn", hidden, sp["a"]))
    torch.testing.assert_close(moving.mean, 0.01 * pre.mean(1))  # Keras's momentum 0.99 from 0


def test_levy_is_the_one_dimensional_levy_function():
    """Levy (Surjanovic and Bingham's test functions; Chen and Ge's ``levy_normalized`` at d = 1): its global
    minimum 0 at x = 1 (w = 1), and at x = -3 (w = 0): sin^2(0) + 1 * (1 + sin^2(0)) = 1; at x = 3 (w = 1.5):
    sin^2(1.5 pi) + 0.25 (1 + sin^2(3 pi)) = 1.25."""
    np.testing.assert_allclose(gb.levy(np.array([1.0, -3.0, 3.0])), [0.0, 1.0, 1.25], atol=1e-15)
    x, y, xt, yt = gb.levy_data(gb.LEVY_TRAIN, 0)
    assert x.shape == (50, 1) and np.all(np.abs(x) <= 10) and xt.shape == (201, 1)
    assert xt[0, 0] == -10 and xt[-1, 0] == 10 and np.allclose(yt, gb.levy(xt[:, 0]))
    assert 0.05 < np.std(y - gb.levy(x[:, 0])) < 0.2  # label noise of sd 0.1


def test_levy_nets_start_as_the_authors_and_gmp_moves_its_points_by_at_most_adams_step():
    """All four 1-D parameterizations start from the same units (boundary points phi = -b / w all at 0, WN the
    same function as SP, GmP's r = 1); under GmP a point moves by |Delta lambda| per step, at most Adam's largest
    step."""
    seeds = [5, 6]
    sp = gb.initial_1d("SP", seeds)
    limit = math.sqrt(6.0 / 101)
    assert sp["w"].abs().max() <= limit and sp["a"].abs().max() <= limit and torch.all(sp["b"] == 0)
    wn, gmp = gb.initial_1d("WN", seeds), gb.initial_1d("GmP", seeds)
    x = torch.linspace(-10, 10, 7, dtype=torch.float64)[:, None]
    sign = torch.sign(sp["w"])
    for kind, p in (("WN", wn), ("SP", sp)):
        w, b, scale = gb.effective_1d(kind, p, x, sign)
        torch.testing.assert_close(w, sp["w"])
    assert torch.equal(gmp["r"], torch.ones_like(gmp["r"])) and torch.equal(gmp["lam"], torch.zeros_like(gmp["lam"]))
    data = tuple(torch.from_numpy(v) for v in gb.levy_data(gb.LEVY_TRAIN, 1))
    steps = gb.train_levy("GmP", 30, 0.1, seeds, data)["location"]
    assert steps.shape == (30, 2) and steps.max() <= gb.adam_bound(0.1) * (1 + 1e-12)
    assert steps[0].min() >= 0.1 * (1 - 1e-5)  # the first Adam step moves every lambda by lr (up to eps / |g|)
