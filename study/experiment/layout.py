"""The folders of a study's storage (the layout in ``study.execution.store`` and docs/results.md), declared once for
the store that writes them and the readers that follow them (``analysis.results``, ``analysis.live_view``): one
folder per results table (``schema.TABLES``), then the units' failure records, trainer checkpoints and live
progress records. Every file in them is named by its unit (``sampling.unit_names``: ``<index>-<arch_id>``) and a
suffix, or is a pack of a table (``packs``)."""

from __future__ import annotations

from .schema import ARCHITECTURES, CURVES, RUNS

FAILED, CHECKPOINTS, PROGRESS = "failed", "checkpoints", "progress"
# Every folder of a study a driver (or a worker of it) writes or deletes.
FOLDERS = (ARCHITECTURES, RUNS, CURVES, FAILED, CHECKPOINTS, PROGRESS)
# The files one unit may have, by folder and suffix (``study.execution.store.Store.blocked``); its progress record,
# rewritten while it runs, is ``PROGRESS/<unit>.json`` (``study.execution.live``).
UNIT_FILES = (
    (ARCHITECTURES, ".parquet"),
    (RUNS, ".parquet"),
    (CURVES, ".parquet"),
    (FAILED, ".json"),
    (CHECKPOINTS, ".pt"),
)
# Folders of the units in flight: a unit's checkpoint and its progress record go when its result is committed.
IN_FLIGHT = (CHECKPOINTS, PROGRESS)

# The driver's record at the study's root (``study.execution.dispatch.Heartbeat``): who drives it, what is in flight,
# the counts and the progress line's ETA. It is rewritten at least every ``HEARTBEAT_S``; one older than ``STALE_S``
# means the driver is gone (object storage has no lock to ask), for ``archstudy status`` and ``serve`` alike.
DRIVER_STATE = "driver.json"
HEARTBEAT_S = 10.0
STALE_S = 6 * HEARTBEAT_S
