"""Doing the study: datasets, the float64 network builder, metrics, the stacked multi-learning-rate
trainer, the Ray runner, the Parquet store and the command line.

Names are imported on first use (PEP 562), so ``import study`` is cheap and a command that needs neither
torch nor Ray (``archstudy report``) loads neither.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Activation": "activations", "linear_approx_error": "activations", "nlc_tau": "activations",
    "DATASETS": "datasets", "Dataset": "datasets", "Split": "datasets", "load_dataset": "datasets",
    "Network": "network", "build_network": "network", "frozen_statistics": "network", "output_scale": "network",
    "MetricOptions": "metric_options", "measure": "metrics.row", "measure_trained": "metrics.row",
    "PROTOCOLS": "protocol", "Protocol": "protocol",
    "Outcome": "training", "Trajectory": "training", "train_architecture": "training",
    "StudyConfig": "config", "run_study": "runner", "resume_study": "runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'study' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
