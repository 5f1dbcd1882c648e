"""``relu-abs-trainability``: the 8 x 8 board of the variability paper's B.1, the FCNets of a fixed parameter
budget, the rows computed from the JSON's results, and claims that can fail."""

import json
import math

import numpy as np
import pytest

from archstudy.study.reproduce import relu_abs_trainability as raa

KEYS = {"best_train_loss_min:ReLU:L>20", "best_train_loss_max:ABS:L>30", "best_train_loss:ABS-ReLU:L=21"}


@pytest.fixture(scope="module")
def tiny(tiny_runs):
    out, result = tiny_runs.run("relu-abs-trainability")
    return result, json.loads((out / "relu-abs-trainability.json").read_text())


def test_board_is_the_papers_8_by_8_checkerboard_split_25_75():
    data = raa.checkerboard_data(0)
    src = data.meta["source"]
    # B.1: 6561 points, "each of the 64 squares contains 81 grid points and the surrounding edges contain 1377
    # points", the squares alternating 0 / 1 and the edges 0
    assert src["points"] == 6561 and src["edge_points"] == 1377 and src["label_1_points"] == 32 * 81
    assert (len(data.train), len(data.test)) == (1640, 4921) and data.val is data.test
    x = np.concatenate([data.train.x.numpy(), data.test.x.numpy()])
    assert len(np.unique(x, axis=0)) == 6561  # train and test partition the grid
    # the authors' board: the frame (grid index < 4 or > 75 on an axis) is 0, squares of 9 x 9 points from index 4
    y = np.concatenate([data.train.y.numpy(), data.test.y.numpy()])
    label = {tuple(np.rint((p + 1) * 40).astype(int)): v for p, v in zip(x, y)}
    assert [label[(3, 13)], label[(4, 4)], label[(12, 13)], label[(13, 13)], label[(75, 4)], label[(76, 5)]] == [
        0,
        0,
        1,
        0,
        1,
        0,
    ]


@pytest.mark.parametrize("act,hidden", [("ReLU", 1), ("ReLU", 12), ("ReLU", 31), ("ABS", 41)])
def test_nets_have_the_budget_width_and_the_b1_init(act, hidden):
    spec = raa.net_spec(act, hidden, 3200)
    # the paper's count with two outputs: input 2d + d, (L - 1) hidden d^2 + d, output 2d + 2
    count = {d: 3 * d + (hidden - 1) * (d * d + d) + 2 * d + 2 for d in range(2, 700)}
    best = min(count, key=lambda d: (abs(count[d] - 3200), d))
    assert spec.width == best and spec.replace(d_out=2).num_params == count[best]
    assert spec.num_params == count[best] - best - 1  # one output: d + 1 fewer
    assert spec.depth == hidden + 1 and spec.d_in == 2 and spec.d_out == 1
    assert (spec.activation, spec.init) == (("relu", "kaiming") if act == "ReLU" else ("abs", "xavier"))
    assert spec.bias_init == "normal" and not spec.scale_activation  # B.1: N(0, 1) biases; plain relu, |s|


def test_protocol_is_full_batch_gradient_descent_with_the_b1_divisions():
    p = raa.protocol(raa.SCALES["paper"])
    assert p.batch_size == 1640 and p.momentum == 0.0 and p.loss == "mse" and p.schedule == "steps"
    assert p.iterations == 40_000 and p.lrs == raa.RATES and len(raa.RATES) == 10
    # "reduced by a factor of 5 three times at [...] iterations 20000, 28000, and 36000"
    assert [round(f * p.iterations) for f in p.step_at] == [20_000, 28_000, 36_000] and p.division_factor == 5


def test_tiny_writes_every_key_finite_and_rows_follow_from_the_results(tiny):
    result, d = tiny
    rows = {r["quantity"]: r for r in d["rows"]}
    assert set(rows) == KEYS
    for r in d["rows"]:
        assert r["paper"] is None and math.isfinite(r["measured"]) and isinstance(r["ok"], bool)
    res = d["results"]

    def mean_loss(act, hidden):
        return float(np.mean(res[raa.key(act, hidden, 3200)]["best_train_loss"]))

    assert rows["best_train_loss_min:ReLU:L>20"]["measured"] == pytest.approx(mean_loss("ReLU", 21), rel=1e-12)
    assert rows["best_train_loss_max:ABS:L>30"]["measured"] == pytest.approx(mean_loss("ABS", 31), rel=1e-12)
    assert rows["best_train_loss:ABS-ReLU:L=21"]["measured"] == pytest.approx(
        mean_loss("ABS", 21) - mean_loss("ReLU", 21), rel=1e-12
    )
    for k, v in res.items():
        # the best loss over the rates is the least of each rate's best; accuracies are percentages
        assert v["best_train_loss"] == [min(r) for r in v["best_train_loss_per_rate"]]
        assert all(0 <= a <= 100 for a in v["train_accuracy"] + v["test_accuracy"])
        # 8 steps cannot beat much the best constant's loss (the label variance, about 0.24) from a random net
        assert all(x > 0.1 for x in v["best_train_loss"]), k


def _results(losses: dict, inits: int = 3) -> dict:
    """Each net's best training loss per initialization: ``v`` times 1, 1.01, 0.99, ..."""
    spread = [1.0, 1.01, 0.99, 1.02][:inits]
    return {
        raa.key(act, hidden, 3200): {"best_train_loss": [v * f for f in spread], "test_accuracy": [50.0] * inits}
        for (act, hidden), v in losses.items()
    }


def test_claims_can_fail_and_need_three_initializations():
    s = raa.SCALES["tiny"]
    holds = _results({("ReLU", 21): 0.2, ("ABS", 21): 0.001, ("ABS", 31): 0.005})
    fails = _results({("ReLU", 21): 0.01, ("ABS", 21): 0.3, ("ABS", 31): 0.1})
    assert [r.verdict for r in raa._rows(s, holds)] == ["agrees"] * 3
    assert [r.verdict for r in raa._rows(s, fails)] == ["differs"] * 3
    two = _results({("ReLU", 21): 0.2, ("ABS", 21): 0.001, ("ABS", 31): 0.005}, inits=2)
    assert all("2 replicates" in r.why_cannot_tell for r in raa._rows(s, two))


def test_a_run_where_nothing_trained_cannot_tell():
    """At 3,000 iterations no net may leave the best constant (loss = the label variance, 0.239 on the 8 x 8
    board's training split): the claims then cannot tell, whichever way they come out."""
    s = raa.SCALES["tiny"]
    constant = raa.label_variance(raa.checkerboard_data(0))
    p = 2592 / 6561  # the board's fraction of 1-labels; the training split's differs by sampling only
    assert constant == pytest.approx(p * (1 - p), abs=0.01)
    flat = _results({("ReLU", 21): 0.22, ("ABS", 21): 0.21, ("ABS", 31): 9.5})
    rows = raa._rows(s, flat, constant)
    assert [r.verdict for r in rows] == ["cannot tell"] * 3 and all(
        "nothing trained" in r.why_cannot_tell for r in rows
    )
    trained = _results({("ReLU", 21): 0.2, ("ABS", 21): 0.001, ("ABS", 31): 0.005})
    assert [r.verdict for r in raa._rows(s, trained, constant)] == ["agrees"] * 3
