"""The training step's folded forward (study.training.stack.folded_forward) computes Network.forward's function:
outputs, gradients and running statistics agree on sampled architectures of every layer kind, in both modes."""

import pytest
import torch

from archstudy.sampling import ArchSpec, sample_spec
from archstudy.study import build_network
from archstudy.study.training.stack import folded_forward

SPECS = [s for s in (sample_spec(1, i, 12, 3, "extended", 2_000) for i in range(120)) if s.depth <= 7][:30]
SPECS += [s for s in (sample_spec(2, i, 12, 3, "paper", 2_000) for i in range(60)) if s.depth <= 7][:10]
SPECS += [
    ArchSpec(
        depth=4,
        width=9,
        d_in=12,
        d_out=3,
        activation=a,
        norm=n,
        dilation=1.2,
        shift=-0.2,
        debias=True,
        bias_init="gaussian",
    )
    for a in ("relu", "abs", "linear", "selu", "tanh")
    for n in ("batch", "layer")
]
assert {s.norm for s in SPECS} >= {"none", "batch", "layer"}
assert {s.skip for s in SPECS} >= {"after_linear", "after_norm"}
assert {s.param for s in SPECS} == {"sp", "gmp"} and {s.weights for s in SPECS} == {"dense", "householder"}


pytestmark = pytest.mark.usefixtures("one_thread")


def _close(a, b, scale, what):
    err = float((a - b).detach().abs().max()) if a.numel() else 0.0
    assert err <= 1e-9 * scale, f"{what}: {err} vs scale {scale}"


@pytest.mark.parametrize(
    "spec", SPECS, ids=lambda s: f"{s.activation}-{s.norm}-{s.weights}-{s.param}-{s.skip}-d{s.depth}"
)
def test_folded_forward_equals_network_forward(spec):
    ref, fast = build_network(spec, seed=3, runs=2), build_network(spec, seed=3, runs=2)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, spec.d_in, generator=g, dtype=torch.float64)
    u = torch.randn(2, 32, spec.d_out, generator=g, dtype=torch.float64)
    for _ in range(2):  # the second pass starts from running statistics the first one moved
        a, b = ref(x), folded_forward(fast, x)
        scale = float(a.detach().abs().max())
        _close(a, b, scale, "output")
        params_a = [p for _, p in ref.named_parameters()]
        params_b = [p for _, p in fast.named_parameters()]
        ga = torch.autograd.grad((a * u).sum(), params_a)
        gb = torch.autograd.grad((b * u).sum(), params_b, allow_unused=True)
        gscale = max(float(t.abs().max()) for t in ga)
        for (name, _), ta, tb in zip(ref.named_parameters(), ga, gb):
            if tb is None:  # a bias folded into batchnorm: the reference gradient is round-off noise
                assert name.endswith(("bias", "lam")) and float(ta.abs().max()) <= 1e-12 * gscale, name
            else:
                _close(ta, tb, gscale, name)
        for (name, ta), (_, tb) in zip(ref.named_buffers(), fast.named_buffers()):
            _close(ta, tb, max(1.0, float(ta.abs().max())), name)
    ref.eval()
    fast.eval()
    with torch.no_grad():
        a = ref(x)
        _close(a, folded_forward(fast, x), float(a.abs().max()), "evaluation output")
