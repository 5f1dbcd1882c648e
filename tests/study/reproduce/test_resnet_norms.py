"""``resnet-norms`` (*Demystifying ResNet*, figure 3): at tiny it writes every key with finite values; the average
Frobenius norm is (1/L) sum |W_l|_F; zero is a stationary point (the norms stay 0 there); the claims pass on
norms falling with depth and fail on rising ones or a diverged net."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from archstudy.study.reproduce import REPRODUCTIONS, resnet_norms
from archstudy.study.reproduce.reproduction import torch_threads
from archstudy.study.reproduce.resnet_hessian import Moments, load_data
from archstudy.study.reproduce.result import ROW_KEYS

KEYS = {
    f"fraction_decreasing:{what}:{panel}"
    for what in ("mean_norm_during_training", "final_norm")
    for panel in ("linear", "relu")
}


def test_tiny_writes_every_key_with_finite_values(tiny_runs):
    assert "resnet-norms" in REPRODUCTIONS
    tmp_path = tiny_runs.run("resnet-norms")[0]
    d = json.loads((tmp_path / "resnet-norms.json").read_text())
    assert d["name"] == "resnet-norms" and d["scale"] == "tiny" and d["seconds"] > 0
    assert {r["quantity"] for r in d["rows"]} == KEYS and len(d["rows"]) == len(KEYS)
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS and r["paper"] is None
        assert r["measured"] is not None and math.isfinite(r["measured"]), r
    tiny = resnet_norms.SCALES["tiny"]
    for panel in ("linear", "relu"):
        assert [int(k) for k in d["norms"][panel]] == list(tiny.depths)
        assert all(len(c) == tiny.epochs + 1 for c in d["norms"][panel].values())
        assert all(len(runs) == tiny.runs for runs in d["norms_per_run"][panel].values())


def test_mean_frobenius_norm_and_zero_is_stationary():
    layers = torch.stack([3.0 * torch.eye(4, dtype=torch.float64), torch.ones(4, 4, dtype=torch.float64)])
    assert resnet_norms.mean_frobenius_norm(layers) == pytest.approx((6.0 + 4.0) / 2)
    x, y, _ = load_data(None)
    data = Moments.of(x, y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    with torch_threads(1):
        for relu in (False, True):  # every product of two weight matrices has a zero gradient at zero
            norms = resnet_norms.norms_during_training(
                torch.zeros(400, dtype=torch.float64), 4, relu, 0.1, 5, xt, yt, data
            )
            assert norms == [0.0] * 6


def runs_of(curve, runs: int = 3) -> dict:
    """``curve(depth)`` as every one of ``runs`` runs at depths 2, 4, 8, both panels."""
    return {p: {D: [curve(D)] * runs for D in (2, 4, 8)} for p in ("linear", "relu")}


def test_claims_pass_when_norms_fall_with_depth_in_every_run_and_fail_otherwise():
    epochs = 3
    rows = resnet_norms.claims(runs_of(lambda D: [1.0 / D] * (epochs + 1)), epochs)
    assert {r.quantity for r in rows} == KEYS and all(r.verdict == "agrees" and r.measured == 1.0 for r in rows)
    rising = resnet_norms.claims(runs_of(lambda D: [float(D)] * (epochs + 1)), epochs)
    assert all(r.verdict == "differs" and r.measured == 0.0 for r in rising)
    diverged = resnet_norms.claims(runs_of(lambda D: [1.0 / D] * (epochs + 1) if D < 8 else [0.1]), epochs)
    assert all(r.measured == 0.5 and r.verdict == "differs" for r in diverged)
    # one run in three against the claim: the claim holds in 2 of 3 runs, no verdict
    one_rising = [[1.0 / 4] * (epochs + 1)] * 2 + [[4.0] * (epochs + 1)]  # at depth 4 the third run rises
    mixed = {
        p: {D: [[1.0 / D] * (epochs + 1)] * 3 if D != 4 else one_rising for D in (2, 4, 8)} for p in ("linear", "relu")
    }
    assert all(r.why_cannot_tell == "the claim holds for 2 of 3 replicates" for r in resnet_norms.claims(mixed, epochs))
    assert all(r.verdict == "cannot tell" for r in resnet_norms.claims(runs_of(lambda D: [1.0 / D] * 4, 2), epochs))
    assert resnet_norms.fraction_decreasing([3.0, 2.0, 2.5, 1.0]) == pytest.approx(2 / 3)
    assert np.isfinite(resnet_norms.fraction_decreasing([1.0, np.inf]))
