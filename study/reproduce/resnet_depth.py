"""``resnet-depth``: Li, Jiao, Han and Weissman, *Demystifying ResNet*, figures 7 and 8 (section 5.3.1): the final
loss at the best learning rate against depth, linear networks with shortcuts of depth 1, 2 and 3 and without
(orthogonal, Xavier), then with ReLUs at the mid positions.

The protocol (5.3.1, appendix B): "We run different networks for 1000 epochs using different learning rates at log
scale, and compare the average final losses corresponding to the optimal learning rates", trained "using gradient
descent" (full batch) on whitened MNIST (10 principal components, one-hot outputs; ``resnet_hessian.load_data``:
MNIST from ``--root``, else scikit-learn's digits), the loss 1/(2m) sum |y - f(x)|^2 (appendix A.2, eq. 23). The
networks and initial points are ``resnet-hessian``'s (``resnet_hessian.initial_point``: the shortcut nets at
Xavier x 0.01, section 4.1's perturbed zero; the others orthogonal or Xavier). The rates of one (kind, depth,
run) are one stack: the same initial point, one copy per rate, trained together (a diverging copy is frozen and
counts as an infinite loss). The pipeline's stacked trainer does not build n-shortcut residual units, so the
gradient descent is written here (plain GD, no momentum, as the paper).

Figure 7 plots log10(final loss - optimal loss); the optimal loss of a linear network is the least-squares one,
L* = 1/2 (tr Syy - tr(Syx Sxx^-1 Sxy)) (``optimal_loss``). Figure 8 adds "ReLUs to the mid positions": in a
2-shortcut unit x + W2 relu(W1 x), and "at the same positions in linear networks" without shortcuts (after every
odd-numbered layer); "1-shortcut and 3-shortcut networks are omitted"; it plots log10(final loss).

Rows (claims: the figures print no number), D the deepest depth of the scale:

* ``log10_excess_loss:shortcut2:depth=D``: below the orthogonal and the Xavier nets' at D: "the final losses of
  2-shortcut linear networks stay close to optimal as the networks become deeper" while the others do not;
* ``log10_excess_loss_growth:shortcut2``: log10 excess at D minus at the shallowest depth, at most 1 (one decade:
  "stay close to optimal as the networks become deeper");
* ``log10_optimal_lr:shortcut2_over_orthogonal:depth=D``: at least 0: "Higher learning rates can also be applied"
  (the paper omits Xavier's optimal rate at depth 96 as unstable);
* ``log10_final_loss:shortcut2-relu:depth=D``: below the Xavier-ReLU and orthogonal-ReLU nets' at D: "linear
  networks with Xavier or orthogonal initialization have difficulties finding these optimal points, while
  2-shortcut networks find these optimal points easily" (figure 8).

Scales: ``paper`` 1000 epochs, depths 6 to 96 (linear) and 4 to 64 (ReLU), 13 rates 1e-4 .. 1, 5 runs (the paper
does not say how many runs it averaged; figure 4 used 10); ``quick`` the same epochs and rates at fewer depths and
2 runs; ``tiny`` 30 epochs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .resnet_hessian import KINDS, PAPER, Moments, full_batch, initial_point
from .result import Row

RELU_KINDS = ("shortcut2", "orthogonal", "xavier")  # figure 8: "1-shortcut and 3-shortcut networks are omitted"
DIVERGED = 1e6  # a copy whose loss passes this is frozen and counts as diverged (the loss starts near 0.5)
FLOOR = 1e-16  # log10 of an excess loss below float64's resolution of the loss


@dataclass(frozen=True)
class Settings:
    depths: tuple  # linear nets (multiples of 6: every shortcut depth divides them)
    relu_depths: tuple  # figure 8 (even: ReLUs after every odd-numbered layer)
    lrs: tuple  # the learning rates (log scale), one stack
    epochs: int  # full-batch gradient-descent steps (the paper: 1000)
    runs: int  # initial points per (kind, depth); the final loss per rate is their mean


RATES = tuple(float(10.0**e) for e in np.arange(-4.0, 0.01, 1 / 3))  # 13 rates, 1e-4 .. 1
SCALES = {
    "tiny": Settings(depths=(6, 12), relu_depths=(4,), lrs=RATES[::4], epochs=30, runs=1),
    "quick": Settings(depths=(6, 24, 96), relu_depths=(4, 16, 64), lrs=RATES[::2], epochs=1000, runs=2),
    "paper": Settings(depths=(6, 12, 24, 48, 96), relu_depths=(4, 8, 16, 32, 64), lrs=RATES, epochs=1000, runs=5),
}


def optimal_loss(data: Moments) -> float:
    """The least-squares loss 1/2 (tr Syy - tr(Syx Sxx^-1 Sxy)) that a linear map reaches at its best."""
    sxx, sxy = data.sxx.cpu().numpy(), data.sxy.cpu().numpy()
    return float(0.5 * (data.syy - np.trace(sxy.T @ np.linalg.solve(sxx, sxy))))


def forward(layers: torch.Tensor, x: torch.Tensor, shortcut: int, relu: bool) -> torch.Tensor:
    """f(x) for a stack of networks: ``layers`` (S, L, d, d), layer 1 first; ``x`` (m, d) -> (S, m, d). An
    n-shortcut net is R units h + W^{r,n} ... W^{r,1} h; ``relu``: a ReLU after every odd-numbered layer (the mid
    position of a 2-shortcut unit, and the same positions without shortcuts)."""
    h = x.expand(layers.shape[0], *x.shape)
    depth = layers.shape[1]
    if shortcut == 0:
        for layer in range(depth):
            h = h @ layers[:, layer].transpose(1, 2)
            if relu and layer % 2 == 0 and layer < depth - 1:
                h = torch.relu(h)
        return h
    for r in range(depth // shortcut):
        branch = h
        for i in range(shortcut):
            layer = r * shortcut + i
            branch = branch @ layers[:, layer].transpose(1, 2)
            if relu and layer % 2 == 0:
                branch = torch.relu(branch)
        h = h + branch
    return h


def end_to_end(layers: torch.Tensor, shortcut: int) -> torch.Tensor:
    """The linear map W (S, d, d) of a stack of linear networks (eq. 1-2)."""
    eye = torch.eye(layers.shape[-1], dtype=layers.dtype, device=layers.device)
    return forward(layers, eye, shortcut, relu=False).transpose(1, 2)


def losses(
    layers: torch.Tensor, shortcut: int, relu: bool, x: torch.Tensor, y: torch.Tensor, data: Moments
) -> torch.Tensor:
    """1/(2m) sum |y - f(x)|^2 per network of the stack: through the second moments for a linear net
    (1/2 tr(W Sxx W^T) - tr(W Sxy) + 1/2 tr Syy), through the data with ReLUs."""
    if not relu:
        w = end_to_end(layers, shortcut)
        return 0.5 * torch.sum((w @ data.sxx) * w, dim=(1, 2)) - torch.sum(w * data.sxy.T, dim=(1, 2)) + 0.5 * data.syy
    return 0.5 * torch.mean(torch.sum((y - forward(layers, x, shortcut, relu=True)) ** 2, dim=2), dim=1)


def train(
    theta: torch.Tensor, depth: int, shortcut: int, relu: bool, lrs, epochs: int, x, y, data: Moments
) -> np.ndarray:
    """Full-batch gradient descent from ``theta`` (flat, one network) at every rate of ``lrs`` at once; the final
    loss per rate (inf where the copy diverged)."""
    d = x.shape[1]
    layers = theta.reshape(1, depth, d, d).repeat(len(lrs), 1, 1, 1).clone().requires_grad_(True)
    lr = torch.tensor(lrs, dtype=theta.dtype, device=theta.device)[:, None, None, None]
    alive = torch.ones(len(lrs), dtype=torch.bool, device=theta.device)
    for _ in range(epochs):
        value = losses(layers, shortcut, relu, x, y, data)
        alive &= torch.isfinite(value) & (value < DIVERGED)
        (grad,) = torch.autograd.grad(torch.where(alive, value, 0.0).sum(), layers)
        with torch.no_grad():
            layers -= torch.where(alive[:, None, None, None], lr * torch.nan_to_num(grad), 0.0)
    with torch.no_grad():
        final = losses(layers, shortcut, relu, x, y, data)
        alive &= torch.isfinite(final) & (final < DIVERGED)
    return np.where(alive.cpu().numpy(), final.cpu().numpy(), np.inf)


def best(final: np.ndarray, lrs) -> tuple[float, float]:
    """(the mean final loss over runs at the best rate, that rate): ``final`` is (runs, rates)."""
    mean = final.mean(axis=0)
    k = int(np.argmin(mean))
    return float(mean[k]), float(lrs[k])


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    data, x, y, what = full_batch(ctx.root, ctx.device)
    d = x.shape[1]
    optimum = optimal_loss(data)
    results: dict[str, dict[str, dict[int, dict]]] = {"linear": {}, "relu": {}}
    for mode, kinds, depths in (("linear", tuple(KINDS), s.depths), ("relu", RELU_KINDS, s.relu_depths)):
        for kind in kinds:
            n = KINDS[kind]
            results[mode][kind] = {}
            for depth in depths:
                final = np.stack(
                    [
                        train(
                            initial_point(kind, depth, d, sub_seed(ctx.seed, n, depth, r)).to(ctx.device),
                            depth,
                            n,
                            mode == "relu",
                            s.lrs,
                            s.epochs,
                            x,
                            y,
                            data,
                        )
                        for r in range(s.runs)
                    ]
                )
                loss, lr = best(final, s.lrs)
                results[mode][kind][depth] = {
                    "final_loss": loss,
                    "optimal_lr": lr,
                    "final_loss_per_rate": final.mean(axis=0).tolist(),
                }
            ctx.say(
                f"resnet-depth: {mode} {kind}: "
                + ", ".join(
                    f"depth {D}: {v['final_loss']:.4g} at rate {v['optimal_lr']:.2g}"
                    for D, v in results[mode][kind].items()
                )
            )
    rows = claims(results, optimum)
    note = (
        f"Full-batch gradient descent for {s.epochs} epochs at {len(s.lrs)} rates "
        f"({s.lrs[0]:.2g} .. {s.lrs[-1]:.2g}, log scale), {s.runs} initial points per net and depth; per rate the "
        f"mean final loss over them, the best rate's reported. Least-squares optimum of a linear map on this data: "
        f"{optimum:.6g}. Diverged copies count as infinite losses."
    )
    return Measured(
        rows,
        figures=[
            (
                "Figures 7 and 8: left, log10(final loss - optimal loss) of linear nets at the "
                "best rate against depth; right, log10(final loss) with ReLUs at the mid "
                "positions.",
                figure(results, optimum),
            )
        ],
        data=what,
        note=note,
        extra={"optimal_loss": optimum, "results": results},
    )


def log_excess(loss: float, optimum: float) -> float:
    return math.log10(max(loss - optimum, FLOOR)) if math.isfinite(loss) else math.inf


def claims(results: dict, optimum: float) -> list[Row]:
    """The rows (module docstring) from ``results[mode][kind][depth]``."""
    linear, relu = results["linear"], results["relu"]
    depths = sorted(linear["shortcut2"])
    first, last = depths[0], depths[-1]
    ex = {k: {D: log_excess(v["final_loss"], optimum) for D, v in by.items()} for k, by in linear.items()}
    s2 = ex["shortcut2"][last]
    growth = ex["shortcut2"][last] - ex["shortcut2"][first]
    lr_ratio = math.log10(linear["shortcut2"][last]["optimal_lr"] / linear["orthogonal"][last]["optimal_lr"])
    rdepth = max(relu["shortcut2"])
    rl = {
        k: math.log10(by[rdepth]["final_loss"]) if math.isfinite(by[rdepth]["final_loss"]) else math.inf
        for k, by in relu.items()
    }
    return [
        Row.claim(
            f"log10_excess_loss:shortcut2:depth={last}",
            s2,
            s2 < ex["orthogonal"][last] and s2 < ex["xavier"][last],
            f"below the orthogonal ({ex['orthogonal'][last]:.3g}) and Xavier ({ex['xavier'][last]:.3g}) nets' "
            'at this depth: 2-shortcut nets "stay close to optimal as the networks become deeper" (figure 7)',
        ),
        Row.claim(
            "log10_excess_loss_growth:shortcut2",
            growth,
            growth <= 1.0,
            f'at most 1 (one decade from depth {first} to {last}): "stay close to optimal as the networks '
            'become deeper" (figure 7)',
        ),
        Row.claim(
            f"log10_optimal_lr:shortcut2_over_orthogonal:depth={last}",
            lr_ratio,
            lr_ratio >= 0.0,
            'at least 0: "Higher learning rates can also be applied" (figure 7, right)',
        ),
        Row.claim(
            f"log10_final_loss:shortcut2-relu:depth={rdepth}",
            rl["shortcut2"],
            rl["shortcut2"] < rl["orthogonal"] and rl["shortcut2"] < rl["xavier"],
            f"below the orthogonal-ReLU ({rl['orthogonal']:.3g}) and Xavier-ReLU ({rl['xavier']:.3g}) nets' at "
            'this depth: 2-shortcut nets "find these optimal points easily" (figure 8)',
        ),
    ]


def figure(results: dict, optimum: float):
    from archstudy.analysis.plotting import BLACK, new_figure, set_title

    colors = {
        "shortcut1": "#ff7f0e",
        "shortcut2": BLACK,
        "shortcut3": "#9467bd",
        "orthogonal": "#1f77b4",
        "xavier": "#d62728",
    }
    fig, (left, right) = new_figure(ncols=2, panel=(4.6, 3.6))
    for ax, mode in ((left, "linear"), (right, "relu")):
        for kind, by in results[mode].items():
            ds = sorted(by)
            vals = [
                log_excess(by[D]["final_loss"], optimum)
                if mode == "linear"
                else math.log10(by[D]["final_loss"])
                if math.isfinite(by[D]["final_loss"])
                else np.nan
                for D in ds
            ]
            ax.plot(ds, vals, marker="o", ms=3, lw=1, color=colors[kind], label=kind)
        ax.set_xlabel("depth (weight matrices)")
        ax.legend()
    left.set_ylabel("log10(final loss − optimal loss)")
    right.set_ylabel("log10(final loss)")
    set_title(left, "linear networks (figure 7)")
    set_title(right, "ReLUs at mid positions (figure 8)")
    return fig


REPRODUCTION = Reproduction(
    name="resnet-depth",
    paper=PAPER,
    source="figures 7 and 8 (section 5.3.1)",
    summary="final loss at the best of a learning-rate sweep (1000 epochs of gradient descent) against depth, linear "
    "nets with shortcuts of depth 1/2/3 and without, then with mid-position ReLUs, on MNIST (--root) or the "
    "digits",
    scales=SCALES,
    cost={
        "tiny": "5 s",
        "quick": "13.6 min measured",
        "paper": "2.5 h (estimated: 5 depths, 13 rates, 5 runs, about 7 times quick)",
    },
    reproduce=reproduce,
    reads_root="mnist",
)
offer(REPRODUCTION, order=90)
