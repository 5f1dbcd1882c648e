"""The study driver's own cost per unit (``archstudy bench --driver N``): a study of N architectures run by the real
driver (``study.execution.driver``: plan, lock, Ray, the engine, one commit per unit, the heartbeat, the progress
line) whose workers train and measure nothing (``noop_unit``), so what is timed is the driver's bookkeeping, its
commits and Ray's round trips, not the science.

Measured in the driver's process (its CPU time covers every thread of the process, Ray's core worker included;
Ray's own daemons and the workers are other processes, not counted):

* ``plan_s`` / ``plan_cpu_s``: ``prepare_study`` (loading the data, sampling the N specs), once per command;
* ``run_s`` / ``run_cpu_s``: ``run_prepared`` whole (Ray started here, the lock, the N commits);
* at 10 %, 50 % and 100 % of the units committed: the wall and CPU seconds since the first commit and the
  resident memory of the process (``/proc/self/status`` VmRSS);
* ``cpu_ms_per_unit`` = (CPU at the last commit - CPU at the first) / (N - 1), the steady cost of one unit, with
  the same over the first and the second half of the units (``cpu_ms_per_unit_10_50``, ``_50_100``: a driver
  whose cost grows with finished units has a larger second half), and ``wall_ms_per_unit`` likewise;
* ``rss_growth_mb`` = RSS at 100 % - RSS at 10 %.

Every unit is a ``measure_only`` architecture whose row (``noop_row``) holds its identity and spec, NaN for every
measured column and ``trained`` false: a result of the schema (``store.to_table`` checks it on the worker), which
the driver commits as it commits any measured-only unit.
"""

from __future__ import annotations

import math
import os
import resource
import time
from typing import Any, Callable, Mapping

from ..execution.pruning import untrained_row
from ..execution.unit import WorkUnit, unit_tables
from ..experiment.config import StudyConfig, package_version, utc_now
from ..experiment.schema import ARCHITECTURES, MEASURED, NEVER, Column, Numbers, columns

MARKS = (0.1, 0.5, 1.0)  # the fractions of the units at which the driver's time and memory are read
_NOTHING = {"float64": math.nan, "int64": 0, "bool": False, "str": ""}


def _nothing(column: Column) -> Any:
    """A measured column's value in a row measured by nothing: NaN, or where its declaration allows no NaN (a
    column of the spec alone: FLOPs, AR, NLC_tau), its lowest allowed value, so that the row passes the value checks
    a real unit's does (``study.experiment.value_checks``)."""
    v = column.values
    if column.type == "float64" and isinstance(v, Numbers) and v.nan == NEVER:
        return float(v.lo) if math.isfinite(v.lo) else 0.0
    return _NOTHING[column.type]


def noop_row(unit: WorkUnit, config: StudyConfig, attempt: int) -> dict:
    """The ``architectures`` row of ``unit`` measured by nothing: identity, spec and counts, NaN for every measured
    column that may hold it (``_nothing``; ``nonfinite_init`` false: nothing was measured to be non-finite),
    ``trained`` false, zero timings."""
    declared = {c.name: c for c in columns(ARCHITECTURES)}
    spec = unit.spec
    return {
        "arch_id": unit.arch_id,
        "index": unit.index,
        "variant": unit.variant,
        "dataset": config.dataset,
        "study_seed": config.seed,
        "seed": unit.seed,
        **spec.to_dict(),
        "num_params": spec.num_params,
        "activation_units": spec.activation_units,
        "flops": _nothing(declared["flops"]),
        **{k: _nothing(declared[k]) for k in MEASURED},
        **untrained_row(),
        "nonfinite_init": False,
        "build_s": 0.0,
        "measure_s": 0.0,
        "total_s": 0.0,
        "package_version": package_version(),
        "host": "bench",
        "device": "none",
        "attempt": attempt,
        "finished_at": utc_now(),
    }


def noop_unit(payload: Mapping[str, Any], attempt: int) -> dict:
    """What a worker runs per unit in the bench, in place of ``study.execution.unit.execute_unit``: the unit's
    ``noop_row`` as a real unit returns its rows (``unit_tables``: checked against the schema), no runs, no
    curves."""
    unit = WorkUnit.from_dict(payload["unit"])
    return {**unit_tables(noop_row(unit, StudyConfig.from_dict(payload["config"]), attempt), [], []), "notes": []}


def bench_config(n: int, *, seed: int = 0, dataset: str = "waveform-noise") -> dict:
    """The study.yaml of the bench: ``n`` architectures measured only, the quick protocol, the default space."""
    return {"dataset": dataset, "architectures": n, "seed": seed, "measure_only": True, "protocol": "quick"}


def rss_mb() -> float:
    """The resident memory of this process now, MB (VmRSS; the peak, ``ru_maxrss``, where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def driver_overhead(
    n: int,
    out: str,
    *,
    max_in_flight: int | None = None,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> dict:
    """Run the bench study of ``n`` units into the new directory ``out`` through ``prepare_study`` and ``run_prepared``
    with ``noop_unit`` (the module docstring says what is measured); return the measurements."""
    from ..execution.driver import prepare_study, run_prepared

    marks = sorted({max(1, math.ceil(f * n)) for f in MARKS} | {1, n})
    seen: dict[int, tuple[float, float, float]] = {}  # committed -> (wall, CPU, RSS MB)

    def on_commit(done: int) -> None:
        if done in marks:
            seen[done] = (time.perf_counter(), time.process_time(), rss_mb())

    load_before = load_average()
    t0, c0 = time.perf_counter(), time.process_time()
    plan = prepare_study(bench_config(n, seed=seed), out, max_in_flight=max_in_flight, say=say)
    t1, c1 = time.perf_counter(), time.process_time()
    say(f"planned {n:,} units in {t1 - t0:.1f} s ({c1 - c0:.1f} s CPU); running them with a no-op unit")
    rss_start = rss_mb()
    with open(os.devnull, "w") as log:  # the progress line as in a log (its cost counted, its text dropped)
        summary = run_prepared(plan, progress=log, work=noop_unit, on_commit=on_commit)
    t2, c2 = time.perf_counter(), time.process_time()
    if summary.finished != n or summary.failed:
        raise RuntimeError(f"the bench study committed {summary.finished} of {n} units ({len(summary.failed)} failed)")
    first, last = seen[1], seen[n]

    def per_unit(a: int, b: int, k: int) -> float:
        return (seen[b][k] - seen[a][k]) / (b - a) * 1000 if b > a else math.nan

    m10, m50 = (max(1, math.ceil(f * n)) for f in MARKS[:2])
    row = {
        "units": n,
        "plan_s": t1 - t0,
        "plan_cpu_s": c1 - c0,
        "run_s": t2 - t1,
        "run_cpu_s": c2 - c1,
        "cpu_ms_per_unit": per_unit(1, n, 1),
        "cpu_ms_per_unit_10_50": per_unit(m10, m50, 1),
        "cpu_ms_per_unit_50_100": per_unit(m50, n, 1),
        "wall_ms_per_unit": per_unit(1, n, 0),
        "wall_ms_per_unit_10_50": per_unit(m10, m50, 0),
        "wall_ms_per_unit_50_100": per_unit(m50, n, 0),
        "rss_mb_start": rss_start,
        **{f"rss_mb_{round(f * 100)}": seen[max(1, math.ceil(f * n))][2] for f in MARKS},
        "rss_growth_mb": last[2] - seen[m10][2],
        "first_commit_s": first[0] - t1,
        "load_average": [load_before, load_average()],
    }
    return row


def describe(row: Mapping[str, Any]) -> str:
    """The bench's result in a few lines."""
    load = ", ".join("?" if v is None else f"{v:.1f}" for v in row["load_average"])
    return (
        f"{row['units']:,} units: driver CPU {row['cpu_ms_per_unit']:.2f} ms per unit (10-50 %: "
        f"{row['cpu_ms_per_unit_10_50']:.2f}, 50-100 %: {row['cpu_ms_per_unit_50_100']:.2f}), wall "
        f"{row['wall_ms_per_unit']:.2f} ms per unit (10-50 %: {row['wall_ms_per_unit_10_50']:.2f}, 50-100 %: "
        f"{row['wall_ms_per_unit_50_100']:.2f})\n"
        f"driver RSS {row['rss_mb_start']:.0f} MB before the run, {row['rss_mb_10']:.0f} / {row['rss_mb_50']:.0f} / "
        f"{row['rss_mb_100']:.0f} MB at 10 / 50 / 100 % of the units (growth {row['rss_growth_mb']:+.1f} MB)\n"
        f"planning {row['plan_s']:.1f} s ({row['plan_cpu_s']:.1f} s CPU); the run {row['run_s']:.1f} s "
        f"({row['run_cpu_s']:.1f} s CPU), the first commit {row['first_commit_s']:.1f} s after it began (Ray's "
        f"start); load average {load} (before, after)"
    )
