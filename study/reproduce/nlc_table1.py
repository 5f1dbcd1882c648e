"""``nlc-table1``: Philipp and Carbonell, *The Nonlinearity Coefficient*, Table 1 lines A, B and E (section 5,
appendix E.4), for the eight activations of the paper.

* Line A, ``nlc_tau:<act>``: NLC_tau(1) = Q tau'(s) / S tau(s), s ~ N(0, 1) (section 5), by quadrature
  (``study.nn.activations.nlc_tau``).
* Line E, ``linear_approx_error:<act>``: (Q(tau - taubar) / Q taubar)^2 with taubar the best linear fit under
  N(0, 1) (E.4), by quadrature (``study.nn.activations.linear_approx_error``).
* Line B, ``nlc_depth2_bn:<act>``: "the median empirical NLC over 10 random initializations of the 2-layer
  network" with batchnorm, "which contains a single copy of tau at the single hidden layer" (section 5): a
  depth-2 net linear -> batchnorm -> tau -> linear, its NLC in section G's batch form (minibatches of 250,
  100 random minibatches for the Jacobian) on inputs "distributed according to a Gaussian with zero mean and
  covariance sigma I" with sigma = 1. The paper gives neither the width nor the input dimension of this net;
  we take appendix A.2's batchnorm nets (100-dimensional Gaussian inputs, width 100, d_out = 3) and 10,000
  input points per initialization, each initialization with its own points. The weights are appendix C's
  orthogonal init (the builder's; batchnorm removes the scale of the first layer and the NLC is invariant to
  the scale of the last).

Tolerances: lines A and E are computed, not sampled: half a unit in the last digit the paper prints
(``printed_precision``). Line B is a median over random initializations that the paper prints to two decimals
without a spread: the print's precision plus the sampling error of two such medians (``two_medians_tolerance``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from archstudy.sampling import PAPER_ACTIVATIONS, ArchSpec

from ..nn.activations import linear_approx_error, nlc_tau
from ..metrics import nlc
from ..nn.network import build_network
from .reproduction import Context, Measured, Reproduction, sub_seed
from .result import Row, printed_precision, two_medians_tolerance

PAPER = "Philipp and Carbonell, *The Nonlinearity Coefficient*"

# Table 1 as printed: line A (NLC_tau(1)), line B (NLC depth 2), line E (linear approximation error).
LINE_A = {"relu": "1.211", "selu": "1.035", "tanh": "1.085", "sigmoid": "1.017", "even_tanh": "2.335",
          "gaussian": "1.577", "square": "1.414", "odd_square": "1.155"}
LINE_B = {"relu": "1.22", "selu": "1.05", "tanh": "1.09", "sigmoid": "1.03", "even_tanh": "2.34",
          "gaussian": "1.61", "square": "1.48", "odd_square": "1.20"}
LINE_E = {"relu": "0.222", "selu": "0.030", "tanh": "0.075", "sigmoid": "0.0024", "even_tanh": "0.276",
          "gaussian": "0.155", "square": "2.000", "odd_square": "0.178"}
assert set(LINE_A) == set(LINE_B) == set(LINE_E) == set(PAPER_ACTIVATIONS)

# Appendix A.2's batchnorm nets: 100-dimensional Gaussian inputs, width 100, three outputs.
D_IN, WIDTH, D_OUT = 100, 100, 3


@dataclass(frozen=True)
class Settings:
    inits: int  # random initializations per activation (line B is their median)
    points: int  # Gaussian input points per initialization
    batches: int  # random minibatches of 250 for Q|J| (section G: 100)


SCALES = {"tiny": Settings(inits=2, points=500, batches=4), "quick": Settings(inits=5, points=10_000, batches=100),
          "paper": Settings(inits=10, points=10_000, batches=100)}


def depth2_nlc(activation: str, seed: int, settings: Settings, device) -> float:
    """NLC of one depth-2 batchnorm net (init ``seed``) on its own N(0, I) inputs (line B's setting)."""
    x = torch.randn(settings.points, D_IN, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    spec = ArchSpec(depth=2, width=WIDTH, d_in=D_IN, d_out=D_OUT, activation=activation, norm="batch")
    net = build_network(spec, seed=seed, device=device)
    return float(nlc(net, x.to(device), batches=settings.batches, seed=seed))


def run(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    rows_a, rows_b, rows_e, line_b = [], [], [], {}
    for act in PAPER_ACTIVATIONS:
        rows_a.append(Row.close(f"nlc_tau:{act}", float(LINE_A[act]), nlc_tau(act), printed_precision(LINE_A[act]),
                                "printed precision"))
        rows_e.append(Row.close(f"linear_approx_error:{act}", float(LINE_E[act]), linear_approx_error(act),
                                printed_precision(LINE_E[act]), "printed precision"))
        ctx.say(f"nlc-table1: line B, {act} ({s.inits} initializations)")
        values = [depth2_nlc(act, sub_seed(ctx.seed, k), s, ctx.device) for k in range(s.inits)]
        line_b[act] = values
        tol, why = two_medians_tolerance(LINE_B[act], values)
        rows_b.append(Row.close(f"nlc_depth2_bn:{act}", float(LINE_B[act]), float(np.median(values)), tol, why))
    note = ("Line B: a depth-2 batchnorm net (linear, batchnorm, tau, linear) of width 100 on 100-dimensional "
            "N(0, I) inputs with 3 outputs, appendix A.2's setting; the paper does not state line B's width or "
            "input dimension. Its NLC is section G's batch form; the median over initializations as the paper's.")
    return Measured(rows_a + rows_b + rows_e, figures=[("Table 1: line B (median and range over initializations) "
                                                        "against line A; the paper's line B as crosses.",
                                                        figure(line_b))],
                    data=f"line B: {s.points:,} points of a {D_IN}-dimensional standard Gaussian per initialization",
                    note=note, extra={"line_b_values": line_b})


def figure(line_b: dict[str, list[float]]):
    from archstudy.analysis.plotting import BLACK, GREY, RED, new_figure

    from .page import median_and_range

    fig, (ax,) = new_figure(panel=(6.4, 3.6))
    acts = list(line_b)
    x = np.arange(len(acts))
    ax.bar(x, [nlc_tau(a) for a in acts], color=GREY, alpha=0.5, label="line A: NLC_τ(1)")
    median_and_range(ax, x, [line_b[a] for a in acts], color=BLACK, label="line B here (median, range)")
    ax.scatter(x, [float(LINE_B[a]) for a in acts], marker="x", color=RED, zorder=3, label="line B, the paper")
    ax.set_xticks(x, acts, rotation=30, fontsize=7)
    ax.set_ylim(0.9, 2.5)
    ax.set_ylabel("NLC")
    ax.legend(fontsize=7)
    ax.set_title("depth-2 batchnorm nets vs the activation alone", fontsize=8)
    return fig


REPRODUCTION = Reproduction(
    name="nlc-table1", paper=PAPER, source="Table 1 lines A, B and E (section 5, appendix E.4)",
    summary="NLC_tau(1), the NLC of depth-2 batchnorm nets and the linear-approximation error of the 8 activations",
    scales=SCALES, cost={"tiny": "5 s", "quick": "40 s", "paper": "1.5 min (estimated)"}, run=run)
