"""Shared test fixtures."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread: on the shared 2-core CI machine it is faster and steadier for tiny nets (thread
    wake-ups dominate their small ops), and results do not depend on how busy the machine is."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` skip, with the reason, where torch sees no CUDA device."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: torch.cuda.is_available() is False here")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cuda():
    """The CUDA device, with the flags a worker sets for reproducible float64 (study.training.determinism)."""
    from study.training.determinism import deterministic_cuda

    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    deterministic_cuda()
    yield torch.device("cuda")
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])
