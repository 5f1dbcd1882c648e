"""study.execution.state.survey: a study's files against its plan: finished, corrupt, foreign, failed, in progress,
left, extra files and checkpoints, read-only (no Ray: the files are written here through the store)."""

import time

from pyarrow._fs import _MockFileSystem

from schema_values import unit_rows

from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.experiment.schema import ARCHITECTURES, RUNS
from archstudy.study.execution.state import STALE_S, survey
from archstudy.study.execution.store import Store, parquet_bytes, to_table
from archstudy.study.execution.unit import WorkUnit, work_units

CONFIG = StudyConfig(
    dataset="waveform-noise",
    architectures=4,
    param_budget=2000,
    seed=7,
    siblings=["norm"],
    protocol="quick",
    d_in=40,
    d_out=3,
)
UNITS = work_units(CONFIG)
RUNS_PLANNED = Protocol.of("quick").num_lrs  # every trained unit has the protocol's runs


def rows(unit):
    """A valid architectures row and its runs rows of ``unit`` (every value within its column's declared values)."""
    arch, runs, _ = unit_rows(unit.spec, unit.index, unit.variant, runs=RUNS_PLANNED)
    return arch, runs


def test_survey_sorts_every_unit_of_the_plan_by_what_its_files_say(tmp_path):
    store = Store(tmp_path / "study")
    store.write_config(CONFIG)
    assert len(UNITS) > 6 and len({u.name for u in UNITS}) == len(UNITS)
    finished, corrupt, failed, foreign, checkpointed, flying = UNITS[:6]
    store.write_result(finished.name, *rows(finished))
    store.write_result(corrupt.name, *rows(corrupt))
    store.write_bytes([ARCHITECTURES, f"{corrupt.name}.parquet"], b"PAR1 truncated")
    store.write_failure(failed.name, {"reason": "out of memory", "attempts": 3})
    arch, runs = rows(foreign)
    other = to_table(ARCHITECTURES, [arch])
    other = other.replace_schema_metadata({**other.schema.metadata, b"archstudy.schema_version": b"9"})
    store.write_bytes([RUNS, f"{foreign.name}.parquet"], parquet_bytes(to_table(RUNS, runs)))
    store.write_bytes([ARCHITECTURES, f"{foreign.name}.parquet"], parquet_bytes(other))
    store.write_bytes(list(store.checkpoint_parts(checkpointed.name)), b"trainer state")
    stranger = WorkUnit(99, "base", UNITS[0].spec.replace(width=3), 1)  # a valid result of no unit of this plan
    store.write_result(stranger.name, *rows(stranger))

    files = lambda: {q: q.read_bytes() for q in sorted((tmp_path / "study").rglob("*")) if q.is_file()}  # noqa: E731
    before = files()
    state = survey(store)
    assert files() == before  # read-only
    assert state.total == len(UNITS) and not state.done
    assert state.finished == [finished.name]
    assert set(state.corrupt) == {corrupt.name} and state.corrupt[corrupt.name].startswith("architectures file: ")
    assert set(state.foreign) == {foreign.name} and "schema version '9'" in state.foreign[foreign.name]
    assert state.failed == {failed.name: {"reason": "out of memory", "attempts": 3}}
    assert state.checkpoints == [checkpointed.name]
    unfinished = [u.name for u in UNITS if u.name not in (finished.name, failed.name, foreign.name)]
    assert state.remaining == unfinished  # corrupt ones are redone, so they remain
    assert state.extra == [stranger.name]
    assert not state.driver_running and state.in_progress == []

    # A running driver (it holds the lock) with a unit in flight: that unit is in progress, not remaining.
    store.write_driver_state({"running": True, "heartbeat_unix": time.time(), "in_flight": [flying.name]})
    with store.driver_lock():
        busy = survey(store)
    assert busy.driver_running and busy.in_progress == [flying.name] and flying.name not in busy.remaining
    d = busy.to_dict()
    assert (d["total"], d["finished"], d["failed"], d["in_progress"]) == (len(UNITS), 1, 1, 1)
    assert d["remaining"] == len(UNITS) - 4 and d["failures"] == {failed.name: "out of memory"}


def test_on_object_storage_a_driver_is_running_while_its_heartbeat_is_fresh():
    """No lock there: driver.json's heartbeat decides (pyarrow's in-memory filesystem stands for S3)."""
    store = Store(filesystem=_MockFileSystem(), root="bucket/study")
    store.write_config(CONFIG)
    assert not store.local and store.driver_running() is None
    for age, running in ((1.0, True), (2 * STALE_S, False)):
        store.write_driver_state({"running": True, "heartbeat_unix": time.time() - age, "in_flight": [UNITS[1].name]})
        state = survey(store)
        assert state.driver_running is running and state.in_progress == ([UNITS[1].name] if running else [])


def test_the_heartbeat_records_the_progress_lines_eta_while_running(tmp_path):
    """``driver.json`` holds the forecast the command line prints (``eta_s``), which ``archstudy serve`` shows; a
    driver that stopped has none."""
    from types import SimpleNamespace

    from archstudy.study.execution.dispatch import Heartbeat
    from archstudy.study.execution.engine import Tally

    store = Store(str(tmp_path / "s"))
    result = SimpleNamespace(finished_before=0, finished=1, failed={}, total=4)
    seen = []
    beat = Heartbeat(store, None, result, eta=lambda t: seen.append(t) or 42.5)
    tally = Tally(total=4, done=1, running=2, in_flight=["a", "b"])
    beat(tally)
    state = store.read_driver_state()
    assert state["eta_s"] == 42.5 and state["running"] and seen == [tally]
    beat(None, running=False, stopped="finished")
    assert store.read_driver_state()["eta_s"] is None
