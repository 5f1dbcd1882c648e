"""``han-flipped`` (Yu and Zhang figure 5, the variability paper figure 10): at tiny it writes every key with
finite values; flipping changes each training label to 1 - y with probability the fraction (the authors'
``datanoise``), seeded, the test set untouched; the rows of the paper scale compare the printed values by the one
rule and the claims pass only when the HanNet lies above the FCNet."""

from __future__ import annotations

import json
import math

import torch

from archstudy.study.reproduce import REPRODUCTIONS, han_flipped
from archstudy.study.reproduce.han_checkerboard import checkerboard_data
from archstudy.study.reproduce.result import ROW_KEYS

TINY_KEYS = {
    "best_test_accuracy:HanNet:20x30:flipped=10%",
    "best_test_accuracy:FCNet1:6x100:flipped=10%",
    "final_test_accuracy:HanNet:20x30:flipped=10%",
    "final_train_accuracy:HanNet:20x30:flipped=10%",
    "hannet_above_fcnet:HanNet:20x30-FCNet1:6x100:flipped=10%",
}


def test_tiny_writes_every_key_with_finite_values(tiny_runs):
    assert "han-flipped" in REPRODUCTIONS
    tmp_path = tiny_runs.run("han-flipped")[0]
    d = json.loads((tmp_path / "han-flipped.json").read_text())
    assert d["name"] == "han-flipped" and d["scale"] == "tiny" and d["seconds"] > 0
    assert {r["quantity"] for r in d["rows"]} == TINY_KEYS and len(d["rows"]) == len(TINY_KEYS)
    for r in d["rows"]:
        assert tuple(r) == ROW_KEYS
        assert r["measured"] is not None and math.isfinite(r["measured"]), r
    (flipped,) = d["flipped_points"].values()  # Binomial(1640, 0.1): mean 164, sd 12.1
    assert list(d["flipped_points"]) == ["flipped=10%"] and abs(flipped - 164) < 5 * math.sqrt(1640 * 0.09)
    han = d["results"]["test_accuracy:H+ABS:20x30"]["flipped=10%"]
    # the final test accuracy of the best run can never beat that run's best along training
    assert han["test_accuracy_last_of_best_run"][0] <= han["test_accuracy_best"][0] + 1e-9


def test_flipping_changes_exactly_the_drawn_training_labels_and_nothing_else():
    clean = checkerboard_data(seed=0)
    drawn = {}
    for fraction in (0.0, 0.10, 0.20):
        data, flipped = han_flipped.flip_labels(clean, fraction, seed=7)
        drawn[fraction] = set(flipped.tolist())
        assert len(flipped) == len(drawn[fraction])
        # each label flipped with probability the fraction: Binomial(1640, fraction), within 5 sd of its mean
        assert abs(len(flipped) - 1640 * fraction) <= 5 * math.sqrt(1640 * fraction * (1 - fraction))
        changed = torch.nonzero(data.train.y != clean.train.y).flatten()
        assert torch.equal(changed, flipped)  # exactly those, each to 1 - y
        assert torch.equal(data.train.y[flipped], 1 - clean.train.y[flipped])
        assert data.train.x is clean.train.x and data.test is clean.test and data.val is clean.val
    assert not drawn[0.0] and drawn[0.10] < drawn[0.20]  # one uniform draw per point: u > 0.9 implies u > 0.8
    again, f1 = han_flipped.flip_labels(clean, 0.10, seed=7)
    _, f2 = han_flipped.flip_labels(clean, 0.10, seed=8)
    assert torch.equal(again.train.y, han_flipped.flip_labels(clean, 0.10, seed=7)[0].train.y)
    assert not torch.equal(f1, f2)


def fake_results(settings, han: float, fc: float) -> dict:
    """Accuracies given per net and fraction, as ``run`` stores them: three initializations 0.05 points apart,
    each best at the middle of its net's rates."""
    results: dict = {}
    for q, f in han_flipped.runs_of(settings):
        acc = han if "H+ABS" in q else fc
        rates = list(settings.rates_of(q))
        results.setdefault(q, {})[han_flipped.fraction_key(f)] = {
            "test_accuracy_best": [acc - 0.05, acc, acc + 0.05],
            "test_accuracy_last_of_best_run": [90.0] * 3,
            "train_accuracy_last_of_best_run": [99.8] * 3,
            "rates": rates,
            "best_lr": [rates[len(rates) // 2]] * 3,
        }
    return results


def test_paper_rows_compare_by_the_one_rule_and_claim_the_hannet_above():
    paper = han_flipped.SCALES["paper"]
    runs = han_flipped.runs_of(paper)
    assert len(runs) == len(set(runs)) == 2 + 2 * len(han_flipped.VAR_FRACTIONS) - 1  # FCNet1 at 10% shared
    rows = {r.quantity: r for r in han_flipped.rows_of(paper, fake_results(paper, 95.8, 83.0))}
    fractions = [han_flipped.fraction_key(f) for f in han_flipped.VAR_FRACTIONS]
    assert set(rows) == TINY_KEYS | {
        "best_test_accuracy:HanNet:100x17:flipped=10%",
        "best_test_accuracy:FCNet:100x6:flipped=10%",
    } | {f"hannet_above_fcnet:HanNet:100x17-FCNet:100x6:{k}" for k in fractions}
    # the paper's one run: one unit of the printed digit and two of our runs' sd (0.05): 96.5 +- 0.2
    assert rows["best_test_accuracy:HanNet:20x30:flipped=10%"].verdict == "differs"  # 95.8 +- 0.12
    assert rows["best_test_accuracy:HanNet:100x17:flipped=10%"].verdict == "differs"  # against 95.2 +- 0.2
    assert (
        rows["final_test_accuracy:HanNet:20x30:flipped=10%"].ok
        and rows["final_train_accuracy:HanNet:20x30:flipped=10%"].ok
    )  # 90.0 and 99.8 exactly
    assert all(r.ok and r.measured == 95.8 - 83.0 for q, r in rows.items() if q.startswith("hannet_above"))
    exact = {r.quantity: r for r in han_flipped.rows_of(paper, fake_results(paper, 96.55, 80.75))}
    assert exact["best_test_accuracy:HanNet:20x30:flipped=10%"].ok  # 96.55 +- 0.12 within 96.5 +- 0.2
    assert exact["best_test_accuracy:FCNet1:6x100:flipped=10%"].ok  # 80.75 +- 0.12 within 80.8 +- 0.2
    reverse = han_flipped.rows_of(paper, fake_results(paper, 80.0, 85.0))
    assert all(not r.ok for r in reverse if r.quantity.startswith("hannet_above"))


def test_rows_of_nets_that_never_left_the_constant_prediction_cannot_tell():
    quick = han_flipped.SCALES["quick"]
    rows = han_flipped.rows_of(quick, fake_results(quick, 60.5, 83.0), constant=60.4)
    verdicts = {r.quantity: r.verdict for r in rows}
    # the HanNet never left 60.4% + 1 point: its rows and the comparison cannot tell; FCNet1's row can
    assert verdicts.pop("best_test_accuracy:FCNet1:6x100:flipped=10%") == "differs"  # 83.0 against 80.8
    assert set(verdicts.values()) == {"cannot tell"}
    trained = han_flipped.rows_of(quick, fake_results(quick, 96.5, 83.0), constant=60.4)
    assert all(r.verdict != "cannot tell" for r in trained)
