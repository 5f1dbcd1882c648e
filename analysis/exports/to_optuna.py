"""The Optuna export: ``DEST/optuna.db``, an SQLite RDB storage (``optuna.storages.RDBStorage``) with one study named
after the study, direction minimize, that optuna-dashboard opens (``optuna-dashboard sqlite:///DEST/optuna.db``).

Each architecture is a trial (``optuna.trial.create_trial``, added with ``Study.add_trials``):

* its design axes (``source.design_axes``) are its parameters, each with the distribution of that axis over the
  study: ``IntDistribution`` for an integer field, ``FloatDistribution`` for a real one (log where every value is
  positive and they span more than a decade), ``CategoricalDistribution`` of the values the study holds otherwise;
* a trained architecture is COMPLETE with its selected run's test error as the value; one pruned at launch is
  PRUNED; a failed one (its spec drawn again, ``source.failed_spec``) or a trained one without a finite test error
  is FAIL, its reason a user attribute;
* its measures at initialization, validation and training error, the selected run's rate and its identity (arch_id,
  index, variant, unit) are user attributes; its start and end are its timings (``finished_at``, ``total_s``).

The study's user attributes hold its config, notes and provenance; its note in optuna-dashboard (``save_note``)
says them in Markdown, and its objective is named "test error" (``Study.set_metric_names``).
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .sqlite_writes import unsynced
from .source import ERRORS, FAILED, PRUNED, SELECTED, ExportSource, plain

DB_NAME = "optuna.db"
CHUNK = 500  # trials per add_trials call (each one a commit per trial anyway): the progress line's step


def distributions(source: ExportSource) -> dict[str, Any]:
    """Each design axis's distribution over the study's values (module docstring)."""
    import optuna.distributions as d

    out: dict[str, Any] = {}
    arch = source.architectures
    for axis in source.axes:
        values = arch[axis].dropna()
        extra = [getattr(s, axis) for s in source.failed_specs.values() if s is not None]
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            choices = sorted({plain(v) for v in [*values.tolist(), *extra]}, key=str)
            out[axis] = d.CategoricalDistribution(choices)
            continue
        numbers = np.array([*values.to_numpy(np.float64), *np.asarray(extra, np.float64)])
        numbers = numbers[np.isfinite(numbers)]
        if not len(numbers):
            continue
        lo, hi = float(numbers.min()), float(numbers.max())
        log = lo > 0 and hi > 10 * lo
        if pd.api.types.is_integer_dtype(values):
            out[axis] = d.IntDistribution(int(lo), int(hi), log=log)
        else:
            out[axis] = d.FloatDistribution(lo, hi, log=log)
    return out


def _params(values: dict[str, Any], dists: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    params = {k: plain(values.get(k)) for k in dists}
    params = {k: v for k, v in params.items() if v is not None}
    return params, {k: dists[k] for k in params}


def _when(row: dict[str, Any]) -> tuple[dt.datetime | None, dt.datetime | None]:
    end = row.get("finished_at")
    if end is None or end is pd.NaT or not isinstance(end, (pd.Timestamp, dt.datetime)):
        return None, None
    # optuna keeps naive local times (``datetime.now()``): the UTC instant as this machine's local time
    end = pd.Timestamp(end).to_pydatetime().astimezone().replace(tzinfo=None)
    total = plain(row.get("total_s"))
    return (end - dt.timedelta(seconds=total) if total is not None else end), end


def trials(source: ExportSource) -> list[Any]:
    """A frozen trial per architecture, finished ones by index, then the failed (module docstring)."""
    import optuna
    from optuna.trial import TrialState

    dists = distributions(source)
    out = []
    keep = ("arch_id", "index", "variant", *ERRORS[1:], *SELECTED, *source.measures)
    for row in source.architectures.to_dict("records"):
        params, used = _params(row, dists)
        attrs = {k: plain(row.get(k)) for k in keep}
        attrs = {k: v for k, v in {**attrs, "unit": source.unit(row)}.items() if v is not None}
        value, state = plain(row.get("test_error")), TrialState.COMPLETE
        if source.state(row) == PRUNED:
            value, state = None, TrialState.PRUNED
            attrs["why"] = "pruned at launch: measured at initialization, not trained"
        elif value is None:
            state = TrialState.FAIL
            attrs["why"] = "no finite test error (every run diverged?)"
        start, end = _when(row)
        trial = optuna.trial.create_trial(state=state, value=value, params=params, distributions=used, user_attrs=attrs)
        trial.datetime_start, trial.datetime_complete = start or trial.datetime_start, end or trial.datetime_complete
        out.append(trial)
    for failure in source.failed:
        spec = source.failed_specs.get(str(failure.get("arch_id")))
        params, used = _params(spec.to_dict() if spec is not None else {}, dists)
        attrs = {k: plain(failure.get(k)) for k in ("arch_id", "index", "variant", "reason", "attempts")}
        attrs["why"] = f"{FAILED}: {failure.get('reason', '')}"
        attrs = {k: v for k, v in attrs.items() if v is not None}
        failed = optuna.trial.create_trial(state=TrialState.FAIL, params=params, distributions=used, user_attrs=attrs)
        out.append(failed)
    return out


def study_note(source: ExportSource) -> str:
    """The study's note in optuna-dashboard, Markdown: what the trials are, the counts, the notes, the provenance."""
    from archstudy.study.experiment.provenance import describe

    counts = ", ".join(f"{v:,} {k}" for k, v in source.counts().items())
    lines = [
        f"## {source.name}",
        "",
        f"An archstudy study of {source.config.get('dataset', '?')} ({source.study}): {counts}. Each trial is one "
        "architecture; its value is the test error of its selected run (lowest validation error over the learning "
        "rates); its parameters are the design axes; its user attributes the measures at initialization.",
        "",
    ]
    if source.notes:
        notes = [f"- {n.at}: {n.text}" + (f" [{', '.join(n.tags)}]" if n.tags else "") for n in source.notes]
        lines += ["### Notes", "", *notes, ""]
    if source.provenance:
        lines += ["### Computed with", ""] + [f"- {describe(r)} ({n:,} architectures)" for r, n in source.provenance]
    return "\n".join(lines)


def write(source: ExportSource, dest: Path, *, say: Callable[[str], None]) -> dict[str, int]:
    """Write the export into ``dest`` (module docstring); the counts of what it holds."""
    with unsynced(dest / DB_NAME):
        return _write(source, dest, say)


def _write(source: ExportSource, dest: Path, say: Callable[[str], None]) -> dict[str, int]:
    import optuna
    import optuna_dashboard

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(f"sqlite:///{dest / DB_NAME}")
    study = optuna.create_study(storage=storage, study_name=source.name, direction="minimize")
    study.set_user_attr("archstudy_study", source.study)
    study.set_user_attr("config", json.loads(json.dumps(source.config, default=str)))
    study.set_user_attr("notes", [n.to_dict() for n in source.notes])
    study.set_user_attr("provenance", [{"record": r, "architectures": n} for r, n in source.provenance])
    with warnings.catch_warnings():  # set_metric_names is marked experimental since optuna 3.2, and is kept
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["test error"])
    optuna_dashboard.save_note(study, study_note(source))
    made = trials(source)
    for lo in range(0, len(made), CHUNK):
        study.add_trials(made[lo : lo + CHUNK])
        say(f"optuna: {min(lo + CHUNK, len(made)):,}/{len(made):,} trials")
    return {"trials": len(made), **{k: v for k, v in source.counts().items() if k in ("trained", PRUNED, FAILED)}}
