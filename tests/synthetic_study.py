"""Synthetic study directories written exactly per docs/results.md (schema version 1), for the analysis
tests (``import synthetic_study as synth``; tests/analysis/conftest.py's ``tiny_study_dir`` is one). The
architectures are the study plan of ``sampling`` (so spec columns, content ids and siblings are what the
runner writes); the measured values are synthetic, with a known relation to test error.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from archstudy.sampling import BUDGET_AXES, plan_study
from archstudy.sampling.spec import canonical_json, content_hash
from archstudy.study.experiment.schema import RUNS, UNIT_TABLES_KEY
from archstudy.study.perf.synthetic_store import DIMS, NLC_TAU

# NLC_tau(1) per activation and each dataset's (d_in, d_out): the store writer's (`archstudy bench --store`).
BUDGET = 20_000


def specs_of(n: int, study_seed: int, d_in: int, d_out: int, with_siblings: bool, preset="extended"):
    """[(index, variant, spec)] in the runner's order (the study plan): each base draw, then its siblings."""
    axes = BUDGET_AXES if with_siblings else ()  # what its config's `siblings: true` names
    return [(p.index, p.variant, p.spec) for p in plan_study(study_seed, n, d_in, d_out, preset, BUDGET, axes)]


def synthetic_row(index: int, variant: str, spec, dataset: str, study_seed: int, rng: np.random.Generator) -> dict:
    """One architectures row: every column of docs/results.md, with test error a known function of the NLC
    (lowest near NLC 2, the paper's window [1, 3]) plus noise, and high output bias pushing it to chance."""
    d_out = spec.d_out
    chance = 1.0 - 1.0 / d_out
    nlc = NLC_TAU[spec.activation] ** (spec.depth - 1) * (0.5 if spec.skip != "none" else 1.0) * rng.lognormal(0, 0.2)
    bias = float(rng.lognormal(0.0, 3.0))
    high = bias > 1000
    good = np.exp(-((np.log10(nlc) - 0.3) ** 2) / 0.3)
    test = float(np.clip(chance - (chance - 0.05) * good + rng.normal(0, 0.02), 0, 1))
    if high:
        test = chance
    lr_index = int(np.clip(round(20 - 2 * np.log10(nlc) + rng.normal(0, 2)), 0, 39))
    lr_min = float(10 ** rng.uniform(-9, -7))
    train_s = float(spec.num_params * spec.depth / 1e5 * rng.uniform(0.5, 1.5))
    flops = 2.0 * spec.num_params
    return {
        "arch_id": spec.content_id,
        "index": index,
        "variant": variant,
        "dataset": dataset,
        "study_seed": study_seed,
        "seed": int(rng.integers(0, 2**31)),
        **spec.to_dict(),
        "num_params": spec.num_params,
        "activation_units": spec.activation_units,
        "flops": flops,
        "nlc": nlc,
        "nlc_jacobian_q": nlc * 0.7,
        "nlc_input_sd_q": 1.0,
        "nlc_output_sd_q": 1 / 0.7,
        "bias": bias,
        "output_q": bias * 0.3,
        "high_bias": bool(high),
        "ar": spec.activation_units / spec.num_params,
        "variability": float(nlc**1.5 * rng.lognormal(0, 0.5)),
        "gvcs": float(rng.lognormal(0, 1)),
        "grad_length": float(rng.lognormal(0, 1)),
        "nlc_tau": NLC_TAU[spec.activation],
        "linear_approx_error": NLC_TAU[spec.activation] - 1 + 1e-3,
        "c_out": float(rng.lognormal(0, 1)),
        "grad_norm": float(rng.lognormal(0, 1)),
        "snip": float(rng.lognormal(0, 1)),
        "synflow": float(rng.lognormal(0, 5)),
        "jacob_cov": float(rng.normal(-300, 30)),
        "nwot": float(rng.normal(200, 20) - 10 * np.log10(nlc)),
        "lar_diameter": np.nan,
        "error_perturbation": np.nan,
        "lr_min": lr_min,
        "lr": lr_min * 3.0**lr_index,
        "lr_index": lr_index,
        "epochs": int(rng.integers(20, 200)),
        "divisions": 10,
        "val_error": min(test + 0.01, 1.0),
        "train_error": test * 0.5,
        "test_error": test,
        "nlc_after": float(nlc**0.7),
        "bias_after": float(bias * 0.01),
        "lr_edge": bool(lr_index < 5 or lr_index >= 35),
        "n_runs": 40,
        "n_diverged": int(rng.integers(0, 10)),
        "nonfinite_init": False,
        "all_diverged": False,
        "build_s": 0.1,
        "measure_s": 1.0,
        "train_s": train_s,
        "total_s": 1.1 + train_s,
        "package_version": "0.1.0",
        "host": "testhost",
        "device": "cpu",
        "finished_at": "2025-01-01T00:00:00+00:00",
        "attempt": 1,
    }


def run_rows(row: dict, rng: np.random.Generator) -> pd.DataFrame:
    """The 40 runs of an architecture: the selected one has the row's errors, the others are worse."""
    k = np.arange(40)
    gap = np.abs(k - row["lr_index"]) * 0.01
    diverged = k > 36
    # a diverged run's errors are its best state's (the trainer rewinds it): finite, here at chance
    chance = 1.0 - 1.0 / row["d_out"]
    test = np.where(diverged & (k != row["lr_index"]), chance, np.minimum(row["test_error"] + gap, 1.0))
    return pd.DataFrame(
        {
            "arch_id": row["arch_id"],
            "index": row["index"],
            "variant": row["variant"],
            "lr_index": k,
            "lr": row["lr_min"] * 3.0**k,
            "epochs": 50,
            "divisions": 10,
            "val_error": np.minimum(test + 0.01, 1.0),
            "train_error": test * 0.5,
            "test_error": test,
            "diverged": diverged,
            "wall_s": row["train_s"] / 40,
            "selected": k == row["lr_index"],
        }
    )


# The study.yaml keys the synthetic studies record in each file as their science config (the runner records
# every science key of its study.yaml but ``architectures``; the analysis reads both as the same config).
SCIENCE = ("dataset", "seed", "preset", "param_budget", "protocol", "siblings")


def write_parquet(
    df: pd.DataFrame, path: Path, table: str, version: str | None = "1", science: dict | None = None
) -> None:
    t = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(t.schema.metadata or {})
    if version is not None:
        meta[b"archstudy.schema_version"] = version.encode()
    meta[b"archstudy.table"] = table.encode()
    if table == "architectures" and "trained" in df.columns:  # the tables its unit has: runs, or none (pruned)
        meta[UNIT_TABLES_KEY.encode()] = (RUNS if bool(df["trained"].iloc[0]) else "").encode()
    if science is not None:
        meta[b"archstudy.science"] = canonical_json(science).encode()
        meta[b"archstudy.science_fingerprint"] = content_hash(canonical_json(science)).encode()
    t = t.replace_schema_metadata(meta)
    tmp = path.with_name("." + path.name + ".tmp")  # written whole, then renamed, as the runner does
    pq.write_table(t, tmp)
    tmp.rename(path)


def write_study(
    root: Path,
    *,
    n: int = 12,
    dataset: str = "waveform-noise",
    study_seed: int = 0,
    with_siblings: bool = False,
    finished=None,
    failed=(),
    in_progress=(),
    rows=None,
    version: str | None = "1",
    record_science: bool = True,
    extra=None,
) -> Path:
    """A study directory per docs/results.md.

    ``finished``: positions (in ``specs_of`` order) that have finished (default all but ``failed`` and
    ``in_progress``); ``failed``: positions with a failed/*.json; ``in_progress``: positions with a
    checkpoint. ``rows``: a function (index, variant, spec, rng) -> row dict replacing ``synthetic_row``.
    ``extra``: more keys of study.yaml (recorded in the files' science record like the others)."""
    root = Path(root)
    d_in, d_out = DIMS[dataset]
    items = specs_of(n, study_seed, d_in, d_out, with_siblings)
    for sub in ("architectures", "runs", "failed", "checkpoints"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    config = {
        "dataset": dataset,
        "seed": study_seed,
        "architectures": n,
        "preset": "extended",
        "param_budget": BUDGET,
        "protocol": "paper",
        "siblings": with_siblings,
        "package_version": "0.1.0",
        "created": "2025-01-01T00:00:00+00:00",
        **(extra or {}),
    }
    (root / "study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rng = np.random.default_rng(study_seed + 1000)
    skip = set(failed) | set(in_progress)
    finished = [p for p in range(len(items)) if p not in skip] if finished is None else finished
    for pos, (index, variant, spec) in enumerate(items):
        name = f"{index:06d}-{spec.content_id}"
        if pos in failed:
            (root / "failed" / f"{name}.json").write_text(json.dumps({"reason": "worker lost", "attempts": 3}))
        elif pos in in_progress:
            (root / "checkpoints" / f"{name}.pt").write_bytes(b"\0")
        elif pos in finished:
            make = rows or (lambda i, v, s, r: synthetic_row(i, v, s, dataset, study_seed, r))
            row = make(index, variant, spec, rng)
            science = (
                {k: config[k] for k in SCIENCE + tuple(extra or ())} if record_science else None
            )  # None: as archstudy 0.1.0 wrote
            write_parquet(
                pd.DataFrame([row]), root / "architectures" / f"{name}.parquet", "architectures", version, science
            )
            if row.get("trained", True):  # a unit pruned at launch trained nothing: it has no runs file
                write_parquet(run_rows(row, rng), root / "runs" / f"{name}.parquet", "runs", version, science)
    return root


def window_population(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """A population whose test error is a window in the NLC, like a researcher's 120-architecture
    waveform-noise study (median test error 0.15 inside NLC [1, 3], 0.64 above 100, Kendall tau 0.45 of the
    raw NLC): log10 NLC uniform on [-1, 0] for a fifth of the architectures and on [0, 4] for the rest; the
    error flat at 0.13 inside [1, 3] and rising with the distance r (decades) outside it to 0.64, as
    0.13 + 0.51 (1 - exp(-r^2 / 0.3)), plus N(0, 0.025) noise, clipped to [0, 2/3]. Seed 0: medians 0.154
    inside and 0.635 above 100, tau 0.435."""
    rng = np.random.default_rng(seed)
    below = rng.random(n) < 0.2
    u = np.where(below, rng.uniform(-1.0, 0.0, n), rng.uniform(0.0, 4.0, n))
    half = np.log10(np.sqrt(3.0))  # [1, 3] is log10 sqrt(3) +- log10 sqrt(3)
    r = np.maximum(np.abs(u - half) - half, 0.0)
    err = 0.13 + 0.51 * (1 - np.exp(-(r**2) / 0.3)) + rng.normal(0, 0.025, n)
    return pd.DataFrame(
        {
            "nlc": 10**u,
            "test_error": np.clip(err, 0, 2 / 3),
            "dataset": "waveform-noise",
            "variant": "base",
            "arch_id": [f"{k:016x}" for k in range(n)],
            "index": np.arange(n),
        }
    )
