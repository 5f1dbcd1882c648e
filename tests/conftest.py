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



def bomb(levels: int = 9, under: str | None = None, head: str = "") -> str:
    """A 'billion laughs' YAML document: ``levels`` levels of 9 aliases each (9 levels: about 400 bytes,
    9^9 = 387 million strings once expanded), as top-level keys or nested under the key ``under``."""
    names = "abcdefghijklmnop"[:levels]
    lines = [f'{names[0]}: &{names[0]} ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]" for a, b in zip(names, names[1:])]
    if under is not None:
        lines = [f"{under}:"] + ["  " + line for line in lines]
    return head + "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def alias_bomb():
    """``bomb`` (a conftest is not importable by name under pytest's importlib mode)."""
    return bomb
