"""``yz-variability-depth``: Yu and Zhang, *Householder-Absolute Neural Layers*, figure 4 (section 2.3), and the
variability paper (*Variability of Neural Networks and Han-Layer*), figure 2 (section 3.2, appendix A.2): the
variability V of FC+ReLU, FC+ABS and HanNet networks at initialization against depth, the FC nets' width solved
for about 4,000 parameters, each value the geometric mean over 3,000 parameter samples.

The measure (Yu and Zhang, eq. 3; the variability paper, eq. 4 and A.2): f = |F_L(x)|^2 over the grid of
Omega = [-1, 1]^2, V = |f|^-2 times the integral of the squared third derivatives along both axes
(``study.metrics.variability``: third differences on a 65 x 65 lattice), "the geometric mean [over parameter
samples] is used which will vanish whenever C2C occurs" (a sample whose output is constant on Omega has V = 0).
|f| is read as the 2-norm over Omega (Yu and Zhang's eq. 3 prints |f|^-2 without a subscript; the variability
paper's eq. 4 is garbled in our copy and may read |f|_inf, the sup norm): the rows use the 2-norm, and the note
gives the peaks under the sup-norm readings |f|_inf^-2 and |f|_inf^-1 of the same samples (``READINGS``).

The networks. "We add an input layer and an output layer, both of dimension 2, to the L hidden layers" (the
variability paper, 3.1): ``ArchSpec(depth=L + 1, d_in=2, d_out=2)``, L = 3, 6, ..., 45 ("depth L varying from 3
to 45 (with increment 3)"); "as depth L grows, the width d decreases so that the total number of model parameters
is approximately 4000": the width whose exact parameter count is closest to 4,000 (``solve_width``). "For ReLU we
use Kaiming initialization, and for [...] ABS we use Xavier initialization" (the variability paper, 3.1): weights
Gaussian times sqrt(2 / fan_in) or sqrt(2 / (fan_in + fan_out)); biases i.i.d. standard normal times the same
constant ("randomly sampled (W, b) with proper scalings", the variability paper, 3.1; "normally distributed
parameter samples scaled by standard initialization factors", Yu and Zhang, figure 2; ``scale_biases``). The
variability paper's B.1 ("We initialize weight matrices and bias vectors with i.i.d. standard normal random
numbers, and the weight matrices are then scaled") describes its training experiment, not these figures (the
rows under its unscaled N(0, 1) biases are measured in docs/reproductions.md);
plain relu(s) and |s|. The HanNets: "The structure of HanNets is
the same as that of FCNets with far fewer model parameters" (figure 2's caption): the FC+ABS net's depth and width
with every width-to-width matrix a Householder reflector (u ~ N(0, I), its bias scaled like the dense square
layer's it replaces; the
variability paper, 1.2: "we replace square weight matrices with Householder reflectors"): 389 to 839 parameters
over the depths, where Yu and Zhang's caption says "reduced from 4000 to 800" (their count at the shallow end is
not explained). Sample j of a depth is the same standard normal draws for the three nets (paired).

Rows (claims: the figures print no number):

* ``peak_depth:FC+ReLU``: the depth of the largest V; "the V3-variability initially increases with L until it
  reaches its peak at around L = 16" (the variability paper, 3.2; its B.2 reads the same plot as "the peak of
  variability occurs at L = 12"): checked between 12 and 18.
* ``min_variability_below_27:FC+ReLU`` and ``max_variability_from_27:FC+ReLU``: "once the number of hidden layers
  reaches 27 or larger, C2C happens to FCNet-ReLU" (Yu and Zhang; the variability paper: "it vanishes suddenly at
  L = 25", not a depth of its own grid): checked V > 0 at every depth below 27 and V = 0 at every depth from 27 on.
  The depth at which one of n samples is constant falls as n grows: only ``paper`` has the papers' 3,000.
* ``peak_depth:FC+ABS`` (inside the range: "variability rises and then gradually declines") and
  ``min_variability:FC+ABS`` (positive: "a fully-developed C2C never happens in the tested range of depth (up to
  45 hidden layers)").
* ``variability:HanNet:L=45`` (above both FC nets' at that depth) and ``deepest_over_shallowest:HanNet`` (V at
  L = 45 over V at L = 3, at least 1): "The variability of HanNets [...] remains at a high level without degradation
  in the entire tested range".

Scales: ``paper`` as the papers (3,000 samples, 15 depths; about 40 minutes here); ``quick`` 500 samples at the 15
depths; ``tiny`` 6 samples at 4 depths on a 17 x 17 lattice.
"""

from __future__ import annotations

from dataclasses import dataclass

import math
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from archstudy.sampling import ArchSpec
from archstudy.sampling.width import solve_width

from ..metrics.variability import geometric_mean, third_difference_variability
from ..nn.network import Network, build_network
from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..nn.family import Family

PAPER = (
    "Yu and Zhang, *Householder-Absolute Neural Layers*; the variability paper (*Variability of Neural Networks "
    "and Han-Layer*)"
)
KINDS = {
    "FC+ReLU": ("relu", "kaiming", "dense"),
    "FC+ABS": ("abs", "xavier", "dense"),
    "HanNet": ("abs", "xavier", "householder"),
}
PARAMS = 4000  # "the total number of model parameters is approximately 4000"
OMEGA = ((-1.0, 1.0), (-1.0, 1.0))
RELU_PEAK = (12, 18)  # "at around L = 16" (section 3.2), "at L = 12" (B.2)
RELU_VANISHES = 27  # Yu and Zhang: "once the number of hidden layers reaches 27 or larger"
CHUNK_ELEMENTS = 1 << 24  # activations per stacked forward (128 MiB of float64)
READINGS = ("2-norm", "sup^-2", "sup^-1")  # |f|^-2 over Omega (the rows), |f|_inf^-2, |f|_inf^-1


@dataclass(frozen=True)
class Settings:
    samples: int  # parameter samples per (net, depth): the papers' 3,000
    depths: tuple  # hidden layers L
    grid: int  # lattice points per side of Omega


SCALES = {
    "tiny": Settings(samples=6, depths=(3, 15, 24, 27), grid=17),
    "quick": Settings(samples=500, depths=tuple(range(3, 46, 3)), grid=65),
    "paper": Settings(samples=3000, depths=tuple(range(3, 46, 3)), grid=65),
}


def spec_of(kind: str, hidden: int) -> ArchSpec:
    """The net of ``kind`` with ``hidden`` hidden layers, at the width of the FC net closest to 4,000 parameters."""
    activation, init, weights = KINDS[kind]
    fc = ArchSpec(
        depth=hidden + 1,
        width=2,
        d_in=2,
        d_out=2,
        activation=activation,
        scale_activation=False,
        init=init,
        bias_init="normal",
        preset="yz-variability-depth",
    )
    fc = solve_width(fc, PARAMS)
    return fc.replace(weights=weights) if weights != "dense" else fc


def init_constant(init: str, fan_in: int, fan_out: int) -> float:
    """The standard deviation of a weight under ``init``: "kaiming" sqrt(2 / fan_in) (He, Zhang, Ren and Sun,
    *Delving Deep into Rectifiers*), "xavier" sqrt(2 / (fan_in + fan_out)) (Glorot and Bengio)."""
    if init == "kaiming":
        return math.sqrt(2.0 / fan_in)
    if init == "xavier":
        return math.sqrt(2.0 / (fan_in + fan_out))
    raise ValueError(f"init_constant: init = {init!r}: must be 'kaiming' or 'xavier'")


@torch.no_grad()
def scale_biases(net: Network) -> Network:
    """``net`` (built with N(0, 1) biases, ``bias_init="normal"``) with every layer's bias times the layer's
    ``init_constant``: W and b both "scaled by standard initialization factors" (Yu and Zhang, figure 2). A
    Householder layer's bias takes the constant of the square dense layer it replaces."""
    linears = cast("Sequence[Family]", net.linears)
    for layer, linear in zip(net.spec.layers(), linears):
        linear.additive_bias().mul_(init_constant(net.spec.init, layer.fan_in, layer.fan_out))
    return net


def lattice_outputs(net: Network, grid: int) -> torch.Tensor:
    """f = |F(x)|^2 of every run of the stack on the grid x grid lattice of Omega = [-1, 1]^2: [runs, grid,
    grid], axis 1 along x_1 (the lattice of ``study.metrics.variability.box_variability``)."""
    t = torch.linspace(-1.0, 1.0, grid, dtype=torch.float64)
    points = torch.cartesian_prod(t, t).to(net.device)  # row i: x_1 = t_i; column j: x_2 = t_j
    with torch.no_grad():
        y = net(points)
    if y.dim() == 2:
        y = y.unsqueeze(0)
    return (y * y).sum(dim=-1).reshape(-1, grid, grid).cpu()


def readings(f: torch.Tensor, grid: int) -> dict[str, np.ndarray]:
    """V of every run's lattice values ``f`` [runs, grid, grid] under each of ``READINGS``: the 2-norm's is
    ``third_difference_variability`` (Yu and Zhang, eq. 3); the sup-norm's divide the same integral by
    max f^2 or max f instead of mean f^2 (f >= 0). A constant f gives 0 under all three."""
    h = 2.0 / (grid - 1)
    v2 = np.array([third_difference_variability(f_r, h) for f_r in f])
    mean_sq = (f * f).mean(dim=(1, 2)).numpy()
    top = f.amax(dim=(1, 2)).numpy()
    integral = v2 * mean_sq  # mean (Delta_1^3 f / h^3)^2 + mean (Delta_2^3 f / h^3)^2
    safe = np.where(top > 0, top, 1.0)
    return {"2-norm": v2, "sup^-2": integral / safe**2, "sup^-1": integral / safe}


def variabilities(spec: ArchSpec, seeds: list[int], grid: int, device) -> dict[str, np.ndarray]:
    """V of the net built from each seed (biases scaled, ``scale_biases``) under each of ``READINGS``, in stacks
    of as many samples as ``CHUNK_ELEMENTS`` allows."""
    per = max(1, CHUNK_ELEMENTS // (grid * grid * max(spec.width, 2)))
    parts = []
    for i in range(0, len(seeds), per):
        net = scale_biases(build_network(spec, seeds=seeds[i : i + per], device=device))
        parts.append(readings(lattice_outputs(net, grid), grid))
    return {r: np.concatenate([p[r] for p in parts]) for r in READINGS}


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    by_reading: dict[str, dict[str, dict[int, float]]] = {r: {k: {} for k in KINDS} for r in READINGS}
    v = by_reading["2-norm"]  # the rows' reading (Yu and Zhang, eq. 3)
    zeros: dict[str, dict[int, int]] = {k: {} for k in KINDS}
    params: dict[str, dict[int, int]] = {k: {} for k in KINDS}
    widths: dict[int, int] = {}
    for hidden in s.depths:
        seeds = [sub_seed(ctx.seed, hidden, j) for j in range(s.samples)]  # paired across the three nets
        for kind in KINDS:
            spec = spec_of(kind, hidden)
            values = variabilities(spec, seeds, s.grid, ctx.device)
            for reading in READINGS:
                by_reading[reading][kind][hidden] = geometric_mean(values[reading])
            zeros[kind][hidden] = int((values["2-norm"] == 0).sum())
            params[kind][hidden] = spec.num_params
            widths[hidden] = spec.width
        ctx.say(
            f"yz-variability-depth: L = {hidden} (width {widths[hidden]}): "
            + ", ".join(f"{k} {v[k][hidden]:.3g}" for k in KINDS)
        )
    rows = claims(v, s.depths)
    note = "\n\n".join(
        [
            f"V on a {s.grid} x {s.grid} lattice of [-1, 1]^2, the geometric mean over {s.samples} parameter samples "
            f"per net and depth (the papers: 3,000). Widths by depth: "
            + ", ".join(f"L={d}: {w}" for d, w in widths.items())
            + "; parameters FC "
            + ", ".join(str(params["FC+ReLU"][d]) for d in s.depths)
            + ", HanNet "
            + ", ".join(str(params["HanNet"][d]) for d in s.depths)
            + ".",
            "Samples with a constant output (V = 0) per depth, FC+ReLU: "
            + ", ".join(f"L={d}: {zeros['FC+ReLU'][d]}" for d in s.depths)
            + ". With fewer samples than the papers' "
            "3,000 the geometric mean vanishes at a larger depth (one constant sample suffices).",
            "Biases N(0, 1) times each layer's initialization constant, as the weights (the figures' \"proper "
            'scalings"). The norm of f that divides the integral, read three ways on the same samples (peak depth '
            "of the geometric mean per net): "
            + "; ".join(
                f"{reading}: " + ", ".join(f"{k} {peak_depth(by_reading[reading][k])}" for k in KINDS)
                for reading in READINGS
            )
            + ". The rows use the 2-norm (Yu and Zhang, eq. 3).",
            "V is the third-difference measure at one fixed lattice: for piecewise-linear nets it grows with the "
            "lattice's resolution, so only values on the same lattice compare.",
        ]
    )
    return Measured(
        rows,
        figures=[
            (
                "Figure 4 (Yu and Zhang) / figure 2 (the variability paper): the geometric mean "
                "of V over parameter samples against the number of hidden layers; a zero "
                "(Collapse to Constants) is drawn at the bottom of the axis.",
                figure(v),
            )
        ],
        data=f"the lattice of Omega = [-1, 1]^2 ({s.grid} x {s.grid} points)",
        note=note,
        extra={
            "variability": v,
            "variability_by_reading": by_reading,
            "constant_samples": zeros,
            "params": params,
            "widths": widths,
        },
    )


def peak_depth(by_depth: dict[int, float]) -> int:
    """The depth of the largest value (the first of equal ones)."""
    return max(by_depth, key=lambda d: by_depth[d])


def claims(v: dict[str, dict[int, float]], depths) -> list[Row]:
    """The rows from the geometric means ``v[kind][depth]`` (module docstring)."""
    depths = list(depths)
    first, last = depths[0], depths[-1]

    relu_peak = peak_depth({d: v["FC+ReLU"][d] for d in depths})
    abs_peak = peak_depth({d: v["FC+ABS"][d] for d in depths})
    before = [d for d in depths if d < RELU_VANISHES]
    from_27 = [d for d in depths if d >= RELU_VANISHES]
    relu_before = min(v["FC+ReLU"][d] for d in before) if before else float("nan")
    relu_from = max(v["FC+ReLU"][d] for d in from_27) if from_27 else float("nan")
    abs_min = min(v["FC+ABS"].values())
    han_last = v["HanNet"][last]
    ratio = han_last / v["HanNet"][first] if v["HanNet"][first] > 0 else float("inf")
    lo, hi = RELU_PEAK
    return [
        Row.claim(
            "peak_depth:FC+ReLU",
            relu_peak,
            lo <= relu_peak <= hi,
            f'between {lo} and {hi}: V rises with depth to a peak "at around L = 16" (the variability paper, '
            '3.2; "L = 12" in its B.2), then declines',
        ),
        Row.claim(
            f"min_variability_below_{RELU_VANISHES}:FC+ReLU",
            relu_before,
            relu_before > 0,
            f'positive at every depth below {RELU_VANISHES}: no Collapse to Constants before "the number of '
            f'hidden layers reaches {RELU_VANISHES}" (Yu and Zhang)',
        ),
        Row.claim(
            f"max_variability_from_{RELU_VANISHES}:FC+ReLU",
            relu_from,
            relu_from == 0.0,
            f'0 at every depth from {RELU_VANISHES} on: "once the number of hidden layers reaches 27 or larger, '
            'C2C happens to FCNet-ReLU" (Yu and Zhang; the geometric mean vanishes with one constant sample)',
        ),
        Row.claim(
            "peak_depth:FC+ABS",
            abs_peak,
            first < abs_peak < last,
            f'inside ({first}, {last}): "variability rises and then gradually declines"',
        ),
        Row.claim(
            "min_variability:FC+ABS",
            abs_min,
            abs_min > 0,
            f'positive at every depth up to {last}: "a fully-developed C2C never happens in the tested range"',
        ),
        Row.claim(
            f"variability:HanNet:L={last}",
            han_last,
            han_last > v["FC+ReLU"][last] and han_last > v["FC+ABS"][last],
            f'above FC+ReLU and FC+ABS at L = {last}: HanNets\' variability "remains at a high level"',
        ),
        Row.claim(
            "deepest_over_shallowest:HanNet",
            ratio,
            ratio >= 1.0,
            f'V(L = {last}) / V(L = {first}) at least 1: "without degradation in the entire tested range"',
        ),
    ]


def figure(v: dict[str, dict[int, float]]):
    from archstudy.analysis.plotting import BLACK, RED, new_figure, set_log, set_title

    fig, (ax,) = new_figure(panel=(5.6, 3.8))
    positive = [x for by_depth in v.values() for x in by_depth.values() if x > 0]
    floor = min(positive) / 10 if positive else 1e-3
    colors = {"FC+ReLU": BLACK, "FC+ABS": RED, "HanNet": "#1f77b4"}
    offsets = {"FC+ReLU": -0.8, "FC+ABS": 0.0, "HanNet": 0.8}
    for kind, by_depth in v.items():
        depths = np.array(list(by_depth), dtype=float)
        values = np.array([x if x > 0 else floor for x in by_depth.values()])
        ax.bar(depths + offsets[kind], values, width=0.8, color=colors[kind], label=kind, alpha=0.8)
    set_log(ax, "y")
    ax.set_xlabel("number of hidden layers L")
    ax.set_ylabel("V (geometric mean over samples)")
    ax.legend()
    set_title(ax, "variability at initialization, about 4,000 parameters (FC)")
    return fig


REPRODUCTION = Reproduction(
    name="yz-variability-depth",
    paper=PAPER,
    source="Yu and Zhang's figure 4 (section 2.3); the variability paper's figure 2 (section 3.2, A.2)",
    summary="variability V at initialization against depth 3-45 of FC+ReLU, FC+ABS and HanNet nets of about 4,000 "
    "parameters, the geometric mean over parameter samples",
    scales=SCALES,
    cost={"tiny": "2 s", "quick": "5.5 min measured", "paper": "40 min (estimated from quick)"},
    reproduce=reproduce,
)
offer(REPRODUCTION, order=70)
