"""``checkerboard``: the Han papers' synthetic grid (the variability paper, *Variability of Neural Networks
and Han-Layer*, appendix B.1 and D.1; Yu and Zhang, *Householder-Absolute Neural Layers*, section 3.1), built as
the authors' own generator builds it (their public code, ``utl.problem``).

The 6561 mesh points of an 81 x 81 grid over [-1, 1]^2, x = -1 + i / 40 for i = 0 .. 80 on each axis. The
central 72 x 72 points (grid indices 4 .. 75 on both axes) hold ``blocks`` x ``blocks`` squares of
s x s grid points, s = 72 / blocks (9 x 9 at 8 blocks, 6 x 6 at 12), labelled 0 / 1 alternately; the frame
of 4 grid points around them ("the surrounding edges", B.1) is labelled 0:

    y(i, j) = ((i - 4) // s + (j - 4) // s) mod 2   if 4 <= i, j <= 75,   else 0.

Square (0, 0), the one nearest the corner (-1, -1), is 0. Both boards have 36^2 * 2 = 2592 points labelled 1
(half of the 72^2) and 6561 - 72^2 = 1377 points in the frame, which is B.1's count for the 8 x 8 board:
"each of the 64 squares contains 81 grid points and the surrounding edges contain 1377 points" (6561 - 64 x 81).
No grid point lies on a line between two squares.

Changelog (the labels are the science: a study's ``data_fingerprint`` hashes them, so a study made on the
earlier board is refused on this one, ``study.execution.driver``):
- 2026-11-27: the authors' board as above. Before, a point was labelled 0 when its grid index i had
  i * blocks / 80 integral (block lines through [-1, 1]^2, the square's border included): 1377 such points at
  8 blocks (squares of 9 x 9 points between lines), 785 at 12 (lines only at i = 0, 20, 40, 60, 80; squares 6
  or 7 points wide), 2592 and 2888 points labelled 1. The two boards share about 60% of their labels at 12
  blocks and 70% at 8, so every result on ``checkerboard`` from before this date is on other data.

Here it is binary classification (classes 0/1, softmax cross-entropy like every dataset of the study, or a
0/1 target under the mean squared error, as the Han reproductions train it). Splits: 25% training (1640
points, as the papers) and the other 4921 split at random into validation (2460) and test (2461). The
coordinates are used as they are (no standardization): the board is the function being learnt and the
variability metric draws its grids on this square.
"""

from __future__ import annotations

import numpy as np

from .dataset import Dataset, jsonable, make_split, split_indices, stream
from .loaders import register

NAME = "checkerboard"
GRID = 81  # points per axis
FRAME = 4  # grid points of the zero frame on each side: the squares fill indices FRAME .. GRID - FRAME - 2
INNER = GRID - 1 - 2 * FRAME  # 72 points per axis hold the squares
BLOCK_CHOICES = (8, 12)
DEFAULT_BLOCKS = 12
N_POINTS = GRID * GRID
N_TRAIN = N_POINTS // 4  # 1640
N_VAL = (N_POINTS - N_TRAIN) // 2  # 2460
N_TEST = N_POINTS - N_TRAIN - N_VAL  # 2461


def axis(blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For grid indices i = 0 .. 80: coordinate -1 + i/40, whether i lies in the zero frame, and the index of
    the square column (or row) it lies in (-1 in the frame)."""
    i = np.arange(GRID)
    inside = (i >= FRAME) & (i < FRAME + INNER)
    square = np.where(inside, (i - FRAME) // (INNER // blocks), -1)
    return -1.0 + i / 40.0, ~inside, square


def board(blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All 6561 points: x [6561, 2] (first coordinate varies slowest), label [6561], frame mask [6561]."""
    coord, frame, square = axis(blocks)
    grid_a, grid_b = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    a, b = grid_a.ravel(), grid_b.ravel()
    x = np.stack([coord[a], coord[b]], axis=1)
    in_frame = frame[a] | frame[b]
    y = np.where(in_frame, 0, (square[a] + square[b]) % 2).astype(np.int64)
    return x, y, in_frame


def load(seed: int = 0, blocks: int = DEFAULT_BLOCKS) -> Dataset:
    x, y, in_frame = board(blocks)
    sizes = (N_TRAIN, N_VAL, N_TEST)
    parts = split_indices(N_POINTS, sizes, stream(seed, NAME, f"split-{blocks}"))
    splits = [make_split(x[i], y[i]) for i in parts]
    side = INNER // blocks
    meta = {
        "name": NAME,
        "seed": seed,
        "options": {"blocks": blocks},
        "source": {
            "kind": "generator",
            "generator": f"{GRID} x {GRID} grid on [-1, 1]^2, {blocks} x {blocks} alternating squares of "
            f"{side} x {side} points in its central {INNER} x {INNER}, a zero frame of {FRAME} points around "
            "them (the Han papers' authors' generator)",
            "points": N_POINTS,
            "edge_points": int(in_frame.sum()),  # the frame: "the surrounding edges" (B.1)
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
