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
