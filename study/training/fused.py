"""The training forward: the function ``Network.forward`` computes, with fewer passes over [R, B, n].

The trainer's time goes to the matrix products and to element-wise passes over the activations of the
stack (as measured when the trainer was prototyped). Around a normalization, three of those passes are
foldable without changing the function (only the rounding):

* the bias of a linear op followed by batchnorm (every family declares its bias foldable: Dense b, GmP lambda,
  Householder b; ``Family.bias_folds``) cancels in the normalized output, ``BN(s + b) = BN(s)``; it only
  shifts the running mean. In training mode it is left out of the product and added to the running mean
  instead: ``(1 - m) mu + m (mean(s) + b) = [(1 - m) mu + m mean(s)] + m b`` (``BatchNorm.normalize``). Its
  gradient is exactly zero (the reference forward gives round-off noise of about 1e-17), so the optimizer
  leaves it unchanged;
* the activation's dilation and shift, and for positively homogeneous tau (``Base.homogeneous``: relu, abs,
  linear: ``c tau(u) = tau(c u)``, c > 0) also its scale, become the affine weight and bias of
  ``F.batch_norm`` / ``F.layer_norm``: ``c tau(d y + t) = tau(c d y + c t)``, computed inside the
  normalization kernel (``Activation.norm_affine``);
* what is left is tau itself (and ``* c`` for the other activations, ``+ b`` when debiased;
  ``Activation.after_affine``).

Not folded where a skip connection starts after the linear op (the start value includes the bias) or
after the norm op (it is the unscaled norm output), nor in evaluation mode (where the bias does not
cancel). Everything else is ``Network.forward``'s own loop: both are ``Network.propagate``, this one with
``fold=True``. Forward hooks, intermediate values and any caller outside the trainer see the reference
computation (``fold=False``). Tests compare the two on sampled architectures (outputs, gradients, running
statistics).

Per hidden layer with batchnorm and relu, the passes over the activations go from 10 per step (bias
broadcast, norm 2, relu, * c; backward: * c, relu mask, norm 2, bias gradient) to 6; what that saves per step
is measured in docs/performance.md.

Nothing of a fold is made again every step: the affine weight and bias a normalization is handed are made once
and kept by it (``study.nn.layers``), and the folded biases of all layers go to their running means in one
``torch._foreach_add_`` before the first layer (``BatchNorm.fold_biases``). With the update of all parameters
as foreach operations (``study.training.optim``), a hidden dense batchnorm-relu layer costs a step 7 operators
(its product, batchnorm and relu; their two backward operators and its two gradient products), where it cost
11-12 (``study.perf.operators`` counts them; docs/performance.md).
"""

from __future__ import annotations

import torch

from ..nn.network import Network


def forward(net: Network, x: torch.Tensor, constants: tuple[float, float] | None = None) -> torch.Tensor:
    """``net(x)`` as [R, B, d_out] (also for R = 1), computed with the folds of the module docstring.

    ``constants``: the activation's (c, b) when the caller has them (``study.training.compiled`` passes
    them: ``torch.compile`` cannot trace the cached quadrature that ``Activation.constants`` runs)."""
    return net.propagate(x, fold=True, constants=constants)
