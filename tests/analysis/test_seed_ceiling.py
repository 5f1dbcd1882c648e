"""The seed-noise ceiling (``analysis.seed_ceiling``): the initializations' agreement against scipy on the same errors,
the ceiling of a predictor against a Monte-Carlo study where the architecture's part of test error is known, only
each initialization's selected run counted, and the report's section with one initialization and with two."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from archstudy.analysis.seed_ceiling import (
    FEWEST,
    UNKNOWN,
    of_ceiling,
    rho_ceiling,
    seed_ceiling,
    seed_errors,
    tau_ceiling,
)


def study(errors: np.ndarray, rates: int = 3, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The architectures and runs tables of ``errors`` (architectures x initializations: each one's selected run's
    test error); every other run of an initialization has a worse, random error."""
    rng = np.random.default_rng(seed)
    n, k = errors.shape
    arch = pd.DataFrame(
        {
            "index": np.arange(n),
            "arch_id": [f"{i:016x}" for i in range(n)],
            "variant": "base",
            "trained": True,
            "inits": k,
            "test_error": errors[:, 0],
        }
    )
    rows = []
    for i in range(n):
        for j in range(k):
            chosen = int(rng.integers(rates))
            for r in range(rates):
                error = errors[i, j] if r == chosen else float(rng.uniform(0.5, 1.0))
                rows.append(
                    {
                        "index": i,
                        "arch_id": f"{i:016x}",
                        "variant": "base",
                        "init_index": j,
                        "lr_index": r,
                        "test_error": error,
                        "selected": r == chosen,
                    }
                )
    return arch, pd.DataFrame(rows)


def test_the_agreement_is_kendall_and_spearman_of_the_selected_runs_averaged_over_pairs():
    rng = np.random.default_rng(1)
    t = rng.normal(size=40)
    e = np.column_stack([t + rng.normal(0, 0.7, 40) for _ in range(3)])
    arch, runs = study(e)
    wide = seed_errors(runs, arch)
    assert np.array_equal(wide[["init_0", "init_1", "init_2"]].to_numpy(), e)  # the selected runs, nothing else
    c = seed_ceiling(runs, arch, n_boot=200)
    pairs = [(0, 1), (0, 2), (1, 2)]
    assert c["kendall"] == pytest.approx(np.mean([sps.kendalltau(e[:, a], e[:, b]).statistic for a, b in pairs]))
    assert c["spearman"] == pytest.approx(np.mean([sps.spearmanr(e[:, a], e[:, b]).statistic for a, b in pairs]))
    assert c["kendall_lo"] <= c["kendall"] <= c["kendall_hi"] and c["spearman_lo"] <= c["spearman"] <= c["spearman_hi"]
    assert c["kendall_ceiling"] == tau_ceiling(c["kendall"]) and c["kendall"] < c["kendall_ceiling"] < 1
    # a variant or an untrained architecture is not a base architecture of the agreement
    arch.loc[0, "variant"], arch.loc[1, "trained"] = "norm", False
    assert seed_ceiling(runs, arch, n_boot=10)["n"] == 38


def test_the_ceiling_is_what_the_architectures_own_part_reaches():
    """y_j = T + e_j: the |tau| (|rho|) of T itself with y_0, the best any predictor of the architecture can do, is
    the ceiling computed from the agreement of y_0 and y_1 alone (Monte Carlo, 20,000 architectures)."""
    rng = np.random.default_rng(7)
    n = 20_000
    for noise in (0.5, 1.0, 2.0):
        t = rng.normal(size=n)
        y0, y1 = t + rng.normal(0, noise, n), t + rng.normal(0, noise, n)
        tau = sps.kendalltau(y0, y1).statistic
        rho = sps.spearmanr(y0, y1).statistic
        assert tau_ceiling(tau) == pytest.approx(sps.kendalltau(t, y0).statistic, abs=0.01)
        assert rho_ceiling(rho) == pytest.approx(sps.spearmanr(t, y0).statistic, abs=0.01)
    assert math.isnan(tau_ceiling(-0.1)) and math.isnan(rho_ceiling(0.0)) and tau_ceiling(1.0) == pytest.approx(1.0)
    assert of_ceiling(-0.3, 0.6) == pytest.approx(0.5) and math.isnan(of_ceiling(0.3, math.nan))


def test_one_initialization_or_too_few_architectures_state_no_ceiling():
    e = np.random.default_rng(0).uniform(size=(30, 1))
    arch, runs = study(e)
    assert seed_ceiling(runs, arch)["why"] == UNKNOWN
    few = np.random.default_rng(0).uniform(size=(FEWEST - 1, 2))
    arch, runs = study(few)
    c = seed_ceiling(runs, arch)
    assert c["n"] == FEWEST - 1 and "fewer than" in c["why"] and "kendall" not in c


def test_the_report_section_states_the_ceiling_or_how_to_measure_it():
    from archstudy.analysis.report.ceiling import ceiling_html

    class Page:  # the fields the section reads
        corr = pd.DataFrame(
            {"label": ["NLC"], "n": [40], "kendall": [-0.3], "kendall_lo": [-0.4], "kendall_hi": [-0.2]}
            | {"spearman": [-0.4], "spearman_lo": [-0.5], "spearman_hi": [-0.3]}
        )
        predict = None

    rng = np.random.default_rng(2)
    t = rng.normal(size=40)
    arch, runs = study(np.column_stack([t + rng.normal(0, 0.5, 40) for _ in range(2)]))
    page = Page()
    page.ceiling = seed_ceiling(runs, arch, n_boot=100)  # type: ignore[attr-defined]
    html = ceiling_html(page)  # type: ignore[arg-type]
    share = 0.3 / page.ceiling["kendall_ceiling"]  # type: ignore[attr-defined]
    assert "the most a predictor can reach" in html and f"{share:.2f}" in html
    page.ceiling = {"inits": 1, "n": 0, "why": UNKNOWN}  # type: ignore[attr-defined]
    assert "init_seeds: 2" in ceiling_html(page)  # type: ignore[arg-type]


def test_top_states_the_ceiling_in_one_line():
    from archstudy.analysis.leaderboard import ceiling_line

    rng = np.random.default_rng(3)
    t = rng.normal(size=30)
    arch, runs = study(np.column_stack([t + rng.normal(0, 0.5, 30) for _ in range(2)]))
    c = seed_ceiling(runs, arch, n_boot=50)
    line = ceiling_line(c)
    assert line.startswith(f"2 initializations agree by Kendall tau {c['kendall']:.2f} [")
    assert f"can reach {c['kendall_ceiling']:.2f} [" in line and "over 30 base architectures" in line
    assert ceiling_line({"inits": 1, "n": 0, "why": UNKNOWN}) == UNKNOWN
