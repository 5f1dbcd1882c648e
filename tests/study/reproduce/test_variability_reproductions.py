"""yz-variability-depth and variability-collapse (Yu and Zhang, figures 2 and 4; the variability paper, figures 2
and 6): the parameter samples are "scaled by standard initialization factors", biases included; the lattice
values give the library's V (Yu and Zhang, eq. 3) and the sup-norm readings of the garbled eq. 4."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from archstudy.study.metrics.variability import box_variability, plain_layers
from archstudy.study.nn.network import build_network
from archstudy.study.reproduce import variability_collapse as vc
from archstudy.study.reproduce import yz_variability_depth as yz

pytestmark = pytest.mark.usefixtures("one_thread")


def test_init_constants_are_he_and_glorot():
    assert yz.init_constant("kaiming", 8, 3) == pytest.approx(math.sqrt(2 / 8))
    assert yz.init_constant("xavier", 8, 3) == pytest.approx(math.sqrt(2 / 11))
    with pytest.raises(ValueError, match="init = 'orthogonal'"):
        yz.init_constant("orthogonal", 8, 3)


@pytest.mark.parametrize("kind", list(yz.KINDS))
def test_biases_are_the_standard_normal_draw_times_the_layers_weight_constant(kind):
    """W and b "scaled by standard initialization factors": every layer's bias is the N(0, 1) draw of the same
    seed times the layer's constant (He for ReLU, Glorot for ABS; a Householder layer the constant of the square
    dense layer it replaces), and the weights are left as the init draws them."""
    spec = yz.spec_of(kind, 6)
    raw = build_network(spec, seeds=[3, 4])
    scaled = yz.scale_biases(build_network(spec, seeds=[3, 4]))
    init = {"FC+ReLU": "kaiming"}.get(kind, "xavier")
    for layer, a, b in zip(spec.layers(), raw.linears, scaled.linears):
        constant = math.sqrt(2 / layer.fan_in) if init == "kaiming" else math.sqrt(2 / (layer.fan_in + layer.fan_out))
        torch.testing.assert_close(b.bias, a.bias * constant, rtol=1e-15, atol=0)
        assert 0.5 < float(a.bias.detach().std()) < 1.6  # the draw itself is standard normal
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            if name != "bias":
                assert torch.equal(p, q)
    kinds = {layer.kind for layer in spec.layers()}
    assert ("householder" in kinds) == (kind == "HanNet")


def test_the_two_norm_reading_is_the_librarys_variability_and_the_sup_readings_divide_by_max_f():
    spec = yz.spec_of("FC+ABS", 9)
    net = yz.scale_biases(build_network(spec, seeds=[1, 2, 3]))
    grid = 17
    f = yz.lattice_outputs(net, grid)
    v = yz.readings(f, grid)
    np.testing.assert_allclose(v["2-norm"], box_variability(net, yz.OMEGA, grid), rtol=1e-12)
    # an independent computation of the sup readings: the same integral over max f^2 and max f
    h = 2 / (grid - 1)
    for r in range(3):
        fr = f[r].numpy()
        integral = np.mean((np.diff(fr, 3, axis=0) / h**3) ** 2) + np.mean((np.diff(fr, 3, axis=1) / h**3) ** 2)
        assert v["sup^-2"][r] == pytest.approx(integral / fr.max() ** 2, rel=1e-12)
        assert v["sup^-1"][r] == pytest.approx(integral / fr.max(), rel=1e-12)
    # the sup-norm readings are not scale-free as the 2-norm's is: f -> 4 f (F -> 2 F) multiplies sup^-1 by 4
    v4 = yz.readings(4 * f, grid)
    np.testing.assert_allclose(v4["2-norm"], v["2-norm"], rtol=1e-12)
    np.testing.assert_allclose(v4["sup^-2"], v["sup^-2"], rtol=1e-12)
    np.testing.assert_allclose(v4["sup^-1"], 4 * v["sup^-1"], rtol=1e-12)
    # a constant output has no variability under any reading
    flat = yz.readings(torch.full((1, grid, grid), 2.5, dtype=torch.float64), grid)
    assert all(float(x[0]) == 0.0 for x in flat.values())


def test_variability_collapse_nets_carry_the_papers_multipliers_on_weights_and_biases():
    """A.4: "random weight matrices and bias vectors specified, then multiplied by the [...] initialization
    constant", sqrt(2/d) for ReLU and sqrt(1/d) for ABS."""
    s = vc.SCALES["tiny"]
    for kind, multiplier in (("ReLU", math.sqrt(2 / s.width)), ("ABS", math.sqrt(1 / s.width))):
        spec = vc.spec_of(kind, s)
        raw = plain_layers(build_network(spec, seed=7))
        scaled = plain_layers(yz.scale_biases(build_network(spec, seed=7)))
        for b_raw, b in zip(raw[1], scaled[1]):
            torch.testing.assert_close(b, b_raw * multiplier, rtol=1e-15, atol=0)
        w = torch.stack(scaled[0][1:])  # the square hidden layers
        assert float(w.std()) == pytest.approx(multiplier, rel=0.05)
