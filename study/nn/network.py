"""``build_network(spec, seed, runs=R)``: the float64 network an ``ArchSpec`` describes.

Layer ``l`` = linear op -> [norm] -> activation (NLC paper, appendix C), the last layer linear only.
Skips (``ArchSpec.skips``) start after the linear op or after the norm op of layers 1, 1 + k, ... and end
after the linear op k layers later (``h_{l+k} += strength * start``); the last one ends at the output
through a fixed, untrained projection: a d_out x width submatrix of a uniformly random orthogonal matrix
times max(1, sqrt(d_out / width)).

Each linear layer is the family its ``Layer.kind`` names (``study.nn.families``: dense, GmP, Householder), each
declared once: how it is built, initialized, applied, and what it folds. The network's forward and the trainer's
folded forward are one loop (``Network.propagate``).

Initialization (appendix C, or the spec's ``init``, ``bias_init``, ``init_scale``, ``branch_scale``,
``gmp_init``): float64, from numpy generators keyed by (seed, layer, purpose), so architecture siblings built with
the same seed share every draw they can; ``study.nn.initialization`` gives each distribution and its source.

With ``runs=R`` the module holds R identical copies as one stack (parameters [R, ...]); it takes a shared
input [B, d_in] or one per run [R, B, d_in] and returns [R, B, d_out]. With R = 1 (the default) it
takes [B, d_in] and returns [B, d_out] like any torch module. With ``seeds=[s_1, ..., s_R]`` run r is
initialized from seed s_r instead: R different initializations as one stack, each exactly the network
``build_network(spec, s_r)`` builds (a test checks this). The fixed skip projection is then one per run,
[R, d_out, width] (it is [d_out, width], shared, when every run has the same seed).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, cast

import torch
from torch import nn

from archstudy.sampling import ArchSpec, Layer, SpecError
from archstudy.sampling.constraints import Constraint, check, is_int

from .activations import Activation
from .epilogue import fused
from .families import family
from .family import Family
from .initialization import PROJECTION, init_rng, orthogonal_submatrix
from .layers import DTYPE, NORMS, ActivationLayer, BatchNorm, LayerNorm, NoNorm

__all__ = [
    "Network",
    "Seeds",
    "build_network",
    "frozen_statistics",
    "init_rng",
    "layer_init",
    "minibatches",
    "orthogonal_submatrix",
    "output_scale",
    "projection_init",
    "rows_of",
]


class Network(nn.Module):
    """R stacked copies of the architecture ``spec``; see the module docstring."""

    projection: torch.Tensor | None  # a buffer where the last skip is projected (``project``), else None

    def __init__(self, spec: ArchSpec, runs: int = 1):
        super().__init__()
        if runs < 1:
            raise ValueError(f"runs = {runs!r}: must be >= 1")
        self.spec, self.runs = spec, runs
        self.act = Activation.of(spec)
        self.linears = nn.ModuleList(family(layer.kind).build(layer, runs) for layer in spec.layers())
        self.norms = nn.ModuleList(NORMS[layer.norm](layer.fan_out, runs) for layer in spec.layers())
        self.activation = ActivationLayer(self.act)
        self._unfolded = ((False, False),) * spec.depth  # ``_folds`` without folds
        self._fold_plans: dict = {}  # ``_folds`` by the norms' modes
        skips = spec.skips()
        self._skip_from = {s.start: s for s in skips}
        self._skip_to = {s.end: s for s in skips}
        if skips and skips[-1].project:
            self.register_buffer("projection", torch.empty(spec.d_out, spec.width, dtype=DTYPE))
        else:
            self.projection = None

    # -- forward ---------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        squeeze = x.dim() == 2 and self.runs == 1
        if x.dim() == 3 and x.shape[0] != self.runs:
            raise ValueError(f"input has {x.shape[0]} runs, the network {self.runs}")
        h = self.propagate(x)
        # contiguous: the layers leave the output on feature-major memory (study.nn.layers); it is small
        return (h.squeeze(0) if squeeze else h).contiguous()

    def propagate(
        self,
        x: torch.Tensor,
        *,
        fold: bool = False,
        constants: tuple[float, float] | None = None,
        fuse: str | None = None,
    ) -> torch.Tensor:
        """The network's function on ``x`` ([B, d_in] shared or [R, B, d_in]) as [R, B, d_out]: per layer the
        family's linear op, the skip arriving there, the norm, the activation and the family's post step.

        ``fold = False`` is the reference computation ``forward`` returns: every module is called (forward hooks
        see it). ``fold = True`` is the trainer's folded forward (``study.training.stack``, whose docstring
        says why each fold leaves the function as it is): where a layer's norm cancels its bias (batchnorm in
        training mode, ``cancels_bias``; the family's ``bias_folds``) and no skip starts after its linear op,
        the bias is left out of the product and, for all such layers at once before the first of them, added
        to the running mean (``BatchNorm.fold_biases``: the running mean moves as if it had been added);
        where a norm with an affine follows and no skip starts after it, the activation's dilation and
        shift, and for a positively homogeneous tau its scale, are the norm's affine (``norm_affine``) and only
        the rest of the activation follows (``after_affine``). ``constants``: the activation's (c, b) when
        the caller has them (a traced forward cannot run the quadrature behind ``Activation.constants``). ``fuse``
        (with ``fold``): the ``torch.compile`` backend of the fused epilogue (``study.nn.epilogue``), which then
        computes each folded normalization and the rest of its activation as one compiled function where it
        applies."""
        act = self.act
        c, b = act.constants if constants is None else constants
        strength = self.spec.skip_strength
        depth = self.spec.depth
        folds, shifted = self._folds(fold)
        linears = cast("Sequence[Family]", self.linears)
        norms = cast("Sequence[NoNorm | BatchNorm | LayerNorm]", self.norms)
        if shifted:
            # the shifted layers' norms are tracking batchnorms (``_folds``)
            shifted_norms = cast("list[BatchNorm]", [norms[i] for i in shifted])
            BatchNorm.fold_biases(shifted_norms, [linears[i].additive_bias() for i in shifted])
        gamma, beta = act.norm_affine(c) if fold else (None, None)
        h = x
        start: torch.Tensor | None = None  # the value the skip in flight carries
        for layer, (linear, norm, (fold_bias, fold_act)) in enumerate(zip(linears, norms, folds), start=1):
            last = layer == depth
            skip = self._skip_from.get(layer)
            at = None if skip is None else skip.at  # where a skip starting here takes its value
            s = linear.transform(h, with_bias=False) if fold_bias else linear(h)
            if layer in self._skip_to:
                start = cast(torch.Tensor, start)  # taken where the skip started, at an earlier layer
                carried = self.project(start) if self._skip_to[layer].project else start
                s = s + carried if strength == 1.0 else s + strength * carried
            if at == "linear":
                start = s
            if fold_act and fuse is not None:
                y = fused(norm, s, gamma, beta, act, (c, b), fuse)
                if y is not None:
                    h = linear.post(y)
                    continue
            if fold_act:
                s = norm.normalize(s, gamma, beta)
            elif fold_bias:
                s = norm.normalize(s)
            else:
                s = norm(s)
            if at == "norm":
                start = s
            if last:
                return s
            y = act.after_affine(s, (c, b)) if fold_act else self.activation(s, (c, b))
            h = linear.post(y)
        raise AssertionError("unreachable: the last layer returns")

    def _folds(self, fold: bool) -> tuple[tuple[tuple[bool, bool], ...], tuple[int, ...]]:
        """What ``propagate`` folds: per layer (bias folded, activation's affine folded), and the indices of
        the layers whose folded bias goes to a tracking batchnorm's running mean (``BatchNorm.fold_biases``).
        A function of the structure and of the norms' modes only, so it is made once per mode (not while dynamo
        traces, ``study.training.compiled``: it then runs as plain code inside the trace)."""
        if not fold:
            return self._unfolded, ()
        key = tuple((norm.training, getattr(norm, "track", True)) for norm in self.norms)
        plans = self._fold_plans
        if key in plans and not torch.compiler.is_compiling():
            return plans[key]
        depth = self.spec.depth
        folds: list[tuple[bool, bool]] = []
        shifted: list[int] = []
        linears = cast("Sequence[Family]", self.linears)
        norms = cast("Sequence[NoNorm | BatchNorm | LayerNorm]", self.norms)
        for layer, (linear, norm) in enumerate(zip(linears, norms), start=1):
            skip = self._skip_from.get(layer)
            at = None if skip is None else skip.at
            fold_bias = norm.cancels_bias and linear.bias_folds and at != "linear"
            folds.append((fold_bias, norm.affine and layer != depth and at != "norm"))
            # only a batchnorm cancels a bias
            if fold_bias and cast(BatchNorm, norm).tracks:
                shifted.append(layer - 1)
        plan = (tuple(folds), tuple(shifted))
        if not torch.compiler.is_compiling():
            plans[key] = plan
        return plan

    def project(self, start: torch.Tensor) -> torch.Tensor:
        """The fixed skip projection into the output, ``start @ P^T``, computed as ``P @ start^T``, which reads
        feature-major memory without a copy (``P`` [d_out, width] shared by the runs, or [R, d_out, width] one
        per run: the product broadcasts)."""
        projection = cast(torch.Tensor, self.projection)  # called only where there is one
        return torch.matmul(projection, start.transpose(-1, -2)).transpose(-1, -2)

    # -- stacks ----------------------------------------------------------------------------------
    def take(self, runs) -> "Network":
        """A new network holding copies ``runs`` (indices into this stack), parameters and statistics."""
        idx = torch.as_tensor(runs, dtype=torch.long, device=self.device).reshape(-1)
        out = Network(self.spec, runs=len(idx)).to(self.device)
        with torch.no_grad():
            for (_name, dst), (_, src) in zip(out.stacked_tensors(), self.stacked_tensors()):
                dst.copy_(src.index_select(0, idx))
            if self.projection is not None:
                p = self.projection
                if p.dim() == 3:  # one per run: the taken runs' own (a single run's is its shared one)
                    p = p.index_select(0, idx)
                    p = p[0] if len(idx) == 1 else p
                out.projection = p.clone()
        out.train(self.training)
        return out

    def select(self, k: int) -> "Network":
        """Copy ``k`` of the stack as its own network (R = 1)."""
        return self.take([k])

    def stacked_tensors(self):
        """(name, tensor) for every parameter and per-run buffer, in a fixed order: all carry dim 0 = runs."""
        for name, p in self.named_parameters():
            yield name, p
        for name, b in self.named_buffers():
            if name != "projection":
                yield name, b

    def param_roles(self) -> dict[str, str]:
        """``name -> "weight" | "bias"`` for every trainable tensor (the lr_min sum runs over the weights), as
        each layer's family declares them."""
        roles = {}
        for i, linear in enumerate(cast("Sequence[Family]", self.linears)):
            for pname, role in linear.roles.items():
                roles[f"linears.{i}.{pname}"] = role
        return roles

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def extra_repr(self):
        return f"runs={self.runs}, spec={self.spec.content_id}"


@contextlib.contextmanager
def frozen_statistics(net: nn.Module):
    """Batch statistics (training-mode forward) without touching running statistics; restores the mode.

    Covers this package's norms (their ``track`` flag) and torch's own ``nn.BatchNorm*`` (whose training
    forward updates running statistics unless ``track_running_stats`` is off), so the metrics can be used
    on any module."""
    ours: list[Any] = [m for m in net.modules() if hasattr(m, "track")]  # modules with a ``track`` flag
    torchs = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [m.track for m in ours], [m.track_running_stats for m in torchs]
    was_training = net.training
    for m in ours:
        m.track = False
    for m in torchs:
        m.track_running_stats = False  # training forward: batch statistics, running buffers left alone
    net.train(True)
    try:
        yield net
    finally:
        for m, t in zip(ours, saved[0]):
            m.track = t
        for m, t in zip(torchs, saved[1]):
            m.track_running_stats = t
        net.train(was_training)


def layer_init(spec: ArchSpec, layer: Layer, seed: int) -> dict[str, torch.Tensor]:
    """The initial tensors of one linear layer (without the runs dimension), by parameter name, drawn from
    the generators of ``seed`` as its family declares (``Family.initial``; the module docstring)."""
    return family(layer.kind).initial(spec, layer, seed)


def projection_init(spec: ArchSpec, seed: int) -> torch.Tensor:
    """The fixed skip projection into the output: [d_out, width] (module docstring)."""
    p = orthogonal_submatrix(init_rng(seed, 0, PROJECTION), spec.d_out, spec.width)
    return torch.from_numpy(p * max(1.0, math.sqrt(spec.d_out / spec.width)))


@dataclass(frozen=True)
class Seeds(Constraint):
    """A non-empty list of initialization seeds (integers >= 0)."""

    def normalize(self, value):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            self.fail()
        out = tuple(value)
        if not out or not all(is_int(s) and s >= 0 for s in out):
            self.fail()
        return tuple(int(s) for s in out)

    def describe(self):
        return "must be a non-empty list of integer seeds >= 0"

    def invalid_examples(self):
        return ([], [-1], [1.5], "3", 3)


def build_network(
    spec: ArchSpec, seed: int = 0, runs: int = 1, device: str | torch.device | None = None, *, seeds=None
) -> Network:
    """The float64 network ``spec`` describes, initialized as appendix C (or ``spec.init``) says; R identical
    copies with ``runs``; with ``seeds`` one run per seed, run r initialized from ``seeds[r]`` (``runs`` then
    must be 1 or ``len(seeds)``; ``seed`` is not used)."""
    if seeds is None:
        net = Network(spec, runs)
        groups = [(slice(None), seed)]  # one draw, broadcast to every run
    else:
        seeds = check("build_network", "seeds", Seeds(), seeds)
        if runs not in (1, len(seeds)):
            raise SpecError(
                "build_network", "runs", runs, f"must be 1 or len(seeds) = {len(seeds)} when seeds are given"
            )
        net = Network(spec, len(seeds))
        groups = [(slice(r, r + 1), s) for r, s in enumerate(seeds)]
    with torch.no_grad():
        for runs_of, s in groups:
            for layer, module in zip(spec.layers(), net.linears):
                for name, value in layer_init(spec, layer, s).items():
                    getattr(module, name)[runs_of].copy_(value)
        if net.projection is not None:
            distinct = sorted({s for _, s in groups})
            if len(distinct) == 1:
                net.projection.copy_(projection_init(spec, distinct[0]))
            else:
                net.projection = torch.stack([projection_init(spec, s) for _, s in groups])
    return net.to(device) if device is not None else net


def minibatches(n: int, batch_size: int, seed: int = 0) -> list[torch.Tensor]:
    """Row indices of ``batch_size``-row minibatches ("dividing the dataset once into minibatches", section G).

    The rows are taken in one fixed seeded permutation, not in file order: a split stored in order (the
    checkerboard's raster order, a user file sorted by class) would otherwise give batches that are strips
    or single classes, and every batch statistic would be that strip's. The same ``n`` and ``seed`` give the
    same batches on every machine. A last batch of a single row joins the one before it: batchnorm has no
    batch statistics for one example."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    edges = list(range(0, n, batch_size)) + [n]
    if len(edges) > 2 and edges[-1] - edges[-2] == 1:
        del edges[-2]
    return [order[a:b] for a, b in zip(edges[:-1], edges[1:])]


def rows_of(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x[rows]`` for index tensors from ``minibatches`` (kept on the CPU), on ``x``'s device."""
    return x.index_select(0, rows.to(x.device))


@torch.no_grad()
def output_scale(net: nn.Module, x: torch.Tensor, batch_size: int = 250):
    """c_out = Q_{x,j} f(x, j) over the inputs ``x`` (appendix C), in minibatches of ``batch_size`` with batch
    statistics and running statistics untouched (section G's batch form). A float for one network, a
    tensor [R] for a stack. The loss divides the output by it for the whole study of the architecture."""
    total, count = None, 0
    with frozen_statistics(net):
        for rows in minibatches(x.shape[0], batch_size):
            f = net(rows_of(x, rows))
            sq = (f * f).sum(dim=(-2, -1)) if f.dim() == 3 else (f * f).sum()
            total = sq if total is None else total + sq
            count += f.shape[-2] * f.shape[-1]
    q = torch.sqrt(cast(torch.Tensor, total) / count)  # x holds rows: a minibatch was summed
    return float(q) if q.dim() == 0 else q
