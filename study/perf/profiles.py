"""What the E.2 schedule does on real nets: each run's epochs, measured (``PROFILES``), and the command that
measures them (``measure_epoch_profiles``).

The epochs of a run are mostly fixed by the schedule itself: a run that never improves again still trains
10 + 10 x 5 = 60 epochs before it ends (the first window of 10, then a window of 5 after each of the 10
divisions), a run that diverges at every window about 11, and a run trains longer only by the epochs in which it
still improves. ``study.perf.projection`` turns these profiles into hours; ``study.perf.bench.throughput`` into
architectures per hour.
"""

from __future__ import annotations

import time

import numpy as np

from archstudy.sampling import init_seed, sample_specs

# -- what the E.2 schedule does on real nets ------------------------------------------------------------


def measure_epoch_profiles(n: int = 8, budget: int = 5_000, dataset: str = "waveform-noise", study_seed: int = 0,
                           protocol="paper", threads: int | None = None, indices=None, each=None) -> list[dict]:
    """Train ``n`` architectures of the paper's space (appendix C) on ``dataset`` with ``protocol`` (E.2 by
    default, no epoch cap) and return, per architecture, what the schedule did: each run's epochs (rewound
    epochs included), whether it diverged, and the wall time. ``indices``: which of the ``n`` (default
    all); ``each(row)`` is called as every architecture finishes."""
    import torch

    from ..datasets import load_dataset
    from ..training.trainer import train_architecture

    if threads is not None:
        torch.set_num_threads(threads)
    data = load_dataset(dataset, seed=study_seed)
    d_in, d_out = data.train.x.shape[1], int(data.train.y.max()) + 1
    rows = []
    specs = sample_specs(n, study_seed, d_in, d_out, preset="paper", param_budget=budget)
    for index in range(n) if indices is None else indices:
        spec = specs[index]
        t0 = time.perf_counter()
        outcome = train_architecture(spec, data, seed=init_seed(study_seed, index), protocol=protocol)
        rows.append({
            "index": index, "depth": spec.depth, "width": spec.width, "activation": spec.activation,
            "norm": spec.norm, "skip": spec.skip, "params": spec.num_params, "dataset": dataset,
            "train_examples": len(data.train.y), "epochs": [r.epochs for r in outcome.runs],
            "diverged": [r.diverged for r in outcome.runs], "selected": outcome.best.lr_index,
            "test_error": outcome.best.test_error, "train_s": time.perf_counter() - t0,
        })
        if each is not None:
            each(rows[-1])
    return rows


def live_runs(epochs) -> np.ndarray:
    """live[e - 1] = the number of runs still training in epoch e (runs with at least e epochs), e = 1..max."""
    epochs = np.asarray(epochs, dtype=np.int64)
    top = int(epochs.max()) if len(epochs) else 0
    return np.array([(epochs >= e).sum() for e in range(1, top + 1)], dtype=np.int64)


def stack_epochs(epochs) -> float:
    """Full-stack equivalents: sum_e live(e) / R, the epochs of an R-run stack if cost were proportional to
    the live runs (= the mean epochs of a run)."""
    return float(np.mean(epochs))


# Measured by ``measure_epoch_profiles(n=8, budget=5_000, dataset="waveform-noise")`` (study seed 0: the
# first 8 architectures of the paper space at 5,000 parameters); when, where, and what they show:
# docs/performance.md.
PROFILES: tuple[dict, ...] = (
    {"index": 0, "depth": 37, "width": 11, "activation": "selu", "norm": "batch", "skip": "after_norm",
     "selected": 17, "test_error": 0.146, "diverged_runs": (),
     "epochs": (60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 216, 159, 122, 90, 88, 72, 85,
                91, 99, 76, 97, 84, 74, 110, 83, 81, 77, 68, 91, 99, 85, 92, 88, 79, 81, 85, 90)},
    {"index": 1, "depth": 49, "width": 9, "activation": "square", "norm": "batch", "skip": "none",
     "selected": 32, "test_error": 0.681, "diverged_runs": (),
     "epochs": (61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 69, 61, 63, 69, 65, 65, 63, 68, 65,
                69, 63, 63, 65, 73, 67, 66, 66, 66, 66, 66, 66, 71, 63, 63, 63, 67, 67, 70, 82)},
    {"index": 2, "depth": 5, "width": 34, "activation": "even_tanh", "norm": "batch", "skip": "none",
     "selected": 18, "test_error": 0.524, "diverged_runs": (),
     "epochs": (61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 61, 66, 78, 70, 71, 105, 85,
                70, 64, 70, 93, 81, 77, 84, 73, 62, 74, 71, 78, 67, 73, 61, 63, 69, 79, 66, 76)},
    {"index": 3, "depth": 45, "width": 10, "activation": "square", "norm": "layer", "skip": "after_linear",
     "selected": 21, "test_error": 0.19, "diverged_runs": (),
     "epochs": (60, 60, 60, 60, 67, 64, 63, 65, 62, 65, 79, 68, 73, 66, 79, 75, 161, 86, 166, 108,
                138, 127, 131, 103, 101, 101, 125, 103, 103, 108, 97, 116, 104, 101, 120, 104, 130, 132, 125, 106)},
    {"index": 4, "depth": 23, "width": 14, "activation": "square", "norm": "layer", "skip": "after_norm",
     "selected": 17, "test_error": 0.504, "diverged_runs": (),
     "epochs": (60, 60, 60, 60, 75, 73, 64, 65, 73, 70, 67, 68, 76, 72, 67, 100, 77, 82, 84, 74,
                88, 73, 65, 61, 62, 63, 61, 70, 62, 62, 69, 61, 61, 63, 61, 61, 61, 62, 61, 64)},
    {"index": 5, "depth": 49, "width": 9, "activation": "relu", "norm": "batch", "skip": "after_linear",
     "selected": 18, "test_error": 0.143, "diverged_runs": (),
     "epochs": (62, 62, 62, 62, 62, 62, 62, 62, 62, 65, 78, 175, 226, 236, 174, 107, 86, 80, 78, 80,
                71, 82, 76, 82, 83, 86, 74, 87, 71, 80, 84, 80, 84, 67, 67, 70, 70, 82, 82, 72)},
    {"index": 6, "depth": 41, "width": 10, "activation": "relu", "norm": "none", "skip": "none",
     "selected": 9, "test_error": 0.497, "diverged_runs": tuple(range(17, 40)),
     "epochs": (60, 60, 60, 60, 60, 60, 60, 60, 84, 150, 108, 71, 75, 86, 118, 87, 79, 70, 66, 65,
                52, 35, 40, 35, 35, 31, 15, 15, 31, 27, 23, 23, 31, 19, 15, 15, 15, 15, 15, 11)},
    {"index": 7, "depth": 7, "width": 27, "activation": "even_tanh", "norm": "batch", "skip": "after_norm",
     "selected": 18, "test_error": 0.215, "diverged_runs": (),
     "epochs": (60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 80, 155, 106, 111, 112, 124,
                104, 135, 120, 103, 87, 116, 89, 99, 94, 116, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60)},
)
EXPECTED_STACK_EPOCHS = float(np.mean([stack_epochs(p["epochs"]) for p in PROFILES]))  # 75.1 full-stack epochs
