"""Synthetic study directories written exactly per docs/results.md (schema version 1), for the analysis
tests. The architectures are real draws of ``sampling`` (so spec columns, content ids and siblings are
what the runner writes); the measured values are synthetic, with a known relation to test error.

``tiny_study_dir`` is the study the report's end-to-end test renders. At integration it becomes a
tiny study run by the runner (``archstudy run`` on built-in data); only this fixture changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from sampling import SIBLING_AXES, sample_spec, siblings
from sampling.spec import canonical_json, content_hash

# NLC_tau(1) of the NLC paper, Table 1 line A (abs: |s| is as nonlinear as relu around a kink of +-1;
# linear: 1). The synthetic NLC compounds it over the hidden layers, as the paper finds (section 5).
NLC_TAU = {"relu": 1.211, "selu": 1.035, "tanh": 1.085, "sigmoid": 1.017, "even_tanh": 2.335,
           "gaussian": 1.577, "square": 1.414, "odd_square": 1.155, "abs": 1.2, "linear": 1.0}
DIMS = {"waveform-noise": (40, 3), "digits": (64, 10), "checkerboard": (2, 2)}
BUDGET = 20_000


def specs_of(n: int, study_seed: int, d_in: int, d_out: int, with_siblings: bool, preset="extended"):
    """[(index, variant, spec)] in the runner's order: each base draw, then its siblings."""
    out = []
    for i in range(n):
        spec = sample_spec(study_seed, i, d_in, d_out, preset, BUDGET)
        out.append((i, "base", spec))
        if with_siblings:
            out += [(i, axis, s) for axis in SIBLING_AXES for s in siblings(spec, axis, BUDGET)]
    return out


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
        "arch_id": spec.content_id, "index": index, "variant": variant, "dataset": dataset,
        "study_seed": study_seed, "seed": int(rng.integers(0, 2**31)),
        **spec.to_dict(),
        "num_params": spec.num_params, "activation_units": spec.activation_units, "flops": flops,
        "nlc": nlc, "nlc_jacobian_q": nlc * 0.7, "nlc_input_sd_q": 1.0, "nlc_output_sd_q": 1 / 0.7,
        "bias": bias, "output_q": bias * 0.3, "high_bias": bool(high),
        "ar": spec.activation_units / spec.num_params, "variability": float(nlc ** 1.5 * rng.lognormal(0, 0.5)),
        "gvcs": float(rng.lognormal(0, 1)), "grad_length": float(rng.lognormal(0, 1)),
        "nlc_tau": NLC_TAU[spec.activation], "linear_approx_error": NLC_TAU[spec.activation] - 1 + 1e-3,
        "c_out": float(rng.lognormal(0, 1)),
        "grad_norm": float(rng.lognormal(0, 1)), "snip": float(rng.lognormal(0, 1)),
        "synflow": float(rng.lognormal(0, 5)), "jacob_cov": float(rng.normal(-300, 30)),
        "nwot": float(rng.normal(200, 20) - 10 * np.log10(nlc)),
        "lar_diameter": np.nan, "error_perturbation": np.nan,
        "lr_min": lr_min, "lr": lr_min * 3.0 ** lr_index, "lr_index": lr_index, "epochs": int(rng.integers(20, 200)),
        "divisions": 10, "val_error": test + 0.01, "train_error": test * 0.5, "test_error": test,
        "nlc_after": float(nlc ** 0.7), "bias_after": float(bias * 0.01),
        "lr_edge": bool(lr_index < 5 or lr_index >= 35),
        "n_runs": 40, "n_diverged": int(rng.integers(0, 10)), "nonfinite_init": False, "all_diverged": False,
        "build_s": 0.1, "measure_s": 1.0, "train_s": train_s, "total_s": 1.1 + train_s,
        "package_version": "0.1.0", "host": "testhost", "device": "cpu",
        "finished_at": "2025-01-01T00:00:00+00:00", "attempt": 1,
    }


def run_rows(row: dict, rng: np.random.Generator) -> pd.DataFrame:
    """The 40 runs of an architecture: the selected one has the row's errors, the others are worse."""
    k = np.arange(40)
    gap = np.abs(k - row["lr_index"]) * 0.01
    diverged = k > 36
    test = np.where(diverged, np.nan, np.minimum(row["test_error"] + gap, 1.0))
    return pd.DataFrame({
        "arch_id": row["arch_id"], "index": row["index"], "variant": row["variant"], "lr_index": k,
        "lr": row["lr_min"] * 3.0 ** k, "epochs": 50, "divisions": 10,
        "val_error": test + 0.01, "train_error": test * 0.5, "test_error": test, "diverged": diverged,
        "wall_s": row["train_s"] / 40, "selected": k == row["lr_index"],
    })


# The study.yaml keys the synthetic studies record in each file as their science config (the runner records
# every science key of its study.yaml but ``architectures``).
SCIENCE = ("dataset", "seed", "preset", "param_budget", "protocol", "siblings")


def write_parquet(df: pd.DataFrame, path: Path, table: str, version: str | None = "1",
                  science: dict | None = None) -> None:
    t = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(t.schema.metadata or {})
    if version is not None:
        meta[b"archstudy.schema_version"] = version.encode()
    meta[b"archstudy.table"] = table.encode()
    if science is not None:
        meta[b"archstudy.science"] = canonical_json(science).encode()
        meta[b"archstudy.science_fingerprint"] = content_hash(canonical_json(science)).encode()
    t = t.replace_schema_metadata(meta)
    tmp = path.with_name("." + path.name + ".tmp")  # written whole, then renamed, as the runner does
    pq.write_table(t, tmp)
    tmp.rename(path)


def write_study(root: Path, *, n: int = 12, dataset: str = "waveform-noise", study_seed: int = 0,
                with_siblings: bool = False, finished=None, failed=(), in_progress=(),
                rows=None, version: str | None = "1") -> Path:
    """A study directory per docs/results.md.

    ``finished``: positions (in ``specs_of`` order) that have finished (default all but ``failed`` and
    ``in_progress``); ``failed``: positions with a failed/*.json; ``in_progress``: positions with a
    checkpoint. ``rows``: a function (index, variant, spec, rng) -> row dict replacing ``synthetic_row``."""
    root = Path(root)
    d_in, d_out = DIMS[dataset]
    items = specs_of(n, study_seed, d_in, d_out, with_siblings)
    for sub in ("architectures", "runs", "failed", "checkpoints"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    config = {
        "dataset": dataset, "seed": study_seed, "architectures": n, "preset": "extended", "param_budget": BUDGET,
        "protocol": "paper", "siblings": with_siblings, "package_version": "0.1.0",
        "created": "2025-01-01T00:00:00+00:00",
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
            science = {k: config[k] for k in SCIENCE}
            write_parquet(pd.DataFrame([row]), root / "architectures" / f"{name}.parquet", "architectures", version,
                          science)
            write_parquet(run_rows(row, rng), root / "runs" / f"{name}.parquet", "runs", version, science)
    return root


@pytest.fixture(scope="session")
def synth():
    """This module's helpers, for tests that write their own studies (a conftest is not importable by
    name under pytest's importlib mode)."""
    return SimpleNamespace(write_study=write_study, specs_of=specs_of, synthetic_row=synthetic_row,
                           write_parquet=write_parquet, run_rows=run_rows, BUDGET=BUDGET, SCIENCE=SCIENCE)


@pytest.fixture(scope="session")
def tiny_study_dir(tmp_path_factory) -> Path:
    """A small finished study with siblings, in the runner's layout (see the module docstring)."""
    return write_study(tmp_path_factory.mktemp("tiny") / "study", n=8, with_siblings=True)


# A real study, run by the runner on built-in data (embedded Ray, tiny budgets, siblings on so the paired
# effects and the granulated Kendall Psi have cells): what the report's end-to-end tests render.
REAL_STUDY = {
    "dataset": "waveform-noise", "architectures": 3, "param_budget": 2000, "seed": 5,
    "space": {**__import__("sampling").EXTENDED.to_dict(), "name": "extended-shallow", "depths": [3, 5]},
    "protocol": {"preset": "quick", "num_lrs": 3, "max_epochs": 2},
    "metrics": {"nlc_batches": 4, "gradient_batches": 2, "variability_grid": 8, "variability_planes": 1,
                "proxy_batch_size": 32},
    "siblings": ["weights", "param", "skip"], "max_retries": 1,
}


@pytest.fixture(scope="session")
def real_study_dir(tmp_path_factory) -> Path:
    import io

    from study.runner import run_study

    out = tmp_path_factory.mktemp("real") / "study"
    result = run_study(REAL_STUDY, out, progress=io.StringIO())
    assert result.complete, result
    return out
