"""study.execution.live: the progress record a running unit keeps in the study's storage (written by a background
thread, never failing the unit), read back by the driver and `archstudy status`, cleared with the unit."""

import json
import time

from archstudy.study.execution.live import UnitProgress, clear_all, clear_live, describe, read_live
from archstudy.study.execution.store import PROGRESS, Store
from archstudy.study.training.trainer import TrainingProgress


def test_a_record_goes_from_the_worker_to_the_readers_and_away(tmp_path):
    store = Store(str(tmp_path))
    with UnitProgress(store, "000001-00000000000000aa", attempt=2, every_s=0.0) as live:
        live.measured(1.5)
        live.epoch(TrainingProgress(3, 6, 2, 8, 4.0))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rec = read_live(store, ["000001-00000000000000aa", "000002-00000000000000bb"]).get(
                "000001-00000000000000aa", {}
            )
            if rec.get("epoch") == 3:
                break
            time.sleep(0.02)
    assert live.failures == 0
    rec = read_live(store, ["000001-00000000000000aa", "000002-00000000000000bb"])
    assert list(rec) == ["000001-00000000000000aa"]  # a unit with no record is left out
    r = rec["000001-00000000000000aa"]
    assert (r["stage"], r["epoch"], r["live_runs"], r["total_runs"], r["attempt"], r["measure_s"]) == (
        "training",
        3,
        6,
        8,
        2,
        1.5,
    )
    assert describe(r, now=r["updated_unix"] + 2).startswith("epoch 3, 6 of 8 runs live, ")
    assert describe(r, now=r["updated_unix"] + 2).endswith("updated 2s ago")
    clear_live(store, "000001-00000000000000aa")
    assert read_live(store, ["000001-00000000000000aa"]) == {}
    store.write_bytes([PROGRESS, "000003-00000000000000cc.json"], b"{}")
    assert clear_all(store) == ["000003-00000000000000cc"] and read_live(store, ["000003-00000000000000cc"]) == {}


def test_a_write_that_fails_never_reaches_the_unit(tmp_path):
    store = Store(str(tmp_path))

    def broken(*a, **k):
        raise OSError("disk full")

    store.write_bytes = broken
    with UnitProgress(store, "000001-00000000000000aa", every_s=0.0) as live:
        live.update(urgent=True, stage="training", epoch=1)
        deadline = time.monotonic() + 10
        while live.failures == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert live.failures >= 1


def test_an_unreadable_record_is_no_record(tmp_path):
    store = Store(str(tmp_path))
    store.write_bytes([PROGRESS, "000001-00000000000000aa.json"], b"{not json")
    store.write_bytes([PROGRESS, "000002-00000000000000bb.json"], json.dumps([1, 2]).encode())
    assert read_live(store, ["000001-00000000000000aa", "000002-00000000000000bb"]) == {}
