"""A synthetic study of N architectures written through the store's own write path, in seconds per thousand:
for benchmarks of the store, ``archstudy status``, ``top``, ``load_results`` and the report at scale
(``archstudy bench --store N --out DIR``), and for tests.

The architectures are the study's plan (``study.execution.unit.work_units``: the spec columns, content ids
and file names are the driver's); the measured values are synthetic, drawn with numpy for all N at once, with
the value kinds of a real study: the NLC compounds the activation's NLC_tau(1) over the hidden layers
(Philipp and Carbonell, *The Nonlinearity Coefficient*, Table 1 and section 5) times log-normal noise, and test
error is lowest near NLC 2 (the paper's window [1, 3]): error = chance - (chance - 0.05) exp(-(log10 NLC -
0.3)^2 / 0.3) + N(0, 0.02), clipped to [0, 1], chance = 1 - 1/d_out; an output bias above 1000 (high bias)
gives chance. Every architecture has ``num_lrs`` runs (the protocol's, 40 in the paper), the run at
``lr_index`` selected, and ``curve_epochs + 1`` curve rows per run (epochs 0..curve_epochs).

The three tables are built once for the whole study (one Arrow table each); each unit's rows are then zero-copy
slices committed by ``Store.write_tables``, exactly as the driver commits a finished unit (runs, curves, then the
architectures file, each whole or not at all, with the science config in its metadata). ``packed=True`` writes
the same rows as packs instead (``study.execution.compaction.write_pack``), as ``archstudy compact`` leaves
them. ``time_store`` times the store's readers on such a study.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..execution.store import ARCHITECTURES, CURVES, RUNS, SCHEMAS, Store
from ..experiment import provenance
from ..execution.unit import work_units
from ..experiment.config import StudyConfig

# NLC_tau(1) of the activations (Philipp and Carbonell, *The Nonlinearity Coefficient*, Table 1 line A; abs and
# linear by their kink: |s| as nonlinear as relu around +-1, a linear map 1).
NLC_TAU = {
    "relu": 1.211,
    "selu": 1.035,
    "tanh": 1.085,
    "sigmoid": 1.017,
    "even_tanh": 2.335,
    "gaussian": 1.577,
    "square": 1.414,
    "odd_square": 1.155,
    "abs": 1.2,
    "linear": 1.0,
}
DIMS = {"waveform-noise": (40, 3), "digits": (64, 10), "checkerboard": (2, 2)}
CURVE_EPOCHS = 5  # curve points per run besides epoch 0 (a real run has one per epoch it trained)
FINISHED_AT = dt.datetime(2026, 1, 31, 12, 0, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class SyntheticStudy:
    """What ``write_synthetic_study`` wrote: the study, its units and rows, and the seconds spent planning
    (sampling the specs) and writing."""

    location: str
    units: int
    runs: int
    curves: int
    plan_s: float
    write_s: float
    write_cpu_s: float = 0.0  # CPU seconds of the writing (wall clock on a loaded machine is mostly waiting)


def synthetic_config(n: int, *, seed: int = 0, dataset: str = "waveform-noise", num_lrs: int = 40) -> StudyConfig:
    """The study.yaml of a synthetic study: ``n`` architectures of the extended space on ``dataset``'s sizes."""
    d_in, d_out = DIMS[dataset]
    return StudyConfig.from_dict(
        {
            "dataset": dataset,
            "architectures": n,
            "seed": seed,
            "d_in": d_in,
            "d_out": d_out,
            "protocol": {"preset": "paper", "num_lrs": num_lrs},
        }
    )


def _tables(config: StudyConfig, units: list, curve_epochs: int, rng: np.random.Generator) -> dict[str, pa.Table]:
    """The architectures, runs and curves tables of ``units``, every column of the schema, drawn at once."""
    n = len(units)
    specs = [u.spec.to_dict() for u in units]
    arch: dict[str, Any] = {
        "arch_id": [u.arch_id for u in units],
        "index": np.array([u.index for u in units], dtype=np.int64),
        "variant": [u.variant for u in units],
        "dataset": [config.dataset] * n,
        "study_seed": np.full(n, config.seed, dtype=np.int64),
        "seed": np.array([u.seed for u in units], dtype=np.int64),
    }
    for key in specs[0] if specs else ():
        arch[key] = [s[key] for s in specs]
    params = np.array([u.spec.num_params for u in units], dtype=np.int64)
    act_units = np.array([u.spec.activation_units for u in units], dtype=np.int64)
    depth = np.array(arch.get("depth", []), dtype=np.float64)
    tau = np.array([NLC_TAU.get(a, 1.1) for a in arch.get("activation", [])], dtype=np.float64)
    d_out = np.array(arch.get("d_out", []), dtype=np.float64)
    chance = 1.0 - 1.0 / d_out
    nlc = tau ** (depth - 1) * rng.lognormal(0, 0.2, n)
    bias = rng.lognormal(0.0, 3.0, n)
    high = bias > 1000
    good = np.exp(-((np.log10(nlc) - 0.3) ** 2) / 0.3)
    test = np.where(high, chance, np.clip(chance - (chance - 0.05) * good + rng.normal(0, 0.02, n), 0, 1))
    num_lrs = int(config.protocol["num_lrs"])
    lr_index = np.clip(np.round(num_lrs / 2 - 2 * np.log10(nlc) + rng.normal(0, 2, n)), 0, num_lrs - 1).astype(np.int64)
    lr_min = 10 ** rng.uniform(-9, -7, n)
    train_s = params * depth / 1e5 * rng.uniform(0.5, 1.5, n)
    edge = int(config.protocol["edge_runs"])
    arch.update(
        num_params=params,
        activation_units=act_units,
        flops=2.0 * params,
        nlc=nlc,
        nlc_jacobian_q=nlc * 0.7,
        nlc_input_sd_q=np.ones(n),
        nlc_output_sd_q=np.full(n, 1 / 0.7),
        bias=bias,
        output_q=bias * 0.3,
        high_bias=high,
        ar=act_units / params,
        variability=nlc**1.5 * rng.lognormal(0, 0.5, n),
        gvcs=rng.lognormal(0, 1, n),
        grad_length=rng.lognormal(0, 1, n),
        nlc_tau=tau,
        linear_approx_error=tau - 1 + 1e-3,
        c_out=rng.lognormal(0, 1, n),
        grad_norm=rng.lognormal(0, 1, n),
        snip=rng.lognormal(0, 1, n),
        synflow=rng.lognormal(0, 5, n),
        jacob_cov=rng.normal(-300, 30, n),
        nwot=rng.normal(200, 20, n) - 10 * np.log10(nlc),
        lar_diameter=np.full(n, np.nan),
        error_perturbation=np.full(n, np.nan),
        lr_min=lr_min,
        lr=lr_min * 3.0**lr_index,
        lr_index=lr_index,
        epochs=np.full(n, curve_epochs, dtype=np.int64),
        divisions=np.full(n, int(config.protocol["divisions"]), dtype=np.int64),
        val_error=np.minimum(test + 0.01, 1.0),
        train_error=test * 0.5,
        test_error=test,
        nlc_after=nlc**0.7,
        bias_after=bias * 0.01,
        lr_edge=(lr_index < edge) | (lr_index >= num_lrs - edge),
        selected_by=[config.protocol["monitor"]] * n,
        n_runs=np.full(n, num_lrs, dtype=np.int64),
        inits=np.ones(n, dtype=np.int64),
        test_error_mean=test,
        test_error_sd=np.full(n, np.nan),
        n_diverged=np.zeros(n, dtype=np.int64),  # counted from the runs below
        trained=np.ones(n, dtype=bool),
        nonfinite_init=np.zeros(n, dtype=bool),
        all_diverged=np.zeros(n, dtype=bool),
        build_s=np.full(n, 0.1),
        measure_s=np.full(n, 1.0),
        train_s=train_s,
        total_s=1.1 + train_s,
        package_version=["synthetic"] * n,
        host=["synthetic"] * n,
        device=["cpu"] * n,
        finished_at=pa.array([FINISHED_AT] * n, SCHEMAS[ARCHITECTURES].field("finished_at").type),
        attempt=np.ones(n, dtype=np.int64),
    )
    arch_table = pa.table({f.name: arch[f.name] for f in SCHEMAS[ARCHITECTURES]}, schema=SCHEMAS[ARCHITECTURES])

    # runs: num_lrs per architecture; the selected one has the row's errors, the others are worse
    unit = np.repeat(np.arange(n), num_lrs)
    k = np.tile(np.arange(num_lrs, dtype=np.int64), n)
    diverged = (k >= num_lrs - 3) & (k > lr_index[unit])  # the highest rates diverge, never the selected run's
    # a diverged run's errors are its best state's, at most chance (the trainer rewinds it; errors stay finite)
    run_test = np.where(diverged, chance[unit], np.minimum(test[unit] + np.abs(k - lr_index[unit]) * 0.01, 1.0))
    ids = arch_table.column("arch_id").combine_chunks()
    variants = arch_table.column("variant").combine_chunks()
    take = pa.array(unit)
    runs = {
        "arch_id": ids.take(take),
        "index": arch["index"][unit],
        "variant": variants.take(take),
        "init_index": np.zeros(n * num_lrs, dtype=np.int64),
        "lr_index": k,
        "lr": lr_min[unit] * 3.0**k,
        "epochs": np.full(n * num_lrs, curve_epochs, dtype=np.int64),
        "divisions": arch["divisions"][unit],
        "val_error": np.minimum(run_test + 0.01, 1.0),
        "train_error": run_test * 0.5,
        "test_error": run_test,
        "diverged": diverged,
        "wall_s": train_s[unit] / num_lrs,
        "selected": k == lr_index[unit],
    }
    runs_table = pa.table(runs, schema=SCHEMAS[RUNS])
    counts = np.bincount(unit, weights=diverged, minlength=n).astype(np.int64)
    arch_table = arch_table.set_column(
        arch_table.schema.get_field_index("n_diverged"), "n_diverged", pa.array(counts, pa.int64())
    )

    # curves: epochs 0..curve_epochs of every run, the monitored error falling to the run's validation error
    per = curve_epochs + 1
    run = np.repeat(np.arange(n * num_lrs), per)
    epoch = np.tile(np.arange(per, dtype=np.int64), n * num_lrs)
    final = np.minimum(run_test[run] + 0.01, 1.0)
    start = chance[unit][run]
    frac = epoch / max(curve_epochs, 1)
    curves = {
        "arch_id": ids.take(pa.array(unit[run])),
        "index": arch["index"][unit][run],
        "variant": variants.take(pa.array(unit[run])),
        "lr_index": k[run],
        "epoch": epoch,
        "lr": runs["lr"][run],
        "train_loss": np.where(epoch == 0, np.nan, np.log(d_out[unit][run]) * (1 - 0.8 * frac)),
        "monitored_error": start + (final - start) * frac,
        "monitored": pa.array([config.protocol["monitor"]]).take(pa.array(np.zeros(len(run), dtype=np.int64))),
        "nlc": np.where(epoch == 0, nlc[unit][run], np.nan),
    }
    return {ARCHITECTURES: arch_table, RUNS: runs_table, CURVES: pa.table(curves, schema=SCHEMAS[CURVES])}


def write_synthetic_study(
    location: str,
    n: int,
    *,
    seed: int = 0,
    dataset: str = "waveform-noise",
    num_lrs: int = 40,
    curve_epochs: int = CURVE_EPOCHS,
    packed: bool = False,
    say: Callable[[str], None] | None = None,
) -> SyntheticStudy:
    """Write a finished synthetic study of ``n`` architectures at ``location`` (a new or empty directory, or an
    object-storage URI) through ``Store.write_tables`` (module docstring); ``packed``: as packs."""
    store = Store(location)
    config = synthetic_config(n, seed=seed, dataset=dataset, num_lrs=num_lrs)
    t0 = time.perf_counter()
    units = work_units(config)
    plan_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    rng = np.random.default_rng([seed, 20261127])
    science = config.science_json
    record = provenance.current(device="synthetic")  # this install wrote the rows: no device computed them
    store.write_config(config)
    chunk = 2000  # units whose tables are built at once (bounded memory at any n)
    rows = {RUNS: 0, CURVES: 0}
    pending: list[dict[str, pa.Table]] = []  # packed: the chunks of the next pack
    for lo in range(0, len(units), chunk):
        part = units[lo : lo + chunk]
        tables = _tables(config, part, curve_epochs, rng)
        rows[RUNS] += tables[RUNS].num_rows
        rows[CURVES] += tables[CURVES].num_rows
        if packed:
            from ..execution.compaction import PACK_UNITS, write_pack

            pending.append(tables)
            if sum(t[ARCHITECTURES].num_rows for t in pending) >= PACK_UNITS or lo + chunk >= len(units):
                joined = {k: pa.concat_tables([t[k] for t in pending]) for k in (ARCHITECTURES, RUNS, CURVES)}
                units_in = joined[ARCHITECTURES].num_rows
                write_pack(store, joined, science, provenance=provenance.record_json([(record, units_in)]))
                pending = []
        else:
            per_run, per_curve = num_lrs, num_lrs * (curve_epochs + 1)
            for i, u in enumerate(part):
                store.write_tables(
                    u.name,
                    tables[ARCHITECTURES].slice(i, 1),
                    {
                        RUNS: tables[RUNS].slice(i * per_run, per_run),
                        CURVES: tables[CURVES].slice(i * per_curve, per_curve),
                    },
                    science=science,
                    provenance=provenance.record_json([(record, 1)]),
                )
        if say is not None:
            say(f"{min(lo + chunk, len(units)):,}/{len(units):,} architectures written")
    return SyntheticStudy(
        store.location,
        len(units),
        rows[RUNS],
        rows[CURVES],
        plan_s,
        time.perf_counter() - t0,
        time.process_time() - c0,
    )
