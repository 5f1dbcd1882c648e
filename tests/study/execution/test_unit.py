"""study.execution.unit: a study's units (the plan of its config), one unit run in this process (its rows fit the
schema, they do not depend on the process's global random state, which it leaves alone), the worker's set-up."""

import math
import random

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec, UserError, plan_study
from archstudy.study import load_dataset
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.schema import ARCHITECTURES, CURVES, RUNS, names
from archstudy.study.execution.store import unit_name
from archstudy.study.execution.unit import WorkUnit, work_units, compute_unit

CONFIG = StudyConfig(
    dataset="waveform-noise",
    architectures=3,
    param_budget=1500,
    seed=2,
    siblings=["norm", "skip"],
    protocol={"preset": "quick", "num_lrs": 2, "max_epochs": 2},
    metrics={
        "nlc_batches": 2,
        "gradient_batches": 1,
        "variability_grid": 8,
        "variability_planes": 1,
        "proxy_batch_size": 16,
    },
    d_in=40,
    d_out=3,
)
# Columns that differ between two computations of the same unit.
VOLATILE = {"build_s", "measure_s", "train_s", "total_s", "wall_s", "finished_at"}


def test_the_units_are_the_plan_of_the_config_with_unique_names():
    units = work_units(CONFIG)
    planned = list(plan_study(2, 3, 40, 3, CONFIG.space, 1500, ("norm", "skip")))
    assert [(u.index, u.variant, u.spec, u.seed) for u in units] == [tuple(p) for p in planned]
    assert len({u.name for u in units}) == len(units)
    assert all(u.name == unit_name(u.index, u.spec.content_id) == f"{u.index:06d}-{u.arch_id}" for u in units)
    assert all(WorkUnit.from_dict(u.to_dict()) == u for u in units)
    with pytest.raises(UserError, match=r"^study.yaml.d_in = None: missing: archstudy writes d_in and d_out"):
        work_units(CONFIG.replace(d_in=None))


@pytest.fixture(scope="module")
def data():
    return load_dataset("waveform-noise")


def _run(unit, data, threads=1):
    n = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return compute_unit(unit, data, CONFIG)
    finally:
        torch.set_num_threads(n)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        k in VOLATILE or a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def test_a_unit_gives_the_same_rows_whatever_the_global_random_state_and_leaves_it_alone(data, global_random_state):
    """Nothing seeds or draws from the global generators: a unit run after the process drew from them
    differently gives the same rows, bit for bit, and the global state is as it was."""
    unit = work_units(CONFIG)[1]
    torch.manual_seed(1), np.random.seed(1), random.seed(1)
    before = global_random_state()
    arch_a, runs_a, curves_a = _run(unit, data)
    assert global_random_state() == before
    torch.manual_seed(99), np.random.seed(99), random.seed(99)
    torch.rand(5), np.random.rand(5)
    arch_b, runs_b, curves_b = _run(unit, data)
    assert _same(arch_a, arch_b) and len(runs_a) == len(runs_b) and all(map(_same, runs_a, runs_b))
    assert len(curves_a) == len(curves_b) and all(map(_same, curves_a, curves_b))
    # the rows are the schema's, and say which unit they are
    assert set(arch_a) == set(names(ARCHITECTURES)) and all(set(r) == set(names(RUNS)) for r in runs_a)
    assert all(set(r) == set(names(CURVES)) for r in curves_a) and arch_a["trained"]
    # every run has its curve from epoch 0 to its last epoch
    assert sorted({(r["lr_index"], r["epoch"]) for r in curves_a}) == sorted(
        (r["lr_index"], e) for r in runs_a for e in range(r["epochs"] + 1)
    )
    assert (arch_a["arch_id"], arch_a["index"], arch_a["variant"], arch_a["seed"]) == (
        unit.arch_id,
        unit.index,
        unit.variant,
        unit.seed,
    )
    assert arch_a["study_seed"] == 2 and arch_a["n_runs"] == len(runs_a) == 2
    assert sum(r["selected"] for r in runs_a) == 1


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(1.0, abs(a))
    return a == b


def test_a_unit_of_two_initializations_keeps_the_first_ones_row_and_runs_the_second_at_its_rates(data):
    """``init_seeds: 2``: the architecture's row and its first initialization's runs and curves are those of the study
    with one (the paper's protocol; every value but the timings, to 1e-9), the second initialization's runs follow, one
    selected per initialization, and the row's spread is that of the two selected test errors. A shallow net: a chaotic
    one (depth 23, high NLC) amplifies the round-off of another chunking of the stack's runs past 1e-9."""
    spec = ArchSpec(depth=4, width=10, d_in=40, d_out=3, activation="tanh", norm="layer", bias_init="gaussian")
    unit = WorkUnit(0, "base", spec, 5)
    one_arch, one_runs, one_curves = compute_unit(unit, data, CONFIG)
    two = CONFIG.replace(init_seeds=2)
    arch, runs, curves = compute_unit(unit, data, two)
    for k, v in one_arch.items():
        if k in VOLATILE or k in ("n_runs", "inits", "test_error_mean", "test_error_sd", "n_diverged", "all_diverged"):
            continue
        assert _close(v, arch[k]), k
    n = len(one_runs)
    assert arch["n_runs"] == 2 * n and arch["inits"] == 2 and one_arch["inits"] == 1
    assert [r["init_index"] for r in runs] == [0] * n + [1] * n
    for a, b in zip(one_runs, runs[:n]):
        differ = [k for k in a if k not in VOLATILE and not _close(a[k], b[k])]
        assert not differ, (differ, a, b)
    assert [r["lr"] for r in runs[n:]] == [r["lr"] for r in runs[:n]]  # the first initialization's rates
    chosen = [r for r in runs if r["selected"]]
    assert [r["init_index"] for r in chosen] == [0, 1]
    assert chosen[0]["lr_index"] == arch["lr_index"] and chosen[0]["test_error"] == arch["test_error"]
    errors = [r["test_error"] for r in chosen]
    assert arch["test_error_mean"] == pytest.approx(np.mean(errors), abs=1e-15)
    assert arch["test_error_sd"] == pytest.approx(np.std(errors, ddof=1), abs=1e-15)
    assert len(curves) == len(one_curves)  # the first initialization's curves only
