"""The trainer learns: a ReLU depth-3 net on waveform-noise with the quick protocol reaches test error
< 0.20 (Breiman's Bayes error for waveform is about 0.14; chance is 2/3)."""

import pytest

from archstudy.sampling import ArchSpec
from archstudy.study import load_dataset, train_architecture


pytestmark = pytest.mark.usefixtures("one_thread")


def relu_depth3(d_in: int) -> ArchSpec:
    return ArchSpec(depth=3, width=64, d_in=d_in, d_out=3, activation="relu")


def check_quick_protocol_learns(data):
    out = train_architecture(relu_depth3(data.train.x.shape[1]), data, seed=0, protocol="quick")
    assert out.best.test_error < 0.20, out.runs
    assert out.best.val_error < 0.20
    # the rates bracket the optimum: the lowest and the highest rate are both worse than the best
    vals = [r.val_error for r in out.runs]
    assert min(vals) < vals[0] and min(vals) < vals[-1]


def test_relu_depth3_on_waveform_noise_with_the_quick_protocol():
    check_quick_protocol_learns(load_dataset("waveform-noise", seed=0))
