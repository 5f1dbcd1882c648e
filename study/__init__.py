"""Doing the study: datasets, the float64 network builder, metrics, the stacked multi-learning-rate
trainer, the Ray runner, the Parquet store and the command line."""

from .activations import Activation, linear_approx_error, nlc_tau
from .datasets import DATASETS, Dataset, Split, load_dataset
from .network import Network, build_network, frozen_statistics, output_scale
from .metrics.measure import MetricOptions, measure

__all__ = [
    "Activation", "DATASETS", "Dataset", "Network", "Split", "build_network", "frozen_statistics",
    "linear_approx_error", "load_dataset", "nlc_tau", "output_scale",
]

# The runner imports Ray (about a second): loaded on first use, so `import study` stays as light as it was.
_RUNNER = {"run_study": "runner", "resume_study": "runner", "StudyConfig": "config"}


def __getattr__(name):
    if name in _RUNNER:
        import importlib

        return getattr(importlib.import_module(f".{_RUNNER[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
