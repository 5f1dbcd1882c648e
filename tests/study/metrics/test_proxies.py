"""Zero-cost proxies, gradient confounders, AR and FLOPs against hand computations of their formulas."""

import math

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import build_network
from archstudy.study.metrics import (
    activation_codes,
    activation_ratio,
    flops,
    grad_length,
    grad_norm,
    grad_norm_by_tensor,
    gvcs,
    jacob_cov,
    nwot,
    snip,
    snip_by_tensor,
    synflow,
    synflow_by_tensor,
)


pytestmark = pytest.mark.usefixtures("one_thread")


def batch(n=16, d_in=8, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d_in, generator=g, dtype=torch.float64), torch.randint(0, k, (n,), generator=g)


class TwoLayer:
    """f(x) = W2 (c relu(d (W1 x + b1) + t)) + b2 by hand in numpy, from a depth-2 network's tensors."""

    def __init__(self, net):
        self.w1 = net.linears[0].weight[0].detach().numpy()
        self.b1 = net.linears[0].bias[0].detach().numpy()
        self.w2 = net.linears[1].weight[0].detach().numpy()
        self.b2 = net.linears[1].bias[0].detach().numpy()
        self.c, self.b = net.act.constants
        self.d, self.t = net.act.dilation, net.act.shift

    def forward(self, x):
        s = x @ self.w1.T + self.b1
        z = self.d * s + self.t
        h = self.c * np.maximum(z, 0) + self.b
        return s, z, h, h @ self.w2.T + self.b2

    def loss_grads(self, x, y, c_out, mean=True):
        """dL/dparams of L = mean (or sum) of -log softmax(f / c_out)[y], and dL/dx."""
        s, z, h, f = self.forward(x)
        p = np.exp(f / c_out - (f / c_out).max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        delta = (p - np.eye(f.shape[1])[y]) / c_out / (len(x) if mean else 1)
        ds = (delta @ self.w2) * self.c * self.d * (z > 0)
        grads = {
            "linears.0.weight": ds.T @ x,
            "linears.0.bias": ds.sum(0),
            "linears.1.weight": delta.T @ h,
            "linears.1.bias": delta.sum(0),
        }
        return grads, ds @ self.w1

    def params(self):
        return {
            "linears.0.weight": self.w1,
            "linears.0.bias": self.b1,
            "linears.1.weight": self.w2,
            "linears.1.bias": self.b2,
        }


@pytest.fixture
def two_layer():
    spec = ArchSpec(
        depth=2,
        width=40,
        d_in=8,
        d_out=3,
        activation="relu",
        bias_init="gaussian",
        dilation=1.2,
        shift=0.2,
        init_scale=1.1,
    )
    return build_network(spec, seed=3)


def test_grad_norm_and_snip_equal_their_formulas(two_layer):
    x, y = batch()
    hand = TwoLayer(two_layer)
    grads, _ = hand.loss_grads(x.numpy(), y.numpy(), c_out=1.7)
    params = hand.params()
    assert grad_norm(two_layer, x, y, c_out=1.7) == pytest.approx(
        sum(np.linalg.norm(g) for g in grads.values()), rel=1e-10
    )
    assert snip(two_layer, x, y, c_out=1.7) == pytest.approx(
        sum(np.abs(params[k] * g).sum() for k, g in grads.items()), rel=1e-10
    )
    terms = grad_norm_by_tensor(two_layer, x, y, c_out=1.7)
    assert set(terms) == set(grads)
    assert terms["linears.0.bias"] == pytest.approx(np.linalg.norm(grads["linears.0.bias"]), rel=1e-10)


def test_synflow_equals_its_formula(two_layer):
    # All-positive net on x = 1: s = |W1| 1 + |b1| > 0, so relu(d s + t) = d s + t (t > 0) and
    # R = 1^T (|W2| h + |b2|), h = c (d s + t) + b. With w = 1^T |W2|:
    #   synflow = sum |W2| * h^T + sum |b2| + sum_k w_k c d (sum_i |W1_ki| + |b1_k|).
    hand = TwoLayer(two_layer)
    w1, b1, w2, b2 = (np.abs(a) for a in (hand.w1, hand.b1, hand.w2, hand.b2))
    s = w1.sum(axis=1) + b1
    h = hand.c * (hand.d * s + hand.t) + hand.b
    w = w2.sum(axis=0)
    expected = (w2 * h[None, :]).sum() + b2.sum() + (w * hand.c * hand.d * (w1.sum(axis=1) + b1)).sum()
    assert synflow(two_layer) == pytest.approx(expected, rel=1e-10)
    terms = synflow_by_tensor(two_layer)
    assert terms["linears.1.bias"] == pytest.approx(b2.sum(), rel=1e-12)


def test_jacob_cov_equals_its_formula(two_layer):
    x, _ = batch(n=12)
    hand = TwoLayer(two_layer)
    _, z, _, _ = hand.forward(x.numpy())
    jac = ((hand.w2.sum(axis=0) * hand.c * hand.d) * (z > 0)) @ hand.w1  # rows d(sum_j f_j)/dx
    ev = np.linalg.eigvalsh(np.corrcoef(jac))
    expected = -np.sum(np.log(ev + 1e-5) + 1 / (ev + 1e-5))
    assert jacob_cov(two_layer, x) == pytest.approx(expected, rel=1e-9)


def test_nwot_equals_the_hamming_kernel_log_determinant(two_layer):
    x, _ = batch(n=16)
    hand = TwoLayer(two_layer)
    _, z, _, _ = hand.forward(x.numpy())
    codes = z > 0  # the kink of relu(d s + t) is at d s + t = 0
    n_units = codes.shape[1]
    kernel = np.array([[n_units - np.sum(a != b) for b in codes] for a in codes], dtype=float)
    sign, logdet = np.linalg.slogdet(kernel)
    assert sign > 0
    assert nwot(two_layer, x) == pytest.approx(logdet, rel=1e-10)
    assert torch.equal(activation_codes(two_layer, x), torch.from_numpy(codes.astype(np.int64)))


# Activations whose kinks are away from zero, declared as ``study.nn.activations.Base`` declares every activation.
KINKED = {
    "relu_at_half": (lambda u: torch.relu(u - 0.5), (0.5,)),  # one kink, at u = 0.5
    "hard_tanh": (lambda u: torch.clamp(u, -1.0, 1.0), (-1.0, 1.0)),  # three linear pieces
}


@pytest.mark.parametrize("name", KINKED)
def test_nwot_codes_are_the_pieces_between_the_declared_kinks(name, monkeypatch):
    """NWOT (Mellor et al., *Neural Architecture Search without Training*, v2: log|K_H|, K_H = N_A - Hamming
    distance) of a net whose activation has its kinks away from zero (with a dilation and shift on top), against
    numpy by hand: a unit's code is the linear piece of tau its argument u = d s + t lies in (for one kink k the
    bit u > k), K_H[a, b] the units where a and b lie in the same piece."""
    from archstudy.study.nn import activations

    tau, kinks = KINKED[name]
    monkeypatch.setattr(activations, "ACTIVATIONS", activations.ACTIVATIONS + (name,))
    monkeypatch.setitem(activations.BASES, name, activations.Base(name, tau, kinks=kinks))
    spec = ArchSpec(depth=2, width=40, d_in=8, d_out=3, activation="relu", bias_init="gaussian", init_scale=1.5)
    net = build_network(spec, seed=3)
    net.act = net.activation.act = activations.Activation(name, dilation=1.2, shift=0.2)
    x, _ = batch(n=16)
    w1, b1 = net.linears[0].weight[0].detach().numpy(), net.linears[0].bias[0].detach().numpy()
    u = 1.2 * (x.numpy() @ w1.T + b1) + 0.2
    codes = sum((u > k).astype(np.int64) for k in kinks)
    assert len(np.unique(codes)) == len(kinks) + 1  # every piece is reached
    assert (codes != (u > 0)).any()  # the sign of u would be another code
    n_units = codes.shape[1]
    kernel = n_units - (codes[:, None, :] != codes[None, :, :]).sum(axis=-1)
    sign, logdet = np.linalg.slogdet(kernel.astype(float))
    assert sign > 0
    assert torch.equal(activation_codes(net, x), torch.from_numpy(codes))
    assert nwot(net, x) == pytest.approx(logdet, rel=1e-12)


def test_the_rank_bound_of_piece_codes_holds_and_is_n_units_plus_one_for_bits():
    """``rank_bound`` >= rank K_H (numpy's rank of the kernel by hand), for bits and for three pieces per unit,
    and N_A + 1 for bits where every unit takes both values."""
    from archstudy.study.metrics.proxies import hamming_kernel, rank_bound

    rng = np.random.default_rng(0)
    for pieces, units in ((2, 5), (2, 30), (3, 5), (3, 30)):
        codes = rng.integers(0, pieces, (24, units))
        kernel = units - (codes[:, None, :] != codes[None, :, :]).sum(axis=-1)
        assert np.array_equal(hamming_kernel(torch.from_numpy(codes)), kernel)
        seen = sum(len(np.unique(codes[:, j])) - 1 for j in range(units))
        assert rank_bound(torch.from_numpy(codes)) == 1 + seen >= np.linalg.matrix_rank(kernel.astype(float))
    bits = np.vstack([np.zeros(7, dtype=np.int64), np.ones(7, dtype=np.int64)])
    assert rank_bound(torch.from_numpy(bits)) == 7 + 1


def test_nwot_of_a_singular_kernel_is_nan():
    # 8 units cannot tell 16 examples apart: rank K_H <= N_A + 1 < 16 (the computed log-determinant of such
    # a kernel is rounding noise, finite or not).
    net = build_network(ArchSpec(depth=2, width=8, d_in=8, d_out=3), seed=0)
    assert math.isnan(nwot(net, batch(n=16)[0]))
    # 40 relu units on 4-D inputs: here the 16 codes have rank 15 (checked: numpy's slogdet gives sign -1).
    spec = ArchSpec(
        depth=2,
        width=40,
        d_in=4,
        d_out=3,
        activation="relu",
        bias_init="gaussian",
        dilation=1.2,
        shift=0.2,
        init_scale=1.1,
    )
    x = batch(n=16, d_in=4)[0]
    codes = activation_codes(build_network(spec, seed=3), x).double().numpy()
    assert np.linalg.matrix_rank(codes @ codes.T + (1 - codes) @ (1 - codes).T) < 16
    assert math.isnan(nwot(build_network(spec, seed=3), x))


def exact_rank(codes: np.ndarray) -> int:
    """rank over the rationals of A = [C, 1 - C] (= rank K_H, K_H = A A^T), by sympy's exact elimination over
    the integers: independent of the modular determinants of ``nwot_of``."""
    from sympy import ZZ, Matrix
    from sympy.polys.matrices import DomainMatrix

    a = np.hstack([codes, 1 - codes]).astype(int)
    return DomainMatrix.from_Matrix(Matrix(a.tolist())).convert_to(ZZ).rank()


@pytest.mark.parametrize(
    "norm, draw, rank",
    [
        # relu depth 5, width 32, d_in 20, Gaussian bias, network seed 0, 128 Gaussian inputs (torch, seed 0)
        ("none", lambda: torch.randn(128, 20, generator=torch.Generator().manual_seed(0), dtype=torch.float64), 126),
        # the same with layernorm and numpy's generator: rank 123 of 128
        ("layer", lambda: torch.from_numpy(np.random.default_rng(0).standard_normal((20, 128)).T.copy()), 123),
    ],
)
def test_nwot_of_an_exactly_singular_kernel_of_distinct_codes_is_nan(norm, draw, rank):
    """128 distinct codes of 128 units (so no shortcut applies), rank below 128: floating point gives a finite
    log-determinant (``nwot`` returned 238.7 and 163.6), the exact decision gives NaN."""
    from archstudy.study.metrics.proxies import hamming_kernel

    net = build_network(
        ArchSpec(depth=5, width=32, d_in=20, d_out=3, activation="relu", bias_init="gaussian", norm=norm), seed=0
    )
    x = draw()
    codes = activation_codes(net, x).numpy().astype(np.int64)
    assert len(np.unique(codes, axis=0)) == 128 and codes.shape[1] + 1 >= 128
    assert exact_rank(codes) == rank
    # what ``nwot`` computed before: torch's float64 slogdet, rounding noise that looks like a score (its sign is
    # that noise's too: +1 with the LAPACK these were found with, -1 with numpy 2.4's)
    sign, logdet = torch.linalg.slogdet(torch.from_numpy(hamming_kernel(torch.from_numpy(codes))).double())
    assert sign != 0 and math.isfinite(logdet) and logdet > 100
    assert math.isnan(nwot(net, x))


def test_nwot_of_a_full_rank_kernel_is_its_log_determinant(monkeypatch):
    """Width 64: the score equals numpy's log-determinant of the kernel built by hand from Hamming distances
    and the log of its exact determinant (so nonzero: full rank), and the exact one is what is returned where
    rounding is taken to have missed the sign (the fallback)."""
    from archstudy.study.metrics.proxies import integer_det, nwot_of

    net = build_network(ArchSpec(depth=5, width=64, d_in=20, d_out=3, activation="relu", bias_init="gaussian"), seed=0)
    x = torch.randn(128, 20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    codes = activation_codes(net, x).numpy()
    n_units = codes.shape[1]
    kernel = n_units - (codes[:, None, :] != codes[None, :, :]).sum(axis=-1)  # N_A - Hamming distance
    sign, logdet = np.linalg.slogdet(kernel.astype(float))
    assert sign > 0
    assert nwot(net, x) == pytest.approx(logdet, rel=1e-12)
    assert math.log(integer_det(kernel)) == pytest.approx(logdet, rel=1e-12)
    monkeypatch.setattr(np.linalg, "slogdet", lambda k: (-1.0, 0.0))
    assert nwot_of(torch.from_numpy(codes)) == pytest.approx(logdet, rel=1e-12)


def test_integer_determinants_are_exact():
    """``integer_det`` and ``integer_det_is_zero`` against sympy's exact determinant: random integer matrices,
    the same with one row a combination of two others, and Gram matrices of 0/1 matrices of either rank."""
    from sympy import Matrix

    from archstudy.study.metrics.proxies import det_mod, integer_det, integer_det_is_zero

    rng = np.random.default_rng(0)
    cases = []
    for n in (1, 2, 3, 7, 15):
        m = rng.integers(-60, 60, (n, n))
        cases.append(m)
        if n > 2:
            dependent = m.copy()
            dependent[-1] = 3 * m[0] - 2 * m[1]
            cases.append(dependent)
    for rows, cols in ((12, 20), (12, 8)):  # full rank / rank <= 8 < 12
        a = rng.integers(0, 2, (rows, cols))
        cases.append(a @ a.T)
    for m in cases:
        want = int(Matrix(m.tolist()).det())
        assert integer_det(m) == want
        assert integer_det_is_zero(m) == (want == 0)
        assert det_mod(m, 1_048_573) == want % 1_048_573
    assert any(integer_det(m) == 0 for m in cases) and any(integer_det(m) != 0 for m in cases)


def test_gvcs_and_grad_length_equal_their_formulas(two_layer):
    x, y = batch(n=250, seed=5)
    hand = TwoLayer(two_layer)
    _, g = hand.loss_grads(x.numpy(), y.numpy(), c_out=0.8, mean=False)  # per-example dl/dx
    # one minibatch holding all 250 examples: the estimates are the exact quadratic means
    assert gvcs(two_layer, x, y, c_out=0.8, batches=1) == pytest.approx(np.sqrt((g**2).mean()), rel=1e-10)
    assert grad_length(two_layer, x, y, c_out=0.8, batches=1) == pytest.approx(
        np.sqrt((g**2).sum(axis=1).mean()), rel=1e-10
    )


def test_gvcs_shrinks_with_input_scale_of_a_batchnorm_net():
    # Section 6: multiplying the input of a linear + batchnorm net by c divides GVCS by c.
    net = build_network(ArchSpec(depth=3, width=30, d_in=6, d_out=3, norm="batch"), seed=1)
    x, y = batch(n=500, d_in=6, seed=2)
    assert gvcs(net, 10 * x, y, batches=3) == pytest.approx(gvcs(net, x, y, batches=3) / 10, rel=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        dict(weights="householder", activation="abs", norm="layer"),
        dict(param="gmp", activation="relu", norm="batch"),
        dict(param="gmp", weights="householder", activation="selu", skip="after_linear", skip_length=1),
    ],
)
def test_householder_and_gmp_nets_score_on_every_tensor(kw):
    spec = ArchSpec(**{**dict(depth=4, width=12, d_in=5, d_out=3, bias_init="gaussian"), **kw})
    net = build_network(spec, seed=0)
    x, y = batch(n=24, d_in=5, seed=1)
    names = {name for name, _ in net.named_parameters()}
    assert any(n.endswith(".u") for n in names) or any(n.endswith(".theta") for n in names)
    for terms in (grad_norm_by_tensor(net, x, y), snip_by_tensor(net, x, y)):  # norms of nonzero gradients
        assert set(terms) == names
        assert all(math.isfinite(v) and v > 0 for v in terms.values()), terms
    syn = synflow_by_tensor(net)
    assert set(syn) == names and all(math.isfinite(v) for v in syn.values())
    scale = max(abs(v) for v in syn.values())
    for name, v in syn.items():
        if name.endswith(".u"):
            # A reflector depends on u only through its direction: R(c u) = R(u), so u . dR/du = 0 exactly
            # (Euler's theorem, degree 0); what is left is rounding.
            assert abs(v) <= 1e-10 * scale, (name, v, scale)
        else:
            assert abs(v) > 1e-6 * scale, (name, v, scale)  # a term of its own, far above rounding
    for value in (jacob_cov(net, x), nwot(net, x)):
        assert math.isfinite(value) and value != 0


def test_synflow_leaves_the_network_alone():
    net = build_network(
        ArchSpec(depth=4, width=8, d_in=3, d_out=2, norm="batch", param="gmp", bias_init="gaussian"), seed=0
    )
    before = {k: v.clone() for k, v in net.state_dict().items()}
    synflow(net)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert net.training and all(p.grad is None for p in net.parameters())


def test_activation_ratio_and_flops_by_hand():
    dense = ArchSpec(depth=4, width=10, d_in=5, d_out=3)
    # params 5*10+10 + 2*(10*10+10) + 10*3+3 = 313; units 3*10 = 30
    assert activation_ratio(dense) == pytest.approx(30 / 313)
    assert flops(dense) == 2 * (5 * 10 + 10 * 10 * 2 + 10 * 3)
    hh = ArchSpec(depth=4, width=10, d_in=5, d_out=3, weights="householder")
    # two Householder layers: 2 * 10 parameters and 2 * 10 multiply-adds each
    assert activation_ratio(hh) == pytest.approx(30 / (60 + 2 * 20 + 33))
    assert flops(hh) == 2 * (5 * 10 + 2 * 2 * 10 + 10 * 3)
    skip = ArchSpec(depth=5, width=10, d_in=5, d_out=3, skip="after_linear")
    assert flops(skip) == 2 * (5 * 10 + 3 * 100 + 10 * 3 + 3 * 10)  # + the output skip's projection
