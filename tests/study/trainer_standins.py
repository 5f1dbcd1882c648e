"""Stand-in data for the trainer's tests (the datasets module is built in parallel).

``waveform_noise``: Breiman's waveform generator (Breiman et al. 1984, "waveform + noise"), as DESIGN.md
section 2 describes the built-in set: 21 attributes u h_a + (1 - u) h_b + N(0, 1) for the class's two of
three triangular base waves, 19 pure N(0, 1) attributes, 3 classes, standardized with the training
split's statistics. Test modules load it by path (they are not a package).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch


def _waves():
    i = np.arange(1, 22)
    h1 = np.maximum(6 - np.abs(i - 11), 0)
    return h1, np.maximum(6 - np.abs(i - 15), 0), np.maximum(6 - np.abs(i - 7), 0)


def waveform_noise(n_train=3000, n_val=1000, n_test=1000, seed=0):
    rng = np.random.default_rng(seed)
    h1, h2, h3 = _waves()
    pairs = np.stack([np.stack([h1, h2]), np.stack([h1, h3]), np.stack([h2, h3])])  # [class, 2, 21]
    n = n_train + n_val + n_test
    y = rng.integers(0, 3, n)
    u = rng.random((n, 1))
    x = u * pairs[y, 0] + (1 - u) * pairs[y, 1] + rng.standard_normal((n, 21))
    x = np.concatenate([x, rng.standard_normal((n, 19))], axis=1)
    mu, sd = x[:n_train].mean(0), x[:n_train].std(0)
    x = (x - mu) / sd

    def split(a, b):
        return SimpleNamespace(x=torch.tensor(x[a:b]), y=torch.tensor(y[a:b]))

    return SimpleNamespace(train=split(0, n_train), val=split(n_train, n_train + n_val),
                           test=split(n_train + n_val, n))
