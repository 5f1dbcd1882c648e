"""study.execution.unit: a study's units (the plan of its config), one unit run in this process (its rows fit the
schema, they do not depend on the process's global random state, which it leaves alone), the worker's set-up."""

import math
import random

import numpy as np
import pytest
import torch

from archstudy.sampling import UserError, plan_study
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
