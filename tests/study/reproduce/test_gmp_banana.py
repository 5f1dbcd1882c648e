"""gmp-banana (Chen and Ge, figure 3): the four parameterizations compute the same units' boundaries as their
formulas say, Adam is Kingma and Ba's algorithm 1, GmP's boundary turns per step by at most Adam's bound
(Theorem 3), and the tiny run writes every key with finite values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from archstudy.study.reproduce import REPRODUCTIONS
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


def test_tiny_writes_every_key_with_finite_values(tiny):
    result, d, page = tiny
    assert "gmp-banana" in REPRODUCTIONS
    assert tuple(d)[:5] == ("name", "paper", "scale", "seconds", "rows") and d["scale"] == "tiny"
    lr = gb.SCALES["tiny"].lrs
    expected = {
        f"{q}:{k}:lr={lr[-1]:g}" for q in ("max_angle_step_deg", "max_location_step") for k in gb.PARAMETERIZATIONS
    } | {f"test_accuracy:{k}:lr={r:g}" for k in gb.PARAMETERIZATIONS for r in lr}
    expected |= {f"log2_max_location_step:{k}:levy" for k in gb.PARAMETERIZATIONS}
    assert [r["quantity"] for r in d["rows"]] and {r["quantity"] for r in d["rows"]} == expected
    assert len(d["rows"]) == len(expected)
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and r["paper"] is None and math.isfinite(r["measured"]), r
        assert r["quantity"] in page
    assert page.count('src="data:image/png;base64,') == 4
    assert d == json.loads(json.dumps(result.to_dict()))
    # every accuracy a fraction of the test set, every angle step within [0, 180] degrees
    for k in gb.PARAMETERIZATIONS:
        assert all(0 <= a <= 1 for a in d["test_accuracy"][k])
        assert all(0 <= a <= 180 for a in d["max_angle_step_deg"][k])


def test_gmp_turns_its_boundaries_by_at_most_adams_step(tiny):
    """Theorem 3 (eq. 13) in 2-D: the boundary turns by |Delta theta| <= Adam's largest step; the first Adam step
    is lr |g| / (|g| + eps) on every parameter, so the largest turn is at least lr (up to eps / |g|)."""
    _, d, _ = tiny
    s = gb.SCALES["tiny"]
    for j, lr in enumerate(s.lrs):
        for a in d["max_angle_step_deg"]["GmP"][j * s.inits : (j + 1) * s.inits]:
            assert math.degrees(lr) * (1 - 1e-6) <= a <= math.degrees(gb.adam_bound(lr)) * (1 + 1e-9)
    assert gb.adam_bound(0.1) == pytest.approx(0.1 * 0.1 / math.sqrt(0.001))


@pytest.mark.parametrize("kind", gb.PARAMETERIZATIONS)
def test_effective_units_are_the_parameterizations_formulas(kind):
    """Each parameterization's hidden units equal scale * ReLU(w_eff^T x + b_eff), the boundary form every row
    reads (eq. 7-9), against the formulas written out independently; all four start from the same SP draw."""
    torch.manual_seed(0)
    x = torch.randn(50, 2, dtype=torch.float64)
    p = gb.initial(kind, 2, [11, 12])
    sp = gb.initial("SP", 2, [11, 12])
    for v in p.values():  # move away from initialization: random values of every parameter
        v.add_(0.3 * torch.randn_like(v))
    w, b, scale = gb.effective(kind, p, x)
    if kind == "SP":
        pre, out = x @ p["w"][0].T + p["b"][0], torch.ones(gb.UNITS, dtype=torch.float64)
    elif kind == "WN":  # Salimans and Kingma, eq. 2
        pre = p["g"][0] * (x @ p["v"][0].T) / p["v"][0].norm(dim=-1) + p["b"][0]
        out = torch.ones(gb.UNITS, dtype=torch.float64)
    elif kind == "BN":  # Ioffe and Szegedy, algorithm 1 over the full batch
        h = x @ p["w"][0].T + p["b"][0]
        pre = p["gamma"][0] * (h - h.mean(0)) / torch.sqrt(h.var(0, unbiased=False) + gb.BN_EPS) + p["beta"][0]
        out = torch.ones(gb.UNITS, dtype=torch.float64)
    else:  # Chen and Ge, eq. 15 in 2-D
        t = p["theta"][0]
        pre, out = x[:, :1] * torch.cos(t) + x[:, 1:] * torch.sin(t) + p["lam"][0], p["r"][0]
    torch.testing.assert_close(scale[0] * torch.relu(x @ w[0].T + b[0]), out * torch.relu(pre))
    # the spatial location lies on the boundary and is its point nearest the origin (eq. 8)
    _, phi = gb.boundaries(kind, p, x)
    torch.testing.assert_close((w * phi).sum(-1) + b, torch.zeros_like(b), atol=1e-12, rtol=0)
    torch.testing.assert_close(phi.norm(dim=-1), b.abs() / w.norm(dim=-1))
    # the same draw: GmP's direction and WN's are SP's initial w / |w|
    q = gb.initial(kind, 2, [11, 12])
    direction = sp["w"] / sp["w"].norm(dim=-1, keepdim=True)
    if kind == "GmP":
        torch.testing.assert_close(gb.effective(kind, q, x)[0], direction)
        torch.testing.assert_close(q["r"], torch.ones_like(q["r"]))  # section 4.3
    elif kind == "WN":
        torch.testing.assert_close(gb.effective(kind, q, x)[0], sp["w"])


def test_gmp_starts_as_section_4_3_says():
    """Chen and Ge, section 4.3: "The scaling parameter r is initialized to one", lambda to zero (b = 0), theta
    uniformly at random (here the angle of the same He draw as SP's, whose direction is uniform). So at
    initialization each GmP unit is ReLU(u^T x), SP's unit divided by |w|: the net's output is
    sum_i a_i ReLU(u_i^T x) with SP's output weights a, and its boundaries are SP's."""
    seeds = [21, 22, 23]
    gmp, sp = gb.initial("GmP", 3, seeds), gb.initial("SP", 3, seeds)
    assert torch.equal(gmp["r"], torch.ones(3, gb.UNITS, dtype=torch.float64))
    assert torch.equal(gmp["lam"], torch.zeros(3, gb.UNITS, dtype=torch.float64))
    assert torch.equal(gmp["a"], sp["a"]) and torch.equal(gmp["c"], sp["c"])
    x = torch.randn(64, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    u = sp["w"] / sp["w"].norm(dim=-1, keepdim=True)
    expected = torch.einsum("mnu,mu->mn", torch.relu(torch.einsum("mud,nd->mnu", u, x)), sp["a"])
    torch.testing.assert_close(gb.logits("GmP", gmp, x, x), expected)
    # not SP's function: SP's units carry the factor |w| that r = 1 drops
    assert not torch.allclose(gb.logits("GmP", gmp, x, x), gb.logits("SP", sp, x, x))
    for a, b in zip(gb.boundaries("GmP", gmp, x), gb.boundaries("SP", sp, x)):
        torch.testing.assert_close(a, b)
    # theta uniform: over many draws the angles fill (-pi, pi] evenly (each quarter within 4 standard errors)
    theta = gb.initial("GmP", 400, list(range(400)))["theta"].flatten()
    counts = torch.histc(theta, bins=4, min=-math.pi, max=math.pi)
    assert (counts - len(theta) / 4).abs().max() < 4 * math.sqrt(len(theta) * 3 / 16)


def test_adam_step_is_kingma_and_ba_algorithm_1():
    """Two steps of ``adam_step`` (the trainer's stacked Adam) against algorithm 1 of Kingma and Ba written out on
    plain floats, one parameter at a time, one rate per model (torch.optim.Adam's first step costs 10 s of
    imports)."""
    g1, g2 = torch.randn(2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    lr = torch.tensor([0.1, 0.01, 0.001], dtype=torch.float64)
    p = {"w": torch.zeros(3, 4, dtype=torch.float64)}
    state: dict = {}
    for g in (g1, g2):
        gb.adam_step(p, {"w": g}, state, lr)
    b1, b2 = gb.BETAS
    for k in range(3):
        for i in range(4):
            theta, m, v = 0.0, 0.0, 0.0
            for t, g in enumerate((float(g1[k, i]), float(g2[k, i])), 1):
                m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
                theta -= float(lr[k]) * (m / (1 - b1**t)) / (math.sqrt(v / (1 - b2**t)) + gb.ADAM_EPS)
            assert float(p["w"][k, i]) == pytest.approx(theta, rel=1e-12)


def test_two_moons_are_the_two_centred_bananas():
    x, y = gb.two_moons(4000, 5)
    assert x.shape == (4000, 2) and set(np.unique(y)) == {0.0, 1.0}
    # centred: the moons' means are (0, 2/pi) and (1, 1/2 - 2/pi), so the data's mean is (1/2, 1/4) before the
    # shift; within 4 standard errors of the mean of 4000 points
    assert np.abs(x.mean(0)).max() < 4 * x.std(0).max() / math.sqrt(4000)
    outer = x[y == 0] + np.array([0.5, 0.25])
    # the outer moon lies on the unit circle up to the noise: mean radius 1 within noise
    assert abs(np.median(np.linalg.norm(outer, axis=1)) - 1.0) < 0.05


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
    step, and the step is read from the parameters independently here."""
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
    assert steps[0].min() >= 0.1 * (1 - 1e-6)  # the first Adam step moves every lambda by lr (up to eps / |g|)


def test_an_accuracy_row_cannot_tell_when_its_two_accuracies_tie_within_the_test_sets_noise():
    """Two-moons at noise 0.2 with 400 training points: GmP's 0.964 against SP's 0.9655 at 2,000 test points,
    whose binomial standard error is sqrt(0.96475 * 0.03525 / 2000) = 0.0041: a tie. 0.9365 against 0.948 is not."""
    tied = gb.accuracy_tie(0.964, 0.9655, 2000)
    assert tied is not None and "0.0041" in tied
    assert gb.accuracy_tie(0.9365, 0.948, 2000) is None
    se = math.sqrt(0.5 * 0.5 / 100)
    assert gb.accuracy_tie(0.5 - se, 0.5 + se * 0.99, 100) is not None
    assert gb.accuracy_tie(0.5 - se, 0.5 + se * 1.01, 100) is None
