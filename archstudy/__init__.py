"""archstudy's public API: large-scale random-architecture studies of fully-connected networks.

The public Python API in one namespace (names load on first use, so ``import archstudy`` loads neither torch
nor Ray)::

    import archstudy
    spec = archstudy.sample_spec(study_seed=0, index=7, d_in=40, d_out=3)
    run = archstudy.run_study({"dataset": "waveform-noise", "architectures": 8, ...}, "studies/x")
    results = archstudy.load_results("studies/x")

The three packages are ``archstudy.sampling`` (what to study: the architecture space and its sampler; never
imports torch), ``archstudy.study`` (doing it: networks, metrics, the trainer, the run machinery, the command
line and the reproductions) and ``archstudy.analysis`` (what was learned: results, statistics, the report; reads
Parquet and never imports torch). docs/layout.md gives the layers and the one direction they import in.
"""

from __future__ import annotations

import importlib
import os

# In a source tree (``PYTHONPATH=.``, no install) the packages sit beside this folder; installed, they sit inside
# it (pyproject.toml maps ``archstudy.sampling`` to ``sampling/`` and so on).
_here = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_here, "study")):
    __path__.append(os.path.dirname(_here))  # noqa: F821 (a package's __path__)

_EXPORTS = {
    # sampling: what to study
    "ArchSpec": "sampling",
    "PRESETS": "sampling",
    "Space": "sampling",
    "SpecError": "sampling",
    "UserError": "sampling",
    "get_space": "sampling",
    "plan_study": "sampling",
    "sample_spec": "sampling",
    "sample_specs": "sampling",
    "siblings": "sampling",
    # study: doing it
    "DATASETS": "study",
    "MetricOptions": "study",
    "Protocol": "study",
    "PROTOCOLS": "study",
    "StudyConfig": "study",
    "build_network": "study",
    "linear_approx_error": "study",
    "load_dataset": "study",
    "measure": "study",
    "measure_trained": "study",
    "nlc_tau": "study",
    "resume_study": "study",
    "run_study": "study",
    "train_architecture": "study",
    "add_note": "study.execution.study_notes",
    "activation_ratio": "study.metrics",
    "nlc": "study.metrics",
    "output_bias": "study.metrics",
    "variability": "study.metrics",
    # analysis: what was learned
    "correlations": "analysis",
    "edf": "analysis",
    "export_study": "analysis.exports",
    "good_ranges": "analysis",
    "load_results": "analysis",
    "lookup": "analysis.lookup",
    "nlc_good_range": "analysis",
    "paired_effects": "analysis",
    "read_curves": "analysis",
    "range_predictors": "analysis",
    "write_report": "analysis",
    "fit_predictor": "analysis.predict",
    "load_predictor": "analysis.predict",
    "predict_study": "analysis.predict",
    "score_predictor": "analysis.predict",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'archstudy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
