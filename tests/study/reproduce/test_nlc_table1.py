"""nlc-table1's nets of lines B and D: orthogonally initialized, as the NLC paper's study always was (Philipp and
Carbonell, *The Nonlinearity Coefficient*, appendix C); Table 1 names no other initialization."""

import torch

from archstudy.study.reproduce import nlc_table1


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
