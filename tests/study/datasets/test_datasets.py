"""The built-in datasets (waveform-noise, checkerboard, digits), the Dataset type and argument checking.

Every number is checked against the generator's definition, a paper's count, or an independent
computation (the waveform Bayes classifier below is derived here from the class densities, not taken
from the code under test)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.special import log_ndtr
from sklearn.datasets import load_digits
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

import archstudy.study as study
from archstudy.sampling import SpecError, UserError
from archstudy.study.datasets import DATASETS, DataFileMalformed, DataFilesMissing, Dataset, Split, load_dataset
from archstudy.study.datasets import waveform
from archstudy.study.datasets.dataset import make_split, split_indices, stream, unusable


def all_points(data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.concatenate([s.x.numpy() for s in data.splits.values()]),
        np.concatenate([s.y.numpy() for s in data.splits.values()]),
    )


# ---------------------------------------------------------------- waveform-noise


@pytest.fixture(scope="module")
def wave():
    return load_dataset("waveform-noise", seed=0)


def test_waveform_shapes_types_and_meta(wave):
    assert (wave.name, wave.d_in, wave.n_classes) == ("waveform-noise", 40, 3)
    assert [tuple(s.x.shape) for s in wave.splits.values()] == [(3000, 40), (1000, 40), (1000, 40)]
    for s in wave.splits.values():
        assert s.x.dtype == torch.float64 and s.y.dtype == torch.int64 and s.x.device.type == "cpu"
        assert set(s.y.unique().tolist()) == {0, 1, 2}
    assert json.loads(json.dumps(wave.meta))["sizes"] == {"train": 3000, "val": 1000, "test": 1000}
    assert wave.meta["seed"] == 0 and wave.meta["source"]["kind"] == "generator"


def test_waveform_class_priors_are_a_third(wave):
    _, y = all_points(wave)
    freq = np.bincount(y, minlength=3) / len(y)
    # binomial sd of a frequency over 5000 points: sqrt(2/9/5000) = 0.0067; 4.5 sd
    np.testing.assert_allclose(freq, 1 / 3, atol=0.03)


def test_waveform_standardized_with_training_statistics(wave):
    x = wave.train.x.numpy()
    np.testing.assert_allclose(x.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(x.std(0), 1, atol=1e-12)
    # validation was transformed with the training statistics, not its own: its means are not all 0
    assert np.abs(wave.val.x.numpy().mean(0)).max() > 1e-3


def test_waveform_noise_columns_carry_no_label_information(wave):
    x, y = all_points(wave)
    groups = lambda col: [col[y == c] for c in range(3)]  # noqa: E731
    # the 19 pure-noise attributes: neither class means (F test) nor class spreads (F test on squares) differ
    noise_p = [
        min(stats.f_oneway(*groups(x[:, j])).pvalue, stats.f_oneway(*groups(x[:, j] ** 2)).pvalue)
        for j in range(21, 40)
    ]
    assert min(noise_p) > 1e-3
    # while the wave attributes where h1, h2, h3 differ depend on the class overwhelmingly
    wave_p = [stats.f_oneway(*groups(x[:, j])).pvalue for j in range(4, 17)]
    assert max(wave_p) < 1e-20


def test_waveform_linear_classifier_near_the_bayes_error(wave):
    lda = LinearDiscriminantAnalysis().fit(wave.train.x.numpy(), wave.train.y.numpy())
    error = 1 - lda.score(wave.test.x.numpy(), wave.test.y.numpy())
    assert 0.12 <= error <= 0.20  # the generator's Bayes error is 13.3%


def test_waveform_same_seed_same_arrays_other_seed_other_arrays(wave):
    again = load_dataset("waveform-noise", seed=0)
    other = load_dataset("waveform-noise", seed=1)
    for a, b, c in zip(wave.splits.values(), again.splits.values(), other.splits.values()):
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
        assert not torch.equal(a.x, c.x)


def test_waveform_generator_class_conditional_moments_follow_breiman():
    m = np.arange(1, 22)
    h1 = np.maximum(6 - np.abs(m - 11), 0.0)
    h2 = np.maximum(6 - np.abs(m - 4 - 11), 0.0)  # h1(m - 4)
    h3 = np.maximum(6 - np.abs(m + 4 - 11), 0.0)  # h1(m + 4)
    np.testing.assert_array_equal(waveform.base_waves(), np.stack([h1, h2, h3]))
    x, y = waveform.waveform_noise(60_000, np.random.default_rng(5))
    assert x.shape == (60_000, 40) and y.dtype == np.int64
    for c, (a, b) in enumerate([(h1, h2), (h1, h3), (h2, h3)]):
        xc = x[y == c]
        # x = u a + (1 - u) b + e, u ~ U(0,1): mean (a + b) / 2, variance (a - b)^2 / 12 + 1
        mean, var = (a + b) / 2, (a - b) ** 2 / 12 + 1
        se = np.sqrt(var / len(xc))
        assert np.all(np.abs(xc[:, :21].mean(0) - mean) < 5 * se)
        np.testing.assert_allclose(xc[:, :21].var(0), var, rtol=0.05)
        np.testing.assert_allclose(xc[:, 21:].mean(0), 0, atol=5 / np.sqrt(len(xc)))
        np.testing.assert_allclose(xc[:, 21:].var(0), 1, rtol=0.05)


def bayes_log_likelihoods(x: np.ndarray) -> np.ndarray:
    """log p(x | c) up to a common constant, for the 21 wave attributes: with r = x - b, d = a - b,
    int_0^1 N(r; u d, I) du = exp(-(|r|^2 - (r.d)^2/|d|^2)/2) sqrt(2 pi)/|d| [Phi((1-mu)|d|) - Phi(-mu|d|)],
    mu = r.d / |d|^2. The 19 noise attributes have the same density under every class and cancel."""
    m = np.arange(1, 22)
    h = lambda s: np.maximum(6 - np.abs(s - 11), 0.0)  # noqa: E731
    waves = [h(m), h(m - 4), h(m + 4)]
    out = []
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        d = waves[a] - waves[b]
        r = x[:, :21] - waves[b]
        dd = d @ d
        rd = r @ d
        mu, nd = rd / dd, np.sqrt(dd)
        hi, lo = log_ndtr((1 - mu) * nd), log_ndtr(-mu * nd)
        out.append(-0.5 * ((r * r).sum(1) - rd**2 / dd) - np.log(nd) + hi + np.log1p(-np.exp(lo - hi)))
    return np.stack(out, axis=1)


def test_waveform_generator_bayes_error_is_13_point_3_percent():
    x, y = waveform.waveform_noise(20_000, np.random.default_rng(11))
    error = (bayes_log_likelihoods(x).argmax(1) != y).mean()
    # UCI: Bayes error about 13.3%; binomial sd over 20,000 points 0.0024
    assert 0.123 <= error <= 0.143


def test_waveform_reads_a_users_file(tmp_path):
    x, y = waveform.waveform_noise(500, np.random.default_rng(3))
    path = tmp_path / "waveform-+noise.data"
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", fmt=["%.2f"] * 40 + ["%d"])
    data = load_dataset("waveform-noise", seed=0, root=tmp_path)
    assert [len(s) for s in data.splits.values()] == [300, 100, 100]
    rec = data.meta["source"]["files"]["data"]
    assert rec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    _, ys = all_points(data)
    np.testing.assert_array_equal(np.bincount(ys, minlength=3), np.bincount(y, minlength=3))
    # rows of the file, standardized with the training rows' mean and sd (ddof 0), val with the same
    table = np.loadtxt(path, delimiter=",")
    tr, va, te = split_indices(500, (300, 100, 100), stream(0, "waveform-noise", "split"))
    mean, sd = table[tr, :40].mean(0), table[tr, :40].std(0)
    np.testing.assert_allclose(data.train.x.numpy(), (table[tr, :40] - mean) / sd, atol=1e-12)
    np.testing.assert_allclose(data.val.x.numpy(), (table[va, :40] - mean) / sd, atol=1e-12)
    np.testing.assert_array_equal(data.test.y.numpy(), table[te, 40].astype(int))


def test_waveform_file_errors_name_the_file_and_directory(tmp_path):
    with pytest.raises(DataFilesMissing) as e:
        load_dataset("waveform-noise", root=tmp_path)
    assert "waveform-+noise.data" in str(e.value) and str(tmp_path) in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "waveform-+noise.data").write_text("1,2,3\n4,5,6\n")
    with pytest.raises(DataFileMalformed) as e:
        load_dataset("waveform-noise", root=tmp_path)
    assert "3 columns, need 41" in str(e.value) and str(tmp_path) in str(e.value)
    (tmp_path / "waveform-+noise.data").write_text(",".join(["0.5"] * 40 + ["7"]) + "\n")
    with pytest.raises(DataFileMalformed, match="class column holds 7"):
        load_dataset("waveform-noise", root=tmp_path)


def test_a_waveform_file_scaled_by_1e300_is_the_same_data_once_standardized(tmp_path):
    """Its squares overflowed float64 (sd = inf): every point standardized to 0 or NaN, and every unit failed in its
    worker. Standardization does not depend on the scale: the scaled file gives the unscaled file's splits."""
    rng = np.random.default_rng(3)
    table = np.column_stack([rng.standard_normal((50, 40)) + 2.0, np.arange(50) % 3])
    (tmp_path / "plain").mkdir()
    (tmp_path / "scaled").mkdir()
    np.savetxt(tmp_path / "plain" / "waveform-+noise.data", table, delimiter=",", fmt="%.17g")
    scaled = np.column_stack([table[:, :40] * 1e300, table[:, 40]])
    np.savetxt(tmp_path / "scaled" / "waveform-+noise.data", scaled, delimiter=",", fmt="%.17g")
    plain, big = (load_dataset("waveform-noise", root=tmp_path / k) for k in ("plain", "scaled"))
    for name in ("train", "val", "test"):
        np.testing.assert_allclose(big.splits[name].x.numpy(), plain.splits[name].x.numpy(), rtol=1e-12, atol=1e-12)
        assert torch.equal(big.splits[name].y, plain.splits[name].y)
    assert unusable(big) is None


# ---------------------------------------------------------------- checkerboard: test_checkerboard.py


# ---------------------------------------------------------------- digits


def test_digits_bundled_standardized_split():
    data = load_dataset("digits", seed=0)
    assert (data.d_in, data.n_classes) == (64, 10)
    assert [len(s) for s in data.splits.values()] == [1078, 359, 360]
    _, y = all_points(data)
    np.testing.assert_array_equal(np.bincount(y), np.bincount(load_digits().target))
    xt = data.train.x.numpy()
    np.testing.assert_allclose(xt.mean(0), 0, atol=1e-12)
    sd = xt.std(0)
    constant = data.meta["preprocessing_stats"]["constant_features"]
    assert constant == (sd == 0).sum() and np.allclose(sd[sd > 0], 1, atol=1e-12)


# ---------------------------------------------------------------- the Dataset type and arguments


def test_dataset_to_moves_and_casts_but_keeps_labels_int64(wave):
    moved = wave.to("cpu", dtype=torch.float32)
    assert moved.train.x.dtype == torch.float32 and moved.train.y.dtype == torch.int64
    assert wave.train.x.dtype == torch.float64  # the original is untouched
    same = wave.to("cpu")
    assert same.train.x.dtype == torch.float64 and torch.equal(same.test.y, wave.test.y)
    with pytest.raises(ValueError):
        Split(torch.zeros(3, 2, dtype=torch.float64), torch.zeros(4, dtype=torch.int64))


def test_public_api_exports():
    assert study.load_dataset is load_dataset and study.Dataset is Dataset and study.DATASETS is DATASETS
    assert set(DATASETS) == {"waveform-noise", "checkerboard", "digits", "mnist", "fashion-mnist", "cifar10"}


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: load_dataset("imagenet"), "load_dataset.name = 'imagenet': must be one of 'waveform-noise'"),
        (lambda: load_dataset("checkerboard", blocks=10), "load_dataset.blocks = 10: must be one of 8, 12"),
        (
            lambda: load_dataset("waveform-noise", blocks=8),
            "load_dataset.blocks = 8: is not an option of waveform-noise",
        ),
        (
            lambda: load_dataset("digits", seed=-1),
            "load_dataset.seed = -1: must be an integer in [0, 9223372036854775807]",
        ),
        (
            lambda: load_dataset("digits", seed=1.5),
            "load_dataset.seed = 1.5: must be an integer in [0, 9223372036854775807]",
        ),
        (lambda: load_dataset("checkerboard", root="/data"), "load_dataset.root = '/data': must be None"),
        (lambda: load_dataset("mnist", cache=3), "load_dataset.cache = 3: must be true or false"),
        (lambda: load_dataset("mnist", cache_dir=5), "load_dataset.cache_dir = 5: must be a path"),
    ],
)
def test_bad_arguments_are_one_line_spec_errors(call, message):
    with pytest.raises(SpecError) as e:
        call()
    assert isinstance(e.value, UserError) and str(e.value).startswith(message) and "\n" not in str(e.value)


def test_common_options_are_accepted_by_every_dataset(tmp_path):
    data = load_dataset("waveform-noise", cache_dir=tmp_path, cache=False)
    assert len(data.train) == 3000 and not any(tmp_path.iterdir())  # generated sets are not cached


# -- a dataset a study cannot train and select on is refused up front -------------------------------------------
def _with_x(data: Dataset, split: str, element: int | None, value: float) -> Dataset:
    """``data`` with one input of a split set to ``value`` (``element`` of the flattened inputs; None: all)."""
    x = data.splits[split].x.view(-1)
    if element is None:
        x.fill_(value)
    else:
        x[element] = value
    return data


def _sized(train_y, val_n, test_n, classes=3) -> Dataset:
    rng = np.random.default_rng(0)
    split = lambda y: make_split(rng.standard_normal((len(y), 2)), np.asarray(y, dtype=np.int64))  # noqa: E731
    return Dataset(
        "tiny",
        split(train_y),
        split(np.arange(val_n) % classes),
        split(np.arange(test_n) % classes),
        d_in=2,
        n_classes=classes,
    )


@pytest.mark.parametrize(
    "data, problem",
    [
        (lambda: _sized([0, 1, 2], 0, 0), "the val and test splits are empty (train/val/test = 3/0/0 points)"),
        (lambda: _sized([], 3, 3), "the train split is empty (train/val/test = 0/3/3 points)"),
        (
            lambda: _sized([0, 1, 0, 1], 2, 2),
            "class 2 of 3 has no point in the training split (train/val/test = 4/2/2 points)",
        ),
        (
            lambda: _sized([0, 0], 2, 2, classes=4),
            "classes 1, 2, 3 of 4 have no point in the training split (train/val/test = 2/2/2 points)",
        ),
        (lambda: _sized([0, 1, 5], 2, 2), "the train split has labels in [0, 5], outside the 3 classes 0..2"),
        (lambda: _sized([0, 1, 2], 1, 1), None),
        (lambda: load_dataset("checkerboard"), None),
        (
            lambda: _with_x(_sized([0, 1, 2], 2, 2), "val", 1, math.nan),
            "the val split's inputs hold 1 value(s) that are not finite numbers (NaN or inf) once loaded and "
            "preprocessed: a data file with such values, or a damaged preprocessed cache (delete it to have it "
            "made again)",
        ),
        (
            lambda: _with_x(_sized([0, 1, 2], 2, 2), "train", 3, math.inf),
            "the train split's inputs hold 1 value(s) that are not finite numbers (NaN or inf) once loaded and "
            "preprocessed: a data file with such values, or a damaged preprocessed cache (delete it to have it "
            "made again)",
        ),
        (
            lambda: _with_x(_sized([0, 1, 2, 0], 2, 2), "train", None, 0.5),
            "all 4 points of the training split have the same inputs: there is nothing to learn from (a constant "
            "data file?)",
        ),
    ],
)
def test_a_dataset_that_a_study_cannot_train_and_select_on_says_why_in_one_line(data, problem):
    """A dataset too small to split (3 training images) made every unit fail in its worker."""
    assert unusable(data()) == problem
