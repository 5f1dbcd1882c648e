"""Checkpoints with the options beyond E.2: a training interrupted in the middle of a step schedule (before and
after a division, within an epoch), with momentum buffers, several initializations and runs that already left
the stack, resumes to exactly the uninterrupted outcome."""

import pytest
import torch

import trainer_standins as standins
from archstudy.study import train_architecture


pytestmark = pytest.mark.usefixtures("one_thread")

BOARD, HAN = standins.checkerboard(), standins.HAN
STEPS = standins.STEPS.replace(lrs=(0.005, 0.02, 1e6))  # 6 steps per epoch; the rate 1e6 diverges in epoch 1
SEEDS = [3, 8]


Killed, interrupted = standins.Killed, standins.interrupted  # the shared helper (tests/trainer_standins.py)


def assert_same_outcome(a, b):
    def plain(rec):
        return {k: v for k, v in vars(rec).items() if k != "wall_s"}

    assert [plain(r) for r in a.runs] == [plain(r) for r in b.runs]
    assert plain(a.best) == plain(b.best)
    assert (a.lr_min, a.c_out, a.selected, a.init_seeds) == (b.lr_min, b.c_out, b.selected, b.init_seeds)
    for (name, x), (_, y) in zip(a.network.stacked_tensors(), b.network.stacked_tensors()):
        assert torch.equal(x, y), name


@pytest.fixture(scope="module")
def uninterrupted():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_architecture(HAN, BOARD, seed=5, protocol=STEPS, init_seeds=SEEDS)
    finally:
        torch.set_num_threads(n)


# Saves: after every step and after every epoch's bookkeeping, 7 per epoch. 7: after epoch 1 (the diverged
# runs have left; the next step, 6, is divided at the restart); 24: after step 20, within epoch 4, the next
# step (21) divided after the restart; 25: after step 21, its division already in the file.
@pytest.mark.parametrize("kill", [7, 24, 25])
def test_interrupted_mid_step_schedule_with_momentum_resumes_to_the_uninterrupted_outcome(
    kill, tmp_path, monkeypatch, uninterrupted
):
    path = tmp_path / "state.pt"
    train = dict(spec=HAN, data=BOARD, seed=5, protocol=STEPS, init_seeds=SEEDS)
    interrupted(monkeypatch, path, kill, **train)
    saved = torch.load(path, weights_only=False)
    assert saved["live"] == [0, 1, 3, 4] and saved["seeds"] == SEEDS
    assert any(k.startswith("b.") for k in saved["opt"])  # the momentum buffers are in the file
    assert saved["schedule"]["divisions"][0] == {7: 0, 24: 2, 25: 3}[kill]
    assert_same_outcome(train_architecture(**train, checkpoint_path=path), uninterrupted)
