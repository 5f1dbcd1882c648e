"""Trainer checkpoints: the whole training state in one file, written atomically.

The file holds everything an uninterrupted trainer would still have in memory: the live stack's stacked
tensors (parameters, per-run buffers, optimizer state), every live run's best state, the schedule of all
runs, the records of the finished runs and the selected-so-far network, the epoch and the step within
it, the per-run non-finite flags of the current epoch, lr_min, c_out and the elapsed time. The minibatch
order of an epoch is a function of (seed, epoch) (``study.training.splits``), so no generator state is
needed: a resumed trainer continues with exactly the minibatches and tensors it would have had.

A checkpoint belongs to one (architecture content id, seed, protocol, data fingerprint); a file that does
not match is ignored (and overwritten). Writes go to a temporary file in the same directory, are flushed
to disk and renamed over the target, so the file is always whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import torch

FORMAT = 1


def checkpoint_key(arch_id: str, seed: int, protocol: dict, data: str) -> dict:
    return {"format": FORMAT, "arch_id": arch_id, "seed": int(seed), "protocol": protocol, "data": data}


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` (tensors and plain data) to ``path`` atomically: temp file, fsync, rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str | os.PathLike, key: dict, device: torch.device) -> dict | None:
    """The state saved at ``path`` if it exists and matches ``key``; None otherwise."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception:  # a foreign or damaged file: start afresh (it is overwritten at the next save)
        return None
    if not isinstance(state, dict) or state.get("key") != key:
        return None
    return state

