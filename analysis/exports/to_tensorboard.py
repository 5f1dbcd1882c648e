"""The TensorBoard export: event files for the HParams dashboard and each architecture's curves, written with
TensorBoard's own summary API (no TensorFlow): ``hparams_config_pb`` / ``hparams_pb`` of the HParams plugin,
``scalar_pb`` and ``text_pb``, through its ``EventFileWriter``. ``tensorboard --logdir DEST`` opens it.

* ``DEST`` itself (the experiment): the HParams configuration, each design axis with its domain (an integer or real
  interval over the study's values, or the discrete values of a text or boolean axis) and the architecture's
  ``state`` (trained, pruned, failed), and the metrics: test, validation and training error and every measure at
  initialization (``init/<column>``); the study's notes and provenance as text.
* ``DEST/<index>-<arch_id>`` per architecture (a session of the HParams dashboard): its axes' values
  (``hparams_pb``), its errors and measures as scalars at step 0, the selected run's training curve
  (``curve/monitored_error``, ``curve/train_loss`` by epoch) and every rate's errors (``by_rate/val_error``,
  ``by_rate/test_error``, the step the rate's index). A failed architecture has its axes and no metric.

TensorBoard stores a scalar as float32 (7 significant digits); the exact values are in the other exports.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from archstudy.study.experiment.provenance import describe

from .source import ERRORS, FAILED, ExportSource, plain

STATE = "state"  # the hparam saying whether an architecture was trained, pruned at launch or failed


def _wall(value: Any) -> float:
    return float(value.timestamp()) if isinstance(value, pd.Timestamp) else time.time()


def _domain(values: pd.Series, extra: list[Any]) -> Any:
    from tensorboard.plugins.hparams import summary_v2 as hp

    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return hp.Discrete(sorted({str(plain(v)) for v in [*values.dropna().tolist(), *extra]}))
    numbers = np.array([*values.to_numpy(np.float64), *np.asarray(extra, np.float64)])
    numbers = numbers[np.isfinite(numbers)]
    lo, hi = (float(numbers.min()), float(numbers.max())) if len(numbers) else (0.0, 0.0)
    if pd.api.types.is_integer_dtype(values):
        return hp.IntInterval(int(lo), int(hi))
    return hp.RealInterval(lo, hi)


def hparam_value(value: Any) -> Any:
    """An axis value as the HParams plugin holds it: a number, or text (a boolean as "True"/"False", as the
    discrete domain lists it)."""
    v = plain(value)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else (None if v is None else str(v))


def experiment(source: ExportSource) -> Any:
    """The HParams configuration of the study (module docstring)."""
    from tensorboard.plugins.hparams import summary_v2 as hp

    extra = {a: [getattr(s, a) for s in source.failed_specs.values() if s is not None] for a in source.axes}
    hparams = [hp.HParam(a, _domain(source.architectures[a], extra[a])) for a in source.axes]
    hparams.append(hp.HParam(STATE, hp.Discrete(["trained", "pruned", FAILED])))
    metrics = [hp.Metric(e, display_name=e.replace("_", " ")) for e in ERRORS]
    metrics += [hp.Metric(f"init/{m}", display_name=f"{m} at initialization") for m in source.measures]
    return hp.hparams_config_pb(hparams=hparams, metrics=metrics, time_created_secs=time.time())


class _Events:
    """One run's event file (``EventFileWriter``), written event by event."""

    def __init__(self, logdir: Path) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.writer = EventFileWriter(str(logdir))

    def add(self, summary: Any, step: int = 0, wall: float | None = None) -> None:
        from tensorboard.compat.proto import event_pb2

        self.writer.add_event(event_pb2.Event(wall_time=wall or time.time(), step=step, summary=summary))

    def scalars(self, values: dict[str, Any], step: int, wall: float) -> None:
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb

        for tag, v in values.items():
            v = plain(v)
            if isinstance(v, (int, float)):
                self.add(scalar_pb(tag, float(v)), step, wall)

    def series(self, prefix: str, table: pd.DataFrame, columns: tuple[str, ...], step: str, wall: float) -> None:
        for col in columns:
            if col in table.columns:
                for s, v in zip(table[step], table[col]):
                    self.scalars({f"{prefix}/{col}": v}, int(s), wall)

    def close(self) -> None:
        self.writer.close()


def _session(events: _Events, name: str, values: dict[str, Any], state: str, wall: float) -> None:
    from tensorboard.plugins.hparams import summary_v2 as hp

    hparams = {k: hparam_value(v) for k, v in values.items()}
    hparams = {k: v for k, v in hparams.items() if v is not None}
    events.add(hp.hparams_pb({**hparams, STATE: state}, trial_id=name, start_time_secs=wall), 0, wall)


def _study_text(source: ExportSource) -> str:
    counts = ", ".join(f"{v:,} {k}" for k, v in source.counts().items())
    notes = [f"- {n.at}: {n.text}" + (f" [{', '.join(n.tags)}]" if n.tags else "") for n in source.notes]
    prov = [f"- {describe(r)} ({n:,} architectures)" for r, n in source.provenance]
    return "\n".join(
        [f"archstudy study {source.name} ({source.study}): {counts}.", "", "Notes:", *(notes or ["- none"])]
        + ["", "Computed with:", *(prov or ["- not recorded"])]
    )


def write(source: ExportSource, dest: Path, *, say: Callable[[str], None]) -> dict[str, int]:
    """Write the export into ``dest`` (module docstring); the counts of what it holds."""
    from tensorboard.plugins.text.summary_v2 import text_pb

    root = _Events(dest)
    root.add(experiment(source))
    root.add(text_pb("study", _study_text(source)))
    root.close()
    runs, curves = source.runs_by_unit(), source.curves_by_unit()
    empty = pd.DataFrame()
    rows = source.architectures.to_dict("records")
    for k, row in enumerate(rows, start=1):
        unit, wall = source.unit(row), _wall(row.get("finished_at"))
        events = _Events(dest / unit)
        _session(events, unit, {a: row.get(a) for a in source.axes}, source.state(row), wall)
        events.scalars({e: row.get(e) for e in ERRORS}, 0, wall)
        events.scalars({f"init/{m}": row.get(m) for m in source.measures}, 0, wall)
        mine, curve = runs.get(unit, empty), curves.get(unit, empty)
        selected = curve[curve["lr_index"] == row.get("lr_index")] if len(curve) else curve
        events.series("curve", selected, ("monitored_error", "train_loss"), "epoch", wall)
        events.series("by_rate", mine, ("val_error", "test_error"), "lr_index", wall)
        events.close()
        if k % 500 == 0 or k == len(rows):
            say(f"tensorboard: {k:,}/{len(rows):,} architectures")
    for failure in source.failed:
        name = f"{int(failure.get('index', -1)):06d}-{failure.get('arch_id')}"
        spec = source.failed_specs.get(str(failure.get("arch_id")))
        events = _Events(dest / name)
        _session(events, name, {a: getattr(spec, a) for a in source.axes} if spec else {}, FAILED, time.time())
        events.close()
    return {"sessions": len(rows) + len(source.failed)}
