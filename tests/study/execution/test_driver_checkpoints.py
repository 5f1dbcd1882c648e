"""A unit's trainer checkpoint on object storage (pyarrow's in-memory filesystem stands for S3): the retry of
a unit, wherever it runs, starts from the last version the trainer wrote."""

import os
import time

from pyarrow._fs import _MockFileSystem

from archstudy.study.execution.store import Store
from archstudy.study.execution.unit import MirroredCheckpoint

NAME = "000003-0123456789abcdef"


def _write(path, data: bytes):
    """As the trainer writes it: a temporary file in the same folder, renamed over the checkpoint."""
    tmp = f"{path}.x1y2.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_each_new_checkpoint_reaches_the_store_and_a_retry_starts_from_it():
    store = Store(filesystem=_MockFileSystem(), root="bucket/study")
    spot = MirroredCheckpoint(store, NAME, poll_s=0.02)
    with spot as path:
        assert not os.path.exists(path) and os.path.dirname(path) != store.root
        for version in (b"epoch 1", b"epoch 2"):
            time.sleep(0.05)  # each version with a later modification time
            _write(path, version)
            _wait_until(  # waits here: the lambda does not outlive this iteration
                lambda: (
                    store.exists("checkpoints", f"{NAME}.pt")
                    and store.read_bytes("checkpoints", f"{NAME}.pt") == version  # noqa: B023
                )
            )
    assert not os.path.exists(path)  # the local scratch copy is gone with the attempt

    try:
        with MirroredCheckpoint(store, NAME, poll_s=0.02) as path:
            time.sleep(0.05)
            _write(path, b"epoch 3")
            raise RuntimeError("worker lost mid-architecture")
    except RuntimeError:
        pass
    assert store.read_bytes("checkpoints", f"{NAME}.pt") == b"epoch 3"  # put once more on the way out
    with MirroredCheckpoint(store, NAME, poll_s=0.02) as path:  # the retry, on another node
        with open(path, "rb") as f:
            assert f.read() == b"epoch 3"


def test_on_a_local_store_the_trainer_writes_the_study_file_itself(tmp_path):
    (tmp_path / "s").mkdir()  # the driver made the study directory; a worker never makes it (it may be gone)
    store = Store(tmp_path / "s")
    with MirroredCheckpoint(store, NAME) as path:
        assert path == str(tmp_path / "s" / "checkpoints" / f"{NAME}.pt")
        assert os.path.isdir(os.path.dirname(path))
