"""``resnet-spectrum``: Li, Jiao, Han and Weissman, *Demystifying ResNet*, figures 5 and 6 (section 5.2): the
spectrum of the Hessian along gradient descent at depth 16, against the loss.

What the figures plot (section 5.2, appendix B): figure 5, "Maxima and 10th percentiles of absolute values of
eigenvalues at different losses when the depth is 16" (|lambda|_max and |lambda|_(0.1), "instead of minima, as
they are very unstable"; their ratio is appendix B's condition number); figure 6, left, the "ratio of negative
eigenvalues" (the index) at different losses; right, "the dynamics of gradient and index of a 2-shortcut linear
network in a single run". "For each run, eigenvalues at different losses are calculated using linear
interpolation": each run's values at its Hessian checkpoints are interpolated linearly in the loss onto one grid
(``on_grid``) and averaged over runs (log10 of the eigenvalues, the index as it is).

The networks, data, loss and initial points are ``resnet-hessian``'s (linear nets of d = 10, whitened MNIST from
``--root`` or the digits, 1/(2m) sum |y - W x|^2, the shortcut nets at Xavier x 0.01, section 4.1's perturbed
zero); the Hessian is its exact one (``resnet_hessian.hessian``). Section 5 compares "networks with Xavier
initialization, networks with orthogonal initialization and 2-shortcut networks with zero initialization"; the
1- and 3-shortcut nets are run too (data and figure) but the paper claims nothing of them here. Training is
full-batch gradient descent (appendix B), a Hessian every ``every`` epochs. The paper does not state the learning
rate of these figures nor the number of runs; we use one rate for all nets, 0.01: at depth 16 on the digits it is
the largest of ``resnet-depth``'s third-decade grid at which the Xavier nets do not diverge (0.03 does, in a
trial run), so every net trains at it. The gradient descent is written here as in ``resnet-depth`` (the stacked
trainer does not build n-shortcut residual units).

Rows (claims: the figures print no number), on the common loss range of the 2-shortcut, orthogonal and Xavier
runs (the grid), "others" the orthogonal and the Xavier nets:

* ``fraction_below:condition_number:shortcut2``: the fraction of the grid's losses at which the 2-shortcut nets'
  condition number is below both others'; 1 ("the condition numbers of 2-shortcut networks at different losses
  are always smaller", figure 5);
* ``log10_condition_ratio:shortcut2_over_others:highest_loss``: log10 of the 2-shortcut nets' condition number
  over the smaller of the others' at the grid's highest loss; below 0 and below the same ratio at the grid's
  lowest loss ("especially when the loss is large");
* ``log10_final_condition_ratio:shortcut2_over_orthogonal``: at the end of training; within log10 2 of 0 ("the
  condition numbers roughly evolved to the same value for both orthogonal and 2-shortcut linear networks"; a
  factor 2 is our reading of "roughly the same");
* ``fraction_below:index:shortcut2``: the fraction of the grid's losses at which the 2-shortcut nets' index is
  below both others'; 1 ("the index of a 2-shortcut network is always smaller", figure 6 left);
* ``index_drop_share:shortcut2:first_quarter``: of the 2-shortcut nets' whole drop of index during training, the
  share that happens while the loss falls through the first quarter of its whole decrease; at least 1/2
  ("drops dramatically at the beginning");
* ``epochs:max_gradient_to_steepest_index_drop:shortcut2``: in the first run, the epoch of the largest gradient
  norm minus the middle of the checkpoint interval where the index falls fastest; within one interval
  (``every`` epochs) of 0 ("The gradient reaches its maximum while the index drops dramatically", figure 6
  right).

Scales: ``paper`` depth 16, 1000 epochs (as figure 7's protocol; figures 5-6 show no epoch count), a Hessian
every 10 epochs, 5 runs (the paper's count is not stated); ``quick`` 1 run, a Hessian every 20 epochs; ``tiny``
depth 6, 60 epochs at rate 0.1, a Hessian every 20.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .reproduction import Context, Measured, Reproduction, sub_seed
from .resnet_hessian import KINDS, PAPER, PERCENTILE, Moments, hessian, initial_point, load_data, loss, spectrum
from .result import Row

COMPARED = ("shortcut2", "orthogonal", "xavier")  # section 5's three; the claims are about these
ROUGHLY = 2.0  # "roughly the same value": within this factor
GRID = 25  # losses of the common grid


@dataclass(frozen=True)
class Settings:
    depth: int  # weight matrices (a multiple of 6: every shortcut depth divides it)
    epochs: int  # full-batch gradient-descent steps
    every: int  # a Hessian every this many epochs (and at the start and the end)
    lr: float  # the one learning rate of every net
    runs: int  # initial points per net


SCALES = {
    "tiny": Settings(depth=6, epochs=60, every=20, lr=0.1, runs=1),
    "quick": Settings(depth=16, epochs=1000, every=20, lr=0.01, runs=1),
    "paper": Settings(depth=16, epochs=1000, every=10, lr=0.01, runs=5),
}


def eigen_summary(eigenvalues: np.ndarray) -> dict[str, float]:
    """|lambda|_max, |lambda|_(0.1) (the 10th percentile of |lambda|), their ratio (appendix B's condition number)
    and the index (the fraction of negative eigenvalues)."""
    a = np.abs(eigenvalues)
    top, p10 = float(a.max()), float(np.percentile(a, PERCENTILE))
    return {
        "largest": top,
        "percentile10": p10,
        "condition_number": top / p10,
        "index": float(np.mean(eigenvalues < 0)),
    }


def trajectory(theta: torch.Tensor, depth: int, shortcut: int, data: Moments, s: Settings) -> dict[str, list]:
    """Gradient descent from ``theta``: the loss and the gradient norm at every epoch (before its step), and the
    Hessian's ``eigen_summary`` at epochs 0, every, 2 every, ..., epochs."""
    grad = torch.func.grad(lambda t: loss(t, depth, shortcut, data))
    out: dict[str, list] = {"loss": [], "gradient_norm": [], "checkpoints": []}
    for epoch in range(s.epochs + 1):
        value = float(loss(theta, depth, shortcut, data))
        if not math.isfinite(value):
            break  # diverged: the trajectory ends here
        if epoch % s.every == 0 or epoch == s.epochs:
            out["checkpoints"].append(
                {"epoch": epoch, "loss": value, **eigen_summary(spectrum(hessian(theta, depth, shortcut, data)))}
            )
        if epoch == s.epochs:
            break
        g = grad(theta)
        out["loss"].append(value)
        out["gradient_norm"].append(float(torch.linalg.vector_norm(g)))
        theta = theta - s.lr * g
    return out


def on_grid(checkpoints: list[dict], key: str, grid: np.ndarray, log: bool) -> np.ndarray:
    """One run's ``key`` at the losses of ``grid``, interpolated linearly in the loss between its checkpoints
    (figures 5-6: "calculated using linear interpolation"); log10 of it where ``log``."""
    losses = np.array([c["loss"] for c in checkpoints])
    values = np.array([c[key] for c in checkpoints], dtype=np.float64)
    if log:
        values = np.log10(values)
    order = np.argsort(losses)
    return np.interp(grid, losses[order], values[order])


def common_grid(runs: dict[str, list[dict]]) -> np.ndarray:
    """``GRID`` losses evenly spaced over the range every run of the compared nets passes through."""
    lo = max(min(c["loss"] for c in r["checkpoints"]) for k in COMPARED for r in runs[k])
    hi = min(max(c["loss"] for c in r["checkpoints"]) for k in COMPARED for r in runs[k])
    return np.linspace(lo, hi, GRID) if hi > lo else np.array([])


def mean_on_grid(runs: list[dict], key: str, grid: np.ndarray, log: bool) -> np.ndarray:
    return np.mean([on_grid(r["checkpoints"], key, grid, log) for r in runs], axis=0)


def index_drop_share(checkpoints: list[dict]) -> float:
    """Of the index's whole drop (start minus its minimum), the share done while the loss falls through the first
    quarter of its whole decrease (start to the lowest loss)."""
    losses = np.array([c["loss"] for c in checkpoints])
    index = np.array([c["index"] for c in checkpoints])
    whole = index[0] - index.min()
    quarter = losses[0] - (losses[0] - losses.min()) / 4
    early = index[losses >= quarter]
    return float((index[0] - early.min()) / whole) if whole > 0 else math.nan


def gradient_to_index_drop(run: dict) -> float:
    """Epoch of the largest gradient norm minus the middle of the checkpoint interval where the index falls
    fastest (figure 6, right)."""
    cps = run["checkpoints"]
    epochs = np.array([c["epoch"] for c in cps], dtype=np.float64)
    index = np.array([c["index"] for c in cps])
    if len(cps) < 2:
        return math.nan
    k = int(np.argmin(np.diff(index) / np.diff(epochs)))
    return float(np.argmax(run["gradient_norm"]) - (epochs[k] + epochs[k + 1]) / 2)


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    xn, yn, what = load_data(ctx.root)
    data = Moments.of(xn, yn).to(ctx.device)
    d = xn.shape[1]
    runs: dict[str, list[dict]] = {}
    for kind, n in KINDS.items():
        runs[kind] = [
            trajectory(
                initial_point(kind, s.depth, d, sub_seed(ctx.seed, n, s.depth, r)).to(ctx.device), s.depth, n, data, s
            )
            for r in range(s.runs)
        ]
        ends = [r["checkpoints"][-1] for r in runs[kind]]
        ctx.say(
            f"resnet-spectrum: {kind}: loss {runs[kind][0]['checkpoints'][0]['loss']:.4g} -> "
            + ", ".join(f"{e['loss']:.4g} (epoch {e['epoch']})" for e in ends)
        )
    grid = common_grid(runs)
    rows = claims(runs, grid, s.every)
    curves = {
        k: {
            q: mean_on_grid(runs[k], q, grid, q != "index").tolist() if len(grid) else []
            for q in ("largest", "percentile10", "condition_number", "index")
        }
        for k in KINDS
    }
    note = (
        f"Depth {s.depth}, full-batch gradient descent at rate {s.lr:g} for {s.epochs} epochs, {s.runs} run(s) per "
        f"net, the exact Hessian every {s.every} epochs; curves on {len(grid)} losses of the range every run of "
        f"the 2-shortcut, orthogonal and Xavier nets passes through"
        + (f" ({grid[0]:.4g} .. {grid[-1]:.4g})" if len(grid) else " (empty: no claim can be checked)")
        + ", interpolated linearly in the loss per run, log10 of the eigenvalues averaged over runs. The paper "
        "states neither the rate nor the number of runs of these figures."
    )
    return Measured(
        rows,
        figures=[
            (
                "Figures 5 and 6: the largest |λ| and the 10th percentile of |λ| of the "
                "Hessian (left), the index (middle) against the loss at depth "
                f"{s.depth}; right, the gradient norm and the index of one 2-shortcut run "
                "against the epoch.",
                figure(runs, grid, curves),
            )
        ],
        data=what,
        note=note,
        extra={"loss_grid": grid.tolist(), "on_grid": curves, "runs": runs},
    )


def claims(runs: dict[str, list[dict]], grid: np.ndarray, every: int) -> list[Row]:
    """The rows (module docstring) from the runs' trajectories and the common grid."""
    nan = math.nan
    if len(grid):
        cond = {k: mean_on_grid(runs[k], "condition_number", grid, log=True) for k in COMPARED}
        index = {k: mean_on_grid(runs[k], "index", grid, log=False) for k in COMPARED}
        others_cond = np.minimum(cond["orthogonal"], cond["xavier"])
        below_cond = float(np.mean(cond["shortcut2"] < others_cond))
        below_index = float(np.mean(index["shortcut2"] < np.minimum(index["orthogonal"], index["xavier"])))
        high, low = float(cond["shortcut2"][-1] - others_cond[-1]), float(cond["shortcut2"][0] - others_cond[0])
    else:
        below_cond = below_index = high = low = nan
    final = {
        k: float(np.mean([math.log10(r["checkpoints"][-1]["condition_number"]) for r in runs[k]]))
        for k in ("shortcut2", "orthogonal")
    }
    final_ratio = final["shortcut2"] - final["orthogonal"]
    share = float(np.mean([index_drop_share(r["checkpoints"]) for r in runs["shortcut2"]]))
    lag = gradient_to_index_drop(runs["shortcut2"][0])
    return [
        Row.claim(
            "fraction_below:condition_number:shortcut2",
            below_cond,
            below_cond == 1.0,
            "1: below the orthogonal and Xavier nets' at every loss of the grid (\"the condition numbers of "
            '2-shortcut networks at different losses are always smaller", figure 5)',
        ),
        Row.claim(
            "log10_condition_ratio:shortcut2_over_others:highest_loss",
            high,
            high < 0 and high < low,
            f"below 0 and below the ratio at the grid's lowest loss ({low:.3g}): smaller \"especially when "
            'the loss is large" (figure 5)',
        ),
        Row.claim(
            "log10_final_condition_ratio:shortcut2_over_orthogonal",
            final_ratio,
            abs(final_ratio) <= math.log10(ROUGHLY),
            f'within log10 {ROUGHLY:g} of 0 at the end of training: "roughly evolved to the same value for '
            'both orthogonal and 2-shortcut linear networks" (figure 5)',
        ),
        Row.claim(
            "fraction_below:index:shortcut2",
            below_index,
            below_index == 1.0,
            "1: below the orthogonal and Xavier nets' at every loss of the grid (\"the index of a 2-shortcut "
            'network is always smaller", figure 6 left)',
        ),
        Row.claim(
            "index_drop_share:shortcut2:first_quarter",
            share,
            share >= 0.5,
            "at least 1/2 of the index's whole drop while the loss falls through the first quarter of its "
            'decrease: it "drops dramatically at the beginning" (figure 6 left)',
        ),
        Row.claim(
            "epochs:max_gradient_to_steepest_index_drop:shortcut2",
            lag,
            abs(lag) <= every,
            f'within one checkpoint interval ({every} epochs) of 0, first run: "The gradient reaches its '
            'maximum while the index drops dramatically" (figure 6 right)',
        ),
    ]


def figure(runs: dict[str, list[dict]], grid: np.ndarray, curves: dict):
    from archstudy.analysis.plotting import BLACK, new_figure, set_title

    colors = {
        "shortcut1": "#ff7f0e",
        "shortcut2": BLACK,
        "shortcut3": "#9467bd",
        "orthogonal": "#1f77b4",
        "xavier": "#d62728",
    }
    fig, (left, middle, right) = new_figure(ncols=3, panel=(4.2, 3.4))
    for kind, runs_of in runs.items():  # every net along its own first run, beside the common-grid means
        cps = runs_of[0]["checkpoints"]
        ls = [c["loss"] for c in cps]
        left.plot(ls, [math.log10(c["largest"]) for c in cps], lw=1, color=colors[kind], label=f"{kind} max")
        left.plot(ls, [math.log10(c["percentile10"]) for c in cps], lw=1, ls="--", color=colors[kind])
        middle.plot(ls, [c["index"] for c in cps], lw=1, color=colors[kind], label=kind)
    if len(grid):
        for kind in COMPARED:
            middle.plot(grid, curves[kind]["index"], ls="", marker="o", ms=2, color=colors[kind])
    for ax in (left, middle):
        ax.set_xlabel("loss")
        ax.legend()
    left.set_ylabel("log10 |λ|: max (solid), 10th percentile (dashed)")
    middle.set_ylabel("index (fraction of negative eigenvalues)")
    one = runs["shortcut2"][0]
    right.plot(range(len(one["gradient_norm"])), one["gradient_norm"], lw=1, color=BLACK, label="gradient norm")
    twin = right.twinx()
    cps = one["checkpoints"]
    twin.plot([c["epoch"] for c in cps], [c["index"] for c in cps], lw=1, color="#2ca02c", label="index")
    right.set_xlabel("epoch")
    right.set_ylabel("gradient norm (black)")
    twin.set_ylabel("index (green)")
    set_title(right, "2-shortcut, one run (figure 6 right)")
    return fig


REPRODUCTION = Reproduction(
    name="resnet-spectrum",
    paper=PAPER,
    source="figures 5 and 6 (section 5.2)",
    summary="largest |eigenvalue|, its 10th percentile and the index of the exact Hessian against the loss during "
    "gradient descent at depth 16, linear nets with shortcuts of depth 1/2/3 and without (orthogonal, "
    "Xavier), on MNIST (--root) or the digits",
    scales=SCALES,
    cost={"tiny": "5 s", "quick": "3.1 min measured", "paper": "1.5 h (estimated)"},
    reproduce=reproduce,
    reads_root="mnist",
)
