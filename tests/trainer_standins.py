"""Small slices of the real waveform-noise data for the trainer's tests (fast, yet the real generator).

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

from types import SimpleNamespace

from study import load_dataset


def waveform_noise(n_train=3000, n_val=1000, n_test=1000, seed=0):
    """The first ``n_train`` / ``n_val`` / ``n_test`` points of the built-in splits of ``load_dataset``."""
    data = load_dataset("waveform-noise", seed=seed)

    def head(split, n):
        return SimpleNamespace(x=split.x[:n].clone(), y=split.y[:n].clone())

    return SimpleNamespace(train=head(data.train, n_train), val=head(data.val, n_val), test=head(data.test, n_test),
                           d_in=data.d_in, n_classes=data.n_classes)
