"""``checkerboard``: the Han papers' synthetic grid (the variability paper, *Variability of Neural Networks
and Han-Layer*, appendix B.1 and D.1; Yu and Zhang, *Householder-Absolute Neural Layers*, section 3.1).

The 6561 mesh points of an 81 x 81 grid over [-1, 1]^2, x = -1 + i / 40 for i = 0 .. 80 on each axis,
split into ``blocks`` x ``blocks`` squares labelled 0 / 1 alternately; points ON a block edge (the
border of the square included) are labelled 0. With 8 x 8 blocks every square holds 9 x 9 = 81 interior
points and the edges hold 6561 - 64 * 81 = 1377 (the variability paper, B.1); the harder 12 x 12 board
(the variability paper, D.1; Yu and Zhang, section 3.1) is the default.

Edges are decided in exact integer arithmetic: grid index i lies on an edge iff i * blocks / 80 is an
integer (floating point could put a point on either side of an edge at random). With 12 blocks only the
lines i = 0, 20, 40, 60, 80 meet grid points (12 i / 80 is integral only there), so 6561 - 76^2 = 785
points are on edges and interior squares hold 6 or 7 grid columns.

Here it is binary classification (classes 0/1, softmax cross-entropy like every dataset of the study),
where the Han papers regress the label with squared error. Splits: 25% training (1640 points, as the
papers) and the other 4921 split at random into validation (2460) and test (2461).
Block (bx, by), counted from the corner (-1, -1), has label (bx + by) mod 2 (the corner block is 0).
The coordinates are used as they are (no standardization): the board is the function being learnt and
the variability metric draws its grids on this square.
"""

from __future__ import annotations

import numpy as np

from .dataset import Dataset, jsonable, make_split, split_indices, stream
from .loaders import register

NAME = "checkerboard"
GRID = 81  # points per axis
BLOCK_CHOICES = (8, 12)
DEFAULT_BLOCKS = 12
N_POINTS = GRID * GRID
N_TRAIN = N_POINTS // 4  # 1640
N_VAL = (N_POINTS - N_TRAIN) // 2  # 2460
N_TEST = N_POINTS - N_TRAIN - N_VAL  # 2461


def axis(blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For grid indices i = 0 .. 80: coordinate -1 + i/40, whether i lies on a block edge, block index."""
    i = np.arange(GRID)
    scaled = i * blocks  # block coordinate times (GRID - 1)
    return -1.0 + i / 40.0, scaled % (GRID - 1) == 0, np.minimum(scaled // (GRID - 1), blocks - 1)


def board(blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All 6561 points: x [6561, 2] (first coordinate varies slowest), label [6561], on-edge mask [6561]."""
    coord, edge, block = axis(blocks)
    grid_a, grid_b = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    a, b = grid_a.ravel(), grid_b.ravel()
    x = np.stack([coord[a], coord[b]], axis=1)
    on_edge = edge[a] | edge[b]
    y = np.where(on_edge, 0, (block[a] + block[b]) % 2).astype(np.int64)
    return x, y, on_edge


def load(seed: int = 0, blocks: int = DEFAULT_BLOCKS) -> Dataset:
    x, y, on_edge = board(blocks)
    sizes = (N_TRAIN, N_VAL, N_TEST)
    parts = split_indices(N_POINTS, sizes, stream(seed, NAME, f"split-{blocks}"))
    splits = [make_split(x[i], y[i]) for i in parts]
    meta = {
        "name": NAME,
        "seed": seed,
        "options": {"blocks": blocks},
        "source": {
            "kind": "generator",
            "generator": f"{GRID} x {GRID} grid on [-1, 1]^2, {blocks} x {blocks} "
            "alternating blocks, edge points labelled 0 (the Han papers)",
            "points": N_POINTS,
            "edge_points": int(on_edge.sum()),
            "label_1_points": int(y.sum()),
        },
        "preprocessing": ["none: raw grid coordinates"],
        "sizes": dict(zip(("train", "val", "test"), sizes)),
        "d_in": 2,
        "n_classes": 2,
    }
    train, val, test = splits
    return Dataset(NAME, train, val, test, d_in=2, n_classes=2, meta=jsonable(meta))


register(NAME, load)
