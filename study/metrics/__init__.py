"""Metrics of a network at initialization and after training (NLC paper sections 3-6, G, E; seeds 000/001)."""

from ..activations import linear_approx_error, nlc_tau
from .nlc import HIGH_BIAS, NLCParts, nlc, nlc_parts, output_bias

__all__ = ["HIGH_BIAS", "NLCParts", "linear_approx_error", "nlc", "nlc_parts", "nlc_tau", "output_bias"]
