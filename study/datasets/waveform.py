"""``waveform-noise``: Breiman's waveform generator with 19 noise attributes (Breiman, Friedman, Olshen and
Stone, *Classification and Regression Trees*, 1984, section 2.6.2; UCI "Waveform Database Generator
(Version 2)", ``waveform-+noise``), the third dataset of the NLC paper (appendix D).

Base waves over m = 1 .. 21::

    h1(m) = max(6 - |m - 11|, 0),   h2(m) = h1(m - 4),   h3(m) = h1(m + 4)

A point draws its class c uniformly from {0, 1, 2} and one u ~ U(0, 1); its first 21 attributes are

    c = 0:  u h1 + (1 - u) h2 + e,    c = 1:  u h1 + (1 - u) h3 + e,    c = 2:  u h2 + (1 - u) h3 + e

with e ~ N(0, I_21), and 19 more attributes are pure N(0, 1) noise, 40 in all. The Bayes error of this
generator is about 13.3% (UCI; the tests recompute it from the class densities).

The paper's dataset: 5000 points split at random into 3000 / 1000 / 1000, features normalized to mean 0
and variance 1 (appendix D.2) with the training split's statistics so nothing leaks from val or test.
With ``root`` the points come from a user's ``waveform-+noise.data`` (41 comma-separated columns: the
40 attributes, then the class 0/1/2) instead of the generator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .dataset import DataFileMalformed, DataFilesMissing, Dataset, jsonable, split_standardized, stream
from .loaders import register
from .sources import file_record

NAME = "waveform-noise"
N_POINTS, N_TRAIN, N_VAL, N_TEST = 5000, 3000, 1000, 1000
N_WAVE, N_NOISE, N_CLASSES = 21, 19, 3
FILE = "waveform-+noise.data"
# Which two base waves each class mixes, in Breiman's order.
CLASS_WAVES = ((0, 1), (0, 2), (1, 2))


def base_waves() -> np.ndarray:
    """[3, 21]: h1, h2, h3 at m = 1 .. 21 (module docstring)."""
    m = np.arange(1, N_WAVE + 1, dtype=np.float64)
    h1 = lambda s: np.maximum(6.0 - np.abs(s - 11.0), 0.0)  # noqa: E731
    return np.stack([h1(m), h1(m - 4.0), h1(m + 4.0)])


def waveform_noise(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` raw points of the generator: x float64 [n, 40], y int64 [n].

    Draw order (fixed, so a seed gives the same points everywhere): all classes, then all u, then the
    [n, 40] standard normal noise (columns 0..20 added to the waves, 21..39 the pure noise attributes)."""
    h = base_waves()
    y = rng.integers(0, N_CLASSES, size=n)
    u = rng.random(n)[:, None]
    first = np.array([a for a, _ in CLASS_WAVES])[y]
    second = np.array([b for _, b in CLASS_WAVES])[y]
    noise = rng.standard_normal((n, N_WAVE + N_NOISE))
    x = noise
    x[:, :N_WAVE] += u * h[first] + (1.0 - u) * h[second]
    return x, y.astype(np.int64)


def read_waveform_file(path: Path, expected: str) -> tuple[np.ndarray, np.ndarray]:
    """A UCI ``waveform-+noise.data``: one point per line, 40 attributes then the class, comma-separated."""

    def bad(what: str) -> DataFileMalformed:
        return DataFileMalformed(f"{NAME}: {path}: {what}; expected {expected}")

    try:
        table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad(f"not a table of comma-separated numbers ({str(e).splitlines()[0]})") from None
    if table.shape[0] == 0 or table.shape[1] != N_WAVE + N_NOISE + 1:
        columns = table.shape[1] if table.size else 0
        raise bad(f"{columns} columns, need {N_WAVE + N_NOISE + 1} (40 attributes and the class)")
    if not np.isfinite(table).all():
        raise bad("non-finite values")
    y = table[:, -1]
    wrong = y[~np.isin(y, (0.0, 1.0, 2.0))]
    if wrong.size:
        raise bad(f"class column holds {wrong[0]:g} (and {wrong.size - 1} more), classes must be 0, 1 or 2")
    return table[:, :-1].copy(), y.astype(np.int64)


def load(seed: int = 0, root: Path | None = None) -> Dataset:
    if root is None:
        x, y = waveform_noise(N_POINTS, stream(seed, NAME, "generate"))
        source = {
            "kind": "generator",
            "generator": "Breiman (1984) waveform with 19 noise attributes",
            "points": N_POINTS,
            "draw_order": "class, u, N(0,1) noise [n, 40]",
        }
    else:
        path = Path(root) / FILE
        expected = f"{FILE} in {Path(root)}"
        if not path.is_file():
            raise DataFilesMissing(f"{NAME}: expected {FILE} (41 comma-separated columns) in {Path(root)}; not found")
        x, y = read_waveform_file(path, expected)
        source = {"kind": "files", "files": {"data": file_record(path)}}
    (train, val, test), split = split_standardized(x, y, seed, NAME)
    meta = {
        "name": NAME,
        "seed": seed,
        "source": source,
        "preprocessing": [
            "per-feature standardization (x - mean) / sd with the training split's statistics (NLC paper D.2)"
        ],
        **split,
        "d_in": N_WAVE + N_NOISE,
        "n_classes": N_CLASSES,
    }
    return Dataset(NAME, train, val, test, d_in=N_WAVE + N_NOISE, n_classes=N_CLASSES, meta=jsonable(meta))


def find(root: Path | None) -> tuple[bool, str] | None:
    """With ``root``: whether a user's ``waveform-+noise.data`` is there; without, nothing to find (generated)."""
    if root is None:
        return None
    path = Path(root).expanduser() / FILE
    if path.is_file():
        return True, f"found {path}"
    return False, f"expected {FILE} in {path.parent} (without a root: generated)"


register(NAME, load, find)
