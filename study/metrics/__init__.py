"""Metrics of a network at initialization and after training, and ``measure``, their row of the results.

The NLC paper's (sections 3-6, G, E), the variability of the variability paper and of Yu and Zhang,
*Householder-Absolute Neural Layers*, and the zero-cost proxies. ``measure`` (also ``study.measure``; module
``study.metrics.measurement``) computes all of them for one architecture as one flat row, ``measure_trained``
those of the trained network; each column of the row is computed by the function of its metric module that names
it in its ``@measures`` (``study.metrics.registry``).
"""

from ..nn.activations import linear_approx_error, nlc_tau
from .architecture import activation_ratio, flops, multiply_adds
from .calibration import calibrated
from .gradients import grad_length, gvcs, input_gradients, scaled_cross_entropy
from ..experiment.metric_options import MetricOptions
from .measurement import MEASURE_COLUMNS, measure, measure_trained, nlc_seed
from ..experiment.schema import HIGH_BIAS
from .nlc import NLCParts, jacobian_q, nlc, nlc_parts, output_bias, output_moments
from .proxies import (
    activation_codes,
    grad_norm,
    grad_norm_by_tensor,
    jacob_cov,
    nwot,
    snip,
    snip_by_tensor,
    synflow,
    synflow_by_tensor,
)
from .regions import error_perturbation, lar_diameter
from .variability import variability

__all__ = [
    "HIGH_BIAS",
    "MEASURE_COLUMNS",
    "MetricOptions",
    "NLCParts",
    "activation_codes",
    "activation_ratio",
    "calibrated",
    "error_perturbation",
    "flops",
    "grad_length",
    "grad_norm",
    "grad_norm_by_tensor",
    "gvcs",
    "input_gradients",
    "jacob_cov",
    "jacobian_q",
    "lar_diameter",
    "linear_approx_error",
    "measure",
    "measure_trained",
    "multiply_adds",
    "nlc",
    "nlc_parts",
    "nlc_seed",
    "nlc_tau",
    "nwot",
    "output_bias",
    "output_moments",
    "scaled_cross_entropy",
    "snip",
    "snip_by_tensor",
    "synflow",
    "synflow_by_tensor",
    "variability",
]
