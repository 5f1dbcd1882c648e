"""``nlc-figure1``: Philipp and Carbonell, *The Nonlinearity Coefficient*, figure 1 (section 4, appendix E.1): the
NLC against the relative diameter of the linearly approximable regions, over a population of random architectures
in their initialized state.

What the paper claims: "In figure 1, we plot the relative diameter of the linearly approximable regions of the
network as discussed in section 3 and defined in section E.1 against the NLC in the randomly initialized state. We
find a remarkably close match between both quantities" -- section 3 derives the relative diameter as about 1/NLC
("we posit the inverse of this value [...] as our nonlinearity metric"). The figure prints its correlation (of the
logs, as both axes are logarithmic) at the top, not in the text, so both rows are claims:

* ``pearson_log:nlc_vs_lar_diameter``: Pearson's r of log NLC and log relative diameter over the architectures:
  checked at most -0.9 and significant (two-sided p < 0.05): a close match is a tight decreasing relation;
* ``slope_log:lar_diameter_on_nlc``: the least-squares slope of log diameter on log NLC: checked within
  [-1.2, -0.8], i.e. the diameter goes as NLC^-1 to within 20% in the exponent, section 3's relation.

The architectures, measurements and data. "For each architecture, we considered a single random initialization.
All values were computed in the randomly initialized state. No training was conducted. We use 10 minibatches of
size 250 from the respective dataset and draw 10 random Gaussian U and 10 random Gaussian V [...] we report the
median across those 1000 values for each architecture" (E.1): ``study.metrics.regions.lar_diameter`` (its
docstring says how the paper's displacement formula is read) and ``study.metrics.nlc`` (section G's batch form),
on the training split of waveform-noise (the paper: MNIST, CIFAR10 and waveform-noise, 250 architectures each).
The architectures are those of a study (``sampling.plan_study``) of the paper's space (appendix C): architecture
i is the one ``archstudy run --preset paper --seed SEED`` draws as its i-th, with its initialization seed.
Architectures whose region size hits the ladder's ends (below 1e-9: "architectures with an NLC less than 10^-9 are
not shown in figure 1"; or the ladder's top, 1000 diameters of the data) or whose output is not finite are left
out of the rows and counted in the JSON.

Scales: ``paper`` is the paper's 250 waveform-noise architectures at 1,000,000 parameters (hours here: a GPU
job); ``quick`` 40 architectures at 20,000 parameters with 3 minibatches x 3 U x 3 V (the ladder of k costs a
forward pass per step: seconds per deep, narrow net here); ``tiny`` 3 at 3,000 with 1 minibatch x 2 x 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archstudy.sampling.plan import plan_study

from ..datasets import load_dataset
from ..experiment.metric_options import K_MAX, K_MIN
from ..metrics.nlc import nlc
from ..metrics.regions import lar_diameter
from ..nn.network import build_network
from .reproduction import Context, Measured, Reproduction, offer
from .result import Row
from .nlc_table1 import PAPER

DATASET = "waveform-noise"
PEARSON_AT_MOST = -0.9  # "a remarkably close match": a tight decreasing relation of the logs
SLOPE = (-1.2, -0.8)  # the relative diameter as NLC^-1 (section 3), to 20% in the exponent


@dataclass(frozen=True)
class Settings:
    architectures: int
    param_budget: int
    batches: int  # minibatches of 250 (E.1: 10)
    directions: int  # random U and V per minibatch (E.1: 10 each)
    nlc_batches: int = 100  # minibatches of 250 for the NLC's Jacobian (section G: 100)


SCALES = {
    "tiny": Settings(architectures=3, param_budget=3000, batches=1, directions=2, nlc_batches=4),
    # 3 x 3 x 3 of E.1's 10 x 10 x 10 configurations: each one walks the ladder of k with a forward pass per
    # step, seconds per deep narrow net here, and the median of 27 is the architecture's value
    "quick": Settings(architectures=40, param_budget=20_000, batches=3, directions=3),
    "paper": Settings(architectures=250, param_budget=1_000_000, batches=10, directions=10),
}


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    data = load_dataset(DATASET, seed=0)
    x = data.train.x.to(ctx.device)
    points = []
    for planned in plan_study(ctx.seed, s.architectures, data.d_in, data.n_classes, "paper", s.param_budget):
        net = build_network(planned.spec, seed=planned.seed, device=ctx.device)
        value = float(nlc(net, x, batches=s.nlc_batches, seed=planned.seed))
        diameter = lar_diameter(net, x, batches=s.batches, directions=s.directions, seed=planned.seed)
        points.append(
            {
                "index": planned.index,
                "nlc": value,
                "lar_diameter": diameter,
                "depth": planned.spec.depth,
                "activation": planned.spec.activation,
                "norm": planned.spec.norm,
                "skips": planned.spec.skip != "none",
            }
        )
        ctx.count(planned.index + 1, s.architectures, "architectures measured")
        if (planned.index + 1) % 10 == 0:
            ctx.say(f"nlc-figure1: {planned.index + 1} of {s.architectures} architectures measured")
    rows, facts = claims(points)
    note = (
        f"{len(points)} architectures of the paper's space at {s.param_budget:,} parameters on waveform-noise, each "
        f"at its study initialization seed; E.1 with {s.batches} minibatches of 250 x {s.directions} U x "
        f"{s.directions} V. Left out of the rows: {facts['censored']} whose region size is at an end of the "
        f"ladder (k = {K_MIN:g} or {K_MAX:g}) and {facts['not_finite']} whose output or NLC is not finite. The "
        f"median of relative diameter x NLC is {facts['median_product']:.3g} (section 3's derivation: about 1)."
    )
    return Measured(
        rows,
        figures=[
            (
                "Figure 1: the relative diameter of the linearly approximable regions against "
                "the NLC at initialization, one point per architecture (dashed: 1/NLC; "
                "crosses: left out at a ladder end).",
                figure(points),
            )
        ],
        data=f"waveform-noise (Breiman's generator, dataset seed 0), training split, {len(x):,} points",
        note=note,
        extra={"architectures": points, **facts},
    )


def claims(points: list[dict]) -> tuple[list[Row], dict]:
    """The two rows from the measured (NLC, relative diameter) pairs (module docstring)."""
    from scipy import stats

    finite = [p for p in points if math.isfinite(p["nlc"]) and p["nlc"] > 0 and math.isfinite(p["lar_diameter"])]
    inside = [p for p in finite if K_MIN <= p["lar_diameter"] < K_MAX and p["lar_diameter"] > 0]
    lx = np.log10([p["nlc"] for p in inside])
    ly = np.log10([p["lar_diameter"] for p in inside])
    if len(inside) >= 3 and np.ptp(lx) > 0:
        r, p_value = stats.pearsonr(lx, ly)
        slope = float(np.polyfit(lx, ly, 1)[0])
    else:
        r, p_value, slope = float("nan"), float("nan"), float("nan")
    lo, hi = SLOPE
    rows = [
        Row.claim(
            "pearson_log:nlc_vs_lar_diameter",
            float(r),
            bool(r <= PEARSON_AT_MOST and p_value < 0.05),
            f'at most {PEARSON_AT_MOST:g} and significant (p < 0.05): "a remarkably close match" of the NLC '
            "and the relative diameter (logs, as figure 1's axes)",
        ),
        Row.claim(
            "slope_log:lar_diameter_on_nlc",
            slope,
            bool(lo <= slope <= hi),
            f"within [{lo:g}, {hi:g}]: the relative diameter as 1/NLC (section 3), least squares on the logs",
        ),
    ]
    products = [p["nlc"] * p["lar_diameter"] for p in inside]
    facts = {
        "pearson_p": float(p_value),
        "n_in_rows": len(inside),
        "censored": len(finite) - len(inside),
        "not_finite": len(points) - len(finite),
        "median_product": float(np.median(products)) if products else float("nan"),
    }
    return rows, facts


def figure(points: list[dict]):
    from archstudy.analysis.plotting import BLACK, GREY, RED, new_figure, set_log, set_title

    fig, (ax,) = new_figure(panel=(5.0, 4.0))
    ok = [p for p in points if math.isfinite(p["nlc"]) and p["nlc"] > 0 and math.isfinite(p["lar_diameter"])]
    inside = [p for p in ok if K_MIN <= p["lar_diameter"] < K_MAX and p["lar_diameter"] > 0]
    ends = [p for p in ok if p not in inside]
    ax.scatter(
        [p["nlc"] for p in inside],
        [p["lar_diameter"] for p in inside],
        s=12,
        c=[RED if p["skips"] else BLACK for p in inside],
        alpha=0.7,
    )
    if ends:
        ax.scatter(
            [p["nlc"] for p in ends], [max(p["lar_diameter"], K_MIN) for p in ends], marker="x", s=14, color=GREY
        )
    if inside:
        grid = np.geomspace(min(p["nlc"] for p in inside), max(p["nlc"] for p in inside), 50)
        ax.plot(grid, 1.0 / grid, color=GREY, ls="--", lw=0.8)
    set_log(ax, "x")
    set_log(ax, "y")
    ax.set_xlabel("NLC at initialization")
    ax.set_ylabel("relative diameter of linearly approximable regions")
    set_title(ax, "waveform-noise (red: skip connections)")
    return fig


REPRODUCTION = Reproduction(
    name="nlc-figure1",
    paper=PAPER,
    source="figure 1 (section 4, appendix E.1)",
    summary="NLC against the relative diameter of linearly approximable regions at initialization over random "
    "architectures of the paper's space on waveform-noise",
    scales=SCALES,
    cost={"tiny": "3 s", "quick": "2.3 min measured", "paper": "hours (estimated): a GPU job"},
    reproduce=reproduce,
)
offer(REPRODUCTION, order=60)
