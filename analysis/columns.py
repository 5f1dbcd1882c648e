"""The columns of a study's results (docs/results.md, schema version 1): their types, which of them
predict test error and on which scale, and the sampled axes of the architecture space.

Everything the analysis knows about the layout is declared here once; ``analysis.results`` types the
tables with it, ``analysis.stats`` and ``analysis.figures`` pick predictors and axes from it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sampling import ArchSpec, SPEC_FIELDS

SCHEMA_VERSION = "1"
SCHEMA_KEY = "archstudy.schema_version"
TABLE_KEY = "archstudy.table"
# The science config a file's rows were computed under (canonical JSON of study.yaml's science keys but
# ``architectures``) and its 16-hex-digit sha256 (study.store writes them).
SCIENCE_KEY = "archstudy.science"
SCIENCE_FINGERPRINT_KEY = "archstudy.science_fingerprint"

# pandas dtypes of the contract's columns. Integers and booleans become pandas' nullable kinds only
# where a value is missing (e.g. a column an older runner did not write); see ``results.typed``.
_PY_TO_DTYPE = {"int": "int64", "float": "float64", "str": "str", "bool": "bool"}
SPEC_DTYPES = {f.name: _PY_TO_DTYPE[str(f.type)] for f in fields(ArchSpec)}

ARCHITECTURE_DTYPES: dict[str, str] = {
    # identity
    "arch_id": "str", "index": "int64", "variant": "str", "dataset": "str", "study_seed": "int64", "seed": "int64",
    # spec (every ArchSpec field under its own name)
    **SPEC_DTYPES,
    # trivial baselines
    "num_params": "int64", "activation_units": "int64", "flops": "float64",
    # init metrics
    **{c: "float64" for c in ("nlc", "nlc_jacobian_q", "nlc_input_sd_q", "nlc_output_sd_q", "bias", "output_q")},
    "high_bias": "bool",
    **{c: "float64" for c in ("ar", "variability", "gvcs", "grad_length", "nlc_tau", "linear_approx_error", "c_out")},
    # zero-cost proxies and optional metrics
    **{c: "float64" for c in ("grad_norm", "snip", "synflow", "jacob_cov", "nwot", "lar_diameter",
                              "error_perturbation")},
    # the selected run
    "lr_min": "float64", "lr": "float64", "lr_index": "int64", "epochs": "int64", "divisions": "int64",
    **{c: "float64" for c in ("val_error", "train_error", "test_error", "nlc_after", "bias_after")},
    "lr_edge": "bool",
    # runs summary, health, timings, provenance
    "n_runs": "int64", "n_diverged": "int64", "nonfinite_init": "bool", "all_diverged": "bool",
    **{c: "float64" for c in ("build_s", "measure_s", "train_s", "total_s")},
    "package_version": "str", "host": "str", "device": "str", "finished_at": "datetime64[ns, UTC]",
    "attempt": "int64",
}

RUN_DTYPES: dict[str, str] = {
    "arch_id": "str", "index": "int64", "variant": "str", "lr_index": "int64", "lr": "float64",
    "epochs": "int64", "divisions": "int64", "val_error": "float64", "train_error": "float64",
    "test_error": "float64", "diverged": "bool", "wall_s": "float64", "selected": "bool",
}

# Without these a table cannot be analysed at all; every other column may be missing (it is then NaN).
ARCHITECTURE_REQUIRED = ("arch_id", "index", "test_error")
RUN_REQUIRED = ("arch_id", "lr_index")


@dataclass(frozen=True)
class Predictor:
    """A column that may predict test error.

    ``log``: correlate (Pearson) and plot on log10 scale. The NLC paper: "if any quantity is plotted in
    log-scale, the correlation is also using the log of that quantity" (section 4); it plots NLC, bias
    and learning rate on log axes. For the other columns the choice is ours and ``why`` says it.
    ``kind``: "metric" (init metrics of ``study.measure``), "proxy" (zero-cost proxies) or "baseline"
    (the trivial baselines every predictor must beat).
    """

    column: str
    label: str
    kind: str
    log: bool
    why: str


PREDICTORS: tuple[Predictor, ...] = (
    Predictor("nlc", "NLC", "metric", True, "NLC paper figure 2 (log axis)"),
    Predictor("bias", "output bias", "metric", True, "NLC paper figure 3A (log axis)"),
    Predictor("ar", "activation ratio AR", "metric", True,
              "a ratio of counts spanning orders of magnitude (Householder layers raise it by O(width))"),
    Predictor("variability", "variability V", "metric", True, "a geometric mean over planes: multiplicative"),
    Predictor("gvcs", "gradient vector component size", "metric", True,
              "a gradient magnitude: scales multiplicatively (NLC paper section 6)"),
    Predictor("grad_length", "gradient length", "metric", True, "a gradient magnitude (NLC paper section 6)"),
    Predictor("nlc_tau", "NLC_tau(1) of the activation", "metric", True,
              "per-layer NLC; the network's compounds multiplicatively (NLC paper Table 1)"),
    Predictor("linear_approx_error", "linear-approximation error", "metric", True,
              "spans 0.0024 to 2 over the activations (NLC paper Table 1 line E)"),
    Predictor("lar_diameter", "linearly approximable region diameter", "metric", True,
              "NLC paper figure 1 (log axis)"),
    Predictor("grad_norm", "grad_norm", "proxy", True, "a gradient magnitude"),
    Predictor("snip", "snip", "proxy", True, "a sum of |gradient x weight|: a magnitude"),
    Predictor("synflow", "synflow", "proxy", True, "a product of weight magnitudes: spans hundreds of decades"),
    Predictor("jacob_cov", "jacob_cov", "proxy", False, "already a sum of logs, and may be negative"),
    Predictor("nwot", "NWOT", "proxy", False, "already a log-determinant"),
    Predictor("num_params", "parameters", "baseline", True, "a count spanning orders of magnitude"),
    Predictor("depth", "depth", "baseline", False, "NLC paper figure 4 (linear axis)"),
    Predictor("width", "width", "baseline", True, "a count spanning orders of magnitude"),
    Predictor("flops", "FLOPs", "baseline", True, "a count spanning orders of magnitude"),
)
PREDICTOR_BY_COLUMN = {p.column: p for p in PREDICTORS}
BASELINES = tuple(p.column for p in PREDICTORS if p.kind == "baseline")

# Other columns plotted on log axes (NLC paper figures 3B, 3C, 8, 9).
# error_perturbation (E.3) is measured on the trained network: like nlc_after it is not a predictor at
# initialization, and the report shows it against the NLC (figure 3E) instead of ranking it.
LOG_COLUMNS = frozenset({p.column for p in PREDICTORS if p.log}
                        | {"nlc_after", "bias_after", "lr", "lr_min", "error_perturbation"})

# The sampled axes of the architecture space, for the granulated Kendall coefficient and the paired
# sibling effects. An axis is a group of spec fields that vary together: the skip axis holds where skips
# start, their strength, length and branch scale, which are all fixed when there are no skips. ``width``
# is no axis: it is solved from the others and the parameter budget, so siblings differ in it too.
AXES: dict[str, tuple[str, ...]] = {
    "depth": ("depth",),
    "activation": ("activation",),
    "dilation": ("dilation",),
    "shift": ("shift",),
    "debias": ("debias",),
    "norm": ("norm",),
    "skip": ("skip", "skip_strength", "skip_length", "branch_scale"),
    "weights": ("weights",),
    "param": ("param",),
    "bias_init": ("bias_init",),
    "init_scale": ("init_scale",),
}
assert all(f in SPEC_FIELDS for group in AXES.values() for f in group)

# Which variants of each sibling axis a paired effect compares, in the order "A vs B" (difference B - A).
SIBLING_LEVELS: dict[str, tuple[str, ...]] = {
    "weights": ("dense", "householder"),
    "param": ("sp", "gmp"),
    "norm": ("none", "batch", "layer"),
    "skip": ("none", "skips"),
}
