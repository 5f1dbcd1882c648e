"""The device check (study.training.device): a device that exists here comes back as a ``torch.device``; one that
does not, or is no device at all, is one line naming the entry point it was given to, the same line from the
trainer and from ``archstudy reproduce``."""

import pytest
import torch

from archstudy.sampling import SpecError
from archstudy.study.reproduce.reproduction import check_device
from archstudy.study.training.device import available_device

# Never available: no torch names "gpu0", and no machine has a 100th GPU.
UNAVAILABLE = ["gpu0", "cuda:99", 3.5]


@pytest.mark.parametrize("given", [None, "cpu", torch.device("cpu")])
def test_an_available_device_comes_back_as_itself_and_none_is_the_cpu(given):
    assert available_device(given, "here") == torch.device("cpu")


@pytest.mark.parametrize("given", UNAVAILABLE)
def test_an_unavailable_device_is_one_line_naming_where_it_was_given(given):
    with pytest.raises(SpecError) as e:
        available_device(given, "here")
    assert str(e.value) == f"here.device = {given!r}: must be an available torch device (cpu, cuda, ...)"


@pytest.mark.parametrize("given", UNAVAILABLE)
def test_reproduce_checks_with_the_same_function(given):
    with pytest.raises(SpecError) as e:
        check_device(given)
    assert str(e.value) == f"reproduce.device = {given!r}: must be an available torch device (cpu, cuda, ...)"
