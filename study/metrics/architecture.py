"""Metrics of an architecture alone, read off its ``ArchSpec`` (no network, no data).

* activation ratio (the variability paper, *Variability of Neural Networks and Han-Layer*, eq. 5; Yu and
  Zhang, *Householder-Absolute Neural Layers*, eq. 4):

      AR = total number of individual activations / total number of model parameters

  "individual activations" are the activation units, one per neuron of every hidden layer
  (``ArchSpec.activation_units``); the parameters are the trainable ones (``ArchSpec.num_params``: the
  fixed skip projection and the affine-free norms hold none). A Householder layer has 2n parameters for n
  activations, which is why Han-layers raise the AR (the variability paper, section 4.1).

* FLOPs per sample: 2 x the multiply-adds of one forward pass, the convention of the NAS literature's
  trivial baselines. Counted: a dense (or GmP) layer fan_in * fan_out, a Householder layer 2n
  (``x - (2 u^T x / |u|^2) u``: one dot product and one axpy per example), as each family declares its
  products (``Family.multiply_adds``, ``study.nn.families``), and the fixed skip projection d_out * width.
  Not counted, as in that convention: biases, normalizations, activations, skip additions and the per-layer
  work that does not scale with the batch (``2 / |u|^2``, GmP's direction from angles).

``measure_spec`` gives ``measure`` its columns of the spec alone: these two, and NLC_tau(1) and the linear
approximation error of the activation variant (NLC paper Table 1, ``study.nn.activations``).
"""

from __future__ import annotations

from archstudy.sampling import ArchSpec

from ..nn.activations import linear_approx_error, nlc_tau
from ..nn.families import family
from .registry import Measuring, measures


def activation_ratio(spec: ArchSpec) -> float:
    """AR = activation units / trainable parameters (the variability paper, eq. 5)."""
    return spec.activation_units / spec.num_params


def multiply_adds(spec: ArchSpec) -> int:
    """Multiply-adds of one forward pass of one example (see the module docstring for what counts)."""
    total = 0
    for layer in spec.layers():
        total += family(layer.kind).multiply_adds(layer)
    skips = spec.skips()
    if skips and skips[-1].project:
        total += spec.d_out * spec.width
    return total


def flops(spec: ArchSpec) -> float:
    """FLOPs per example of one forward pass: 2 x ``multiply_adds(spec)``."""
    return float(2 * multiply_adds(spec))


@measures("flops", "ar", "nlc_tau", "linear_approx_error", stream=None)
def measure_spec(m: Measuring, seed: None) -> dict:
    """The columns of the spec alone: activation ratio, FLOPs, and NLC_tau(1) and the linear approximation
    error of the activation variant."""
    return {
        "flops": flops(m.spec),
        "ar": activation_ratio(m.spec),
        "nlc_tau": nlc_tau(m.spec),
        "linear_approx_error": linear_approx_error(m.spec),
    }
