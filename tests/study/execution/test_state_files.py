"""study.execution.state.survey_files (``archstudy status``): the state ``survey`` finds from the whole plan, found
from the study's files with only the architectures it must sample: equal field by field on a study of every kind
of file (loose and packed), the spot check catching a name that is not the plan's, and the count of specs it
samples (no Ray: the files are written here through the store)."""

import time

import pytest

from archstudy.study.execution import state as state_module
from archstudy.study.execution.compaction import compact
from archstudy.study.execution.state import SPOT_CHECKS, survey, survey_files
from archstudy.study.execution.store import ARCHITECTURES, RUNS, Store, parquet_bytes, to_table
from archstudy.study.execution.unit import WorkUnit, work_units
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.perf.synthetic_store import write_synthetic_study

from .test_state import rows

CONFIG = StudyConfig(
    dataset="waveform-noise",
    architectures=20,
    param_budget=2000,
    seed=7,
    protocol="quick",
    d_in=40,
    d_out=3,
)
OTHER = StudyConfig.from_dict({**CONFIG.to_dict(), "protocol": "paper"})  # the same specs, another science config
UNITS = work_units(CONFIG)
FIELDS = (
    "total",
    "done",
    "finished",
    "pruned",
    "corrupt",
    "foreign",
    "failed",
    "remaining_count",
    "in_progress",
    "nodes",
    "extra",
    "other_config",
    "recorded",
    "checkpoints",
    "packed",
    "packs",
    "bad_packs",
    "driver",
    "driver_running",
)


def same_state(full, found):
    """``found`` (survey_files) says what ``full`` (survey) says; the remaining units it names are some of
    ``full``'s, in plan order, and it names the rest by count."""
    for name in FIELDS:
        assert getattr(found, name) == getattr(full, name), name
    assert found.to_dict() == full.to_dict()
    assert found.remaining == [n for n in full.remaining if n in set(found.remaining)]
    assert found.unnamed == len(full.remaining) - len(found.remaining) and full.unnamed == 0


def messy_study(root):
    """A study of every kind of file: finished (more than the spot checks), corrupt, foreign, failed, with a
    checkpoint, in flight, another config's result of a planned unit, a stale failure record at a planned index,
    strangers at a planned and an unplanned index, and units nothing names."""
    store = Store(root)
    store.write_config(CONFIG)
    for u in UNITS[:9]:
        store.write_result(u.name, *rows(u), science=CONFIG.science_json)
    corrupt, foreign, failed, checkpointed, flying, other = UNITS[9:15]
    store.write_result(corrupt.name, *rows(corrupt), science=CONFIG.science_json)
    store.write_bytes([ARCHITECTURES, f"{corrupt.name}.parquet"], b"PAR1 truncated")
    arch, runs = rows(foreign)
    table = to_table(ARCHITECTURES, [arch])
    table = table.replace_schema_metadata({**table.schema.metadata, b"archstudy.schema_version": b"9"})
    store.write_bytes([RUNS, f"{foreign.name}.parquet"], parquet_bytes(to_table(RUNS, runs)))
    store.write_bytes([ARCHITECTURES, f"{foreign.name}.parquet"], parquet_bytes(table))
    store.write_failure(failed.name, {"reason": "out of memory", "attempts": 3})
    store.write_bytes(list(store.checkpoint_parts(checkpointed.name)), b"trainer state")
    store.write_result(other.name, *rows(other), science=OTHER.science_json)
    stale = WorkUnit(UNITS[15].index, "base", UNITS[0].spec.replace(width=5), 1)  # a failure of no planned unit
    store.write_failure(stale.name, {"reason": "stale", "attempts": 1})
    stranger = WorkUnit(UNITS[16].index, "base", UNITS[0].spec.replace(width=3), 1)  # of another config's plan
    store.write_result(stranger.name, *rows(stranger), science=OTHER.science_json)
    outside = WorkUnit(99, "base", UNITS[0].spec, 1)  # an index the plan does not hold
    store.write_result(outside.name, *rows(outside), science=CONFIG.science_json)
    store.write_driver_state({"running": True, "heartbeat_unix": time.time(), "in_flight": [flying.name, failed.name]})
    return store


def test_status_survey_equals_the_survey_of_the_whole_plan_loose_packed_and_with_a_driver(tmp_path):
    store = messy_study(tmp_path / "study")
    full = survey(store)
    assert full.finished == [u.name for u in UNITS[:9]] and len(full.extra) == 2 and full.other_config
    assert full.corrupt and full.foreign and full.failed and full.checkpoints
    same_state(full, survey_files(store))
    with store.driver_lock():  # a running driver: its units in flight are in progress, one named by nothing else
        busy = survey(store)
        assert busy.in_progress == [UNITS[13].name, UNITS[11].name]
        same_state(busy, survey_files(store))
    with store.driver_lock():
        compact(store, CONFIG, per_pack=4)
    packed = survey(store)
    assert len(packed.packed) == 9 and len(packed.packs) == 3
    same_state(packed, survey_files(store))
    (tmp_path / "study" / RUNS / f"{packed.packs[1]}.parquet").unlink()  # a pack that is no longer whole
    broken = survey(store)
    assert broken.bad_packs and len(broken.corrupt) == 5
    same_state(broken, survey_files(store))


def test_a_result_of_this_config_that_is_not_the_plans_unit_is_caught_by_the_spot_check(tmp_path):
    """A spec the plan does not hold at its index, recorded under this study's config (the files of an older
    sampler, or renamed by hand): sampled as a spot check, so the whole plan is sampled and it is extra."""
    store = Store(tmp_path / "study")
    store.write_config(CONFIG)
    for u in UNITS[:3]:
        store.write_result(u.name, *rows(u), science=CONFIG.science_json)
    impostor = WorkUnit(UNITS[3].index, "base", UNITS[0].spec.replace(width=4), 1)
    store.write_result(impostor.name, *rows(impostor), science=CONFIG.science_json)
    full = survey(store)
    assert full.extra == [impostor.name] and len(full.finished) == 3
    found = survey_files(store)
    same_state(full, found)
    assert found.units == UNITS  # the whole plan, as survey samples it


def test_a_finished_study_samples_only_the_spot_checks(tmp_path, monkeypatch):
    """A packed synthetic study (study.perf.synthetic_store) of more architectures than the spot checks."""
    n = 3 * SPOT_CHECKS
    write_synthetic_study(str(tmp_path / "study"), n, num_lrs=2, curve_epochs=1, packed=True)
    store = Store(tmp_path / "study")
    sampled = []
    plan_study = state_module.plan_study
    monkeypatch.setattr(state_module, "plan_study", lambda *a, **k: sampled.append(k["start"]) or plan_study(*a, **k))
    found = survey_files(store)
    assert found.done and found.total == n and not found.units and not found.unnamed
    assert len(sampled) == SPOT_CHECKS and min(sampled) == 0 and max(sampled) == n - 1
    monkeypatch.undo()
    same_state(survey(store), found)


@pytest.mark.parametrize("change", [{"siblings": ["norm"]}, {"indices": [5, 3, 11, 0], "architectures": 3}])
def test_with_siblings_or_chosen_indices_it_equals_survey(tmp_path, change):
    config = StudyConfig.from_dict({**CONFIG.to_dict(), "architectures": 4, **change})
    units = work_units(config)
    store = Store(tmp_path / "study")
    store.write_config(config)
    for u in units[:2]:
        store.write_result(u.name, *rows(u), science=config.science_json)
    store.write_failure(units[-1].name, {"reason": "nan loss", "attempts": 2})
    full = survey(store)
    assert len(full.finished) == 2 and full.failed
    same_state(full, survey_files(store))
