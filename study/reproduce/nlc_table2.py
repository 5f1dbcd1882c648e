"""``nlc-table2``: Philipp and Carbonell, *The Nonlinearity Coefficient*, Table 2 (appendix A.2): the NLC of
plain fully-connected batchnorm-ReLU networks at initialization against depth.

The paper's setting (A.2): width 100 for every hidden layer, d_out = 3, "the NLC on CIFAR10 for batchnorm-ReLU
networks of the same depth (median of 10 random initializations)", computed as in section G (the batch form;
100 random minibatches of 250). Here: the same nets (``ArchSpec(depth, width=100, d_out=3, norm="batch",
init="kaiming")``) on the training split of CIFAR10 when ``--root`` holds it, else of waveform-noise (the JSON's
``data`` says which), median over initializations; keys ``nlc:depth=<L>`` for every depth of the table (2, 5, 10,
15, 20, 25, 50).

The nets are "plain, fully-connected, He-initialized batchnorm-ReLU networks" (A.2): ``init="kaiming"``, He,
Zhang, Ren and Sun's normal fan-in weights (*Delving Deep into Rectifiers*, 2015), biases zero.

How each printed value is compared (``result``'s one rule): each is a median over 10 random initializations,
printed to three significant digits without a spread, so an ESTIMATE: ours agrees within one unit of its last
printed digit plus two standard errors of the difference of the paper's median and ours (``median_spread``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archstudy.sampling import ArchSpec

from ..metrics import nlc
from ..nn.network import build_network
from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row, median_spread
from .nlc_table1 import PAPER, PAPER_INITS, training_inputs

TABLE2 = {2: "1.22", 5: "2.25", 10: "5.97", 15: "15.2", 20: "37.7", 25: "95.8", 50: "9952"}
WIDTH, D_OUT = 100, 3  # appendix A.2


@dataclass(frozen=True)
class Settings:
    inits: int  # random initializations per depth (the table gives their median)
    batches: int  # random minibatches of 250 for Q|J| (section G: 100)
    points: int | None  # training points used (None: the whole training split)


SCALES = {
    "tiny": Settings(inits=2, batches=4, points=500),
    "quick": Settings(inits=5, batches=100, points=None),
    "paper": Settings(inits=10, batches=100, points=None),
}


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    x, where = training_inputs(ctx, s.points)
    rows, values = [], {}
    for depth, printed in TABLE2.items():
        ctx.say(f"nlc-table2: depth {depth} ({s.inits} initializations)")
        spec = ArchSpec(
            depth=depth, width=WIDTH, d_in=x.shape[1], d_out=D_OUT, activation="relu", norm="batch", init="kaiming"
        )
        values[depth] = [
            float(
                nlc(
                    build_network(spec, seed=sub_seed(ctx.seed, depth, k), device=ctx.device),
                    x,
                    batches=s.batches,
                    seed=sub_seed(ctx.seed, depth, k),
                )
            )
            for k in range(s.inits)
        ]
        rows.append(
            Row.printed(
                f"nlc:depth={depth}",
                printed,
                float(np.median(values[depth])),
                estimated=True,
                spread=median_spread(values[depth], PAPER_INITS),
            )
        )
    note = (
        "He-initialized batchnorm-ReLU nets of width 100 with 3 outputs (appendix A.2), NLC in section G's batch "
        f"form on {len(x):,} training points; median over initializations as the paper's. Each "
        "printed median is an estimate: ours agrees within one unit of its last digit plus two standard errors "
        "of the difference of two medians."
    )
    return Measured(
        rows,
        figures=[
            (
                "Table 2: NLC at initialization against depth (median and range over "
                "initializations); crosses: the paper; dashed: NLC_relu(1)^(depth-1).",
                figure(values),
            )
        ],
        data=where,
        note=note,
        extra={"values": values},
    )


def figure(values: dict[int, list[float]]):
    from archstudy.analysis.plotting import BLACK, GREY, RED, new_figure, set_log, set_title

    from ..nn.activations import nlc_tau
    from .page import median_and_range

    fig, (ax,) = new_figure(panel=(5.2, 3.8))
    depths = np.array(list(values))
    grid = np.linspace(depths.min(), depths.max(), 100)
    ax.plot(grid, nlc_tau("relu") ** (grid - 1), color=GREY, ls="--", lw=0.8, label="NLC_relu(1)^(depth−1)")
    median_and_range(ax, depths, [values[d] for d in depths], color=BLACK, label="here (median, range)")
    ax.scatter(depths, [float(TABLE2[d]) for d in depths], marker="x", color=RED, zorder=3, label="Table 2")
    set_log(ax, "y")
    ax.set_xlabel("depth")
    ax.set_ylabel("NLC at initialization")
    ax.legend()
    set_title(ax, "batchnorm-ReLU nets, width 100")
    return fig


REPRODUCTION = Reproduction(
    name="nlc-table2",
    paper=PAPER,
    source="Table 2 (appendix A.2)",
    summary="NLC of batchnorm-ReLU nets at initialization vs depth 2-50, on CIFAR10 (--root) or waveform-noise",
    scales=SCALES,
    cost={"tiny": "30 s", "quick": "42 s measured", "paper": "3 min (estimated)"},
    reproduce=reproduce,
    reads_root="cifar10",
)
offer(REPRODUCTION, order=20)
