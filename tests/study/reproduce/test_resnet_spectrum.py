"""``resnet-spectrum`` (*Demystifying ResNet*, figures 5-6): at tiny it writes every key with finite values; the
spectrum at zero is Theorem 2's; the interpolation in the loss is exact on a line; gradient descent lowers the
loss; the claims pass on the paper's picture and fail on its opposite."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from archstudy.study.reproduce import REPRODUCTIONS, resnet_spectrum
from archstudy.study.reproduce.reproduction import torch_threads
from archstudy.study.reproduce.resnet_hessian import Moments, load_data, theorem2_largest_eigenvalue
from archstudy.study.reproduce.result import ROW_KEYS

KEYS = {
    "fraction_below:condition_number:shortcut2",
    "log10_condition_ratio:shortcut2_over_others:highest_loss",
    "log10_condition_ratio:highest_minus_lowest_loss",
    "log10_final_condition_ratio:shortcut2_over_orthogonal",
    "fraction_below:index:shortcut2",
    "index_drop_share:shortcut2:first_quarter",
    "epochs:max_gradient_to_steepest_index_drop:shortcut2",
}


@pytest.fixture(scope="module")
def data():
    x, y, _ = load_data(None)
    return Moments.of(x, y)


def test_tiny_writes_every_key_with_finite_values(tiny_runs):
    assert "resnet-spectrum" in REPRODUCTIONS
    tmp_path = tiny_runs.run("resnet-spectrum")[0]
    d = json.loads((tmp_path / "resnet-spectrum.json").read_text())
    assert d["name"] == "resnet-spectrum" and d["scale"] == "tiny" and d["seconds"] > 0
    assert {r["quantity"] for r in d["rows"]} == KEYS and len(d["rows"]) == len(KEYS)
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and r["paper"] is None
        assert r["measured"] is not None and math.isfinite(r["measured"]), r
    assert len(d["loss_grid"]) == resnet_spectrum.GRID
    assert set(d["runs"]) == {"shortcut1", "shortcut2", "shortcut3", "orthogonal", "xavier"}
    assert all(r["replicates"] == resnet_spectrum.SCALES["tiny"].runs for r in d["rows"] if r["measured"] is not None)
    assert (tmp_path / "resnet-spectrum.html").read_text().count('src="data:image/png;base64,') == 1


def test_eigen_summary_of_a_known_spectrum():
    eig = np.array([-4.0, -1.0, 0.5, 2.0, 3.0])
    s = resnet_spectrum.eigen_summary(eig)
    p10 = 0.5 + 0.4 * (1.0 - 0.5)  # numpy's linear interpolation: |λ| sorted 0.5, 1, 2, 3, 4, position 0.4
    assert s == pytest.approx(
        {
            "largest": 4.0,
            "percentile10": p10,
            "condition_number": 4.0 / p10,
            "index": 0.4,
            "near_zero": 0.0,
            "round_off": 0.0,
        }
    )
    # eigenvalues within 1e-6 |λ|_max of zero are counted apart (their signs are round-off)
    summary = resnet_spectrum.eigen_summary(np.array([-1e-9, 1e-9, 2e-7, -3.0, 1e-5, 1e-13]))
    assert summary["near_zero"] == pytest.approx(4 / 6) and summary["round_off"] == pytest.approx(1 / 6)


def test_spectrum_at_zero_is_theorem_2s_and_descent_lowers_the_loss(data):
    """At zero a 2-shortcut net's Hessian has eigenvalues ±σ_k(M) (Theorem 2): index 1/2, largest σ_max(M)."""
    s = resnet_spectrum.Settings(depth=2, epochs=30, every=10, lrs=(0.05,), runs=1)
    with torch_threads(1):  # as a reproduction runs: two threads are many times slower on these small matrices
        t = resnet_spectrum.trajectory(torch.zeros(200, dtype=torch.float64), 2, 2, data, s, 0.05)
    start = t["checkpoints"][0]
    assert start["index"] == pytest.approx(0.5) and start["largest"] == pytest.approx(theorem2_largest_eigenvalue(data))
    assert [c["epoch"] for c in t["checkpoints"]] == [0, 1, 2, 4, 8, 10, 20, 30] and len(t["loss"]) == 30
    # zero is a saddle: the gradient there vanishes, so descent from it needs the perturbation of section 4.1
    assert t["gradient_norm"][0] == pytest.approx(0.0, abs=1e-12)
    theta = resnet_spectrum.initial_point("shortcut2", 2, 10, 0)
    with torch_threads(1):
        t = resnet_spectrum.trajectory(theta, 2, 2, data, s, 0.05)
    assert np.all(np.diff(t["loss"]) < 0) and t["checkpoints"][-1]["loss"] < t["loss"][0]


def test_interpolation_in_the_loss_is_exact_on_a_line():
    # descending, as in training
    cps = [{"loss": loss, "v": 2.0 * loss + 1.0, "w": 10.0**loss} for loss in (5.0, 3.0, 1.0, 0.5)]
    grid = np.array([0.7, 2.0, 4.5])
    assert resnet_spectrum.on_grid(cps, "v", grid, log=False) == pytest.approx(2.0 * grid + 1.0)
    assert resnet_spectrum.on_grid(cps, "w", grid, log=True) == pytest.approx(grid)


def picture(swap: bool, runs_per_net: int = 3) -> dict:
    """Trajectories shaped as figures 5-6 (``swap``: the 2-shortcut and Xavier nets exchanged), ``runs_per_net``
    alike: loss 5 -> 0.3 at checkpoints every 10 epochs, every eigenvalue resolved; the 2-shortcut net's condition
    number low at high loss, meeting the orthogonal net's (just below) at the end; its index low, dropping at the
    start while its gradient peaks."""
    losses = np.linspace(5.0, 0.3, 11)
    shapes = {
        "shortcut2": (lambda loss: 9 - 0.5 * (loss - 0.3), lambda i: 0.1 if i else 0.4),
        "orthogonal": (lambda loss: 10 + 200 * (loss - 0.3), lambda i: 0.45),
        "xavier": (lambda loss: 30 + 300 * (loss - 0.3), lambda i: 0.48),
    }
    runs = {}
    for kind, (cond, index) in shapes.items():
        cps = [
            {
                "epoch": 10 * i,
                "loss": float(loss),
                "condition_number": float(cond(loss)),
                "index": index(i),
                "near_zero": 0.0,
                "round_off": 0.0,
            }
            for i, loss in enumerate(losses)
        ]
        grad = [0.0] * 100
        grad[5] = 1.0  # the largest gradient at epoch 5: the middle of the first interval, where the index drops
        runs[kind] = [{"checkpoints": cps, "gradient_norm": grad}] * runs_per_net
    if swap:
        runs["shortcut2"], runs["xavier"] = runs["xavier"], runs["shortcut2"]
    return runs


def test_claims_pass_on_the_papers_picture_and_fail_on_its_opposite():
    for swap in (False, True):
        runs = picture(swap)
        rows = {r.quantity: r for r in resnet_spectrum.claims(runs, resnet_spectrum.common_grid(runs), 10)}
        assert set(rows) == KEYS
        if not swap:
            assert all(r.measured is not None for r in rows.values())
            assert all(r.ok for r in rows.values()), rows
            assert rows["fraction_below:index:shortcut2"].measured == 1.0
            assert rows["epochs:max_gradient_to_steepest_index_drop:shortcut2"].measured == 0.0
        else:  # the Xavier picture in the 2-shortcut slot: high condition numbers, no index drop (no share: null)
            assert rows["index_drop_share:shortcut2:first_quarter"].measured is None
            failing = {q for q, r in rows.items() if not r.ok}
            assert failing >= {
                "fraction_below:condition_number:shortcut2",
                "fraction_below:index:shortcut2",
                "log10_final_condition_ratio:shortcut2_over_orthogonal",
                "log10_condition_ratio:shortcut2_over_others:highest_loss",
                "index_drop_share:shortcut2:first_quarter",
            }


def test_each_net_trains_at_the_rate_of_the_sweep_with_the_lowest_final_loss(data):
    """The sweep's choice is the rate whose own gradient descent ends lowest, and that end is what the trajectory
    at that rate reaches (the same descent, written twice)."""
    s = resnet_spectrum.Settings(depth=2, epochs=40, every=20, lrs=(0.001, 0.03, 0.1), runs=1)
    x, y, _ = load_data(None)
    theta = resnet_spectrum.initial_point("shortcut2", 2, 10, 0)
    with torch_threads(1):
        lr, final, sweep = resnet_spectrum.best_rate([theta], 2, 2, torch.from_numpy(x), torch.from_numpy(y), data, s)
        ends = {r: resnet_spectrum.trajectory(theta, 2, 2, data, s, r)["checkpoints"][-1]["loss"] for r in s.lrs}
    assert lr == min(ends, key=lambda r: ends[r]) and lr != 0.001
    assert final == pytest.approx(ends[lr], rel=1e-9) and sweep == pytest.approx([ends[r] for r in s.lrs], rel=1e-9)


def test_the_final_condition_claim_cannot_tell_on_nets_that_did_not_converge_nor_grid_claims_without_a_grid():
    runs = picture(False)
    grid = resnet_spectrum.common_grid(runs)
    done = {k: True for k in runs}
    rows = {r.quantity: r for r in resnet_spectrum.claims(runs, grid, 10, done)}
    assert all(r.verdict == "agrees" for r in rows.values())
    rows = {r.quantity: r for r in resnet_spectrum.claims(runs, grid, 10, {**done, "orthogonal": False})}
    final = "log10_final_condition_ratio:shortcut2_over_orthogonal"
    assert rows[final].verdict == "cannot tell" and "converge" in rows[final].why_cannot_tell
    assert all(r.verdict == "agrees" for q, r in rows.items() if q != final)
    rows = {r.quantity: r for r in resnet_spectrum.claims(runs, np.array([]), 10, done)}
    assert {q for q, r in rows.items() if r.verdict == "cannot tell"} == {
        "fraction_below:condition_number:shortcut2",
        "log10_condition_ratio:shortcut2_over_others:highest_loss",
        "log10_condition_ratio:highest_minus_lowest_loss",
    }  # the index reads its own range of losses
    one = picture(False, runs_per_net=1)  # one run per net: no verdict
    rows = resnet_spectrum.claims(one, resnet_spectrum.common_grid(one), 10, done)
    assert all(r.verdict == "cannot tell" and "1 replicate" in r.why_cannot_tell for r in rows)


def test_round_off_hessians_are_left_out_of_the_grid_and_the_final_ratio_cannot_tell():
    """When training ends with eigenvalues within round-off of zero (within 1e-12 |λ|_max: their signs and sizes
    undetermined), the index's grid stops at the last Hessian whose signs are read, the condition numbers' where
    the 10th percentile of |λ| is above round-off, and the final condition ratio cannot tell, saying why."""
    runs = picture(False)
    for kind in ("shortcut2", "orthogonal"):
        cps = [dict(c) for c in runs[kind][0]["checkpoints"]]
        for c in cps[-3:]:
            c["round_off"] = 0.83 if kind == "shortcut2" else 0.62
        cps[-1]["condition_number"] = 1e13  # the last 10th percentile within round-off of zero
        runs[kind] = [{**runs[kind][0], "checkpoints": cps}] * 3
    assert len(resnet_spectrum.resolved(runs["shortcut2"][0]["checkpoints"], "index")) == 8
    assert len(resnet_spectrum.resolved(runs["shortcut2"][0]["checkpoints"], "condition")) == 10
    signs = resnet_spectrum.common_grid(runs, "index")
    assert signs.min() == pytest.approx(runs["shortcut2"][0]["checkpoints"][7]["loss"])
    grid = resnet_spectrum.common_grid(runs)
    assert grid.min() == pytest.approx(runs["shortcut2"][0]["checkpoints"][9]["loss"])
    rows = {r.quantity: r for r in resnet_spectrum.claims(runs, grid, 10, {k: True for k in runs})}
    final = rows["log10_final_condition_ratio:shortcut2_over_orthogonal"]
    assert final.verdict == "cannot tell" and final.why_cannot_tell.startswith("round-off")
    assert rows["fraction_below:index:shortcut2"].verdict == "agrees"  # on the resolved losses
    # small is not round-off: eigenvalues within 1e-6 |λ|_max but far above 1e-12 leave every row its verdict
    small = picture(False)
    for r in small["shortcut2"]:
        for c in r["checkpoints"]:
            c["near_zero"] = 0.8
    assert all(r.verdict == "agrees" for r in resnet_spectrum.claims(small, resnet_spectrum.common_grid(small), 10))


def test_the_index_drop_cannot_tell_when_no_hessian_falls_in_the_first_quarter_of_the_descent():
    """At rate 1 the 2-shortcut nets fall from loss 5.5 to 0.29 in 20 epochs: with Hessians only at 0 and 20 the
    first quarter of the descent holds no Hessian but the start, and the row cannot tell."""
    runs = picture(False)
    cps = runs["shortcut2"][0]["checkpoints"]
    fast = [cps[0]] + [{**c, "loss": 0.3 + 0.01 * (10 - i)} for i, c in enumerate(cps[1:], start=1)]
    assert resnet_spectrum.first_quarter_unresolved(fast) and not resnet_spectrum.first_quarter_unresolved(cps)
    assert math.isnan(resnet_spectrum.index_drop_share(fast))
    runs["shortcut2"] = [{**runs["shortcut2"][0], "checkpoints": fast}]
    rows = {r.quantity: r for r in resnet_spectrum.claims(runs, resnet_spectrum.common_grid(runs), 10)}
    assert rows["index_drop_share:shortcut2:first_quarter"].verdict == "cannot tell"
    assert resnet_spectrum.checkpoint_epochs(resnet_spectrum.Settings(16, 100, 20, (0.1,), 1)) == {
        0,
        1,
        2,
        4,
        8,
        16,
        20,
        40,
        60,
        80,
        100,
    }


def test_the_index_drop_read_against_the_epoch():
    """Index 0.5 -> 0.4 by epoch 8 and 0.3 at epoch 1000: by 1% of the epochs (epoch 10) half the drop is done."""
    cps = [{"epoch": e, "index": i, "loss": 1.0} for e, i in ((0, 0.5), (4, 0.5), (8, 0.4), (20, 0.35), (1000, 0.3))]
    assert resnet_spectrum.index_drop_share_by_epoch(cps) == pytest.approx(0.5)
    assert resnet_spectrum.index_drop_share_by_epoch(cps, fraction=0.02) == pytest.approx(0.75)
