"""``han-checkerboard`` (Yu and Zhang, Tables 3 and 4; the variability paper, Table 7): every net's shape and
parameter count against the tables, the nets and rates as the authors' code has them, the rows by the one rule
with the per-initialization finding beside them, and "cannot tell" where nothing trained."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from archstudy.study.reproduce import han_checkerboard as hc
from archstudy.study.reproduce.han_nets import HanArch


def test_every_net_has_its_tables_shape_and_parameter_count():
    """Yu and Zhang (Tables 3 and 4) write depth x width, the variability paper (Table 7, D.3) width x depth:
    "20 x 30" is 20 hidden layers of width 30, "100 x 17" 17 of width 100. Parameters by hand (two outputs):
    input (2 + 1) w, each dense width-to-width layer w (w + 1), each Householder layer 2 w, output 2 (w + 1)."""

    def hand(hidden, w, householder):
        n_householder = hidden - 3 if householder else 0
        return 3 * w + (hidden - 1 - n_householder) * w * (w + 1) + n_householder * 2 * w + 2 * (w + 1)

    assert hand(20, 30, True) == 3032 and hand(6, 100, False) == 51002  # Table 3's printed counts
    frames = {"20x30": (20, 30), "100x17": (17, 100), "6x100": (6, 100), "10x100": (10, 100), "6x300": (6, 300)}
    assert {q.rsplit(":", 1)[1] for q in hc.BY_QUANTITY} == set(frames)
    for quantity, net in hc.BY_QUANTITY.items():
        hidden, width = frames[net.frame]
        arch = net.arch
        layers = arch.layers()
        assert len(layers) == hidden + 1 and {n_out for _, _, n_out in layers[:-1]} == {width}
        assert layers[0][1] == 2 and layers[-1] == ("dense", width, 2)  # two outputs, as the code
        assert [k for k, _, _ in layers].count("reflection") == (hidden - 3 if net.householder else 0)
        assert arch.num_params == hand(hidden, width, net.householder)
        if quantity in hc.TABLE3_PARAMS:
            assert arch.num_params == hc.TABLE3_PARAMS[quantity]
    assert hc.BY_QUANTITY["test_accuracy:H+ABS:100x17"].arch.num_params == 23502
    assert hc.BY_QUANTITY["test_accuracy:FC+ABS:100x17"].arch.num_params == 162102


def test_the_nets_init_and_rates_are_the_codes():
    for net in hc.NETS:
        arch = net.arch
        assert isinstance(arch, HanArch) and arch.outputs == 2
        assert arch.init == ("orthogonal" if net.householder else "kaiming")  # the code's FCNet class: Kaiming
        assert arch.activation == net.activation
        assert net.rates == (hc.HANNET_RATES if net.householder else hc.FCNET_RATES)
    assert hc.HANNET_RATES == (0.025, 0.05, 0.075, 0.1) and len(hc.FCNET_RATES) == 9 and len(hc.PAPER_RATES) == 10
    assert hc.BY_QUANTITY["test_accuracy:H+ABS:20x30"].level == pytest.approx(99.52 - 2 * 0.27)
    assert hc.BY_QUANTITY["test_accuracy:H+ReLU:20x30"].level == pytest.approx(75.8)
    assert set(hc.SCALES["quick"].nets) < set(hc.SCALES["paper"].nets)
    assert hc.SCALES["quick"].iterations == hc.SCALES["paper"].iterations == 40_000


class FakeTrained:
    """What ``outcome_results`` reads of ``han_nets.train``'s outcome, from given best accuracies [seed][rate]."""

    def __init__(self, best):
        best = np.asarray(best, dtype=float) / 100.0
        self.best = best.ravel()
        self.best_iteration = np.full(self.best.size, 100)
        self.final_test = self.best - 0.01
        self.final_train = np.ones(self.best.size)
        self.diverged = np.zeros(self.best.size, dtype=bool)


def results_of(q, best):
    net = hc.BY_QUANTITY[q]
    rates = net.rates[: len(best[0])]
    seeds = [[10 * j + k for k in range(len(rates))] for j in range(len(best))]
    return hc.outcome_results(net, FakeTrained(best), seeds, rates, 1.0)


def test_per_initialization_counts_and_the_row_is_the_mean_of_each_seeds_best():
    q = "test_accuracy:H+ABS:20x30"
    r = results_of(q, [[99.6, 91.0, 90.8, 99.1], [91.2, 90.9, 91.5, 90.7]])
    assert r["test_accuracy_best"] == pytest.approx([99.6, 91.5]) and r["mean"] == pytest.approx(95.55)
    assert r["best_lr"] == [0.025, 0.075] and r["initializations"] == 8
    assert r["reached_level"] == 2 and r["reached_level_per_rate"] == [1, 0, 0, 1]  # level 98.98
    assert "2 of 8 initializations reach 98.98%" in hc.per_init_text(q, r)
    (row,) = hc.rows_of([q], {q: r}, constant=60.4)
    assert row.verdict == "cannot tell" and row.measured == pytest.approx(95.55)  # two seeds: no verdict
    assert row.why_cannot_tell == "2 replicates: at least 3 are needed for a verdict"
    # one unit of 99.52 plus 2 SE of the paper's mean of 5 runs, runs spread by the printed 0.27
    assert row.tolerance.startswith(f"±{0.01 + 2 * 0.27 / math.sqrt(5):.3g} (one unit")
    far = results_of(q, [[91.0, 90.0, 90.8, 90.1], [91.5, 90.9, 90.5, 90.7], [91.2, 90.0, 90.0, 90.0]])
    assert hc.rows_of([q], {q: far}, constant=60.4)[0].verdict == "differs"  # 91.2 +- 0.6 against 99.52 +- 0.25
    agree = results_of(q, [[99.5, 91.0, 90.8, 99.1], [99.52, 90.9, 91.5, 90.7], [99.54, 90.0, 90.0, 90.0]])
    assert hc.rows_of([q], {q: agree}, constant=60.4)[0].verdict == "agrees"


def test_a_net_that_never_left_the_constant_prediction_cannot_tell():
    q, other = "test_accuracy:FC+ReLU:100x17", "test_accuracy:H+ABS:100x17"
    flat = {q: results_of(q, [[60.4, 60.9]]), other: results_of(other, [[60.4, 60.4]])}
    rows = {r.quantity: r for r in hc.rows_of([other, q], flat, constant=60.4)}
    assert all(r.verdict == "cannot tell" for r in rows.values())
    assert "beat the constant prediction 0 (60.4%)" in rows[q].why_cannot_tell
    trained = {q: results_of(q, [[80.0, 70.0]]), other: results_of(other, [[60.4, 60.4]])}
    assert hc.rows_of([q], trained, 60.4)[0].verdict == "cannot tell"  # the claim needs both nets trained
    both = {
        q: results_of(q, [[80.0, 70.0], [81.0, 70.0], [79.0, 70.0]]),
        other: results_of(other, [[99.0, 70.0], [98.5, 70.0], [99.2, 70.0]]),
    }
    row = hc.rows_of([q], both, 60.4)[0]
    assert row.verdict == "agrees" and row.measured == pytest.approx(80.0 - 98.9)  # below H+ABS: the claim holds
    # a scale that cut the code's rates, whose best rate is an end of the cut the code's list extends
    cut = {**both, q: results_of(q, [[70.0, 80.0], [70.0, 81.0], [70.0, 79.0]])}
    assert "did not bracket" in hc.rows_of([q], cut, 60.4)[0].why_cannot_tell


def test_tiny_writes_every_net_and_nothing_trained_cannot_tell(tiny_runs):
    out = tiny_runs.run("han-checkerboard")[0]
    d = json.loads((out / "han-checkerboard.json").read_text())
    assert {r["quantity"] for r in d["rows"]} == set(hc.BY_QUANTITY) and d["cut_at_this_scale"] == []
    assert d["constant_accuracy"] == pytest.approx(100 * (1 - np.mean(hc.checkerboard_data(0).test.y.numpy())))
    for r in d["rows"]:
        res = d["results"][r["quantity"]]
        best = np.array(res["test_accuracy_best_per_rate"], dtype=float)
        mean = np.nanmax(best, axis=1).mean()
        if r["paper"] is None:  # the claim: the difference of the means from the net it is compared with
            mean -= d["results"][hc.CLAIM_AGAINST[r["quantity"]]]["mean"]
        assert r["measured"] == pytest.approx(mean) and r["replicates"] == 1
        if np.nanmax(best) < d["constant_accuracy"] + hc.CONSTANT_MARGIN:
            assert r["verdict"] == "cannot tell" and r["cannot_tell"]
        assert res["params"] == hc.BY_QUANTITY[r["quantity"]].arch.num_params
    assert "Per initialization" in d["note"] and d["reported"] in d["note"]
