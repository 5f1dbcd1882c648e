"""The ``checkerboard`` dataset: the Han papers' board as the authors' generator builds it (their public code's
``utl.problem``: ``np.kron`` of the alternating pattern with s x s ones, placed at rows and columns 4 .. 75 of an
81 x 81 zero array), checked point for point, and the refusal of results made on the earlier board."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from schema_values import value
import torch

from archstudy.study.datasets import Dataset, load_dataset
from archstudy.study.datasets.checkerboard import board
from archstudy.study.datasets.dataset import make_split


def all_points(data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.concatenate([s.x.numpy() for s in data.splits.values()]),
        np.concatenate([s.y.numpy() for s in data.splits.values()]),
    )


def grid_index(x: np.ndarray) -> np.ndarray:
    """Grid indices (i, j) of points x = -1 + i / 40."""
    return np.rint((x + 1.0) * 40.0).astype(int)


def authors_board(blocks: int) -> np.ndarray:
    """The authors' construction, independently of the module: T [81, 81] with T[4:76, 4:76] the Kronecker
    product of the alternating blocks x blocks pattern (0 at the corner) with a (72 / blocks)-square of ones;
    T[j, i] labels the point whose first coordinate has grid index i (their raster order) -- the pattern is
    symmetric, so T[i, j] too."""
    t = blocks // 2
    pattern = np.array([[0, 1] * t, [1, 0] * t] * t)
    T = np.zeros((81, 81))
    T[4:76, 4:76] = np.kron(pattern, np.ones((72 // blocks, 72 // blocks)))
    return T


# (i, j) grid indices and the label, worked out by hand from the rule: frame (i or j < 4 or > 75) -> 0, else
# the parity of (i - 4) // s + (j - 4) // s, s = 6 (12 blocks) or 9 (8 blocks)
WRITTEN = {
    12: [
        ((0, 0), 0),
        ((3, 40), 0),
        ((40, 3), 0),
        ((76, 40), 0),
        ((80, 80), 0),
        ((75, 76), 0),
        ((2, 9), 0),
        ((4, 4), 0),
        ((9, 9), 0),
        ((4, 10), 1),
        ((10, 4), 1),
        ((10, 10), 0),
        ((40, 40), 0),
        ((40, 46), 1),
        ((45, 40), 0),
        ((46, 40), 1),
        ((39, 40), 1),
        ((75, 75), 0),
        ((75, 4), 1),
        ((4, 75), 1),
        ((20, 20), 0),
        ((20, 22), 1),
        ((21, 21), 0),
        ((22, 22), 0),
        ((22, 21), 1),
        ((69, 70), 1),
    ],
    8: [
        ((0, 40), 0),
        ((79, 79), 0),
        ((3, 50), 0),
        ((76, 10), 0),
        ((4, 4), 0),
        ((12, 12), 0),
        ((13, 12), 1),
        ((13, 13), 0),
        ((40, 40), 0),
        ((41, 40), 0),
        ((39, 40), 1),
        ((75, 75), 0),
        ((75, 4), 1),
        ((22, 30), 0),
        ((22, 31), 1),
        ((31, 22), 1),
        ((58, 57), 1),
        ((58, 58), 0),
    ],
}


@pytest.mark.parametrize("blocks", [8, 12])
def test_the_board_is_the_authors_generator_point_for_point(blocks):
    data = load_dataset("checkerboard", seed=0, blocks=blocks)
    assert (data.d_in, data.n_classes) == (2, 2)
    assert [len(s) for s in data.splits.values()] == [1640, 2460, 2461]  # 25% train as the Han papers
    x, y = all_points(data)
    ij = grid_index(x)
    np.testing.assert_allclose(x, -1.0 + ij / 40.0, rtol=0, atol=1e-15)  # every point on the grid
    assert len(np.unique(ij, axis=0)) == 6561 and ij.min() == 0 and ij.max() == 80  # the splits partition it
    T = authors_board(blocks)
    np.testing.assert_array_equal(y, T[ij[:, 1], ij[:, 0]])
    # counts: half of the 72 x 72 central points are 1; the frame is 6561 - 72^2 = 1377 points, all 0 (B.1's
    # "the surrounding edges contain 1377 points", 6561 - 64 x 81, at 8 blocks)
    frame = (ij < 4).any(axis=1) | (ij > 75).any(axis=1)
    assert y.sum() == 72 * 72 // 2 == 2592 == data.meta["source"]["label_1_points"]
    assert frame.sum() == 1377 == data.meta["source"]["edge_points"] and not y[frame].any()
    # each square s x s points of one label, neighbours differ, the corner square 0
    s = 72 // blocks
    squares = (ij[~frame] - 4) // s
    for label in (0, 1):
        assert np.all((squares[y[~frame] == label].sum(axis=1) % 2) == label)
    assert np.all(np.unique(squares, axis=0, return_counts=True)[1] == s * s)
    by_index = {tuple(p): v for p, v in zip(ij, y)}
    for (i, j), label in WRITTEN[blocks]:
        assert by_index[(i, j)] == label, (i, j)


def test_default_is_12_blocks_and_splits_are_seeded():
    a, b = load_dataset("checkerboard"), load_dataset("checkerboard", blocks=12, seed=0)
    c = load_dataset("checkerboard", seed=1)
    assert a.meta["options"] == {"blocks": 12}
    assert torch.equal(a.train.x, b.train.x) and not torch.equal(a.train.x, c.train.x)
    x, y, frame = board(12)
    assert x.shape == (6561, 2) and frame.sum() == 1377 and y.sum() == a.meta["source"]["label_1_points"]


def earlier_board(x: np.ndarray, blocks: int) -> np.ndarray:
    """The board before 2026-11-27: 0 on the lines where i * blocks / 80 is integral, else the block parity."""
    ij = grid_index(x)
    on_line = ((ij * blocks) % 80 == 0).any(axis=1)
    block = np.minimum(ij * blocks // 80, blocks - 1)
    return np.where(on_line, 0, block.sum(axis=1) % 2)


def result_rows(spec) -> tuple[dict, list[dict]]:
    """An architectures row and its runs rows of ``spec`` (the values arbitrary: the store's check reads the
    file's recorded science config, not the rows)."""
    from archstudy.study.execution.store import ARCHITECTURES_SCHEMA, RUNS_SCHEMA

    arch = {f.name: value(f, i) for i, f in enumerate(ARCHITECTURES_SCHEMA)}
    arch.update(spec.to_dict(), arch_id=spec.content_id, index=7, variant="base", nlc=float("nan"), trained=True)
    runs = [
        {**{f.name: value(f, k) for f in RUNS_SCHEMA}, "arch_id": spec.content_id, "index": 7, "lr_index": k}
        | {"selected": k == 1}
        for k in range(3)
    ]
    return arch, runs


def test_results_on_the_earlier_board_are_refused(tmp_path):
    """The labels changed (about 60% shared at 12 blocks): the data fingerprint a study records changes, so does
    its science fingerprint, and the store refuses a result file written under the earlier one."""
    from archstudy.sampling import sample_spec
    from archstudy.study.execution.driver import data_fingerprint
    from archstudy.study.execution.store import ARCHITECTURES, RUNS, Store, unit_name
    from archstudy.study.experiment.config import StudyConfig

    data = load_dataset("checkerboard", seed=0)
    old_splits = [make_split(s.x.numpy(), earlier_board(s.x.numpy(), 12)) for s in data.splits.values()]
    earlier = Dataset("checkerboard", *old_splits, d_in=2, n_classes=2, meta=data.meta)
    _, y = all_points(data)
    _, y_old = all_points(earlier)
    assert 0.55 < (y == y_old).mean() < 0.65 and y_old.sum() == 2 * 38 * 38  # the earlier board's closed form
    new_fp, old_fp = data_fingerprint(data), data_fingerprint(earlier)
    assert new_fp != old_fp
    config = StudyConfig(dataset="checkerboard", architectures=3).replace(d_in=2, d_out=2, data_fingerprint=new_fp)
    before = config.replace(data_fingerprint=old_fp)
    assert before.science_fingerprint != config.science_fingerprint
    spec = sample_spec(3, 7, 2, 2, "extended", 4000)
    name = unit_name(7, spec.content_id)
    store = Store(tmp_path / "s")
    store.write_result(name, *result_rows(spec), science=before.science_json)
    for kind in (ARCHITECTURES, RUNS):
        meta = pq.read_schema(tmp_path / "s" / kind / f"{name}.parquet").metadata
        assert json.loads(meta[b"archstudy.science"])["data_fingerprint"] == old_fp
        assert store.check_file(kind, name, before.science_fingerprint).ok
        check = store.check_file(kind, name, config.science_fingerprint)
        assert not check.ok and check.other_config
