"""Doing the study: datasets, the float64 network builder, metrics, the stacked multi-learning-rate
trainer, the Ray runner, the Parquet store and the command line."""

from .activations import Activation, linear_approx_error, nlc_tau
from .datasets import DATASETS, Dataset, Split, load_dataset
from .network import Network, build_network, frozen_statistics, output_scale

__all__ = [
    "Activation", "DATASETS", "Dataset", "Network", "Split", "build_network", "frozen_statistics",
    "linear_approx_error", "load_dataset", "nlc_tau", "output_scale",
]
