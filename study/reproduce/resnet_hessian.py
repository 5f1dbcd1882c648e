"""``resnet-hessian``: Li, Jiao, Han and Weissman, *Demystifying ResNet*, figure 4 and Theorem 2: the condition
number of the Hessian of the loss at the initial point of linear networks, against depth, and the flatness of the
3-shortcut nets' initial point.

The networks (section 3, eq. 1-2; d_x = d_y = d = 10). An ``n``-shortcut linear network of depth L = R n has
R residual units of n weight matrices W^{r,1..n} (d x d) and an identity shortcut each:

    y = prod_{r=1..R} (W^{r,n} ... W^{r,1} + I) x;

a linear network without shortcuts of depth L is y = W^L ... W^1 x. The loss is the mean squared error
L = 1/(2m) sum_mu |y^mu - W x^mu|^2 (appendix A.2, eq. 23), which depends on the data only through its second
moments: L = 1/2 tr(W Sxx W^T) - tr(W Sxy) + 1/2 tr(Syy), Sxx = X^T X / m, Sxy = X^T Y / m.

The initial points (section 4.1 and 5): the shortcut networks start at zero, "with small random perturbations
to escape from it. We first Xavier initialize the weight matrices, and then multiply a small constant (0.01)
to them"; the networks without shortcuts start from orthogonal (Saxe, McClelland and Ganguli, *Exact Solutions to
the Nonlinear Dynamics of Learning in Deep Linear Neural Networks*, 2014) or Xavier (Glorot and Bengio:
Gaussian, variance 2 / (fan_in + fan_out)) weights. The data (appendix B): "whitened versions of MNIST. Ten
greatest principal components are kept for the dataset inputs. The dataset outputs are represented using
one-hot encoding": the inputs centred, projected on their 10 leading principal directions and each scaled to
unit variance (so Sxx = I), the MNIST training images when ``--root`` holds MNIST, else scikit-learn's bundled
digits (all 1,797).

The condition number (appendix B): "As the |lambda|_min of Hessian is usually very unstable, we calculated
|lambda|_max / |lambda|_(0.1) to represent condition number instead, where |lambda|_(0.1) is the 10th
percentile of the absolute values of eigenvalues" (numpy's linear interpolation between order statistics).
Figure 4 shows its mean and standard deviation over 10 runs; so do we, on exact Hessians (the Jacobian of the
gradient of the loss as a function of the flat float64 vector of all weights, by ``torch.func``; checked against
finite differences and Theorem 2's closed forms in the tests).

Theorem 2 (n = 2): at zero the Hessian is block diagonal with blocks [[0, A^T], [A, 0]], its eigenvalues are
+-sigma_k(M), M = Sxx - Syx (eq. 22-26; sigma_pre = identity), each with multiplicity d R, so its condition
number is the same at every depth (eq. 9): ``theorem2_condition_number``. The rows
``condition_number:shortcut2:depth=<L>`` compare ours with it (within a factor 1.5: "depth-invariant").

Theorem 2.1 (n >= 3): zero is an (n-1)th-order stationary point, "the Hessian is a zero matrix", "an extremely
flat (high-order) stationary point" (abstract). The paper claims growth of the condition number with depth only
for the 1-shortcut, Xavier and orthogonal nets (section 5: rows ``condition_number:<kind>:depth=<L>``, claims);
for the 3-shortcut nets the rows check what Theorem 2.1 implies at the perturbed zero point: its largest |eigenvalue|
is far below the 2-shortcut net's (``largest_eigenvalue:shortcut3:depth=<L>``: below a tenth of Theorem 2's
sigma_max(M), the 2-shortcut net's at zero at every depth), and it shrinks with the perturbation, in proportion to
it, since the Hessian at zero vanishes and the loss is a polynomial in the weights, so the Hessian at eps theta is
O(eps) (``largest_eigenvalue_shrinks:shortcut3:depth=<L>``: the ratio of the values at perturbations 0.001 and
0.01, 0.1 within a factor 1.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ..nn.network import orthogonal_submatrix
from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row

PAPER = "Li, Jiao, Han and Weissman, *Demystifying ResNet*"
KINDS = {"shortcut1": 1, "shortcut2": 2, "shortcut3": 3, "orthogonal": 0, "xavier": 0}  # kind -> shortcut depth
# The claims the rows check (``Row.checking``): figure 4's, one per kind of net (none of the 3-shortcut nets), and
# Theorem 2.1's two, of its zero Hessian at zero, at the perturbed zero point.
CLAIMS = {
    "shortcut1": "figure 4: the 1-shortcut nets' condition number grows with depth",
    "shortcut2": "figure 4, Theorem 2: the 2-shortcut nets' condition number does not grow with depth",
    "orthogonal": "figure 4: the orthogonal nets' condition number grows with depth",
    "xavier": "figure 4: the Xavier nets' condition number grows with depth",
}
FLAT_CLAIM = "Theorem 2.1: the 3-shortcut nets' largest |eigenvalue| at the perturbed zero far below the 2-shortcut's"
SHRINK_CLAIM = "Theorem 2.1: the 3-shortcut nets' largest |eigenvalue| in proportion to the perturbation"
COMPONENTS = 10  # "Ten greatest principal components are kept" (appendix B)
PERTURBATION = 0.01  # "Xavier initialize the weight matrices, and then multiply a small constant (0.01)" (4.1)
SMALLER = 0.001  # the second perturbation size at which the 3-shortcut nets are measured (Theorem 2.1's check)
FAR_BELOW = 0.1  # "far below" the 2-shortcut net's largest |eigenvalue|: under this fraction of it
PERCENTILE = 10.0  # |lambda|_(0.1) (appendix B)
DEPTH_INVARIANT = 1.5  # the claim's strength: "constant in depth" within this factor of Theorem 2's value


@dataclass(frozen=True)
class Settings:
    max_depth: int  # depths 2 .. max_depth (those a multiple of the shortcut depth for shortcut nets)
    runs: int  # random initial points per (kind, depth); figure 4: 10


SCALES = {
    "tiny": Settings(max_depth=6, runs=2),
    "quick": Settings(max_depth=16, runs=3),
    "paper": Settings(max_depth=16, runs=10),
}


# -- data ---------------------------------------------------------------------------------------------------


def whiten(x: np.ndarray, k: int = COMPONENTS) -> np.ndarray:
    """The inputs centred, on their ``k`` leading principal directions, each scaled to unit variance:
    z = diag(s_1..k / sqrt(m))^-1 V_k^T (x - mean), so that Z^T Z / m = I."""
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:k].T / (s[:k] / math.sqrt(len(x)))


@dataclass(frozen=True)
class Moments:
    """The data as the loss sees it: Sxx = X^T X / m, Sxy = X^T Y / m (d x d) and tr(Syy) = |Y|_F^2 / m."""

    sxx: torch.Tensor
    sxy: torch.Tensor
    syy: float

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray) -> "Moments":
        m = len(x)
        return cls(torch.from_numpy(x.T @ x / m), torch.from_numpy(x.T @ y / m), float((y * y).sum() / m))

    def to(self, device) -> "Moments":
        return Moments(self.sxx.to(device), self.sxy.to(device), self.syy)


def one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    return np.eye(classes)[labels]


def load_data(root) -> tuple[np.ndarray, np.ndarray, str]:
    """(whitened inputs, one-hot targets, what they are): MNIST's training images from ``root``, else the digits."""
    if root is not None:
        from ..datasets.images import IMAGE_SETS

        image_set = IMAGE_SETS["mnist"]
        paths = image_set.locate(root)
        images, labels, _, _ = image_set.read(paths, image_set.expected(root))
        x = np.asarray(images, dtype=np.float64).reshape(len(labels), -1)
        what = f"MNIST training images ({len(labels):,}, from {root})"
    else:
        from sklearn.datasets import load_digits

        bunch = load_digits()
        x, labels = np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)
        what = f"scikit-learn's bundled digits (all {len(labels):,}; no --root with MNIST given; the paper used MNIST)"
    return whiten(x), one_hot(np.asarray(labels, dtype=np.int64), 10), what + ", whitened to 10 principal components"


def full_batch(root, device):
    """(the data's moments, which give the loss; the inputs and targets, for gradient descent; what they are), on
    ``device``: ``load_data``'s whitened MNIST from ``root`` or the digits (resnet-depth, resnet-norms)."""
    xn, yn, what = load_data(root)
    return Moments.of(xn, yn).to(device), torch.from_numpy(xn).to(device), torch.from_numpy(yn).to(device), what


# -- the networks, the loss and its Hessian -------------------------------------------------------------------


def end_to_end(theta: torch.Tensor, depth: int, shortcut: int, d: int) -> torch.Tensor:
    """W of eq. 1-2 from the flat weights (layer l's matrix is ``theta[l d^2 : (l+1) d^2]`` as d x d, layer 1
    first): prod_r (W^{r,n} ... W^{r,1} + I) for an n-shortcut net, W^L ... W^1 without shortcuts (n = 0)."""
    layers = theta.reshape(depth, d, d)
    eye = torch.eye(d, dtype=theta.dtype, device=theta.device)
    if shortcut == 0:
        w = layers[0]
        for layer in layers[1:]:
            w = layer @ w
        return w
    w = eye
    for r in range(depth // shortcut):
        branch = layers[r * shortcut]
        for layer in layers[r * shortcut + 1 : (r + 1) * shortcut]:
            branch = layer @ branch
        w = (branch + eye) @ w
    return w


def loss(theta: torch.Tensor, depth: int, shortcut: int, data: Moments) -> torch.Tensor:
    """1/(2m) sum_mu |y - W x|^2 = 1/2 tr(W Sxx W^T) - tr(W Sxy) + 1/2 tr(Syy)."""
    w = end_to_end(theta, depth, shortcut, data.sxx.shape[0])
    return 0.5 * torch.sum((w @ data.sxx) * w) - torch.sum(w * data.sxy.T) + 0.5 * data.syy


def hessian(theta: torch.Tensor, depth: int, shortcut: int, data: Moments) -> torch.Tensor:
    """The exact Hessian of ``loss`` at ``theta`` (P x P, P = depth d^2), by reverse-over-reverse autodiff (the
    Jacobian of the gradient; forward mode would make torch load its jit-scripted decompositions, seconds)."""
    of_theta: Callable[[torch.Tensor], torch.Tensor] = lambda t: loss(t, depth, shortcut, data)
    return torch.func.jacrev(torch.func.grad(of_theta))(theta)


def condition_number_of(eigenvalues) -> float:
    """|lambda|_max / |lambda|_(0.1), the 10th percentile of |lambda| (appendix B)."""
    a = np.abs(np.asarray(eigenvalues, dtype=np.float64))
    return float(a.max() / np.percentile(a, PERCENTILE))


def spectrum(h: torch.Tensor) -> np.ndarray:
    # torch's symmetric eigensolver: numpy's, with its own BLAS threads, is many times slower on a busy machine
    return torch.linalg.eigvalsh(h).cpu().numpy()


def theorem2_condition_number(data: Moments) -> float:
    """Eq. 9 under appendix B's condition number: the spectrum +-sigma_k(M), M = Sxx - Syx, each with the
    same multiplicity at every depth (eq. 22-26), so the 10th percentile does not depend on depth either."""
    m = (data.sxx - data.sxy.T).cpu().numpy()
    sigma = np.linalg.svd(m, compute_uv=False)
    d = len(sigma)
    return condition_number_of(np.repeat(np.concatenate([sigma, -sigma]), d))


def theorem2_largest_eigenvalue(data: Moments) -> float:
    """sigma_max(M), M = Sxx - Syx: the largest |eigenvalue| of a 2-shortcut net's Hessian at zero, at every depth
    (Theorem 2, eq. 22-26)."""
    return float(np.linalg.svd((data.sxx - data.sxy.T).cpu().numpy(), compute_uv=False)[0])


def initial_point(kind: str, depth: int, d: int, seed: int, perturbation: float = PERTURBATION) -> torch.Tensor:
    """The flat weights of run ``seed``: orthogonal (Haar) or Xavier (Gaussian, variance 2 / (d + d)) layers;
    for the shortcut nets Xavier times ``perturbation`` (section 4.1's perturbed zero: 0.01)."""
    rng = np.random.default_rng(seed)
    if kind == "orthogonal":
        layers = [orthogonal_submatrix(rng, d, d) for _ in range(depth)]
    else:
        layers = [rng.standard_normal((d, d)) * math.sqrt(2.0 / (d + d)) for _ in range(depth)]
        if KINDS[kind]:
            layers = [w * perturbation for w in layers]
    return torch.from_numpy(np.stack(layers).reshape(-1))


def depths(kind: str, max_depth: int) -> list[int]:
    n = KINDS[kind]
    return [L for L in range(2, max_depth + 1) if n == 0 or L % n == 0]


# -- the reproduction ------------------------------------------------------------------------------------------


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    x, y, what = load_data(ctx.root)
    data = Moments.of(x, y).to(ctx.device)
    d = x.shape[1]
    cond: dict[str, dict[int, list[float]]] = {k: {} for k in KINDS}
    largest: dict[str, dict[int, list[float]]] = {k: {} for k in KINDS}
    smaller: dict[int, list[float]] = {}  # the 3-shortcut nets' largest |eigenvalue| at perturbation SMALLER
    for kind, n in KINDS.items():
        ctx.say(f"resnet-hessian: {kind}, depths {depths(kind, s.max_depth)}, {s.runs} runs each")
        for L in depths(kind, s.max_depth):
            cond[kind][L], largest[kind][L] = [], []
            for run_index in range(s.runs):
                seed = sub_seed(ctx.seed, n, L, run_index)
                eig = spectrum(hessian(initial_point(kind, L, d, seed).to(ctx.device), L, n, data))
                cond[kind][L].append(condition_number_of(eig))
                largest[kind][L].append(float(np.abs(eig).max()))
                if kind == "shortcut3":  # the same draw, scaled by SMALLER instead of PERTURBATION
                    theta = initial_point(kind, L, d, seed, SMALLER).to(ctx.device)
                    smaller.setdefault(L, []).append(float(np.abs(spectrum(hessian(theta, L, n, data))).max()))
    theorem = theorem2_condition_number(data)
    sigma_max = theorem2_largest_eigenvalue(data)
    rows: list[Row] = []
    for kind in KINDS:
        claim = CLAIMS.get(kind, "")
        means = {L: float(np.mean(v)) for L, v in cond[kind].items()}
        first, last = min(means), max(means)
        for L, value in means.items():
            key = f"condition_number:{kind}:depth={L}"
            if kind == "shortcut2":
                rows.append(
                    Row.ratio(
                        key,
                        theorem,
                        value,
                        DEPTH_INVARIANT,
                        "depth-invariant, Theorem 2; paper = its eq. 9 on this data",
                    ).checking(claim)
                )
            elif kind == "shortcut3":
                continue  # the paper claims nothing of it: Theorem 2.1's rows below
            elif L == first:
                rows.append(
                    Row.claim(
                        key, value, value < means[last], f"grows with depth: below the value at depth {last}"
                    ).checking(claim)
                )
            else:
                rows.append(
                    Row.claim(
                        key, value, value > means[first], f"grows with depth: above the value at depth {first}"
                    ).checking(claim)
                )
    for L in largest["shortcut3"]:
        value = float(np.mean(largest["shortcut3"][L]))
        rows.append(
            Row.claim(
                f"largest_eigenvalue:shortcut3:depth={L}",
                value,
                value < FAR_BELOW * sigma_max,
                f"far below the 2-shortcut net's (Theorem 2.1: zero Hessian at zero): under "
                f"{FAR_BELOW:g} x sigma_max(M) = {FAR_BELOW * sigma_max:.3g}, Theorem 2's largest "
                f"|eigenvalue| of a 2-shortcut net at zero",
            ).checking(FLAT_CLAIM)
        )
        ratio = float(np.mean(smaller[L]) / value)
        rows.append(
            Row.ratio(
                f"largest_eigenvalue_shrinks:shortcut3:depth={L}",
                SMALLER / PERTURBATION,
                ratio,
                DEPTH_INVARIANT,
                f"the value at perturbation {SMALLER:g} over that at {PERTURBATION:g}: "
                "in proportion to the perturbation, Theorem 2.1 (paper = the perturbations' ratio)",
            ).checking(SHRINK_CLAIM)
        )
    note = (
        "Condition number = |λ|max / |λ|(0.1), the 10th percentile of |λ| (appendix B), the mean over runs as "
        "figure 4. Shortcut nets start at Xavier × 0.01 (section 4.1's perturbed zero), the nets without "
        "shortcuts at orthogonal or Xavier weights. The paper claims growth with depth for the 1-shortcut, "
        "Xavier and orthogonal nets only; for the 3-shortcut nets Theorem 2.1 says the Hessian at zero is the "
        "zero matrix, so the rows check its consequences at the perturbed zero: the largest |λ| far below the "
        "2-shortcut net's and shrinking in proportion to the perturbation (measured again on the same draws "
        f"scaled by {SMALLER:g} instead of {PERTURBATION:g}). Their condition numbers stay in the JSON "
        "('condition_numbers') and the figure."
    )
    return Measured(
        rows,
        figures=[
            (
                "Figure 4: the condition number of the Hessian at the initial point against "
                "depth (mean ± standard deviation over runs; dashed: Theorem 2's eq. 9); right: "
                f"its largest |λ| (dotted: the 3-shortcut nets at perturbation {SMALLER:g}).",
                figure(cond, largest, theorem, smaller),
            )
        ],
        data=what,
        note=note,
        extra={
            "theorem2_condition_number": theorem,
            "theorem2_largest_eigenvalue": sigma_max,
            "condition_numbers": cond,
            "largest_eigenvalue": largest,
            "largest_eigenvalue_shortcut3_smaller_perturbation": smaller,
            "perturbations": [PERTURBATION, SMALLER],
        },
    )


def figure(cond, largest, theorem: float, smaller=None):
    from archstudy.analysis.plotting import BLACK, GREY, new_figure, set_log, set_title

    colors = {
        "shortcut1": "#ff7f0e",
        "shortcut2": BLACK,
        "shortcut3": "#9467bd",
        "orthogonal": "#1f77b4",
        "xavier": "#d62728",
    }
    fig, axes = new_figure(ncols=2, panel=(4.6, 3.6))
    for ax, values, ylabel in (
        (axes[0], cond, "condition number |λ|max / |λ|(0.1)"),
        (axes[1], largest, "largest |λ|"),
    ):
        for kind, by_depth in values.items():
            ls = np.array(list(by_depth))
            mean = np.array([np.mean(v) for v in by_depth.values()])
            sd = np.array([np.std(v) for v in by_depth.values()])
            # shortcut1 dashed: it lies almost on the orthogonal nets' curve (section 5: similar dynamics)
            ax.errorbar(
                ls,
                mean,
                yerr=sd,
                marker="o",
                ms=3,
                lw=1,
                color=colors[kind],
                label=kind,
                ls="--" if kind == "shortcut1" else "-",
            )
        set_log(ax, "y")
        ax.set_xlabel("depth (weight matrices)")
        ax.set_ylabel(ylabel)
    if smaller:
        ls = np.array(list(smaller))
        axes[1].plot(
            ls,
            [np.mean(v) for v in smaller.values()],
            marker="o",
            ms=3,
            lw=1,
            ls=":",
            color=colors["shortcut3"],
            label=f"shortcut3 × {SMALLER:g}",
        )
        axes[1].legend()
    axes[0].axhline(theorem, color=GREY, ls="--", lw=0.8)
    axes[0].legend()
    set_title(axes[0], "at the initial point")
    set_title(axes[1], "scale of the Hessian")
    return fig


REPRODUCTION = Reproduction(
    name="resnet-hessian",
    paper=PAPER,
    source="figure 4 and Theorem 2",
    summary="condition number of the Hessian at the initial point of linear nets with shortcuts of depth 1/2 "
    "and without (orthogonal, Xavier) vs depth, and the flatness of the 3-shortcut nets' perturbed zero "
    "point (Theorem 2.1), on MNIST (--root) or the digits",
    scales=SCALES,
    cost={"tiny": "5 s", "quick": "29 s measured", "paper": "3 min (estimated)"},
    reproduce=reproduce,
    reads_root="mnist",
)
offer(REPRODUCTION, order=40)
