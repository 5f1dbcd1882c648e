"""The file-based image sets: IDX and CIFAR readers on tiny fixtures written here in the real formats
(IDX big-endian headers, gzipped or not, flat or torchvision layout; CIFAR pickles with bytes keys, loose
or in a .tar.gz), the paper's preprocessing (NLC paper D.2), the cache, the error messages, the
``archstudy datasets`` listing, and the real 70,000-image Fashion-MNIST from Debian's package."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.decomposition import PCA

from archstudy.study.cli import main
from archstudy.study.datasets import DataFileMalformed, DataFilesMissing, load_dataset
from archstudy.study.datasets import images, preprocess
from archstudy.study.datasets.idx import parse_idx

IDX_CODES = {
    np.dtype("u1"): 0x08,
    np.dtype("i1"): 0x09,
    np.dtype("i2"): 0x0B,
    np.dtype("i4"): 0x0C,
    np.dtype("f4"): 0x0D,
    np.dtype("f8"): 0x0E,
}
FASHION = Path("/usr/share/datasets/fashion-mnist")


def idx_bytes(a: np.ndarray) -> bytes:
    """LeCun's IDX: 0, 0, type code, ndim, big-endian uint32 sizes, big-endian data."""
    header = bytes([0, 0, IDX_CODES[a.dtype], a.ndim]) + b"".join(n.to_bytes(4, "big") for n in a.shape)
    return header + a.astype(a.dtype.newbyteorder(">")).tobytes()


def fake_images(rng, n, classes=10, side=8):
    """Class-dependent images: a bright square per class on noise, so PCA sees structure."""
    y = rng.integers(0, classes, n).astype(np.uint8)
    x = rng.integers(0, 60, (n, side, side)).astype(np.uint8)
    for i, c in enumerate(y):
        r, col = divmod(int(c), 4)
        x[i, 2 * r : 2 * r + 3, 2 * col : 2 * col + 3] += 180
    return x, y


def write_mnist(folder: Path, rng, gz=False, n_train=120, n_test=30):
    folder.mkdir(parents=True, exist_ok=True)
    xtr, ytr = fake_images(rng, n_train)
    xte, yte = fake_images(rng, n_test)
    for stem, a in [
        ("train-images-idx3-ubyte", xtr),
        ("train-labels-idx1-ubyte", ytr),
        ("t10k-images-idx3-ubyte", xte),
        ("t10k-labels-idx1-ubyte", yte),
    ]:
        raw = idx_bytes(a)
        if gz:
            (folder / (stem + ".gz")).write_bytes(gzip.compress(raw))
        else:
            (folder / stem).write_bytes(raw)
    return xtr.reshape(n_train, -1), ytr, xte.reshape(n_test, -1), yte


@pytest.fixture
def mnist_dir(tmp_path):
    rng = np.random.default_rng(0)
    arrays = write_mnist(tmp_path / "flat", rng)
    return tmp_path / "flat", arrays


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ARCHSTUDY_CACHE", str(d))
    return d


# ---------------------------------------------------------------- IDX


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
        np.array([-3, 258, 32767], dtype=np.int16),
        np.array([[1.5, -2.25], [1e300, 0.0]], dtype=np.float64),
    ],
)
def test_idx_round_trip_big_endian(array):
    raw = idx_bytes(array)
    out = parse_idx(raw)
    np.testing.assert_array_equal(out, array)
    assert out.shape == array.shape
    if array.dtype == np.int16:  # 258 is stored big-endian as 01 02
        assert raw[4 + 4 + 2 : 4 + 4 + 4] == b"\x01\x02"


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"\x00\x00", "shorter than the 4-byte IDX magic"),
        (b"\x01\x00\x08\x01" + (3).to_bytes(4, "big") + b"abc", "bad IDX magic 0x01000801"),
        (b"\x00\x00\x07\x01" + (3).to_bytes(4, "big") + b"abc", "bad IDX magic 0x00000701"),
        (b"\x00\x00\x08\x03" + (3).to_bytes(4, "big"), "header of 3 dimensions truncated"),
        (b"\x00\x00\x08\x01" + (4).to_bytes(4, "big") + b"abc", "header says shape (4,) of u1 (4 bytes of data) but 3"),
        (b"\x00\x00\x08\x01" + (2).to_bytes(4, "big") + b"abc", "but 3 bytes follow"),
    ],
)
def test_idx_malformed_headers_rejected(raw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_idx(raw)


def test_mnist_from_flat_idx_files(mnist_dir, cache):
    folder, (xtr, ytr, xte, yte) = mnist_dir
    data = load_dataset("mnist", seed=0, root=folder)
    # a 120-image training file gives validation 120 / 6 = 20; the test file is the test split, in order
    assert [len(s) for s in data.splits.values()] == [100, 20, 30]
    np.testing.assert_array_equal(data.test.y.numpy(), yte)
    np.testing.assert_array_equal(np.sort(np.concatenate([data.train.y.numpy(), data.val.y.numpy()])), np.sort(ytr))
    assert data.n_classes == 10 and data.d_in == data.meta["preprocessing_stats"]["pca_dimension"]
    assert data.train.x.shape[1] == data.d_in and data.train.x.dtype == torch.float64
    assert json.loads(json.dumps(data.meta)) == data.meta
    files = data.meta["source"]["files"]
    want = hashlib.sha256((folder / "train-images-idx3-ubyte").read_bytes()).hexdigest()
    assert files["train_images"]["sha256"] == want


def test_mnist_gz_and_torchvision_layouts_give_the_same_arrays(tmp_path, mnist_dir, cache):
    folder, _ = mnist_dir
    flat = load_dataset("mnist", seed=0, root=folder)
    write_mnist(tmp_path / "tv" / "MNIST" / "raw", np.random.default_rng(0), gz=True)
    tv = load_dataset("mnist", seed=0, root=tmp_path / "tv")
    write_mnist(tmp_path / "fm" / "FashionMNIST" / "raw", np.random.default_rng(0), gz=True)
    fm = load_dataset("fashion-mnist", seed=0, root=tmp_path / "fm")
    assert tv.meta["source"]["files"]["test_labels"]["path"].endswith("MNIST/raw/t10k-labels-idx1-ubyte.gz")
    fm_flat = load_dataset("fashion-mnist", seed=0, root=folder)  # its own seed streams: other splits than mnist
    for one, other in ((flat, tv), (fm_flat, fm)):
        for a, b in zip(one.splits.values(), other.splits.values()):
            np.testing.assert_allclose(a.x.numpy(), b.x.numpy(), rtol=0, atol=1e-12)
            assert torch.equal(a.y, b.y)


def test_missing_idx_files_name_the_files_and_directories(tmp_path, mnist_dir):
    with pytest.raises(DataFilesMissing) as e:
        load_dataset("mnist", root=tmp_path / "nothing")
    msg = str(e.value)
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert f in msg
    assert str(tmp_path / "nothing") in msg and str(tmp_path / "nothing" / "MNIST" / "raw") in msg and "\n" not in msg
    folder, _ = mnist_dir
    (folder / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataFilesMissing, match="missing t10k-labels-idx1-ubyte$"):
        load_dataset("mnist", root=folder)
    with pytest.raises(DataFilesMissing, match="no directory given"):
        load_dataset("mnist")


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda f: (f / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x09" + b"\x00" * 8),
            "header of 9 dimensions truncated",
        ),
        (
            lambda f: (f / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros((120, 2), np.uint8))),
            "holds a 2-d uint8 array, need a 1-d uint8",
        ),
        (
            lambda f: (f / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(29, np.uint8))),
            "holds 30 images but .* 29 labels",
        ),
        (
            lambda f: (f / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.full(30, 10, np.uint8))),
            "label 10 outside 0..9",
        ),
        (
            lambda f: (f / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((30, 7, 7), np.uint8))),
            "train images have 64 pixels, test images 49",
        ),
        (
            lambda f: (f / "train-images-idx3-ubyte").write_bytes(
                gzip.compress((f / "train-images-idx3-ubyte").read_bytes())[:-9]
            ),
            "broken gzip stream",
        ),
        # one line of ours, not numpy's RuntimeWarnings and message
        (
            lambda f: (f / "train-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((120, 0, 0), np.uint8))),
            "train-images-idx3-ubyte: holds images of 0 x 0 pixels, need at least 1 x 1",
        ),
        (
            lambda f: (f / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((30, 8, 0), np.uint8))),
            "t10k-images-idx3-ubyte: holds images of 8 x 0 pixels, need at least 1 x 1",
        ),
    ],
)
def test_malformed_idx_files_are_one_line_errors(mnist_dir, cache, damage, message):
    folder, _ = mnist_dir
    damage(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on the way to the one line
        with pytest.raises(DataFileMalformed, match=message) as e:
            load_dataset("mnist", root=folder)
    assert str(folder) in str(e.value) and "expected train-images-idx3-ubyte[.gz]" in str(e.value)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- CIFAR-10


def cifar_batches(rng, n_per_batch=12, n_test=15):
    """Python-2-style CIFAR batches: dicts with bytes keys, uint8 data [n, 3072], labels a list."""
    out = {}
    for name, n in [(f"data_batch_{i}", n_per_batch) for i in range(1, 6)] + [("test_batch", n_test)]:
        labels = rng.integers(0, 10, n)
        data = rng.integers(0, 256, (n, 3072)).astype(np.uint8)
        # the red channel carries the class
        data[:, :1024] = np.clip(data[:, :1024].astype(int) // 4 + 25 * labels[:, None], 0, 255)
        out[name] = {
            b"batch_label": name.encode(),
            b"labels": labels.tolist(),
            b"data": data,
            b"filenames": [f"{i}.png".encode() for i in range(n)],
        }
    return out


def _py2_str(b: bytes) -> bytes:  # a Python 2 str: SHORT_BINSTRING or BINSTRING
    return (b"U" + bytes([len(b)]) if len(b) < 256 else b"T" + struct.pack("<i", len(b))) + b


def _py2_int(i: int) -> bytes:  # BININT1 or BININT
    return b"K" + bytes([i]) if 0 <= i < 256 else b"J" + struct.pack("<i", i)


def _py2_value(v) -> bytes:
    if isinstance(v, bytes):
        return _py2_str(v)
    if isinstance(v, int):
        return _py2_int(v)
    if isinstance(v, list):  # EMPTY_LIST MARK ... APPENDS
        return b"](" + b"".join(_py2_value(x) for x in v) + b"e" if v else b"]"
    assert isinstance(v, np.ndarray) and v.dtype == np.uint8
    # numpy.core.multiarray._reconstruct(ndarray, (0,), 'b') then __setstate__((1, shape, dtype, False, raw)),
    # the dtype rebuilt as dtype('u1', 0, 1) with __setstate__((3, '|', None, None, None, -1, -1, 0))
    array = (
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _py2_int(0) + b"\x85" + _py2_str(b"b") + b"\x87R"
    )
    dtype = (
        b"cnumpy\ndtype\n"
        + _py2_str(b"u1")
        + _py2_int(0)
        + _py2_int(1)
        + b"\x87R("
        + _py2_int(3)
        + _py2_str(b"|")
        + b"NNN"
        + b"J\xff\xff\xff\xff" * 2
        + _py2_int(0)
        + b"tb"
    )
    shape = b"(" + b"".join(_py2_int(n) for n in v.shape) + b"t"
    return array + b"(" + _py2_int(1) + shape + dtype + b"\x89" + _py2_str(v.tobytes()) + b"tb"


def py2_pickle(batch: dict) -> bytes:
    """The bytes Python 2's cPickle (protocol 2) writes for a CIFAR batch, as in the real download:
    keys and strings are Python 2 str (read back as bytes), the array via numpy.core.multiarray."""
    return b"\x80\x02}(" + b"".join(_py2_str(k) + _py2_value(v) for k, v in batch.items()) + b"u."


def write_cifar_folder(folder: Path, batches, py2=False):
    folder.mkdir(parents=True, exist_ok=True)
    for name, batch in batches.items():
        (folder / name).write_bytes(py2_pickle(batch) if py2 else pickle.dumps(batch, protocol=2))


def write_cifar_tar(path: Path, batches):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, batch in batches.items():
            raw = pickle.dumps(batch, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def test_py2_pickle_fixture_is_what_pickle_reads_back():
    batch = {b"labels": [1, 300], b"data": np.arange(6, dtype=np.uint8).reshape(2, 3)}
    back = pickle.loads(py2_pickle(batch), encoding="bytes")
    assert back[b"labels"] == [1, 300] and back[b"data"].dtype == np.uint8
    np.testing.assert_array_equal(back[b"data"], batch[b"data"])


def test_cifar_from_folder_archive_and_direct_folder_agree(tmp_path, cache):
    # the folder holds Python-2-style pickles (as downloaded), the archive Python 3 protocol-2 ones
    batches = cifar_batches(np.random.default_rng(1))
    write_cifar_folder(tmp_path / "a" / "cifar-10-batches-py", batches, py2=True)
    write_cifar_tar(tmp_path / "b" / "cifar-10-python.tar.gz", batches)
    a = load_dataset("cifar10", seed=3, root=tmp_path / "a")
    b = load_dataset("cifar10", seed=3, root=tmp_path / "b")
    c = load_dataset("cifar10", seed=3, root=tmp_path / "a" / "cifar-10-batches-py")
    # 5 x 12 = 60 training images: validation 60 / 5 = 12; the 15 test images in file order
    assert [len(s) for s in a.splits.values()] == [48, 12, 15]
    np.testing.assert_array_equal(a.test.y.numpy(), batches["test_batch"][b"labels"])
    train_labels = np.concatenate([batches[f"data_batch_{i}"][b"labels"] for i in range(1, 6)])
    np.testing.assert_array_equal(np.sort(np.concatenate([a.train.y, a.val.y])), np.sort(train_labels))
    assert a.meta["preprocessing_stats"]["input_dimension"] == 3072
    for other in (b, c):
        for s, t in zip(a.splits.values(), other.splits.values()):
            np.testing.assert_allclose(s.x.numpy(), t.x.numpy(), rtol=0, atol=1e-12)
            assert torch.equal(s.y, t.y)
    assert b.meta["source"]["files"]["archive"]["path"].endswith("cifar-10-python.tar.gz")


class Boom:
    """A pickle that would run code when loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.remove, (self.marker,))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda b, m: {**b, "data_batch_3": {b"labels": [1]}}, r"keys \['labels'\] lack b'data' and b'labels'"),
        (
            lambda b, m: {**b, "test_batch": {b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}},
            r"b'data' must be a uint8 array \[n, 3072\]",
        ),
        (
            lambda b, m: {**b, "test_batch": {b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 12]}},
            "label 12 outside 0..9",
        ),
        (lambda b, m: {**b, "data_batch_1": {b"data": Boom(m), b"labels": []}}, "refusing to load global posix.remove"),
    ],
)
def test_malformed_cifar_batches_are_rejected_without_running_code(tmp_path, cache, corrupt, message):
    marker = tmp_path / "marker"
    marker.write_text("still here")
    batches = corrupt(cifar_batches(np.random.default_rng(2)), str(marker))
    write_cifar_folder(tmp_path / "cifar-10-batches-py", batches)
    with pytest.raises(DataFileMalformed, match=message) as e:
        load_dataset("cifar10", root=tmp_path)
    assert marker.exists() and "cifar-10-batches-py/{data_batch_1," in str(e.value) and "\n" not in str(e.value)


def _py2_array(shape, dtype: bytes, raw: bytes, flags: int = 0) -> bytes:
    """An ndarray pickled the way numpy does it, with any dtype name, dtype flags and raw bytes: only the
    globals the CIFAR reader has always admitted (numpy.core.multiarray._reconstruct, numpy.ndarray,
    numpy.dtype). With dtype 'O8' and flags 0 (numpy's "pickle as a list" flag cleared) numpy takes the raw
    bytes as the array's object pointers."""
    array = (
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _py2_int(0) + b"\x85" + _py2_str(b"b") + b"\x87R"
    )
    dt = (
        b"cnumpy\ndtype\n"
        + _py2_str(dtype)
        + _py2_int(0)
        + _py2_int(1)
        + b"\x87R("
        + _py2_int(3)
        + _py2_str(b"|")
        + b"NNN"
        + _py2_int(-1)
        + _py2_int(-1)
        + _py2_int(flags)
        + b"tb"
    )
    return (
        array
        + b"("
        + _py2_int(1)
        + b"("
        + b"".join(_py2_int(n) for n in shape)
        + b"t"
        + dt
        + b"\x89"
        + _py2_str(raw)
        + b"tb"
    )


def _hostile_batch(kind: str) -> bytes:
    good_data = _py2_array((2, 3072), b"u1", bytes(2 * 3072))
    labels = b"](" + _py2_int(1) + _py2_int(2) + b"e"
    pointers = _py2_array((2,), b"O8", b"\x41" * 16)  # two object "pointers" 0x4141414141414141
    parts = {
        # labels = [object array of attacker pointers]: np.asarray(labels) dereferences them (exit 139)
        "object pointers in labels": (good_data, b"]" + pointers + b"a"),
        "object array as labels": (good_data, pointers),
        "object array as data": (_py2_array((1, 3072), b"O8", b"\x41" * 8), labels),
        "labels an int array": (good_data, _py2_array((2,), b"<i8", bytes(16))),
        "labels not ints": (good_data, b"](" + _py2_int(1) + b"G" + struct.pack(">d", 2.0) + b"e"),
        "data of another length": (_py2_array((2, 3072), b"u1", bytes(100)), labels),
    }
    data, labels = parts[kind]
    return b"\x80\x02}(" + _py2_str(b"data") + data + _py2_str(b"labels") + labels + b"u."


# Run in a fresh interpreter: a crash (segfault) fails the test instead of killing pytest.
READ_BATCHES = r"""
import sys
from archstudy.study.datasets import DataFileMalformed, load_dataset
try:
    load_dataset("cifar10", root=sys.argv[1])
except DataFileMalformed as e:
    print(e)
    sys.exit(0)
sys.exit("accepted")
"""


@pytest.mark.parametrize(
    "kind, message",
    [
        ("object pointers in labels", "b'labels' must be a list of"),
        ("object array as labels", "b'labels' must be a list of"),
        ("object array as data", "b'data' must be a uint8 array"),
        ("labels an int array", "b'labels' must be a list of"),
        ("labels not ints", "b'labels' must be a list of"),
        ("data of another length", "b'data' must be a uint8 array"),
    ],
)
def test_hostile_cifar_batches_are_refused_in_one_line_naming_the_file(tmp_path, cache, kind, message):
    batches = cifar_batches(np.random.default_rng(3))
    folder = tmp_path / "cifar-10-batches-py"
    write_cifar_folder(folder, batches, py2=True)
    (folder / "data_batch_2").write_bytes(_hostile_batch(kind))
    root = Path(__file__).resolve().parents[3]
    p = subprocess.run(
        [sys.executable, "-c", READ_BATCHES, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), "ARCHSTUDY_CACHE": str(cache)},
    )
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    line = p.stdout.strip()
    assert "\n" not in line and line.startswith(f"cifar10: {folder / 'data_batch_2'}: ") and message in line, line


def test_cifar_missing_and_bad_archive(tmp_path):
    with pytest.raises(DataFilesMissing) as e:
        load_dataset("cifar10", root=tmp_path)
    assert "cifar-10-python.tar.gz" in str(e.value) and "test_batch" in str(e.value) and str(tmp_path) in str(e.value)
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(DataFileMalformed, match="not a readable tar archive"):
        load_dataset("cifar10", root=tmp_path)
    batches = cifar_batches(np.random.default_rng(1))
    del batches["data_batch_4"]
    write_cifar_tar(tmp_path / "cifar-10-python.tar.gz", batches)
    with pytest.raises(DataFileMalformed, match="lacks cifar-10-batches-py/data_batch_4"):
        load_dataset("cifar10", root=tmp_path)


# ---------------------------------------------------------------- the paper's preprocessing (D.2)


def test_normalize_points():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [5.0, 5.0, 5.0, 5.0]])
    out = preprocess.normalize_points(x.copy())
    np.testing.assert_allclose(out[0], (x[0] - 3.0) / np.sqrt(3.5))  # mean 3, variance (4+1+0+9)/4
    np.testing.assert_array_equal(out[1], 0.0)  # a constant point has nothing to scale


def test_dimension_holding_the_variance():
    ev = np.array([4.0, 3.0, 2.0, 1.0])  # cumulative fractions .4 .7 .9 1.0
    assert [preprocess.dimension_holding(ev, f) for f in (0.4, 0.41, 0.9, 0.9000001, 0.99)] == [1, 2, 3, 4, 4]
    with pytest.raises(ValueError, match="zero variance"):
        preprocess.dimension_holding(np.zeros(3))


@pytest.mark.parametrize("n", [200, 12])  # more points than features (covariance) and fewer (Gram matrix)
def test_variance_spectrum_is_the_covariance_spectrum(n):
    x = np.random.default_rng(n).standard_normal((n, 30)) @ np.diag(np.linspace(0.1, 3, 30))
    x -= x.mean(0)
    ev = preprocess.variance_spectrum(x)
    want = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False, bias=True)))[::-1]
    assert ev.shape == (30,) and np.all(np.diff(ev) <= 0)
    np.testing.assert_allclose(ev, np.clip(want, 0, None), atol=1e-12)


def test_random_projection_is_orthonormal_seeded_and_haar():
    p = preprocess.random_projection(50, 20, np.random.default_rng(0))
    assert p.shape == (50, 20)
    np.testing.assert_allclose(p.T @ p, np.eye(20), atol=1e-13)
    np.testing.assert_array_equal(p, preprocess.random_projection(50, 20, np.random.default_rng(0)))
    assert not np.allclose(p, preprocess.random_projection(50, 20, np.random.default_rng(1)))
    # a 3 x 1 submatrix of a Haar orthogonal matrix is a uniform unit vector: on S^2 each coordinate is
    # uniform on [-1, 1] (Archimedes), which a sign-biased QR would break
    rng = np.random.default_rng(7)
    z = np.array([preprocess.random_projection(3, 1, rng)[0, 0] for _ in range(3000)])
    assert stats.kstest(z, stats.uniform(-1, 2).cdf).pvalue > 1e-3


def test_paper_preprocessing_matches_an_independent_computation():
    rng = np.random.default_rng(4)
    raw = [rng.integers(0, 256, (n, 30)) @ np.diag(np.linspace(0.1, 3, 30)) for n in (200, 50, 40)]
    tr, va, te, info = preprocess.paper_preprocessing(*raw, np.random.default_rng(9))
    # independent: sklearn's PCA for k; per-point standardization by hand; P from the same seed
    per_point = [(a - a.mean(1, keepdims=True)) / a.std(1, keepdims=True) for a in raw]
    mean = per_point[0].mean(0)
    k = int(np.argmax(np.cumsum(PCA().fit(per_point[0]).explained_variance_ratio_) >= 0.99) + 1)
    assert info["pca_dimension"] == k == tr.shape[1] and info["input_dimension"] == 30
    assert info["variance_held"] >= 0.99 > info["variance_held_by_one_less"]
    p = preprocess.random_projection(30, k, np.random.default_rng(9))
    projected = [(a - mean) @ p for a in per_point]
    c = np.sqrt(np.mean(projected[0] ** 2))
    for got, want in zip((tr, va, te), projected):
        np.testing.assert_allclose(got, want / c, atol=1e-12)
    assert np.sqrt(np.mean(tr**2)) == pytest.approx(1.0, abs=1e-14)  # Q_{x,i} x(i) = 1
    np.testing.assert_allclose(tr.mean(0), 0, atol=1e-13)


def test_fixture_dataset_has_unit_quadratic_mean_and_no_test_leakage(tmp_path, mnist_dir, cache):
    folder, (xtr, ytr, xte, yte) = mnist_dir
    data = load_dataset("mnist", seed=0, root=folder)
    assert torch.sqrt(torch.mean(data.train.x**2)).item() == pytest.approx(1.0, abs=1e-14)
    assert torch.mean(data.train.x, 0).abs().max().item() < 1e-13
    # other test images change the test split only: no statistic comes from the test file
    (folder / "t10k-images-idx3-ubyte").write_bytes(idx_bytes((255 - xte).reshape(30, 8, 8)))
    again = load_dataset("mnist", seed=0, root=folder)
    assert torch.equal(data.train.x, again.train.x) and torch.equal(data.val.x, again.val.x)
    assert not torch.allclose(data.test.x, again.test.x)
    other_seed = load_dataset("mnist", seed=1, root=folder)
    assert not torch.equal(data.train.y, other_seed.train.y)


# ---------------------------------------------------------------- the cache


def test_cache_is_written_atomically_reused_and_keyed_by_source_hashes(mnist_dir, cache, monkeypatch):
    folder, _ = mnist_dir
    first = load_dataset("mnist", seed=0, root=folder)
    files = sorted(cache.iterdir())
    assert [f.name.startswith("mnist-seed0-") and f.suffix == ".npz" for f in files] == [True]  # no temp left
    assert first.meta["cache_key"] == files[0].stem

    def no_recompute(*a, **k):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(images, "paper_preprocessing", no_recompute)
    second = load_dataset("mnist", seed=0, root=folder)
    for a, b in zip(first.splits.values(), second.splits.values()):
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert second.meta == first.meta
    # new bytes in a source file: a different key, so a miss (which here would have to recompute)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(30, np.uint8)))
    with pytest.raises(AssertionError, match="the cache was not used"):
        load_dataset("mnist", seed=0, root=folder)
    with pytest.raises(AssertionError, match="the cache was not used"):
        load_dataset("mnist", seed=1, root=folder)


def test_cache_dir_option_wins_and_a_corrupt_cache_file_is_rebuilt(tmp_path, mnist_dir, cache):
    folder, _ = mnist_dir
    mine = tmp_path / "mine"
    data = load_dataset("mnist", root=folder, cache_dir=mine)
    assert not cache.exists()
    (path,) = mine.iterdir()
    path.write_bytes(b"garbage")
    again = load_dataset("mnist", root=folder, cache_dir=mine)
    assert torch.equal(data.train.x, again.train.x)
    assert path.stat().st_size > 1000  # rewritten whole
    load_dataset("mnist", root=folder, cache_dir=tmp_path / "off", cache=False)
    assert not (tmp_path / "off").exists()


# ---------------------------------------------------------------- archstudy datasets


def test_fashion_mnist_default_folder_missing_says_how_to_get_it(monkeypatch, tmp_path):
    moved = dataclasses.replace(images.IMAGE_SETS["fashion-mnist"], default_root=tmp_path)
    monkeypatch.setitem(images.IMAGE_SETS, "fashion-mnist", moved)
    with pytest.raises(DataFilesMissing) as e:
        load_dataset("fashion-mnist")
    msg = str(e.value)
    assert f"in {tmp_path} or {tmp_path / 'FashionMNIST' / 'raw'}" in msg and "dataset-fashion-mnist" in msg
    assert "\n" not in msg


def test_cli_lists_every_dataset_and_where_it_looks(tmp_path, mnist_dir, capsys):
    folder, _ = mnist_dir
    assert main(["datasets", "--root", str(folder)]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()}
    for name in ("waveform-noise", "checkerboard", "digits", "mnist", "fashion-mnist", "cifar10"):
        assert name in lines
    assert lines["mnist"].split()[1] == "yes" and f"found in {folder}" in lines["mnist"]
    assert lines["cifar10"].split()[1] == "no" and f"cifar-10-python.tar.gz in {folder}" in lines["cifar10"]
    assert lines["checkerboard"].split()[1] == "yes"
    assert main(["datasets"]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()}
    assert "no directory given" in lines["mnist"]
    present = (FASHION / "train-images-idx3-ubyte.gz").is_file()
    assert lines["fashion-mnist"].split()[1] == ("yes" if present else "no")
    assert str(FASHION) in lines["fashion-mnist"]


# ---------------------------------------------------------------- the real Fashion-MNIST (Debian package)


@pytest.mark.skipif(
    not (FASHION / "train-images-idx3-ubyte.gz").is_file(),
    reason="Debian package dataset-fashion-mnist not installed (/usr/share/datasets/fashion-mnist)",
)
def test_fashion_mnist_real_70000_images_end_to_end(cache):
    data = load_dataset("fashion-mnist", seed=0)
    assert [len(s) for s in data.splits.values()] == [50000, 10000, 10000]
    assert all(s.x.shape[1] == data.d_in for s in data.splits.values())
    st = data.meta["preprocessing_stats"]
    assert st["input_dimension"] == 784 and st["pca_dimension"] == data.d_in
    assert st["variance_held"] >= 0.99 > st["variance_held_by_one_less"]
    assert 300 <= data.d_in <= 700  # 512 measured (the paper's MNIST: 334)
    x = data.train.x.numpy()
    assert np.sqrt(np.mean(x**2)) == pytest.approx(1.0, abs=1e-12)
    assert np.abs(x.mean(0)).max() < 1e-12
    assert np.sqrt(np.mean(data.test.x.numpy() ** 2)) == pytest.approx(1.0, abs=0.02)
    # Fashion-MNIST: 6000 training and 1000 test images per class
    np.testing.assert_array_equal(np.bincount(data.test.y.numpy()), [1000] * 10)
    np.testing.assert_array_equal(np.bincount(np.concatenate([data.train.y, data.val.y])), [6000] * 10)
    # the projected inputs still carry the classes: a least-squares linear classifier (0.188 measured)
    y = np.eye(10)[data.train.y.numpy()]
    w = np.linalg.solve(x.T @ x + 1e-6 * np.eye(x.shape[1]), x.T @ (y - y.mean(0)))
    error = np.mean((data.test.x.numpy() @ w).argmax(1) != data.test.y.numpy())
    assert error < 0.25
    rec = data.meta["source"]["files"]["train_labels"]
    assert rec["path"] == str(FASHION / "train-labels-idx1-ubyte.gz") and len(rec["sha256"]) == 64
    cached = cache / (data.meta["cache_key"] + ".npz")
    assert cached.is_file()
    cached.unlink()  # 290 MB: not left in pytest's kept temporary directories
