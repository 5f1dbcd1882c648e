"""The MLflow export: ``DEST/mlflow.db``, an SQLite tracking store (MLflow's file store is in maintenance mode and
refuses new stores since MLflow 3.7; SQLite is its local store now), with the artifacts in ``DEST/artifacts``; the
MLflow UI opens it (``mlflow ui --backend-store-uri sqlite:///DEST/mlflow.db``) and ``mlflow.search_runs`` finds its
runs. Everything goes through ``mlflow.MlflowClient``.

One experiment, named after the study; its description (``mlflow.note.content``) says what the runs are and gives the
notes and the provenance. In it:

* the study's run (tag ``archstudy.kind = study``): the study's config (``study.yaml``) and notes as artifacts, its
  counts as metrics;
* one run per architecture, nested under it (``kind = architecture``, named by its unit ``<index>-<arch_id>``): its
  design axes as params, its errors, selected rate and measures at initialization as metrics, the selected run's
  training curve as the metric histories ``curve/monitored_error`` and ``curve/train_loss`` (step = epoch), and
  every rate's errors as ``by_rate/val_error`` and ``by_rate/test_error`` (step = the rate's index); a failed one has
  status FAILED and its reason, one pruned at launch its measures only;
* with ``rate_runs``, one run per learning rate nested under its architecture's (``kind = rate``): the rate, its
  errors and epochs, whether it diverged or was selected, and its own curve.

Every run is tagged with the commit that computed the rows (``mlflow.source.git.commit``) and the versions of the
provenance record that computed most of them (``archstudy.<library>``), besides its host and device.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from archstudy.study.experiment.notes import NOTES_NAME
from archstudy.study.experiment.provenance import KEYS, describe

from .sqlite_writes import unsynced
from .source import ERRORS, FAILED, PRUNED, SELECTED, ExportSource, plain

DB_NAME = "mlflow.db"
BATCH = 1000  # MLflow's limit of metrics per log_batch (params: 100)
PARAM_BATCH = 100
RUN_SHOWN = ("lr", "lr_index", "epochs", "divisions", *ERRORS)
CURVES = ("monitored_error", "train_loss")


def _ms(value: Any) -> int | None:
    if value is None or value is pd.NaT or not isinstance(value, pd.Timestamp):
        return None
    return int(value.timestamp() * 1000)


class _Writer:
    def __init__(self, source: ExportSource, dest: Path) -> None:
        import mlflow

        self.source, self.dest = source, dest
        self.client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{dest / DB_NAME}")
        self.record = source.main_record
        self.tags = {f"archstudy.{k}": str(self.record[k]) for k in KEYS if self.record.get(k) is not None}
        if self.record.get("commit"):
            self.tags["mlflow.source.git.commit"] = str(self.record["commit"])
        self.tags["mlflow.source.name"] = "archstudy"

    def log(self, run_id: str, metrics: list[Any], params: dict[str, Any] | None = None) -> None:
        """``metrics`` and ``params`` in as few ``log_batch`` calls as MLflow's limits allow (each is a transaction)."""
        from mlflow.entities import Param

        items = [Param(k, str(v)) for k, v in (params or {}).items() if v is not None]
        first = True
        while first or items or metrics:
            self.client.log_batch(run_id, metrics=metrics[:BATCH], params=items[:PARAM_BATCH])
            items, metrics, first = items[PARAM_BATCH:], metrics[BATCH:], False

    def metrics(self, values: dict[str, Any], at: int, step: int = 0) -> list[Any]:
        from mlflow.entities import Metric

        out = [(k, plain(v)) for k, v in values.items()]
        return [Metric(k, float(v), at, step) for k, v in out if isinstance(v, (int, float)) and not isinstance(v, str)]

    def history(self, prefix: str, table: pd.DataFrame, columns: tuple[str, ...], step: str, at: int) -> list[Any]:
        from mlflow.entities import Metric

        out = []
        for col in columns:
            if col not in table.columns:
                continue
            for s, v in zip(table[step], table[col]):
                v = plain(v)
                if v is not None:
                    out.append(Metric(f"{prefix}/{col}", float(v), at, int(s)))
        return out

    def experiment(self) -> tuple[str, str]:
        """The experiment and the study's run, with its artifacts (module docstring)."""
        s = self.source
        exp = self.client.create_experiment(
            s.name,
            artifact_location=(self.dest / "artifacts").as_uri(),
            tags={"mlflow.note.content": description(s), "archstudy.study": s.study},
        )
        run = self.client.create_run(exp, run_name=f"study {s.name}", tags={**self.tags, "archstudy.kind": "study"})
        rid = run.info.run_id
        counts = {f"count/{k}": v for k, v in s.counts().items()}
        self.log(rid, self.metrics(counts, _ms(pd.Timestamp.now(tz="UTC")) or 0), _config_params(s.config))
        with tempfile.TemporaryDirectory() as tmp:
            import yaml

            (Path(tmp) / "study.yaml").write_text(yaml.safe_dump(s.config, sort_keys=False))
            (Path(tmp) / NOTES_NAME).write_text("".join(n.line() for n in s.notes))
            self.client.log_artifact(rid, str(Path(tmp) / "study.yaml"))
            self.client.log_artifact(rid, str(Path(tmp) / NOTES_NAME))
        self.client.set_terminated(rid)
        return exp, rid

    def architecture(self, exp: str, parent: str, row: dict[str, Any], runs: pd.DataFrame, curves: pd.DataFrame) -> str:
        s = self.source
        unit, state = s.unit(row), s.state(row)
        end = _ms(row.get("finished_at"))
        total = plain(row.get("total_s"))
        start = end - int(1000 * total) if end is not None and total is not None else end
        tags = {
            **self.tags,
            "mlflow.parentRunId": parent,
            "archstudy.kind": "architecture",
            "archstudy.state": state,
            **{f"archstudy.{k}": str(plain(row.get(k))) for k in ("arch_id", "index", "variant", "host", "device")},
        }
        rid = str(self.client.create_run(exp, start_time=start, tags=tags, run_name=unit).info.run_id)
        at = end or 0
        values = {k: row.get(k) for k in (*ERRORS, *SELECTED, *s.measures)}
        metrics = self.metrics(values, at)
        selected = curves[curves["lr_index"] == row.get("lr_index")] if len(curves) else curves
        metrics += self.history("curve", selected, CURVES, "epoch", at)
        metrics += self.history("by_rate", runs, ("val_error", "test_error"), "lr_index", at)
        self.log(rid, metrics, {k: row.get(k) for k in s.axes})
        self.client.set_terminated(rid, end_time=end)
        return rid

    def rates(self, exp: str, parent: str, row: dict[str, Any], runs: pd.DataFrame, curves: pd.DataFrame) -> int:
        at = _ms(row.get("finished_at")) or 0
        for run in runs.to_dict("records"):
            k = int(run["lr_index"])
            tags = {**self.tags, "mlflow.parentRunId": parent, "archstudy.kind": "rate", "archstudy.lr_index": str(k)}
            name = f"{self.source.unit(row)} rate {k}"
            rid = self.client.create_run(exp, start_time=at, tags=tags, run_name=name).info.run_id
            flags = {"diverged": float(bool(run.get("diverged"))), "selected": float(bool(run.get("selected")))}
            metrics = self.metrics({**{c: run.get(c) for c in RUN_SHOWN}, **flags}, at)
            mine = curves[curves["lr_index"] == k] if len(curves) else curves
            self.log(
                rid, metrics + self.history("curve", mine, CURVES, "epoch", at), {"lr": run.get("lr"), "lr_index": k}
            )
            self.client.set_terminated(rid, end_time=at or None)
        return len(runs)

    def failure(self, exp: str, parent: str, failure: dict[str, Any]) -> None:
        spec = self.source.failed_specs.get(str(failure.get("arch_id")))
        tags = {
            **self.tags,
            "mlflow.parentRunId": parent,
            "archstudy.kind": "architecture",
            "archstudy.state": FAILED,
            "archstudy.reason": str(failure.get("reason", ""))[:5000],
            **{f"archstudy.{k}": str(failure.get(k)) for k in ("arch_id", "index", "variant")},
        }
        name = f"{int(failure.get('index', -1)):06d}-{failure.get('arch_id')}"
        rid = self.client.create_run(exp, tags=tags, run_name=name).info.run_id
        params = {k: getattr(spec, k) for k in self.source.axes} if spec is not None else {}
        self.log(rid, [], params)
        self.client.set_terminated(rid, status="FAILED")


def _config_params(config: dict[str, Any]) -> dict[str, Any]:
    """study.yaml's top-level keys as params (a mapping as JSON; MLflow keeps 6,000 characters of a param)."""
    return {
        k: (json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v))[:6000] for k, v in config.items()
    }


def description(source: ExportSource) -> str:
    """The experiment's description (Markdown): what its runs are, the counts, the notes, the provenance."""
    counts = ", ".join(f"{v:,} {k}" for k, v in source.counts().items())
    lines = [
        f"archstudy study {source.name} of {source.config.get('dataset', '?')} ({source.study}): {counts}.",
        "",
        "Runs: the study (tag archstudy.kind = study: study.yaml and the notes as artifacts); one per architecture "
        "(kind = architecture) nested under it: design axes as params, errors and measures at initialization as "
        "metrics, curve/* the selected run's training curve by epoch, by_rate/* every rate's errors by rate index; "
        "and one per learning rate (kind = rate) nested under its architecture's, where exported.",
    ]
    if source.notes:
        lines += ["", "Notes:"] + [
            f"- {n.at}: {n.text}" + (f" [{', '.join(n.tags)}]" if n.tags else "") for n in source.notes
        ]
    if source.provenance:
        lines += ["", "Computed with:"] + [f"- {describe(r)} ({n:,} architectures)" for r, n in source.provenance]
    return "\n".join(lines)


def write(source: ExportSource, dest: Path, *, say: Callable[[str], None], rate_runs: bool = True) -> dict[str, int]:
    """Write the export into ``dest`` (module docstring); the counts of what it holds."""
    with unsynced(dest / DB_NAME):
        return _write(_Writer(source, dest), source, say, rate_runs)


def _write(w: _Writer, source: ExportSource, say: Callable[[str], None], rate_runs: bool) -> dict[str, int]:
    exp, study_run = w.experiment()
    runs, curves = source.runs_by_unit(), source.curves_by_unit()
    empty = pd.DataFrame()
    rows = source.architectures.to_dict("records")
    n_rates = 0
    for k, row in enumerate(rows, start=1):
        unit = source.unit(row)
        mine, curve = runs.get(unit, empty), curves.get(unit, empty)
        rid = w.architecture(exp, study_run, row, mine, curve)
        if rate_runs and source.state(row) != PRUNED:
            n_rates += w.rates(exp, rid, row, mine, curve)
        if k % 100 == 0 or k == len(rows):
            say(f"mlflow: {k:,}/{len(rows):,} architectures ({n_rates:,} rate runs)")
    for failure in source.failed:
        w.failure(exp, study_run, failure)
    return {"architecture runs": len(rows) + len(source.failed), "rate runs": n_rates}
