"""Doing the study: datasets, networks, metrics, the trainer, the study's execution, performance and commands.

It holds the float64 network builder, the stacked multi-learning-rate trainer, the Ray runner, the Parquet store
and the command line.

Names are imported on first use (PEP 562), so ``import study`` is cheap and a command that needs neither
torch nor Ray (``archstudy report``) loads neither.
"""

from __future__ import annotations

if __name__ != "archstudy.study":  # one module object per file: the packages are imported as archstudy.study
    raise ImportError(f"import archstudy.study, not {__name__} (archstudy's packages live under archstudy)")

import importlib

_EXPORTS = {
    "Activation": "nn.activations",
    "linear_approx_error": "nn.activations",
    "nlc_tau": "nn.activations",
    "DATASETS": "datasets",
    "Dataset": "datasets",
    "Split": "datasets",
    "load_dataset": "datasets",
    "Network": "nn.network",
    "build_network": "nn.network",
    "frozen_statistics": "nn.network",
    "output_scale": "nn.network",
    "MetricOptions": "experiment.metric_options",
    "measure": "metrics.measurement",
    "measure_trained": "metrics.measurement",
    "PROTOCOLS": "experiment.protocol",
    "Protocol": "experiment.protocol",
    "Outcome": "training",
    "Trajectory": "training",
    "train_architecture": "training",
    "StudyConfig": "experiment.config",
    "run_study": "execution.driver",
    "resume_study": "execution.driver",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'archstudy.study' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
