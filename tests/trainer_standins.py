"""Small slices of the real datasets for the trainer's tests (fast, yet the real generators), the
Householder paper's checkerboard setup in small, and a training interrupted after its n-th checkpoint.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, load_dataset, train_architecture
from archstudy.study.training import checkpoint as ckpt


def _heads(data, n_train, n_val, n_test):
    def head(split, n):
        return SimpleNamespace(x=split.x[:n].clone(), y=split.y[:n].clone())

    return SimpleNamespace(
        train=head(data.train, n_train),
        val=head(data.val, n_val),
        test=head(data.test, n_test),
        d_in=data.d_in,
        n_classes=data.n_classes,
    )


def waveform_noise(n_train=3000, n_val=1000, n_test=1000, seed=0):
    """The first ``n_train`` / ``n_val`` / ``n_test`` points of the built-in splits of ``load_dataset``."""
    return _heads(load_dataset("waveform-noise", seed=seed), n_train, n_val, n_test)


def checkerboard(n_train=120, n_val=60, n_test=60, seed=0):
    """The same for the 12 x 12 checkerboard (2 inputs, labels 0 / 1), from every ``k``-th point of each split
    rather than its first points: the board's splits keep the grid's order, and their first points lie in its
    zero frame (the authors' board), all labelled 0."""
    data = load_dataset("checkerboard", seed=seed)

    def spread(split, n):
        k = max(1, len(split.y) // n)
        return SimpleNamespace(x=split.x[::k], y=split.y[::k])

    return _heads(
        SimpleNamespace(
            train=spread(data.train, n_train),
            val=spread(data.val, n_val),
            test=spread(data.test, n_test),
            d_in=data.d_in,
            n_classes=data.n_classes,
        ),
        n_train,
        n_val,
        n_test,
    )


# The HanNet of the Householder paper's checkerboard experiment in small (Yu and Zhang, section 3.2.1): a
# dense input layer, one dense width-to-width layer, a Householder layer, one dense width-to-width layer,
# one output; abs activations.
HAN = ArchSpec(depth=5, width=6, d_in=2, d_out=1, activation="abs", weights="householder", dense_ends=1)
# Its protocol (section 3.1, Table 2) in small: mse on the 0/1 label, momentum 0.9, the steps schedule.
# With 120 training points, 6 minibatches of 20 per epoch; 23 steps = 3 epochs of 6 and 5 steps of a
# fourth; the rate is divided by 5 before steps 6, 12 and 21 (floor(f * 23 + 1/2) for f = 1/4, 1/2, 9/10):
# two at an epoch's start, one within an epoch.
STEPS = Protocol(
    loss="mse",
    momentum=0.9,
    batch_size=20,
    schedule="steps",
    iterations=23,
    step_at=(0.25, 0.5, 0.9),
    division_factor=5.0,
    selection="test",
    lrs=(0.005, 0.02, 0.08),
)


class Killed(Exception):
    """What ``interrupted`` raises to stop a training right after a checkpoint is on disk."""


def interrupted(monkeypatch, path: Path, kill: int, **train) -> None:
    """Train with a checkpoint after every step and epoch; die right after the ``kill``-th is on disk."""
    save, count = ckpt.save_checkpoint, [0]

    def dying(p, state):
        save(p, state)
        count[0] += 1
        if count[0] == kill:
            raise Killed

    monkeypatch.setattr(ckpt, "save_checkpoint", dying)
    with pytest.raises(Killed):
        train_architecture(checkpoint_path=path, checkpoint_every_s=0.0, **train)
    monkeypatch.setattr(ckpt, "save_checkpoint", save)
