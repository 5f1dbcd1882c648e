"""The fused epilogue (``study.nn.epilogue``): a normalization and the rest of its activation as one compiled
function computes the eager folded forward's numbers, values, gradients and running statistics, for every
activation and normalization, in training and in evaluation; it compiles once for every width and stack size.

The compiler here is "aot_eager_decomp_partition": dynamo's trace, AOTAutograd's decomposition and derived backward
as inductor receives them, run with ATen's kernels (seconds, not a C++ build); one test marked ``inductor`` runs
the real compiler, and the ``cuda`` tests its Triton kernels.
"""

import pytest
import torch
from device_training import DATA, SHORT, SPEC, on_device, same_runs

from archstudy.sampling import ACTIVATIONS, ArchSpec
from archstudy.study import build_network, train_architecture
from archstudy.study.nn import epilogue
from archstudy.study.nn.layers import BatchNorm
from archstudy.study.training import compiled, stack

CHEAP = "aot_eager_decomp_partition"


def _pair(spec: ArchSpec, runs: int, training: bool = True):
    a, b = build_network(spec, 3, runs=runs), build_network(spec, 3, runs=runs)
    a.train(training)
    b.train(training)
    return a, b


def _close(x: torch.Tensor, y: torch.Tensor, what: str, scale: float | None = None) -> None:
    """Equal to round-off: an error below 1e-12 of ``y``'s norm (or of ``scale``: a gradient that cancels to a small
    number, an output bias's, is compared on the scale of all the gradients)."""
    x, y = x.detach(), y.detach()
    assert torch.isfinite(x).all() == torch.isfinite(y).all(), what
    assert float((x - y).norm()) <= 1e-12 * max(float(y.norm()) if scale is None else scale, 1e-300), what


def _scale(grads) -> float:
    return float(sum(float(g.detach().norm()) ** 2 for g in grads if g is not None) ** 0.5)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("norm", ["batch", "layer"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_the_fused_epilogue_is_the_folded_forward(activation, norm):
    """Training mode: outputs, every parameter's gradient and the running statistics equal the eager folded
    forward's to round-off, with a dilation, a shift and debiasing (every constant the epilogue takes)."""
    spec = ArchSpec(
        depth=4, width=16, d_in=7, d_out=3, activation=activation, norm=norm, dilation=1.3, shift=0.2, debias=True
    )
    a, b = _pair(spec, runs=3)
    x = torch.randn(20, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ya, yb = a.propagate(x, fold=True), b.propagate(x, fold=True, fuse=CHEAP)
    _close(yb, ya, "output")
    ga = torch.autograd.grad(ya.square().sum(), list(a.parameters()), allow_unused=True)
    gb = torch.autograd.grad(yb.square().sum(), list(b.parameters()), allow_unused=True)
    for (name, _), u, v in zip(a.named_parameters(), ga, gb):
        assert (u is None) == (v is None), name
        if u is not None:
            _close(v, u, f"gradient of {name}", _scale(ga))
    for (name, u), (_, v) in zip(a.named_buffers(), b.named_buffers()):
        _close(v, u, name, u.numel() ** 0.5)  # statistics of normalized values: entries of order 1, means near 0
    assert any(isinstance(n, BatchNorm) for n in b.norms) == (norm == "batch")


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("activation", ["relu", "tanh", "gaussian"])
def test_the_evaluation_epilogue_is_the_networks_forward(activation):
    """Evaluation mode (the running statistics): the fused folded forward is the network's own forward."""
    spec = ArchSpec(depth=4, width=16, d_in=7, d_out=3, activation=activation, norm="batch", shift=-0.3)
    net, _ = _pair(spec, runs=2)
    x = torch.randn(30, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    net.propagate(x, fold=True)  # running statistics away from their initial 0 and 1
    net.eval()
    _close(net.propagate(x, fold=True, fuse=CHEAP), net(x), "evaluation output")


@pytest.mark.usefixtures("one_thread")
def test_one_compile_serves_every_width_and_stack_size():
    """Dynamic in the rows: after the first call, other stack sizes and widths compile nothing more."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    epilogue._COMPILED.clear()
    x = torch.randn(20, 7, dtype=torch.float64)
    graphs = []
    for runs, width in ((3, 16), (2, 24), (5, 9), (2, 16)):
        net = build_network(ArchSpec(depth=3, width=width, d_in=7, d_out=3, activation="tanh", norm="batch"), 0, runs)
        net.propagate(x, fold=True, fuse=CHEAP)
        graphs.append(int(counters["stats"]["unique_graphs"]))
    assert graphs[0] >= 1 and graphs[1:] == [graphs[0]] * 3


def test_where_nothing_fuses_the_eager_ops_run():
    """No normalization, and a batchnorm whose statistics are frozen, have no fused epilogue (None)."""
    spec = ArchSpec(depth=3, width=8, d_in=5, d_out=2, activation="relu", norm="batch")
    net = build_network(spec, 0, runs=2)
    s = torch.randn(2, 10, 8, dtype=torch.float64).transpose(1, 2).contiguous().transpose(1, 2)  # feature-major
    norm = net.norms[0]
    norm.track = False
    assert epilogue.fused(norm, s, None, None, net.act, (1.0, 0.0), CHEAP) is None
    plain = build_network(spec.replace(norm="none"), 0, runs=2)
    assert epilogue.fused(plain.norms[0], s, None, None, plain.act, (1.0, 0.0), CHEAP) is None
    assert not compiled.fuses(spec.replace(norm="none")) and compiled.fuses(spec)


@pytest.fixture
def cheap_fuse(monkeypatch):
    monkeypatch.setattr(stack, "FUSE_BACKEND", CHEAP)


@pytest.mark.usefixtures("one_thread", "cheap_fuse")
def test_a_fused_training_is_the_eager_one_to_round_off():
    """``forward="fused"``: the same schedule decisions and selected run as the eager step, errors equal (the
    evaluation fuses too), parameters to round-off."""
    args = dict(spec=SPEC, data=DATA, seed=3, protocol=SHORT.replace(lrs=[0.01, 0.1, 1.0, 10.0]))
    eager = train_architecture(**args, forward="eager")
    fused = train_architecture(**args, forward="fused")
    same_runs(eager, fused, 1e-12)
    assert eager.best.lr_index == fused.best.lr_index
    for (name, a), (_, b) in zip(eager.network.stacked_tensors(), fused.network.stacked_tensors()):
        # a training amplifies round-off (about 1e-9 of the largest entry here): as the CPU and the GPU agree
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-10, msg=name)


@pytest.mark.inductor
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("activation, norm", [("relu", "batch"), ("selu", "layer")])
def test_inductor_compiles_the_epilogue_to_the_same_numbers(activation, norm):
    """The real compiler (on a CPU, C++ loops): the same values and gradients to round-off."""
    spec = ArchSpec(depth=3, width=16, d_in=7, d_out=3, activation=activation, norm=norm, dilation=0.7, debias=True)
    a, b = _pair(spec, runs=2)
    x = torch.randn(20, 7, dtype=torch.float64)
    ya, yb = a.propagate(x, fold=True), b.propagate(x, fold=True, fuse="inductor")
    _close(yb, ya, "output")
    (ga,) = torch.autograd.grad(ya.square().sum(), [a.linears[0].weight])
    (gb,) = torch.autograd.grad(yb.square().sum(), [b.linears[0].weight])
    _close(gb, ga, "gradient")


# -- on a CUDA device ------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.parametrize("activation, norm", [("relu", "batch"), ("tanh", "batch"), ("selu", "layer")])
def test_cuda_epilogue_is_the_folded_forward(cuda, activation, norm):
    """Inductor's Triton kernels: values, gradients and running statistics to round-off, in training and evaluation."""
    spec = ArchSpec(depth=4, width=64, d_in=30, d_out=10, activation=activation, norm=norm, shift=0.1, debias=True)
    a, b = build_network(spec, 0, runs=4, device=cuda), build_network(spec, 0, runs=4, device=cuda)
    for batch in (50, 250):  # a second batch size: the graph then has a symbolic one (study.nn.epilogue)
        x = torch.randn(batch, 30, dtype=torch.float64, device=cuda)
        ya, yb = a.propagate(x, fold=True), b.propagate(x, fold=True, fuse="inductor")
    _close(yb, ya, "output")
    ga = torch.autograd.grad(ya.square().sum(), list(a.parameters()), allow_unused=True)
    gb = torch.autograd.grad(yb.square().sum(), list(b.parameters()), allow_unused=True)
    for u, v in zip(ga, gb):
        if u is not None:
            _close(v, u, "gradient", _scale(ga))
    for (name, u), (_, v) in zip(a.named_buffers(), b.named_buffers()):
        _close(v, u, name, u.numel() ** 0.5)  # statistics of normalized values: entries of order 1, means near 0
    a.eval()
    b.eval()
    _close(b.propagate(x, fold=True, fuse="inductor"), a(x), "evaluation")


@pytest.mark.cuda
def test_cuda_fused_graph_trains_like_the_eager_step(cuda):
    """The rule's GPU step for nets with normalization: the same decisions and selected run as the eager step."""
    args = dict(spec=SPEC, data=on_device(DATA, cuda), seed=3, protocol=SHORT.replace(lrs=[0.01, 0.1, 1.0, 10.0]))
    eager = train_architecture(**args, device=cuda, forward="eager")
    fused = train_architecture(**args, device=cuda, forward="auto")
    assert compiled.choose(SPEC, cuda, len(DATA.train.x), 50).kind == "fused-graph"
    same_runs(eager, fused, 1e-12)
    assert eager.best.lr_index == fused.best.lr_index
