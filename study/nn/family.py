"""What a layer family declares (the interface; each family registers itself in ``study.nn.families``).

A family is the linear op of a layer, stacked over R runs (every parameter and buffer [R, ...]), declared once as
a subclass of ``Family``:

* ``kind``: its ``Layer.kind`` (``archstudy.sampling.spec``), the key of the registry;
* ``build(layer, runs)``: the module, with its parameters and buffers;
* ``initial(spec, layer, seed)``: its initial tensors by parameter name, without the runs dimension, from the
  seeded draws of ``study.nn.initialization``;
* ``transform(x, with_bias)``: the linear op s(x), with or without its additive bias (the module's forward is
  ``transform(x)``); ``post(a)``: what the layer does after its norm and activation (GmP's radius r; nothing
  for the others);
* ``roles``: every trainable tensor's role, "weight" or "bias" (lr_min sums over the weights, NLC paper E.2);
* what it can fold: ``bias_folds``, whether its bias (``bias_name``) is a plain additive term of s, which a
  following batchnorm cancels, BN(s + b) = BN(s), so the trainer's folded forward may leave it out
  (``Network.propagate``);
* ``products(layer)``: the matrices its linear op multiplies each example by, (rows, columns) each, which
  give its multiply-adds (``study.metrics.architecture``) and the products the bench times (``study.perf.bench``);
* ``input_statistics``: the running statistics of its input it keeps (input mean normalization, Chen and Ge
  eq. 16: the mean), which ``study.metrics.calibration`` measures exactly;
* ``cuda_compile_min_layer_steps``: on a GPU, the layer-steps per epoch (depth x minibatches) from which a net of
  its layers trains through the compiled forward (``study.training.compiled.choose``). The step is launch-bound
  there, so compiling saves a fixed time per layer and step, more for a family that launches more kernels per
  layer, and the compile, tens of seconds once per architecture, must pay for itself over the stack epochs an
  architecture trains (``study.training.epoch_profiles.EXPECTED_STACK_EPOCHS``). Default: the dense layers' 6,000, where
  it did, measured with ``archstudy bench --device cuda`` on an H100 (docs/performance.md); a family measures
  and declares its own (Householder: 400).
* ``cuda_graph``: on a GPU, whether a net whose layers are all of families that declare it trains with its whole
  step captured as a CUDA graph (``study.training.graphed``; ``study.training.compiled.choose``). Declared by the
  families where the graph measured faster than the eager step at every stack size (dense and GmP, at 40, 5 and 1
  runs) and than the compiled one (1M-d49); Householder nets keep the compiled rule, whose step measured faster
  over a whole architecture. Default False: a family that has not measured it keeps the compile rule
  (docs/performance.md).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from archstudy.sampling import ArchSpec, Layer


class Family(nn.Module):
    """One layer family; see the module docstring. Subclasses set the class variables and implement ``build``,
    ``initial``, ``transform`` and ``products`` (and ``post`` when the layer acts after its activation)."""

    kind: ClassVar[str]
    roles: ClassVar[dict[str, str]]  # trainable tensor -> "weight" | "bias"
    bias_name: ClassVar[str]  # the parameter added to the linear op's output
    bias_folds: ClassVar[bool] = True  # a following batchnorm cancels that bias
    imn: bool = False  # input mean normalization (families that support it set it per layer)
    # with ``imn``: the buffer of the input's running mean [R, fan_in], and whether training updates it
    running_mean: torch.Tensor
    track: bool
    cuda_compile_min_layer_steps: ClassVar[int] = 6_000  # measured for dense layers (module docstring)
    cuda_graph: ClassVar[bool] = False  # measured per family (module docstring)

    @classmethod
    def build(cls, layer: Layer, runs: int) -> "Family":
        raise NotImplementedError

    @classmethod
    def initial(cls, spec: ArchSpec, layer: Layer, seed: int) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    @staticmethod
    def products(layer: Layer) -> tuple[tuple[int, int], ...]:
        raise NotImplementedError

    @classmethod
    def multiply_adds(cls, layer: Layer) -> int:
        """Multiply-adds of the linear op per example: the entries of its ``products``."""
        return sum(rows * cols for rows, cols in cls.products(layer))

    def transform(self, x: torch.Tensor, with_bias: bool = True) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.transform(x)

    def post(self, a: torch.Tensor) -> torch.Tensor:
        """The layer's step after its norm and activation (none by default)."""
        return a

    def additive_bias(self) -> torch.Tensor:
        """The bias ``transform`` adds unless told not to ([R, fan_out])."""
        return getattr(self, self.bias_name)

    @property
    def input_statistics(self) -> tuple[str, ...]:
        """The running statistics of its input the layer keeps: ("mean",) with input mean normalization."""
        return ("mean",) if self.imn else ()
