"""NLC-guided pruning at launch (study.execution.pruning, ``archstudy run --nlc-window``) end to end on the real
pipeline: pruned architectures are stored untrained with their measurements at initialization, ``archstudy
status`` counts them apart, a resume trains nothing, another window is refused; ``auto`` trains a pilot and prunes
the rest by the pilot's window. One embedded Ray for the module."""

import io
import json
import math
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch

from archstudy.sampling import UserError
from archstudy.study import MetricOptions, build_network, load_dataset, measure
from archstudy.study.cli import main
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.execution.pruning import inside
from archstudy.study.experiment.window_rule import pilot_window
from archstudy.study.execution.driver import resume_study, run_study
from archstudy.study.execution.store import Store
from archstudy.study.execution.unit import work_units

CHEAP_METRICS = {
    "nlc_batches": 4,
    "gradient_batches": 2,
    "variability_grid": 8,
    "variability_planes": 1,
    "proxy_batch_size": 32,
}
KEYS = {
    "dataset": "waveform-noise",
    "architectures": 4,
    "param_budget": 2000,
    "seed": 3,
    "preset": "paper",
    "protocol": {"preset": "quick", "num_lrs": 2, "max_epochs": 2},
    "metrics": CHEAP_METRICS,
    "max_retries": 0,
}


pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py: a Ray of this module's own


@pytest.fixture(scope="module")
def data():
    return load_dataset("waveform-noise")


def init_nlcs(keys, data) -> dict[str, float]:
    """Every unit's NLC at initialization, measured here as a worker measures it."""
    config = StudyConfig.from_dict(keys).replace(d_in=data.d_in, d_out=data.n_classes)
    options = MetricOptions.from_dict(CHEAP_METRICS)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {
            u.name: measure(build_network(u.spec, u.seed), data, u.spec, options=options, seed=u.seed)["nlc"]
            for u in work_units(config)
        }
    finally:
        torch.set_num_threads(n)


def files(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def status(out) -> tuple[dict, str]:
    text, js = io.StringIO(), io.StringIO()
    with redirect_stdout(js):
        assert main(["status", str(out), "--json"]) == 0
    with redirect_stdout(text):
        assert main(["status", str(out)]) == 0
    return json.loads(js.getvalue()), text.getvalue()


def test_a_study_pruned_at_launch_stores_the_pruned_untrained_and_a_resume_does_not_train_them(tmp_path, data):
    nlcs = init_nlcs(KEYS, data)
    s = sorted(nlcs.values())
    assert len(set(s)) == 4
    window = [(s[0] + s[1]) / 2, (s[2] + s[3]) / 2]  # keeps the middle two: one pruned below, one above
    out = tmp_path / "study"
    result = run_study({**KEYS, "nlc_window": window}, out, progress=None)
    assert result.complete and result.finished == 4
    arch = Store(out).read_table("architectures").set_index("arch_id")
    names = {f"{int(r['index']):06d}-{a}": a for a, r in arch.iterrows()}
    pruned = {n for n in names if not inside(window, nlcs[n])}
    assert len(pruned) == 2
    for name, arch_id in names.items():
        row = arch.loc[arch_id]
        assert math.isclose(row["nlc"], nlcs[name], rel_tol=1e-9)  # measured at initialization either way
        has = {t: (out / t / f"{name}.parquet").exists() for t in ("runs", "curves")}
        if name in pruned:
            assert not row["trained"] and not any(has.values())
            assert math.isnan(row["test_error"]) and row["lr_index"] == -1 and row["n_runs"] == 0
            assert row["train_s"] == 0 and row["selected_by"] == "none" and row["total_s"] > 0
        else:
            assert row["trained"] and all(has.values()) and row["n_runs"] == 2 and 0 <= row["test_error"] <= 1
    counts, text = status(out)
    assert (counts["finished"], counts["pruned"], counts["remaining"]) == (4, 2, 0)
    assert re.search(r"pruned +2 +\(NLC window \[", text) and re.search(r"trained +2", text)
    before = files(out)
    again = resume_study(out, progress=None)
    assert again.finished == 0 and again.finished_before == 4 and files(out) == before
    with pytest.raises(UserError, match="a different nlc_window"):
        run_study({**KEYS, "nlc_window": [0.0, 1e9]}, out, progress=None)


def test_auto_trains_the_pilot_and_prunes_the_rest_by_its_window(tmp_path, data):
    keys = {**KEYS, "architectures": 5, "nlc_window": "auto", "nlc_pilot": 2}
    nlcs = init_nlcs(keys, data)
    out, log = tmp_path / "study", io.StringIO()
    assert run_study(keys, out, progress=log).complete
    arch = Store(out).read_table("architectures")
    pilot = arch[arch["index"] < 2]
    assert len(pilot) == 2 and pilot["trained"].all()
    w = pilot_window(pilot["nlc"], pilot["test_error"], seed=keys["seed"])
    # a pilot of 2 is far too small for a stable band: the window is the NLC paper's, and the log says why
    assert (w["lo"], w["hi"], w["source"]) == (1.0, 3.0, "paper")
    assert "NLC window [1, 3] from the pilot's 2 architectures (the NLC paper's, not the pilot's:" in log.getvalue()
    for _, row in arch[arch["index"] >= 2].iterrows():
        name = f"{int(row['index']):06d}-{row['arch_id']}"
        assert bool(row["trained"]) == inside((w["lo"], w["hi"]), nlcs[name]), name
    assert resume_study(out, progress=None).finished == 0
