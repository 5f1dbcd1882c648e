"""Doing the study: datasets, the float64 network builder, metrics, the stacked multi-learning-rate
trainer, the Ray runner, the Parquet store and the command line."""

from .activations import Activation, linear_approx_error, nlc_tau
from .network import Network, build_network, frozen_statistics, output_scale
from .protocol import PROTOCOLS, Protocol
from .training import Outcome, train_architecture

__all__ = [
    "Activation", "Network", "build_network", "frozen_statistics", "linear_approx_error", "nlc_tau",
    "output_scale",
    "Outcome", "PROTOCOLS", "Protocol", "train_architecture",
]
