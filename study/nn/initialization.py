"""The seeded float64 draws that initialize a network's linear layers (NLC paper, appendix C, or the spec's ``init``).

Every draw comes from a numpy generator keyed by (seed, layer, purpose) (``init_rng``), so architecture siblings
built with the same seed share every draw they can (a GmP net and its SP twin, a Householder net and its dense
twin's biases). The layer families (``study.nn.families``) compose their initial tensors from these:

* ``sp_weight``: the standard-parameterization weight matrix, ``init = "orthogonal"`` (appendix C): a
  d_out x d_in submatrix of a uniformly random orthogonal max x max matrix, times max(1, sqrt(d_out / d_in));
  ``"kaiming"``: W_ij ~ N(0, 2 / d_in) (He, Zhang, Ren and Sun, *Delving Deep into Rectifiers*, 2015: normal,
  fan_in, gain sqrt(2)); ``"xavier"``: W_ij ~ N(0, 2 / (d_in + d_out)) (Glorot and Bengio, *Understanding the
  Difficulty of Training Deep Feedforward Neural Networks*, 2010: normal); ``"zero"``: exactly zero inside residual
  branches (Li, Jiao, Han and Weissman, *Demystifying ResNet*, the zero initial point of section 4), orthogonal
  elsewhere; then times sqrt(0.95) when the biases are Gaussian;
* ``sp_bias`` (``ArchSpec.bias_init``): zero; "gaussian", N(0, 0.05) (appendix C); "normal", N(0, 1) (the
  variability paper, *Variability of Neural Networks and Han-Layer*, B.1: "We initialize weight matrices and
  bias vectors with i.i.d. standard normal random numbers"); "uniform_fan_in", U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  (PyTorch's ``nn.Linear.reset_parameters``: the bias of a dense layer a PyTorch paper leaves at its default).
  The Gaussian draws are one standard normal vector of the layer's bias generator, scaled ("gaussian" and
  "normal" share it). Zero inside residual branches under ``init = "zero"``;
* both times ``init_scale``, and inside residual branches also times ``branch_scale``, in this order.

Nothing here dispatches on the layer family: each family's ``initial`` composes its tensors from these draws (a
Householder layer's bias: ``study.nn.householder.initial_bias``).
"""

from __future__ import annotations

import math

import numpy as np

from archstudy.sampling import BIAS_VARIANCE, ArchSpec, Layer

WEIGHT, BIAS, PROJECTION, ANGLES = 0, 1, 2, 3  # purposes of the init generators


def init_rng(seed: int, layer: int, purpose: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, layer, purpose])))


def orthogonal_submatrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A rows x cols submatrix of a uniformly (Haar) random max x max orthogonal matrix.

    Its leading min(rows, cols) columns (or rows) form a Haar-random orthonormal frame, which is the QR
    factor of an m x k Gaussian matrix with the signs of R's diagonal fixed (Mezzadri 2007); forming the
    whole m x m matrix is never needed."""
    m, k = max(rows, cols), min(rows, cols)
    q, r = np.linalg.qr(rng.standard_normal((m, k)))
    q = q * np.sign(np.diag(r))
    return q.T.copy() if rows < cols else q


def scales(spec: ArchSpec, layer: Layer) -> tuple[float, float]:
    """(init_scale, branch_scale inside a residual branch else 1): every initial tensor is multiplied by the
    first, then by the second."""
    return spec.init_scale, spec.branch_scale if layer.in_branch else 1.0


def _zeroed(spec: ArchSpec, layer: Layer) -> bool:
    """The layer starts at zero (``init = "zero"`` inside a residual branch)."""
    return spec.init == "zero" and layer.in_branch


def sp_bias(spec: ArchSpec, layer: Layer, seed: int) -> np.ndarray:
    """The layer's standard-parameterization bias [fan_out] (module docstring)."""
    scale, branch = scales(spec, layer)
    if spec.bias_init == "zero" or _zeroed(spec, layer):
        b = np.zeros(layer.fan_out)
    elif spec.bias_init == "uniform_fan_in":
        bound = 1.0 / math.sqrt(layer.fan_in)
        b = init_rng(seed, layer.index, BIAS).uniform(-bound, bound, layer.fan_out)
    else:  # "gaussian" or "normal": one standard normal draw, scaled
        sd = math.sqrt(BIAS_VARIANCE) if spec.bias_init == "gaussian" else 1.0
        b = init_rng(seed, layer.index, BIAS).standard_normal(layer.fan_out) * sd
    return b * scale * branch


def sp_weight(spec: ArchSpec, layer: Layer, seed: int) -> np.ndarray:
    """The layer's standard-parameterization weight matrix [fan_out, fan_in] (module docstring)."""
    scale, branch = scales(spec, layer)
    rng = init_rng(seed, layer.index, WEIGHT)
    shape = (layer.fan_out, layer.fan_in)
    if _zeroed(spec, layer):
        w = np.zeros(shape)
    elif spec.init == "kaiming":
        w = rng.standard_normal(shape) * math.sqrt(2.0 / layer.fan_in)
    elif spec.init == "xavier":
        w = rng.standard_normal(shape) * math.sqrt(2.0 / (layer.fan_in + layer.fan_out))
    else:
        w = orthogonal_submatrix(rng, *shape) * max(1.0, math.sqrt(layer.fan_out / layer.fan_in))
    if spec.bias_init == "gaussian":
        w = w * math.sqrt(1.0 - BIAS_VARIANCE)
    return w * scale * branch
