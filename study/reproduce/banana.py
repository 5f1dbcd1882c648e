"""The standard banana data set of Chen and Ge's figure 3, read from a file the user names (``--root``), and the
authors' preprocessing of it; nothing is downloaded.

The set is the two-class "banana" benchmark of 5,300 points in two dimensions (Rätsch, Onoda and Müller, *Soft
Margins for AdaBoost*; shipped by KEEL as ``banana.dat`` and by OpenML as ``banana``); Chen and Ge's code reads it
as ``2d_banana.csv`` (columns ``At1``, ``At2``, ``Class``, the class -1 or 1). ``locate`` finds one of
``FILE_NAMES`` in the directory given; ``read`` accepts the common forms: comma-, semicolon- or
whitespace-separated, an optional header row (the label column named ``Class``, ``class``, ``label`` or ``y``,
else the last), KEEL's ``@``-lines and ``%`` comments skipped, two numeric feature columns and a label in {-1, 1},
{1, 2} or {0, 1} (mapped to 0 and 1 in that order, -1 to 0 as the authors' code does).

``authors_split`` is the authors' notebook's preprocessing, seeded: 1,000 of the rows drawn without replacement
(numpy's legacy ``RandomState(seed).choice``), 800 for training and 200 for testing (scikit-learn's
``train_test_split(test_size=0.2, random_state=seed)``: a ``RandomState(seed)`` permutation, its first 200 the
test set), both standardized by the training split's mean and standard deviation (over n, as TensorFlow's
``reduce_std``). At seed 0 these are the authors' draws (their ``GLOBAL_SEED`` is 0).

Without the file the reproduction trains on a labelled stand-in (``stand_in``): two-moons points of the same
count, split and standardization.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from archstudy.sampling import SpecError, UserError

FILE_NAMES = ("2d_banana.csv", "banana.csv", "banana.dat", "banana.txt")
ROWS = 5300  # the standard set
SUBSET, TEST = 1000, 200  # the authors' notebook: 1,000 points, test_size=0.2
LABEL_NAMES = ("class", "label", "y")
LABEL_SETS = ((-1.0, 1.0), (1.0, 2.0), (0.0, 1.0))  # -> (0, 1) in this order
STAND_IN_NOISE = 0.2  # sd of the stand-in's two-moons noise
WHERE = "reproduce gmp-banana"


def locate(root) -> Path:
    """The banana file in the directory ``root`` (the first of ``FILE_NAMES`` there), or a one-line error."""
    directory = Path(root).expanduser()
    for name in FILE_NAMES:
        if (directory / name).is_file():
            return directory / name
    raise SpecError(WHERE, "root", str(root), f"holds none of {', '.join(FILE_NAMES)} (the standard banana set)")


def _fields(line: str) -> list[str]:
    return [f for f in re.split(r"[,;\s]+", line.strip()) if f]


def read(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(x [n, 2] float64, y [n] in {0, 1}) of a banana file (module docstring); a one-line ``UserError`` naming
    the file, the line and what is allowed when it is not one."""
    x: list[list[float]] = []
    labels: list[float] = []
    label_at = -1
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith(("@", "%", "#")):
                continue
            fields = _fields(line)
            try:
                values = [float(v) for v in fields]
            except ValueError:
                if x:  # a header is the first row only
                    raise UserError(
                        f"{path}, line {number}: {line.strip()[:60]!r}: every row must be numbers"
                    ) from None
                names = [v.strip("\"'").lower() for v in fields]
                label_at = next((names.index(n) for n in LABEL_NAMES if n in names), len(names) - 1)
                continue
            if len(values) != 3:
                raise UserError(
                    f"{path}, line {number}: {len(values)} fields: two features and a label are allowed, 3 fields"
                )
            label = values.pop(label_at)
            x.append(values)
            labels.append(label)
    if len(x) < SUBSET:
        raise UserError(f"{path}: {len(x)} rows: the authors draw {SUBSET} of them, so at least {SUBSET} are needed")
    features, y = np.asarray(x, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    if not np.isfinite(features).all():
        raise UserError(f"{path}: a feature is not a finite number: every feature must be")
    found = tuple(sorted(set(y.tolist())))
    for pair in LABEL_SETS:
        if set(found) <= set(pair) and len(found) == 2:
            return features, (y == pair[1]).astype(np.float64)
    raise UserError(
        f"{path}: labels {found[:5]}: the label column must hold two classes, -1 and 1, 1 and 2, or 0 and 1"
    )


def authors_split(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """(x_train [800, 2], y_train, x_test [200, 2], y_test) as the authors' notebook makes them (module
    docstring)."""
    chosen = np.random.RandomState(seed).choice(len(x), size=SUBSET, replace=False)
    x, y = x[chosen], y[chosen]
    order = np.random.RandomState(seed).permutation(SUBSET)
    test, train = order[:TEST], order[TEST:]
    mean, sd = x[train].mean(axis=0), x[train].std(axis=0)
    return (x[train] - mean) / sd, y[train], (x[test] - mean) / sd, y[test]


def stand_in(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``ROWS`` two-moons points (scikit-learn's ``make_moons`` shape: the outer moon (cos t, sin t), the inner
    (1 - cos t, 1/2 - sin t), t uniform on [0, pi], Gaussian noise of sd ``STAND_IN_NOISE``), labels 0 and 1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, ROWS)
    t = rng.uniform(0.0, math.pi, ROWS)
    x = np.where(y[:, None] == 0, np.stack([np.cos(t), np.sin(t)], 1), np.stack([1 - np.cos(t), 0.5 - np.sin(t)], 1))
    return x + rng.normal(0.0, STAND_IN_NOISE, (ROWS, 2)), y.astype(np.float64)
