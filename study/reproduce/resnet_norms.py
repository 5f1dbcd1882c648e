"""``resnet-norms``: Li, Jiao, Han and Weissman, *Demystifying ResNet*, figure 3 (section 4.1): the average
Frobenius norm of the weight matrices of 2-shortcut networks of different depths during training, "when zero
initialized"; left without nonlinearities, right "With ReLUs at mid positions".

The claim (section 4.1): "the deeper a residual network is, the small its average Frobenius norm of weight
matrices is, both during the training process and when the training ends". The networks, data, loss and the
perturbed zero point are ``resnet-depth``'s and ``resnet-hessian``'s (2-shortcut units h + W2 W1 h, d = 10, with
a ReLU after W1 in the right panel; whitened MNIST from ``--root`` or the digits; 1/(2m) sum |y - f(x)|^2; Xavier
x 0.01, section 4.1's "zero initialization with small random perturbations"); full-batch gradient descent
(appendix B). The paper states neither the rate nor the epochs of figure 3: one rate for every depth, 0.1 (at
depth 16 the 2-shortcut nets leave the zero point within 100 epochs at it and do not diverge), and
``resnet-depth``'s 1000 epochs.

The average Frobenius norm is (1/L) sum_l |W_l|_F over the L weight matrices, the mean over runs. Rows, per panel
(``linear``, ``relu``):

* ``fraction_decreasing:mean_norm_during_training:<panel>``: of the pairs of consecutive depths, the fraction in
  which the deeper nets' norm averaged over the epochs is the smaller; 1 ("both during the training process");
* ``fraction_decreasing:final_norm:<panel>``: the same for the norm at the end; 1 ("and when the training ends").

Scales: ``paper`` depths 4 to 64, 1000 epochs, 5 runs (not stated by the paper); ``quick`` depths 4 to 32, 2 runs;
``tiny`` depths 2, 4, 8, 100 epochs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .resnet_depth import DIVERGED, losses
from .resnet_hessian import PAPER, Moments, full_batch, initial_point
from .result import Row

SHORTCUT = 2
PANELS = ("linear", "relu")


@dataclass(frozen=True)
class Settings:
    depths: tuple  # even: whole 2-shortcut units
    epochs: int
    lr: float
    runs: int


SCALES = {
    "tiny": Settings(depths=(2, 4, 8), epochs=100, lr=0.1, runs=1),
    "quick": Settings(depths=(4, 8, 16, 32), epochs=1000, lr=0.1, runs=2),
    "paper": Settings(depths=(4, 8, 16, 32, 64), epochs=1000, lr=0.1, runs=5),
}


def mean_frobenius_norm(layers: torch.Tensor) -> float:
    """(1/L) sum_l |W_l|_F of one net's ``layers`` (L, d, d)."""
    return float(torch.linalg.matrix_norm(layers).mean())


def norms_during_training(
    theta: torch.Tensor, depth: int, relu: bool, lr: float, epochs: int, x, y, data: Moments
) -> list[float]:
    """Full-batch gradient descent from ``theta``; the average Frobenius norm at epochs 0 .. ``epochs`` (shorter
    where the loss diverged)."""
    d = x.shape[1]
    layers = theta.reshape(1, depth, d, d).clone().requires_grad_(True)
    norms = [mean_frobenius_norm(layers[0].detach())]
    for _ in range(epochs):
        value = losses(layers, SHORTCUT, relu, x, y, data)
        if not (torch.isfinite(value).all() and float(value[0].detach()) < DIVERGED):
            break
        (grad,) = torch.autograd.grad(value.sum(), layers)
        with torch.no_grad():
            layers -= lr * grad
        norms.append(mean_frobenius_norm(layers[0].detach()))
    return norms


def fraction_decreasing(values: list[float]) -> float:
    """Of the consecutive pairs of ``values`` (by increasing depth), the fraction in which the deeper is smaller."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.mean(v[1:] < v[:-1]))


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    data, x, y, what = full_batch(ctx.root, ctx.device)
    d = x.shape[1]
    curves: dict[str, dict[int, list[float]]] = {p: {} for p in PANELS}
    for panel in PANELS:
        for depth in s.depths:
            runs = [
                norms_during_training(
                    initial_point("shortcut2", depth, d, sub_seed(ctx.seed, SHORTCUT, depth, r)).to(ctx.device),
                    depth,
                    panel == "relu",
                    s.lr,
                    s.epochs,
                    x,
                    y,
                    data,
                )
                for r in range(s.runs)
            ]
            n = min(len(r) for r in runs)
            curves[panel][depth] = np.mean([r[:n] for r in runs], axis=0).tolist()
        ctx.say(
            f"resnet-norms: {panel}: final average norm "
            + ", ".join(f"depth {D}: {c[-1]:.4g}" for D, c in curves[panel].items())
        )
    rows = claims(curves, s.epochs)
    note = (
        f"2-shortcut nets from Xavier x 0.01, full-batch gradient descent at rate {s.lr:g} for {s.epochs} epochs, "
        f"{s.runs} run(s) per depth; the average Frobenius norm (1/L) sum |W_l|_F, the mean over runs. The paper "
        "states neither the rate nor the epochs of figure 3."
    )
    return Measured(
        rows,
        figures=[
            (
                "Figure 3: the average Frobenius norm of the weight matrices of 2-shortcut nets "
                "from the perturbed zero point during training; left without nonlinearities, "
                "right with ReLUs at the mid positions.",
                figure(curves),
            )
        ],
        data=what,
        note=note,
        extra={"norms": curves},
    )


def claims(curves: dict[str, dict[int, list[float]]], epochs: int) -> list[Row]:
    """The rows (module docstring) from ``curves[panel][depth]``, the norm per epoch (a diverged net's curve ends
    early: it counts as not smaller)."""
    rows = []
    for panel in PANELS:
        by = [curves[panel][D] for D in sorted(curves[panel])]
        during = [float(np.mean(c)) if len(c) == epochs + 1 else np.inf for c in by]
        final = [c[-1] if len(c) == epochs + 1 else np.inf for c in by]
        for what, values, words in (
            ("mean_norm_during_training", during, "during the training process"),
            ("final_norm", final, "when the training ends"),
        ):
            f = fraction_decreasing(values)
            rows.append(
                Row.claim(
                    f"fraction_decreasing:{what}:{panel}",
                    f,
                    f == 1.0,
                    f'1: the deeper, the smaller at every step of depth ("the deeper a residual '
                    f'network is, the small its average Frobenius norm of weight matrices is", '
                    f"{words}; figure 3, {'left' if panel == 'linear' else 'right'})",
                )
            )
    return rows


def figure(curves):
    from archstudy.analysis.plotting import new_figure, set_title

    fig, axes = new_figure(ncols=2, panel=(4.4, 3.4))
    for ax, panel in zip(axes, PANELS):
        for depth, c in curves[panel].items():
            ax.plot(range(len(c)), c, lw=1, label=f"depth {depth}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("average Frobenius norm")
        set_title(ax, "without nonlinearities" if panel == "linear" else "ReLUs at mid positions")
        ax.legend()
    return fig


REPRODUCTION = Reproduction(
    name="resnet-norms",
    paper=PAPER,
    source="figure 3 (section 4.1)",
    summary="average Frobenius norm of the weights of zero-initialized 2-shortcut nets of different depths during "
    "gradient descent, linear and with mid-position ReLUs, on MNIST (--root) or the digits",
    scales=SCALES,
    cost={"tiny": "3 s", "quick": "51 s measured", "paper": "15 min (estimated)"},
    reproduce=reproduce,
    reads_root="mnist",
)
offer(REPRODUCTION, order=120)
