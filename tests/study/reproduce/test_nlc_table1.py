"""nlc-table1's nets of lines B and D: orthogonally initialized, as the NLC paper's study always was (Philipp and
Carbonell, *The Nonlinearity Coefficient*, appendix C); Table 1 names no other initialization. Line B is line A
only approximately on Gaussian inputs; the rows do not depend on the torch threads."""

import numpy as np
import torch

from archstudy.study.nn.activations import nlc_tau
from archstudy.study.reproduce import nlc_table1
from archstudy.study.reproduce.reproduction import torch_threads


def test_lines_b_and_d_build_orthogonally_initialized_nets(monkeypatch):
    built = []
    real = nlc_table1.build_network

    def recording(spec, **kwargs):
        net = real(spec, **kwargs)
        built.append((spec, net))
        return net

    monkeypatch.setattr(nlc_table1, "build_network", recording)
    x = torch.randn(300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for depth in (2, nlc_table1.DEEP):
        nlc_table1.bn_net_nlc("tanh", depth, x, seed=3, batches=1, device="cpu")
    assert [(s.depth, s.init, s.norm, s.width, s.d_out) for s, _ in built] == [
        (2, "orthogonal", "batch", nlc_table1.WIDTH, nlc_table1.D_OUT),
        (nlc_table1.DEEP, "orthogonal", "batch", nlc_table1.WIDTH, nlc_table1.D_OUT),
    ]
    # Appendix C's rule on a square hidden layer: a Haar-random orthogonal matrix times max(1, sqrt(1)) = 1, so
    # W W^T is the identity (He-initialized weights give W W^T with diagonal about 2 and off-diagonals about 0.14).
    square = [p for _, net in built for p in net.parameters() if p.dim() >= 2 and p.shape[-1] == p.shape[-2]]
    assert square
    for w in square:
        w = w.reshape(-1, *w.shape[-2:])[0].detach()
        assert torch.allclose(w @ w.T, torch.eye(w.shape[0], dtype=w.dtype), atol=1e-10)


def test_line_b_on_gaussian_inputs_is_line_a_only_approximately():
    """On isotropic Gaussian inputs each hidden unit's pre-activation is Gaussian, yet the depth-2 net's NLC is
    not NLC_tau(1) exactly (batch statistics, correlated units pooled by the output layer): within a few percent,
    not to rounding. The note's ratios are the run's medians over line A."""
    x = torch.randn(1000, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for act in ("relu", "square"):
        b = [nlc_table1.bn_net_nlc(act, 2, x, seed=k, batches=8, device="cpu") for k in range(3)]
        ratio = float(np.median(b)) / nlc_tau(act)
        assert 0.95 < ratio < 1.06 and abs(ratio - 1) > 1e-4, (act, ratio)
    assert nlc_table1.ratios({"relu": [1.0, nlc_tau("relu") * 1.05, 99.0]}) == "relu 1.050"


def test_lines_b_and_d_are_the_same_to_the_last_bit_with_one_torch_thread_or_two():
    """The rows do not depend on the number of torch threads (`reproduce --threads`): the same seed gives the same
    NLC on one thread and on two, bit for bit (the shapes of quick's: minibatches of 250, width 100)."""
    x = torch.randn(500, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    values = []
    for threads in (1, 2):
        with torch_threads(threads):
            values.append([nlc_table1.bn_net_nlc("tanh", d, x, seed=5, batches=4, device="cpu") for d in (2, 9)])
    assert values[0] == values[1]


def test_line_d_tolerance_adds_what_one_rounding_of_the_inputs_does_to_a_deep_unstable_net():
    """A depth-49 even_tanh net amplifies a one-rounding change of its inputs to a visible change of its NLC (what
    differs between machines); a depth-49 relu net does not. The rows of line D add twice that change."""
    x = torch.randn(300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    moved = nlc_table1.rounded_inputs(x, seed=1)
    eps = torch.finfo(torch.float64).eps
    assert torch.allclose((moved / x - 1).abs(), torch.full_like(x, eps), rtol=0.5, atol=0)  # one rounding each
    value = nlc_table1.bn_net_nlc("even_tanh", nlc_table1.DEEP, x, seed=4, batches=1, device="cpu")
    unstable, why = nlc_table1.rounding_spread("even_tanh", x, 4, 1, "cpu", value)
    assert unstable > 1e-6 * value and "one rounding" in why
    relu = nlc_table1.bn_net_nlc("relu", nlc_table1.DEEP, x, seed=4, batches=1, device="cpu")
    assert nlc_table1.rounding_spread("relu", x, 4, 1, "cpu", relu)[0] < 1e-9 * relu
