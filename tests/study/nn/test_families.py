"""The layer families (study.nn.families): every kind the sampler makes has one declaration, and each declaration
builds, initializes and applies as its paper's formula, computed here independently in float64."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch

from archstudy.sampling import ArchSpec, Layer, sample_specs
from archstudy.sampling.spec import PARAMS, WEIGHTS
from archstudy.study import build_network
from archstudy.study.nn import families
from archstudy.study.nn.families import FAMILIES, family
from archstudy.study.nn.family import Family
from archstudy.study.nn.layers import NORMS, BatchNorm, Dense
from archstudy.study.nn.network import Network, layer_init

from references import unit_from_angles

pytestmark = pytest.mark.usefixtures("one_thread")

RUNS = 3


def _kinds() -> set:
    """Every ``Layer.kind`` the specs of the space make: each weights x param choice, and sampled specs."""
    kinds = set()
    for weights, param in itertools.product(WEIGHTS, PARAMS):
        kinds |= {
            layer.kind for layer in ArchSpec(depth=7, width=8, d_in=5, d_out=3, weights=weights, param=param).layers()
        }
    for spec in sample_specs(30, 4, 6, 3, "extended", param_budget=2000):
        kinds |= {layer.kind for layer in spec.layers()}
    return kinds


def test_every_kind_the_sampler_makes_has_exactly_one_declared_family():
    assert set(FAMILIES) == _kinds() == {"dense", "gmp", "householder"}
    for kind, f in FAMILIES.items():
        assert issubclass(f, Family) and f.kind == kind and family(kind) is f
    with pytest.raises(ValueError, match="no layer family is declared for kind 'conv'"):
        family("conv")


def test_every_norm_of_the_space_has_a_module():
    assert set(NORMS) == {"none", "batch", "layer"}
    for norm in NORMS.values():
        m = norm(4, RUNS)
        assert hasattr(m, "normalize") and isinstance(m.affine, bool)


# -- each declaration against its formula ---------------------------------------------------------------------
LAYERS = {
    "dense": Layer(2, "dense", 6, 5, "batch", True, False, False),
    "dense-imn": Layer(2, "dense", 6, 5, "batch", True, True, True),
    "gmp": Layer(2, "gmp", 6, 5, "batch", True, False, False),
    "gmp-imn": Layer(2, "gmp", 6, 5, "layer", True, True, True),
    "householder": Layer(2, "householder", 6, 6, "batch", True, False, True),
}
SPEC = ArchSpec(
    depth=5, width=6, d_in=4, d_out=3, bias_init="gaussian", init_scale=1.1, skip="after_linear", branch_scale=0.5
)


def _built(name):
    layer = LAYERS[name]
    module = family(layer.kind).build(layer, RUNS)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    return layer, module


def _reference(name, module, x: np.ndarray) -> np.ndarray:
    """The family's linear op, run by run, from its paper's formula (inputs [R, B, n]; batch mean for IMN)."""
    p = {n: t.detach().numpy() for n, t in module.named_parameters()}
    out = []
    for r in range(RUNS):
        h = x[r] - x[r].mean(axis=0, keepdims=True) if LAYERS[name].imn else x[r]
        if LAYERS[name].kind == "dense":  # s = W x + b
            out.append(h @ p["weight"][r].T + p["bias"][r])
        elif LAYERS[name].kind == "gmp":  # s = u(theta)^T (x - E[x]) + lambda  (eq. 15, 16)
            out.append(h @ unit_from_angles(p["theta"][r]).T + p["lam"][r])
        else:  # z = H(u) x + b, H(u) = I - 2 u u^T / |u|^2  (Algorithm 1, eq. 5)
            u = p["u"][r]
            out.append(h @ (np.eye(len(u)) - 2 * np.outer(u, u) / (u @ u)).T + p["bias"][r])
    return np.stack(out)


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_family_applies_its_formula_with_and_without_its_bias(name):
    layer, module = _built(name)
    module.train()
    x = np.random.default_rng(0).standard_normal((RUNS, 9, layer.fan_in))
    s = module(torch.from_numpy(x))
    np.testing.assert_allclose(s.detach().numpy(), _reference(name, module, x), rtol=1e-12, atol=1e-12)
    without = module.transform(torch.from_numpy(x), with_bias=False)
    bias = module.additive_bias()
    assert bias is getattr(module, module.bias_name) and bias.shape == (RUNS, layer.fan_out)
    torch.testing.assert_close(without + bias.unsqueeze(1), s, rtol=1e-13, atol=1e-13)
    # what it folds: a following batchnorm (training mode) cancels the bias
    assert module.bias_folds
    bn = BatchNorm(layer.fan_out, RUNS)
    torch.testing.assert_close(bn(without), bn(s), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_family_declares_its_roles_products_and_statistics(name):
    layer, module = _built(name)
    assert set(module.roles) == {n for n, _ in module.named_parameters()}
    assert set(module.roles.values()) == {"weight", "bias"} and module.roles[module.bias_name] == "bias"
    assert sum(p[0].numel() for p in module.parameters()) == layer.num_params  # the spec's count, per run
    want = 2 * layer.fan_in if layer.kind == "householder" else layer.fan_in * layer.fan_out
    assert module.multiply_adds(layer) == want
    assert module.input_statistics == (("mean",) if layer.imn else ())
    a = torch.randn(RUNS, 9, layer.fan_out, dtype=torch.float64)
    if layer.kind == "gmp":  # r * tau(...): the radius after the activation (eq. 15)
        torch.testing.assert_close(module.post(a), a * module.r.detach().unsqueeze(1), rtol=0, atol=0)
    else:
        assert module.post(a) is a


INITS = {
    "orthogonal": SPEC,
    "zero": SPEC.replace(init="zero", branch_scale=1.0),
    "kaiming": SPEC.replace(init="kaiming", bias_init="zero"),
    "from_sp": SPEC.replace(param="gmp"),
    "uniform": SPEC.replace(param="gmp", gmp_init="uniform"),
}
# the layers each spec can hold: GmP layers under param = gmp (which init = zero excludes), the others under sp
INIT_CASES = [
    (name, init)
    for name, layer in LAYERS.items()
    for init, spec in INITS.items()
    if (layer.kind == "gmp") == (spec.param == "gmp")
]


@pytest.mark.parametrize("name, init", INIT_CASES, ids=[f"{n}-{i}" for n, i in INIT_CASES])
def test_initial_tensors_fill_every_parameter_seeded_and_float64(name, init):
    spec = INITS[init]
    layer, module = _built(name)
    init = family(layer.kind).initial(spec, layer, 5)
    assert set(init) == {n for n, _ in module.named_parameters()}
    for n, t in init.items():
        assert t.dtype == torch.float64 and t.shape == getattr(module, n).shape[1:], n
        assert torch.equal(t, family(layer.kind).initial(spec, layer, 5)[n])  # seeded
        assert torch.equal(t, layer_init(spec, layer, 5)[n])  # the network's initializer is the declaration's
    if layer.kind == "gmp" and spec.gmp_init != "uniform":  # u = w / |w|, lambda = b / |w|, r = |w| (4.3)
        sp = family("dense").initial(spec.replace(param="sp"), dataclasses.replace(layer, kind="dense"), 5)
        norm = sp["weight"].norm(dim=1)
        torch.testing.assert_close(init["r"], norm, rtol=1e-15, atol=0)
        torch.testing.assert_close(init["lam"], sp["bias"] / norm, rtol=1e-15, atol=0)


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_every_family_is_float64_throughout(kind):
    layer = next(v for v in LAYERS.values() if v.kind == kind)
    module = family(kind).build(layer, RUNS)
    with torch.no_grad():
        for n, t in family(kind).initial(SPEC, layer, 0).items():
            getattr(module, n).copy_(t)
    x = torch.randn(7, layer.fan_in, dtype=torch.float64)  # a shared input
    assert all(t.dtype == torch.float64 for t in itertools.chain(module.parameters(), module.buffers()))
    for out in (module(x), module.transform(x, with_bias=False), module.post(module(x))):
        assert out.dtype == torch.float64 and out.shape == (RUNS, 7, layer.fan_out)


def test_the_network_builds_initializes_and_applies_whatever_the_registry_declares(monkeypatch):
    """A family is only its declaration: a stand-in registered for "dense" is what the network builds, how it
    initializes those layers and what its forward (reference and folded) applies."""

    class Doubled(Dense):
        """Dense, applied as 2 (W x + b), initialized with W = 1 / fan_in and b = 0."""

        @classmethod
        def initial(cls, spec, layer, seed):
            return {
                "weight": torch.full((layer.fan_out, layer.fan_in), 1.0 / layer.fan_in, dtype=torch.float64),
                "bias": torch.zeros(layer.fan_out, dtype=torch.float64),
            }

        def transform(self, x, with_bias=True):
            return 2 * super().transform(x, with_bias)

    monkeypatch.setitem(FAMILIES, "dense", Doubled)
    spec = ArchSpec(depth=3, width=4, d_in=2, d_out=2, activation="linear", norm="none")
    net = build_network(spec, seed=0)
    assert all(type(m) is Doubled for m in net.linears)
    x = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    assert net.act.constants == (1.0, 0.0)  # the linear activation is the identity
    # each layer doubles the mean of its input: 2 * 2 = 4, 2 * 4 = 8, 2 * 8 = 16
    torch.testing.assert_close(net(x), torch.full((1, 2), 16.0, dtype=torch.float64), rtol=1e-14, atol=0)
    torch.testing.assert_close(net.propagate(x, fold=True)[0], net(x), rtol=1e-14, atol=0)
    assert families.family("dense") is Doubled


def test_propagate_without_folds_is_the_forward():
    for spec in sample_specs(6, 11, 5, 3, "extended", param_budget=1500):
        net = build_network(spec, seed=2, runs=2)
        x = torch.randn(20, spec.d_in, dtype=torch.float64)
        with torch.no_grad():
            a = net(x)
            b = net.propagate(x)
        assert torch.equal(a, b)
        assert isinstance(net, Network) and math.isfinite(float(a.abs().sum()))
