"""``variability-collapse``: the variability paper (*Variability of Neural Networks and Han-Layer*), figure 6 and
appendix A.4: the sizes of the C- and G-matrices of plain networks against depth, ReLU against ABS; and its
Proposition 1 (section 4.3; Yu and Zhang, *Householder-Absolute Neural Layers*, section 2.4): the G-matrix of a
HanNet stays orthogonal.

The matrices (A.4, eq. 12-14; ``study.metrics.variability``): for s_0 = x, z_k = W_k s_{k-1} + b_k,
s_k = phi(z_k),

    G_L(x) = prod_k W_k^T Nabla phi(z_k),    C_L(x, x~) = prod_k W_k^T D phi(z_k, z~_k),

D phi the diagonal of secant slopes (phi(u) - phi(v)) / (u - v) (0/0 = 1). Proposition 2: F_L(x) - F_L(x~) =
C_L^T (x - x~), so a small C-matrix is a network collapsing to a constant (C2C).

The networks (A.4): "random weight matrices and bias vectors specified, then multiplied by the Xavier/Kaiming
initialization constant sqrt(2/d)" for ReLU, "initialization multipliers sqrt(2/d) and sqrt(1/d) for ReLU and
absolute-value"; the left plot's title: "Normal Weight Matrices (d = 150) ReLU", depths L = 1 .. 1000. Here:
width d = 150 everywhere (input included, as the paper's F_L: R^d -> R^d), W_k Gaussian times sqrt(2/d)
(``init="kaiming"``) under ReLU and times sqrt(1/d) (``init="xavier"``, square layers) under ABS, plain relu(s)
and |s| (``scale_activation=False``). The biases: "random weight matrices and bias vectors specified, then
multiplied by the [...] initialization constant": b_k N(0, I) times the same multiplier as W_k
(``yz_variability_depth.scale_biases``). B.1's training experiment has them unscaled N(0, 1); neither reading,
nor zero biases, brings the rows to the paper's (each measured in docs/reproductions.md). The
point pair: "a randomly select point pair (x, x~)"
without a distribution; here x, x~ ~ N(0, I_d), independent, one pair for every sample and activation ("Starting
from a random point-pair, we plot the C-matrices computed on a set of random weight-bias pairs as specified with
initialization multipliers"): weight sample j is the same standard normal draws under ReLU and ABS, only the
multiplier differs, so the comparison is paired. The HanNet of
Proposition 1: every width-to-width layer a Householder reflector (u ~ N(0, I)) with ABS; the pipeline's first
layer is always dense, so the check is on the product over the reflector layers 2 .. L, which is what the
proposition is about (G = prod H(u_k) Nabla phi(z_k), each factor orthogonal).

Rows (all claims: the paper prints no number):

* ``log10_c_over_g:ReLU:L=1000``: median over weight samples of log10(|C_L| / sqrt(|G_L(x)| |G_L(x~)|)),
  spectral norms. The paper: "the C-matrix [...] becomes about two-orders of magnitude smaller than the two
  G-matrices at the same depth" (figure 6, left); checked: between -3 and -1.
* ``log10_c_relu_over_abs:L=1000``: the median over weight samples of log10(|C_L| under ReLU / |C_L| under ABS),
  sample j the same standard normal draws under both, scaled by each activation's multiplier. The
  paper: "At L = 1000, the C-matrix for ReLU is more than three orders of magnitude smaller than that for
  absolute-value" (figure 6, right); checked: below -3.
* ``g_orthogonality_error:HanNet:L=1000``: the largest |sigma_i - 1| over the singular values of the HanNet's
  G-matrix over its reflector layers, over samples; Proposition 1: 0 (orthogonal) "with probability one";
  checked: below 1e-9 (float64 round-off over 1000 factors).

Scales: ``paper`` is the paper's setting (d = 150, L = 1000) with 10 weight samples per activation (the paper
shows one draw in the left plot and "a set of random weight-bias pairs" in the right, without their number);
``quick`` the same with 4 samples; ``tiny`` d = 12, L = 40, 2 samples (the rows' depth then reads L=40).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from archstudy.sampling import ArchSpec

from ..metrics.variability import collapse_norms, g_matrix, plain_layers
from ..nn.network import build_network
from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row
from .yz_variability_depth import scale_biases

PAPER = "the variability paper (*Variability of Neural Networks and Han-Layer*)"
KINDS = {
    "ReLU": ("relu", "kaiming", "dense"),
    "ABS": ("abs", "xavier", "dense"),
    "HanNet": ("abs", "xavier", "householder"),
}  # kind -> activation, init of the dense layers, weights
ABOUT_TWO_DECADES = (-3.0, -1.0)  # "about two orders of magnitude smaller"
THREE_DECADES = -3.0  # "more than three orders of magnitude smaller"
ROUND_OFF = 1e-9


@dataclass(frozen=True)
class Settings:
    width: int  # d
    depth: int  # L, hidden layers
    samples: int  # weight samples (and point pairs) per activation
    points: int  # depths at which the norms are recorded (log-spaced from 1 to L)


SCALES = {
    "tiny": Settings(width=12, depth=40, samples=2, points=12),
    "quick": Settings(width=150, depth=1000, samples=4, points=60),
    "paper": Settings(width=150, depth=1000, samples=10, points=120),
}


def spec_of(kind: str, s: Settings) -> ArchSpec:
    """The plain network of ``kind``: L hidden layers of width d (the output layer, which the matrices leave out,
    only completes the ``ArchSpec``)."""
    activation, init, weights = KINDS[kind]
    return ArchSpec(
        depth=s.depth + 1,
        width=s.width,
        d_in=s.width,
        d_out=s.width,
        activation=activation,
        scale_activation=False,
        init=init,
        bias_init="normal",
        weights=weights,
        preset="variability-collapse",
    )


def depths_at(s: Settings) -> list[int]:
    return sorted({int(k) for k in np.round(np.logspace(0, np.log10(s.depth), s.points))} | {s.depth})


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    at = depths_at(s)
    # One random point pair for everything ("Starting from a random point-pair, we plot the C-matrices computed on
    # a set of random weight-bias pairs"), and sample j the same standard normal draws under every activation,
    # scaled by each one's multiplier (the builder draws weight and bias j from the same generators whatever the
    # init's scale): the right plot's comparison is then paired.
    gen = torch.Generator().manual_seed(sub_seed(ctx.seed, 0))
    x, x_tilde = torch.randn(2, s.width, generator=gen, dtype=torch.float64).to(ctx.device)
    norms: dict[str, list[dict]] = {"ReLU": [], "ABS": []}
    han_error = []
    for kind in KINDS:
        spec = spec_of(kind, s)
        ctx.say(f"variability-collapse: {kind}, {s.samples} samples of {s.depth} layers of width {s.width}")
        for j in range(s.samples):
            net = scale_biases(build_network(spec, seed=sub_seed(ctx.seed, 1, j), device=ctx.device))
            weights, biases, phi = plain_layers(net)
            if kind == "HanNet":
                # Proposition 1 on the reflector layers 2 .. L (the first layer is the dense input layer)
                with torch.no_grad():
                    s1 = phi(weights[0] @ x + biases[0])
                    g = g_matrix(weights[1:], biases[1:], phi, s1)
                sigma = torch.linalg.svdvals(g)
                han_error.append(float((sigma - 1.0).abs().max()))
            else:
                norms[kind].append(collapse_norms(weights, biases, phi, x, x_tilde, at=at))
    last = s.depth

    def at_last(kind, key):
        return np.array([n[key][-1] for n in norms[kind]])

    ratio = np.log10(at_last("ReLU", "c") / np.sqrt(at_last("ReLU", "g_x") * at_last("ReLU", "g_x_tilde")))
    paired = np.log10(at_last("ReLU", "c") / at_last("ABS", "c"))  # sample by sample: the same draws
    relu_abs = float(np.median(paired))
    lo, hi = ABOUT_TWO_DECADES
    rows = [
        Row.claim(
            f"log10_c_over_g:ReLU:L={last}",
            float(np.median(ratio)),
            lo <= float(np.median(ratio)) <= hi,
            f"between {lo:g} and {hi:g}: the C-matrix about two orders of magnitude smaller than the two "
            "G-matrices at the same depth (figure 6, left); median over samples",
        ),
        Row.claim(
            f"log10_c_relu_over_abs:L={last}",
            relu_abs,
            relu_abs < THREE_DECADES,
            f"below {THREE_DECADES:g}: at L = 1000 the C-matrix for ReLU more than three orders of magnitude "
            "smaller than for absolute-value (figure 6, right); median over the paired samples",
        ),
        Row.claim(
            f"g_orthogonality_error:HanNet:L={last}",
            max(han_error),
            max(han_error) < ROUND_OFF,
            f"below {ROUND_OFF:g}: a HanNet's G-matrix is orthogonal (Proposition 1); largest |singular value "
            "- 1| over samples",
        ),
    ]
    note = "\n\n".join(
        [
            f"Plain networks of {s.depth} hidden layers of width {s.width}: weights and biases Gaussian times "
            'sqrt(2/d) (ReLU) or sqrt(1/d) (ABS) (A.4: "random weight matrices and bias vectors specified, then '
            'multiplied by the [...] initialization constant"), one point pair x, x~ ~ N(0, I) (the paper: "a '
            'randomly select point pair"), sample j the same draws under both activations. Spectral norms of '
            "C_L(x, x~), "
            f"G_L(x) and G_L(x~) at {len(at)} depths from 1 to {s.depth}, for {s.samples} weight samples per "
            "activation.",
            f"Per sample at L = {last}: log10 |C| / sqrt(|G(x)| |G(x~)|) under ReLU: "
            + ", ".join(f"{v:.2f}" for v in ratio)
            + "; log10 |C| under ReLU: "
            + ", ".join(f"{v:.2f}" for v in np.log10(at_last("ReLU", "c")))
            + ", under ABS: "
            + ", ".join(f"{v:.2f}" for v in np.log10(at_last("ABS", "c")))
            + ".",
            "The left plot of figure 6 is one draw, the right one a set of draws of unstated number; the rows are "
            "medians over our samples, whose C-matrix norms at L = 1000 spread over more than two decades from one "
            "weight sample to the next. Why the medians differ from the paper's figure: not found (the bias "
            "reading is not it: with biases unscaled, scaled or zero the rows stay above the paper's, "
            "docs/reproductions.md).",
        ]
    )
    figures = [
        (
            "Figure 6: left, the spectral norms of C_L(x, x~), G_L(x) and G_L(x~) of one ReLU network against "
            "its depth; right, |C_L| under ReLU and under ABS for every weight sample (thin) and their median "
            "(thick).",
            figure(norms),
        )
    ]
    return Measured(
        rows,
        figures=figures,
        data=f"random point pairs x, x~ ~ N(0, I_{s.width})",
        note=note,
        extra={
            "depths": at,
            "norms": norms,
            "hannet_orthogonality_error": han_error,
            "log10_c_over_g_relu": ratio.tolist(),
        },
    )


def figure(norms: dict[str, list[dict]]):
    from archstudy.analysis.plotting import BLACK, RED, new_figure, set_log, set_title

    fig, (left, right) = new_figure(ncols=2, panel=(4.6, 3.6))
    first = norms["ReLU"][0]
    for key, color, label in (("c", BLACK, "C_L(x, x~)"), ("g_x", RED, "G_L(x)"), ("g_x_tilde", "#1f77b4", "G_L(x~)")):
        left.plot(first["depth"], first[key], color=color, lw=1, label=label)
    set_title(left, "ReLU, one weight sample")
    colors = {"ReLU": BLACK, "ABS": RED}
    for kind, samples in norms.items():
        for n in samples:
            right.plot(n["depth"], n["c"], color=colors[kind], lw=0.5, alpha=0.4)
        med = np.median(np.array([n["c"] for n in samples]), axis=0)
        right.plot(samples[0]["depth"], med, color=colors[kind], lw=1.5, label=f"{kind}: |C_L| (median)")
    set_title(right, "C-matrices, ReLU vs ABS")
    for ax in (left, right):
        set_log(ax, "y")
        set_log(ax, "x")
        ax.set_xlabel("number of hidden layers L")
        ax.set_ylabel("spectral norm")
        ax.legend()
    return fig


REPRODUCTION = Reproduction(
    name="variability-collapse",
    paper=PAPER,
    source="figure 6 and appendix A.4; Proposition 1 (section 4.3)",
    summary="spectral norms of the C- and G-matrices of plain ReLU and ABS nets (d = 150) against depth to 1000, "
    "and the orthogonality of a HanNet's G-matrix",
    scales=SCALES,
    cost={"tiny": "2 s", "quick": "14 s measured", "paper": "2 min (estimated)"},
    reproduce=reproduce,
)
offer(REPRODUCTION, order=80)
