"""The driver's one planning function (``prepare_study``): the refusals that come from the study's files (a blocked
path, another driver's lock) are the plan's, said in the same line by ``archstudy run --dry-run`` and by the
driver; ``archstudy run`` plans through it alone. (That its todo is what a run then trains, and its derived keys
what the study records: test_driver_study.py, on the module's Ray.)"""

import ast
import io
from pathlib import Path

import pytest
import ray

from study_commands import config_only, dry_run, files

from archstudy.sampling import EXTENDED, UserError
from archstudy.study.cli import main
from archstudy.study.execution.driver import LOCKED, prepare_study, run_prepared
from archstudy.study.execution.store import Store

ROOT = Path(__file__).resolve().parents[3]
# Never trained here: a study's config, small.
KEYS = {
    "dataset": "waveform-noise",
    "architectures": 2,
    "param_budget": 1500,
    "seed": 3,
    "space": EXTENDED.replace(name="extended-shallow", depths=(3, 4)).to_dict(),
    "protocol": {"preset": "quick", "num_lrs": 2, "max_epochs": 1},
    "metrics": {
        "nlc_batches": 2,
        "gradient_batches": 1,
        "variability_grid": 4,
        "variability_planes": 1,
        "proxy_batch_size": 16,
    },
    "max_retries": 0,
}
FLAGS = ("--dataset", "waveform-noise", "--architectures", "2", "--param-budget", "1500", "--seed", "3")  # KEYS's


@pytest.fixture
def study(tmp_path) -> Path:
    return config_only(tmp_path / "study", KEYS)


def test_a_blocked_path_is_in_the_plan_and_refused_in_its_line(study, capsys):
    plan = prepare_study(KEYS, study)
    name = plan.units[1].name
    (study / "architectures" / f"{name}.parquet").mkdir(parents=True)
    before = files(study)
    plan = prepare_study(KEYS, study)
    assert plan.blocked == [str(study / "architectures" / f"{name}.parquet")]
    line = plan.refusal()
    assert line == f"{plan.blocked[0]}: not a file, where the study writes one of an architecture's files " + (
        "(a directory?); nothing was run: move it away"
    )
    with pytest.raises(UserError) as refused:
        plan.check()
    assert str(refused.value) == line
    # `run` refuses it in the plan, in that line, before the estimate's timed steps
    assert main(dry_run(study, flags=FLAGS)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"archstudy run: error: {line}"
    assert not any(e.startswith("archstudy: estimated") for e in err)
    assert files(study) == before


def test_another_drivers_lock_is_in_the_plan_and_the_driver_refuses_it_in_the_same_line(study, capsys):
    store = Store(study)
    with store.driver_lock():  # another driver holds the study
        plan = prepare_study(KEYS, study)
        assert plan.locked == f"{store.location}: {LOCKED}" and plan.refusal() == plan.locked
        assert main(dry_run(study, flags=FLAGS)) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == f"archstudy run: error: {plan.locked}"
        with pytest.raises(UserError) as refused:  # the driver itself: the lock taken, before Ray starts
            run_prepared(plan, progress=io.StringIO())
        assert str(refused.value) == plan.locked
        assert not ray.is_initialized()
    assert prepare_study(KEYS, study).locked is None  # released: the plan is clear


def test_run_plans_through_the_drivers_public_planning_function_alone():
    """study/cli/run.py imports no private name of the driver: its plan is the driver's own."""
    tree = ast.parse((ROOT / "study" / "cli" / "run.py").read_text())
    names = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("execution.driver")
        for alias in node.names
    ]
    assert "prepare_study" in names and not [n for n in names if n.startswith("_")]
