"""The Han papers' checkerboard nets and their training, as the authors' public code builds and trains them
(Yu and Zhang, *Householder-Absolute Neural Layers*, section 3 and Algorithm 1; the variability paper,
*Variability of Neural Networks and Han-Layer*, appendix D): written here, in float64, to compute what that code
computes, for ``han_checkerboard`` and ``han_flipped``. Where the papers' text and the code differ, the code is
followed (it produced the tables); docs/datasets.md lists each difference.

The nets (``HanArch``), "depth x width" = ``hidden`` hidden layers of width ``width``:

* HanNet (``householder=True``): hidden layer 1 dense (2 -> w), hidden layer 2 dense (w -> w), hidden layers 3 ..
  L - 1 Householder layers z = x - 2 (x . v') v' + b with v' = v / (|v| + 1e-14) (Algorithm 1, eq. 5), hidden
  layer L dense, then a dense output layer w -> 2. So "20 x 30" is
  2 + 17 Householder + 1 dense hidden-to-hidden maps: 90 + 930 + 17 x 60 + 930 + 62 = 3032 parameters (Table 3).
* FCNet (``householder=False``): every hidden layer dense, then the output layer; no batch normalization (the
  code's ``use_bn`` defaults to False and its FCNet checkpoint is loaded with ``bn=False``).
* Activation after every hidden layer: |s| (ABS) or max(s, 0) (ReLU), no rescaling.
* Two outputs, both regressing the 0/1 label (the target is the label twice).

The initialization (``initial_parameters``), for every layer the code's:

* dense weights [fan_out, fan_in]: HanNets "orthogonal" (torch's ``orthogonal_``, gain 1: the Q of the QR
  decomposition of a standard normal matrix, signs fixed by R's diagonal, so a Haar-distributed matrix with
  orthonormal columns (fan_out >= fan_in) or rows), the input and output layers included; FCNets "kaiming"
  (He, Zhang, Ren and Sun, *Delving Deep into Rectifiers*: N(0, 2 / fan_in)), the output layer included;
* dense biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (``nn.Linear``'s own, never re-initialized);
* Householder vectors v: ``orthogonal_`` of a [n, 1] matrix, i.e. v = g / |g| for g ~ N(0, I_n): unit length.
  The reflection does not depend on |v|, but its gradient scales as 1 / |v|, so SGD moves the direction of a
  unit v about n times faster than that of a v ~ N(0, I_n);
* Householder biases U(-1/sqrt(n), 1/sqrt(n)).

The training (``train``), as the code's ``main.py``: each iteration a minibatch of 100 training points drawn
without replacement (independently of the other iterations: no epochs); the loss is the mean over the batch and
the two outputs of (f_k(x) - y)^2; SGD with momentum 0.9 (buffer b <- 0.9 b + g, p <- p - lr b, no dampening,
no weight decay); the rate divided by 5 after the iterations 0.5 T, 0.7 T and 0.9 T (a milestone that is not an
integer never fires, as in torch's ``MultiStepLR``); after iterations 0, 100, 200, ... (``evaluate_every``) the
test accuracy is evaluated and the best kept ("select the best result as the output", Yu and Zhang 3.1); a run
whose training loss is NaN at an evaluation stops there. Accuracy: the mean of the two outputs rounded to 0 or 1
equals the label (a mean of exactly 1/2 counts as wrong). Every initialization and rate is one run; the runs are
trained together, each with its own parameters, batches and rate (``torch.bmm`` over the runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

DTYPE = torch.float64
EPS = 1e-14  # the code's Householder normalization: v / (|v| + eps)
MOMENTUM = 0.9
DIVISION = 5.0  # torch's MultiStepLR gamma 0.2
STEP_AT = (0.5, 0.7, 0.9)
EVALUATE_EVERY = 100  # iterations: the code evaluates after iterations 0, 100, 200, ...


@dataclass(frozen=True)
class HanArch:
    """One of the papers' nets: ``hidden`` hidden layers of ``width``, Householder layers between the first two
    and the last dense hidden layers (``householder``) or none, ``activation`` "abs" | "relu", dense weights
    ``init`` "orthogonal" | "kaiming", ``outputs`` (the code's 2)."""

    hidden: int
    width: int
    householder: bool
    activation: str
    init: str
    d_in: int = 2
    outputs: int = 2

    def layers(self) -> list[tuple[str, int, int]]:
        """(kind, fan_in, fan_out) of every layer, input to output; kind "dense" or "reflection" (a Householder
        layer). The code's rule: hidden layer k (0-based) is dense when its width differs from its input's, or k is 1
        or the last."""
        out, fan_in = [], self.d_in
        for k in range(self.hidden):
            dense = not self.householder or self.width != fan_in or k in (1, self.hidden - 1)
            out.append(("dense" if dense else "reflection", fan_in, self.width))
            fan_in = self.width
        out.append(("dense", fan_in, self.outputs))
        return out

    @property
    def num_params(self) -> int:
        return sum(n_in * n_out + n_out if kind == "dense" else 2 * n_in for kind, n_in, n_out in self.layers())


def _orthogonal(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """torch's ``orthogonal_`` (gain 1): Q of the QR decomposition of a standard normal matrix (transposed when
    rows < cols), each column times the sign of R's diagonal entry: Haar-distributed orthonormal columns
    (rows >= cols) or rows."""
    g = rng.standard_normal((rows, cols) if rows >= cols else (cols, rows))
    q, r = np.linalg.qr(g)
    q = q * np.sign(np.diag(r))
    return q if rows >= cols else q.T


def initial_parameters(arch: HanArch, seed: int) -> list[dict[str, np.ndarray]]:
    """Every layer's starting parameters (``HanArch.layers`` order): dense {"weight" [out, in], "bias" [out]},
    Householder {"v" [n], "bias" [n]}, drawn as the module docstring says from ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    params = []
    for kind, fan_in, fan_out in arch.layers():
        if kind == "reflection":
            v = _orthogonal(rng, fan_in, 1)[:, 0]
            bound = 1.0 / math.sqrt(fan_in)
            params.append({"v": v, "bias": rng.uniform(-bound, bound, fan_in)})
            continue
        if arch.init == "orthogonal":
            w = _orthogonal(rng, fan_out, fan_in)
        elif arch.init == "kaiming":
            w = rng.standard_normal((fan_out, fan_in)) * math.sqrt(2.0 / fan_in)
        else:
            raise ValueError(f"HanArch.init = {arch.init!r}: must be 'orthogonal' or 'kaiming'")
        bound = 1.0 / math.sqrt(fan_in)
        params.append({"weight": w, "bias": rng.uniform(-bound, bound, fan_out)})
    return params


class Stack:
    """``runs`` copies of one ``HanArch``, each with its own parameters: tensors [runs, ...] per layer."""

    def __init__(self, arch: HanArch, seeds: list[int], device=None):
        self.arch = arch
        self.runs = len(seeds)
        per_run = [initial_parameters(arch, s) for s in seeds]
        self.layers: list[dict[str, torch.Tensor]] = []
        for k in range(len(arch.layers())):
            self.layers.append(
                {
                    name: torch.tensor(np.stack([p[k][name] for p in per_run]), dtype=DTYPE, device=device)
                    for name in per_run[0][k]
                }
            )

    def parameters(self) -> list[torch.Tensor]:
        return [t for layer in self.layers for t in layer.values()]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs [runs, B, outputs] of inputs ``x`` [runs, B, d_in] (each run its own) or [B, d_in] (shared)."""
        h = x if x.dim() == 3 else x.unsqueeze(0).expand(self.runs, *x.shape)
        act = torch.abs if self.arch.activation == "abs" else torch.relu
        last = len(self.layers) - 1
        for k, p in enumerate(self.layers):
            if "v" in p:
                v = p["v"] / (p["v"].norm(dim=1, keepdim=True) + EPS)  # [R, n]
                h = h - 2.0 * torch.bmm(h, v.unsqueeze(2)) * v.unsqueeze(1) + p["bias"].unsqueeze(1)
            else:
                h = torch.baddbmm(p["bias"].unsqueeze(1), h, p["weight"].transpose(1, 2))
            if k < last:
                h = act(h)
        return h


def accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per run the fraction of points whose mean output rounds to its 0/1 label: f [R, N, outputs], y [N]."""
    m = f.mean(dim=2)
    rounded = torch.where(m > 0.5, 1.0, torch.where(m < 0.5, 0.0, 0.5))
    return (rounded == y.to(m.dtype)).to(DTYPE).mean(dim=1)


def rate_factor(iteration: int, iterations: int) -> float:
    """The factor of the starting rate at ``iteration`` (0-based): 1/5 per milestone 0.5 T, 0.7 T, 0.9 T reached
    (torch's MultiStepLR fires a milestone when the step count equals it, so a non-integer one never fires)."""
    passed = sum(1 for f in STEP_AT if float(f * iterations).is_integer() and iteration >= f * iterations)
    return DIVISION**-passed


@dataclass
class Trained:
    """Per run: the best test accuracy at an evaluation (``best``, NaN when no evaluation was finite) and the
    iteration it was reached at, the test and training accuracy and training loss after the last iteration,
    whether its loss became non-finite (``diverged``); the trained stack."""

    best: np.ndarray
    best_iteration: np.ndarray
    final_test: np.ndarray
    final_train: np.ndarray
    final_loss: np.ndarray
    diverged: np.ndarray
    stack: Stack


def train(
    arch: HanArch,
    seeds: list[int],
    rates: list[float],
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    iterations: int,
    batch: int,
    order_seed: int,
    evaluate_every: int = EVALUATE_EVERY,
    device=None,
) -> Trained:
    """Train run r from ``initial_parameters(arch, seeds[r])`` at starting rate ``rates[r]`` (module docstring);
    ``y_*`` are the 0/1 labels [N] (the target of every output), ``order_seed`` draws every run's minibatches."""
    if len(seeds) != len(rates):
        raise ValueError(f"train: {len(seeds)} seeds but {len(rates)} rates (one of each per run)")
    stack = Stack(arch, seeds, device)
    params = stack.parameters()
    for p in params:
        p.requires_grad_(True)
    momentum = [torch.zeros_like(p) for p in params]
    x_train, y_train = x_train.to(device, DTYPE), y_train.to(device, DTYPE)
    x_test, y_test = x_test.to(device, DTYPE), y_test.to(device)
    R, n = len(seeds), len(x_train)
    lr0 = torch.tensor(rates, dtype=DTYPE, device=device)
    g = torch.Generator(device="cpu").manual_seed(order_seed)
    best = torch.full((R,), -math.inf, dtype=DTYPE, device=device)
    best_at = np.full(R, -1)
    live = torch.ones(R, dtype=torch.bool, device=device)  # a run whose loss became NaN at an evaluation stops
    diverged = np.zeros(R, dtype=bool)
    made_for = math.nan  # the rate factor ``steps`` holds (NaN: none yet)
    steps: list[torch.Tensor] = []
    for it in range(iterations):
        idx = torch.rand(R, n, generator=g).topk(batch, dim=1).indices.to(device)  # B of n without replacement
        xb, yb = x_train[idx], y_train[idx]  # [R, B, d_in], [R, B]
        loss = ((stack(xb) - yb.unsqueeze(2)) ** 2).mean(dim=(1, 2))  # [R]
        grads = torch.autograd.grad(loss.sum(), params)
        factor = rate_factor(it, iterations)
        if factor != made_for:  # each run's rate, shaped for each parameter: remade when it changes
            lr = lr0 * factor * live.to(DTYPE)
            steps = [lr.view(-1, *([1] * (p.dim() - 1))) for p in params]
            made_for = factor
        with torch.no_grad():
            torch._foreach_mul_(momentum, MOMENTUM)
            torch._foreach_add_(momentum, grads)
            torch._foreach_sub_(params, torch._foreach_mul(momentum, steps))
        if it % evaluate_every == 0:
            with torch.no_grad():
                f_train = stack(x_train)
                train_loss = ((f_train - y_train.view(1, -1, 1)) ** 2).mean(dim=(1, 2))
                test_acc = accuracy(stack(x_test), y_test)
                bad = live & torch.isnan(train_loss)
                diverged |= bad.cpu().numpy()
                better = live & ~bad & (test_acc > best)
                best = torch.where(better, test_acc, best)
                best_at[better.cpu().numpy()] = it
                if bad.any():
                    live &= ~bad
                    made_for = math.nan
    with torch.no_grad():
        f_train = stack(x_train)
        final_loss = ((f_train - y_train.view(1, -1, 1)) ** 2).mean(dim=(1, 2))
        final_train = accuracy(f_train, y_train)
        final_test = accuracy(stack(x_test), y_test)
    for p in params:
        p.requires_grad_(False)
    finite_loss = torch.isfinite(final_loss).cpu().numpy()
    out_best = best.cpu().numpy()
    out_best[~np.isfinite(out_best)] = np.nan
    return Trained(
        best=out_best,
        best_iteration=best_at,
        final_test=final_test.cpu().numpy(),
        final_train=final_train.cpu().numpy(),
        final_loss=final_loss.cpu().numpy(),
        diverged=diverged | ~finite_loss,
        stack=stack,
    )
