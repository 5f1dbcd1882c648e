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
rates of these figures nor the number of runs; its protocol elsewhere (5.3.1) uses "the optimal learning rates":
each net's rate here is the one of a log-spaced sweep (``lrs``, ``resnet-depth``'s third-decade grid) whose
final loss after ``epochs`` epochs, the mean over the runs' initial points, is lowest (``resnet_depth.train``,
``resnet_depth.best``), and the spectra are taken along training at that rate. A net has converged when its final
loss is within ``CONVERGED`` (relative) of the least-squares optimum of a linear map on the data
(``resnet_depth.optimal_loss``); the claim on the final condition numbers is read only when the 2-shortcut and
orthogonal nets both have ("cannot tell" otherwise), the others on the loss range every compared run passes
through. The gradient descent is written here as in ``resnet-depth`` (the stacked trainer does not build
n-shortcut residual units).

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
  ("drops dramatically at the beginning"); "cannot tell" when no Hessian falls inside that quarter (Hessians are
  also taken at epochs 1, 2, 4, .. below ``every``, where a fast rate does most of its descent);
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

from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .resnet_depth import RATES, best, optimal_loss, train
from .resnet_hessian import KINDS, PAPER, PERCENTILE, Moments, hessian, initial_point, load_data, loss, spectrum
from .result import Row

COMPARED = ("shortcut2", "orthogonal", "xavier")  # section 5's three; the claims are about these
ROUGHLY = 2.0  # "roughly the same value": within this factor
GRID = 25  # losses of the common grid
CONVERGED = 0.01  # converged: final loss at most this fraction above the least-squares optimum
NEAR_ZERO = 1e-6  # an eigenvalue within this fraction of |lambda|_max of zero: numerically zero, its sign noise


@dataclass(frozen=True)
class Settings:
    depth: int  # weight matrices (a multiple of 6: every shortcut depth divides it)
    epochs: int  # full-batch gradient-descent steps
    every: int  # a Hessian every this many epochs (and at the start and the end)
    lrs: tuple  # the sweep of learning rates; each net trains at its best (lowest mean final loss)
    runs: int  # initial points per net


SCALES = {
    "tiny": Settings(depth=6, epochs=60, every=20, lrs=(0.03, 0.1, 0.3), runs=1),
    "quick": Settings(depth=16, epochs=1000, every=20, lrs=RATES[3:], runs=1),  # 1e-3 .. 1
    "paper": Settings(depth=16, epochs=1000, every=10, lrs=RATES[3:], runs=5),
}


def eigen_summary(eigenvalues: np.ndarray) -> dict[str, float]:
    """|lambda|_max, |lambda|_(0.1) (the 10th percentile of |lambda|), their ratio (appendix B's condition number),
    the index (the fraction of negative eigenvalues) and the fraction of eigenvalues within ``NEAR_ZERO``
    |lambda|_max of zero (whose signs, counted by the index, are round-off)."""
    a = np.abs(eigenvalues)
    top, p10 = float(a.max()), float(np.percentile(a, PERCENTILE))
    return {
        "largest": top,
        "percentile10": p10,
        "condition_number": top / p10,
        "index": float(np.mean(eigenvalues < 0)),
        "near_zero": float(np.mean(a <= NEAR_ZERO * top)),
    }


def checkpoint_epochs(s: Settings) -> set[int]:
    """The epochs of a Hessian: 0, every, 2 every, ..., epochs, and 1, 2, 4, .. below ``every``: at a net's best
    rate the loss may fall most of its way within the first interval (the 2-shortcut nets at rate 1), which
    the interpolation in the loss would otherwise bridge with a straight line."""
    early = {2**k for k in range(s.every.bit_length()) if 2**k < s.every}
    return {0, s.epochs} | early | set(range(0, s.epochs + 1, s.every))


def trajectory(
    theta: torch.Tensor, depth: int, shortcut: int, data: Moments, s: Settings, lr: float
) -> dict[str, list]:
    """Gradient descent from ``theta`` at rate ``lr``: the loss and the gradient norm at every epoch (before its
    step), and the Hessian's ``eigen_summary`` at epochs 0, every, 2 every, ..., epochs."""
    grad = torch.func.grad(lambda t: loss(t, depth, shortcut, data))
    at = checkpoint_epochs(s)
    out: dict[str, list] = {"loss": [], "gradient_norm": [], "checkpoints": []}
    for epoch in range(s.epochs + 1):
        value = float(loss(theta, depth, shortcut, data))
        if not math.isfinite(value):
            break  # diverged: the trajectory ends here
        if epoch in at:
            out["checkpoints"].append(
                {"epoch": epoch, "loss": value, **eigen_summary(spectrum(hessian(theta, depth, shortcut, data)))}
            )
        if epoch == s.epochs:
            break
        g = grad(theta)
        out["loss"].append(value)
        out["gradient_norm"].append(float(torch.linalg.vector_norm(g)))
        theta = theta - lr * g
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
    if len(early) < 2:
        return math.nan  # no checkpoint but the start in the first quarter: the drop there is not resolved
    return float((index[0] - early.min()) / whole) if whole > 0 else math.nan


def index_drop_share_by_epoch(checkpoints: list[dict], fraction: float = 0.01) -> float:
    """Of the index's whole drop (start minus its minimum), the share done by the checkpoint at ``fraction`` of
    the epochs (the drop read against the epoch, as figure 6 right, instead of the loss)."""
    index = np.array([c["index"] for c in checkpoints])
    epochs = np.array([c["epoch"] for c in checkpoints])
    whole = index[0] - index.min()
    early = index[epochs <= fraction * epochs[-1]]
    return float((index[0] - early.min()) / whole) if whole > 0 else math.nan


def first_quarter_unresolved(checkpoints: list[dict]) -> bool:
    """No checkpoint but the start while the loss falls through the first quarter of its decrease."""
    losses = np.array([c["loss"] for c in checkpoints])
    return int(np.sum(losses >= losses[0] - (losses[0] - losses.min()) / 4)) < 2


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


def best_rate(thetas: list[torch.Tensor], depth: int, shortcut: int, x, y, data: Moments, s: Settings):
    """(the rate of ``s.lrs`` whose final loss after ``s.epochs`` epochs, the mean over the initial points
    ``thetas``, is lowest; that loss): ``resnet-depth``'s sweep."""
    final = np.array([train(t, depth, shortcut, False, s.lrs, s.epochs, x, y, data) for t in thetas])
    loss_at_best, lr = best(final, s.lrs)
    return lr, loss_at_best


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    xn, yn, what = load_data(ctx.root)
    data = Moments.of(xn, yn).to(ctx.device)
    x, y = torch.from_numpy(xn).to(ctx.device), torch.from_numpy(yn).to(ctx.device)
    optimum = optimal_loss(data)
    d = xn.shape[1]
    runs: dict[str, list[dict]] = {}
    rates: dict[str, float] = {}
    converged: dict[str, bool] = {}
    for kind, n in KINDS.items():
        thetas = [
            initial_point(kind, s.depth, d, sub_seed(ctx.seed, n, s.depth, r)).to(ctx.device) for r in range(s.runs)
        ]
        rates[kind], _ = best_rate(thetas, s.depth, n, x, y, data, s)
        runs[kind] = [trajectory(t, s.depth, n, data, s, rates[kind]) for t in thetas]
        ends = [r["checkpoints"][-1] for r in runs[kind]]
        converged[kind] = all(e["epoch"] == s.epochs and e["loss"] <= optimum * (1 + CONVERGED) for e in ends)
        ctx.say(
            f"resnet-spectrum: {kind} at its best rate {rates[kind]:.3g}: loss "
            f"{runs[kind][0]['checkpoints'][0]['loss']:.4g} -> "
            + ", ".join(f"{e['loss']:.4g} (epoch {e['epoch']})" for e in ends)
            + f" (optimum {optimum:.4g}; {'converged' if converged[kind] else 'not converged'})"
        )
    grid = common_grid(runs)
    rows = claims(runs, grid, s.every, converged)
    curves = {
        k: {
            q: mean_on_grid(runs[k], q, grid, q != "index").tolist() if len(grid) else []
            for q in ("largest", "percentile10", "condition_number", "index")
        }
        for k in KINDS
    }
    note = (
        f"Depth {s.depth}, full-batch gradient descent for {s.epochs} epochs at each net's best rate of the sweep "
        + ", ".join(f"{r:.3g}" for r in s.lrs)
        + " (lowest mean final loss): "
        + ", ".join(
            f"{k} {rates[k]:.3g} (final loss {np.mean([r['checkpoints'][-1]['loss'] for r in runs[k]]):.6g}, "
            + ("converged" if converged[k] else "not converged")
            + ")"
            for k in KINDS
        )
        + f"; the least-squares optimum {optimum:.6g}, converged meaning within {CONVERGED:.0%} of it. "
        f"{s.runs} run(s) per net, the exact Hessian every {s.every} epochs; curves on {len(grid)} losses of the "
        f"range every run of the 2-shortcut, orthogonal and Xavier nets passes through"
        + (f" ({grid[0]:.4g} .. {grid[-1]:.4g})" if len(grid) else " (empty: no claim can be checked)")
        + ", interpolated linearly in the loss per run, log10 of the eigenvalues averaged over runs. The paper "
        "states neither the rates nor the number of runs of these figures. The index counts the signs of "
        f"eigenvalues that are numerically zero (within {NEAR_ZERO:g} |λ|_max): at the end of training their "
        "fraction is "
        + ", ".join(f"{k} {np.mean([r['checkpoints'][-1]['near_zero'] for r in runs[k]]):.2f}" for k in COMPARED)
        + ", so the index of a converged net is mostly round-off; and at its start (the perturbed zero) the "
        "2-shortcut net's index is 1/2 (Theorem 2: eigenvalues +-sigma_k(M) in pairs). Read against the epoch "
        "instead of the loss, the share of the 2-shortcut nets' index drop done within the first 1% of the epochs "
        f"is {np.nanmean([index_drop_share_by_epoch(r['checkpoints']) for r in runs['shortcut2']]):.2f}."
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
        extra={
            "learning_rates": rates,
            "converged": converged,
            "optimal_loss": optimum,
            "loss_grid": grid.tolist(),
            "on_grid": curves,
            "runs": runs,
        },
    )


def claims(
    runs: dict[str, list[dict]], grid: np.ndarray, every: int, converged: dict[str, bool] | None = None
) -> list[Row]:
    """The rows (module docstring) from the runs' trajectories and the common grid; ``converged`` (kind ->
    whether its runs converged; all, when not given) decides whether the final condition numbers can be read,
    an empty grid whether the rows on it can."""
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
    rows = [
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
    no_grid = "the compared nets' runs share no range of losses"
    on_grid = {
        "fraction_below:condition_number:shortcut2",
        "log10_condition_ratio:shortcut2_over_others:highest_loss",
        "fraction_below:index:shortcut2",
    }
    final_read = converged is None or (converged["shortcut2"] and converged["orthogonal"])
    unresolved = any(first_quarter_unresolved(r["checkpoints"]) for r in runs["shortcut2"])
    out = []
    for row in rows:
        if row.quantity in on_grid and not len(grid):
            row = row.cannot_tell(no_grid)
        elif row.quantity == "index_drop_share:shortcut2:first_quarter" and unresolved:
            row = row.cannot_tell(
                "the 2-shortcut nets' loss falls through the first quarter of its decrease before their first "
                "Hessian after the start: the drop there is not resolved"
            )
        elif row.quantity == "log10_final_condition_ratio:shortcut2_over_orthogonal" and not final_read:
            row = row.cannot_tell(
                f"the 2-shortcut or the orthogonal nets did not converge (final loss more than {CONVERGED:.0%} "
                "above the least-squares optimum): their end of training is not the paper's"
            )
        out.append(row)
    return out


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
    cost={"tiny": "5 s", "quick": "2.8 min measured", "paper": "1.7 h (estimated)"},
    reproduce=reproduce,
    reads_root="mnist",
)
offer(REPRODUCTION, order=110)
