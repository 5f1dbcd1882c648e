"""``digits``: scikit-learn's bundled 8 x 8 handwritten digits (UCI optdigits test part: 1797 points, 64
pixel counts 0..16, 10 classes), read from the copy shipped inside scikit-learn: always there, no download.

No paper prescribes its processing; it is treated like the tabular waveform-noise set (NLC paper D.2):
split at random in the waveform proportions 3/5, 1/5, 1/5 (1078 / 359 / 360) and each feature
standardized with the training split's mean and standard deviation. The few pixels that are constant on
the training split (always blank corners) are only centred, so they stay 0 (d_in stays 64).
"""

from __future__ import annotations

import numpy as np

from .dataset import Dataset, jsonable, split_standardized
from .loaders import register

NAME = "digits"
N_POINTS, D_IN, N_CLASSES = 1797, 64, 10


def load(seed: int = 0) -> Dataset:
    import sklearn  # here, not at module level: importing scikit-learn costs every worker and command 2-3 s
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    (train, val, test), split = split_standardized(x, y, seed, NAME)
    meta = {
        "name": NAME,
        "seed": seed,
        "source": {
            "kind": "bundled",
            "generator": f"sklearn.datasets.load_digits (scikit-learn {sklearn.__version__})",
            "points": len(y),
        },
        "preprocessing": [
            "per-feature standardization (x - mean) / sd with the training split's statistics; "
            "features constant on it only centred"
        ],
        **split,
        "d_in": D_IN,
        "n_classes": N_CLASSES,
    }
    return Dataset(NAME, train, val, test, d_in=D_IN, n_classes=N_CLASSES, meta=jsonable(meta))


register(NAME, load)
