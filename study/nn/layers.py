"""Stacked layers: every parameter and buffer carries a leading runs dimension R.

One implementation serves a single network (R = 1) and the trainer's stack of R copies trained at R
learning rates: activations are ``[R, B, n]``; a shared input ``[B, n]`` (the same minibatch for every
run) is multiplied in one GEMM against all R weight matrices at once.

Dense: ``s = x W^T + b`` (``W`` [R, out, in], ``b`` [R, out]), or with input mean normalization
``s = (x - E[x]) W^T + b`` (Chen and Ge, *Neural Characteristic Activation Value Analysis*, eq. 16;
``centered``). Normalizations have no trainable scale or shift (NLC paper, appendix C).

Memory layout (a speed choice, invisible in shapes and values). An activation is the tensor [R, B, n]
every caller sees, but ``stacked_linear`` returns it on *feature-major* memory, [R, n, B] transposed
(strides (n B, 1, B)), because that is what the products ``W_r X_r^T`` give without any copy:

* shared input: ``W.reshape(R out, in) @ x^T`` is one GEMM whose [R out, B] result *is* the stack;
* per-run input: ``baddbmm(b, W, X^T)`` reads X^T (a free transpose of either layout) and writes
  [R, out, B] contiguously; the backward products read and write the same layout;
* batchnorm on that memory is ``F.batch_norm`` of the [1, R n, B] view (channels = R n, statistics over
  B): one fused kernel for all runs and no copy in either direction. On R-major memory the previous
  form (a [B, R n] copy of the stack) is kept as the fallback (``F.batch_norm`` straight on [R, B, n]
  would normalize over the wrong axis);
* element-wise ops (activations, skip additions, GmP radii) keep their input's layout.

Feature-major memory saves the [B, R n] copies a batch-major stack needs around every batchnorm, which were a
tenth of a small net's training step: measured in docs/performance.md.

The normalizations (``NORMS``, keyed by ``Layer.norm``) have no trainable scale or shift (appendix C); their
``normalize`` takes the affine and the folded bias the trainer's folded forward hands them
(``Network.propagate``), their forward is ``normalize`` without either. The dense family is declared here
(``Dense``; the interface is ``study.nn.family``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archstudy.sampling import ArchSpec, Layer

from .activations import Activation
from .families import layer_family
from .family import Family
from .initialization import sp_bias, sp_weight

BN_MOMENTUM = 0.1
NORM_EPS = 1e-5
DTYPE = torch.float64


def stacked_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x W_r^T + b_r`` for every run r. ``x``: [R, B, in] (either memory layout) or shared [B, in];
    ``weight``: [R, out, in]. Returns [R, B, out] on feature-major memory (see the module docstring)."""
    R, out, fan_in = weight.shape
    if x.dim() == 2:
        # One GEMM [R*out, in] x [in, B] for all runs; its [R*out, B] result is the stack, feature-major.
        w = weight.reshape(R * out, fan_in)
        y = w @ x.T if bias is None else torch.addmm(bias.reshape(R * out, 1), w, x.T)
        return y.view(R, out, x.shape[0]).transpose(1, 2)
    xt = x.transpose(1, 2)  # [R, in, B]
    if bias is None:
        return torch.bmm(weight, xt).transpose(1, 2)
    return torch.baddbmm(bias.unsqueeze(-1), weight, xt).transpose(1, 2)


def feature_major(x: torch.Tensor) -> bool:
    """Whether the [R, B, n] tensor ``x`` lies on feature-major memory ([R, n, B] contiguous)."""
    return x.dim() == 3 and x.transpose(1, 2).is_contiguous()


def centered(layer: Family, x: torch.Tensor) -> torch.Tensor:
    """Input mean normalization (Chen and Ge, eq. 16) of a layer with ``imn``: ``x - E[x]``, the batch mean in
    training (updating the layer's running mean with momentum ``BN_MOMENTUM`` unless ``track`` is off) and the
    running mean in evaluation; ``x`` itself for a layer without it. ``x``: [R, B, n] or shared [B, n]."""
    if not layer.imn:
        return x
    if layer.training:
        mean = x.mean(dim=-2)
        if layer.track:
            with torch.no_grad():
                layer.running_mean.lerp_(mean.detach(), BN_MOMENTUM)  # a shared input's [n] mean broadcasts
    else:
        mean = layer.running_mean
    return x - mean.unsqueeze(-2)


@layer_family
class Dense(Family):
    """A fully-connected layer ``s = W x + b``, or ``s = W (x - E[x]) + b`` with ``imn`` (``centered``); its
    initial tensors are ``study.nn.initialization``'s standard-parameterization draws."""

    kind = "dense"
    roles = {"weight": "weight", "bias": "bias"}
    bias_name = "bias"
    cuda_graph = True  # measured on an H200 (``study.nn.family``, docs/performance.md)

    def __init__(self, fan_in: int, fan_out: int, runs: int = 1, imn: bool = False):
        super().__init__()
        self.fan_in, self.fan_out, self.imn = fan_in, fan_out, imn
        self.weight = nn.Parameter(torch.empty(runs, fan_out, fan_in, dtype=DTYPE))
        self.bias = nn.Parameter(torch.empty(runs, fan_out, dtype=DTYPE))
        if imn:
            self.register_buffer("running_mean", torch.zeros(runs, fan_in, dtype=DTYPE))
        self.track = True  # update the running mean in training mode (off inside ``frozen_statistics``)

    @classmethod
    def build(cls, layer: Layer, runs: int) -> "Dense":
        return cls(layer.fan_in, layer.fan_out, runs, imn=layer.imn)

    @classmethod
    def initial(cls, spec: ArchSpec, layer: Layer, seed: int) -> dict[str, torch.Tensor]:
        return {
            "weight": torch.from_numpy(sp_weight(spec, layer, seed)),
            "bias": torch.from_numpy(sp_bias(spec, layer, seed)),
        }

    @staticmethod
    def products(layer: Layer) -> tuple[tuple[int, int], ...]:
        return ((layer.fan_out, layer.fan_in),)

    def centered(self, x):
        return centered(self, x)

    def transform(self, x, with_bias: bool = True):
        return stacked_linear(self.centered(x), self.weight, self.bias if with_bias else None)


def _affine(cache: dict, value: float | None, size: int, like: torch.Tensor) -> torch.Tensor | None:
    """A constant affine weight or bias of ``size`` channels, all ``value``, for ``F.batch_norm`` /
    ``F.layer_norm`` (None stays None: the kernel's own 1 or 0).

    Made once per value, size, dtype and device and kept in ``cache``, a plain attribute of the normalization
    (not a buffer: it is no state, so ``Network.stacked_tensors`` and checkpoints never see it): a training
    step creates no tensor that is the same every step. Nothing writes to it (a normalization reads its weight
    and bias). While dynamo traces (``study.training.compiled``) the sizes are symbolic: the graph makes it."""
    if value is None:
        return None
    if torch.compiler.is_compiling():
        return torch.full((size,), value, dtype=like.dtype, device=like.device)
    key = (value, size, like.dtype, like.device)
    t = cache.get(key)
    if t is None:
        t = cache[key] = torch.full((size,), value, dtype=like.dtype, device=like.device)
    return t


class NoNorm(nn.Module):
    """No normalization: the identity."""

    affine = False  # it has no affine to take a folded scale and shift
    input_statistics = ()

    def __init__(self, width: int = 0, runs: int = 1):
        super().__init__()

    @property
    def cancels_bias(self) -> bool:
        return False

    def forward(self, x):
        return x

    def normalize(
        self,
        s: torch.Tensor,
        gamma: float | None = None,
        beta: float | None = None,
        folded_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``s`` itself: there is nothing to fold into."""
        if gamma is not None or beta is not None or folded_bias is not None:
            raise ValueError("no normalization: nothing can be folded into it")
        return s


class BatchNorm(nn.Module):
    """Batch normalization without affine parameters; running statistics for evaluation."""

    affine = True  # ``normalize`` applies a given scale and shift inside the kernel
    input_statistics = ("mean", "var")
    running_mean: torch.Tensor  # buffers [R, width]
    running_var: torch.Tensor

    def __init__(self, width: int, runs: int = 1):
        super().__init__()
        self.width = width
        self.register_buffer("running_mean", torch.zeros(runs, width, dtype=DTYPE))
        self.register_buffer("running_var", torch.ones(runs, width, dtype=DTYPE))
        self.track = True  # update running statistics in training mode (off inside ``frozen_statistics``)
        self.constants: dict = {}  # the affine weights and biases ``normalize`` was given (``_affine``)

    @property
    def cancels_bias(self) -> bool:
        """In training mode BN(s + b) = BN(s): a bias added before it cancels (it only shifts the running mean)."""
        return self.training

    @property
    def tracks(self) -> bool:
        """Whether a training-mode ``normalize`` updates the running statistics."""
        return self.training and self.track

    @staticmethod
    @torch.no_grad()
    def fold_biases(norms: "list[BatchNorm]", biases: list[torch.Tensor]) -> None:
        """Biases [R, n] that linear ops left out of the inputs of the batchnorms ``norms`` (tracking, training
        mode), added to their running means before those normalize: the batchnorms' outputs are the same (the
        biases cancel) and their running means move as if the biases had been added,
        ``(1 - m) mu + m (mean(s) + b) = [(1 - m) (mu + m b / (1 - m))] + m mean(s)``: mu + m b / (1 - m) first,
        then ``normalize``'s own update (not after it: batchnorm's backward checks that the running statistics
        it saved are unchanged). One ``torch._foreach_add_`` for all of them (the same additions as one
        ``add_`` each)."""
        if norms:
            torch._foreach_add_([n.running_mean for n in norms], biases, alpha=BN_MOMENTUM / (1.0 - BN_MOMENTUM))

    def forward(self, x):
        return self.normalize(x)

    def normalize(
        self,
        s: torch.Tensor,
        gamma: float | None = None,
        beta: float | None = None,
        folded_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """BN(s) * gamma + beta (None: 1 and 0), over the batch of each run's channels. ``folded_bias`` [R, n]:
        a bias the linear op left out of ``s`` (training mode only), handed to ``fold_biases`` first (a caller
        that folds several layers' biases hands them to ``fold_biases`` at once and none here)."""
        R, B, n = s.shape
        weight, bias = _affine(self.constants, gamma, R * n, s), _affine(self.constants, beta, R * n, s)
        track = self.tracks
        if track and folded_bias is not None:
            self.fold_biases([self], [folded_bias])
        rm = self.running_mean.view(-1) if track or not self.training else None
        rv = self.running_var.view(-1) if track or not self.training else None
        if feature_major(s):
            # [1, R*n, B]: channel (r, j) over the batch, no copy either way
            return (
                _batch_norm(s.transpose(1, 2).view(1, R * n, B), rm, rv, weight, bias, self.training)
                .view(R, n, B)
                .transpose(1, 2)
            )
        return (
            _batch_norm(s.transpose(0, 1).reshape(B, R * n), rm, rv, weight, bias, self.training)
            .view(B, R, n)
            .transpose(0, 1)
        )


def _batch_norm(x, running_mean, running_var, weight, bias, training: bool) -> torch.Tensor:
    """``F.batch_norm(x, ...)`` with this module's momentum and epsilon. On a CPU it is ``torch.native_batch_norm``
    called directly: the kernel ``F.batch_norm`` ends in there, without the empty reserve tensor its dispatch
    makes on the way (one operator less per layer and step, the same numbers). On other devices
    ``F.batch_norm`` may choose another kernel (cuDNN), so it is called as it is."""
    if x.device.type == "cpu":
        if training and x.numel() == x.shape[1]:  # F.batch_norm's own check
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.size()}")
        return torch.native_batch_norm(x, weight, bias, running_mean, running_var, training, BN_MOMENTUM, NORM_EPS)[0]
    return F.batch_norm(x, running_mean, running_var, weight, bias, training, BN_MOMENTUM, NORM_EPS)


class LayerNorm(nn.Module):
    """Layer normalization without affine parameters (per example, over the features)."""

    affine = True
    input_statistics = ()

    def __init__(self, width: int, runs: int = 1):
        super().__init__()
        self.width = width
        self.constants: dict = {}  # the affine weights and biases ``normalize`` was given (``_affine``)

    @property
    def cancels_bias(self) -> bool:
        return False  # a per-feature bias does not cancel in a per-example normalization

    def forward(self, x):
        return self.normalize(x)

    def normalize(
        self,
        s: torch.Tensor,
        gamma: float | None = None,
        beta: float | None = None,
        folded_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """LN(s) * gamma + beta (None: 1 and 0); no bias cancels here (``folded_bias`` must be None)."""
        if folded_bias is not None:
            raise ValueError("a bias does not cancel in layer normalization")
        n = s.shape[-1]
        return F.layer_norm(
            s, (n,), _affine(self.constants, gamma, n, s), _affine(self.constants, beta, n, s), NORM_EPS
        )


# The normalization of a layer by ``Layer.norm`` (archstudy.sampling.spec.NORMS).
NORMS: dict[str, type[nn.Module]] = {"none": NoNorm, "batch": BatchNorm, "layer": LayerNorm}


class ActivationLayer(nn.Module):
    """``c * tau(d s + t) + b`` element-wise (``study.nn.activations.Activation``); ``constants``: (c, b) when
    the caller has them (see ``Activation.__call__``)."""

    def __init__(self, act: Activation):
        super().__init__()
        self.act = act
        # computed (and cached) once per variant, at build time rather than in the first forward
        act.constants  # noqa: B018

    def forward(self, s, constants: tuple[float, float] | None = None):
        return self.act(s, constants)

    def extra_repr(self):
        a = self.act
        c, b = a.constants
        return f"{a.name}, d={a.dilation}, t={a.shift}, c={c:.6g}, b={b:.6g}"
