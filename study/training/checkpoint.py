"""Trainer checkpoints: the whole training state in one file, written atomically.

The file holds everything an uninterrupted trainer would still have in memory: the live stack's stacked
tensors (parameters, per-run buffers, optimizer state: Adam moments or SGD momentum buffers), every live
run's best state, the schedule of all runs (the current rates and divisions, also of a step schedule
stopped between two of its steps), the records of the finished runs and the selected-so-far network, the
epoch and the step within it, the per-run non-finite flags of the current epoch, the initialization seeds,
lr_min and c_out (one per initialization) and the elapsed time. Files written before there could be
several initializations (one lr_min and c_out, no seeds) are read as one initialization. The minibatch
order of an epoch is a function of (seed, epoch) (``study.training.splits``), so no generator state is
needed: a resumed trainer continues with exactly the minibatches and tensors it would have had.

The file is data only: tensors and plain containers (dicts, lists, str, int, float, bool, None), read
with ``torch.load(weights_only=True)``, whose unpickler admits no other global, so a file planted in a
study's ``checkpoints/`` (by anyone who can write there, an object-storage prefix included) cannot run
code. A checkpoint belongs to one (architecture content id, seed, protocol, data fingerprint); a file
that is not a checkpoint of this training (unreadable, not data only, another key) is discarded: deleted,
and training starts afresh; the caller reports the one-line reason. Writes go to a temporary file in the
same directory, are flushed to disk and renamed over the target, so the file is always whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import torch

FORMAT = 1


def checkpoint_key(arch_id: str, seed: int, protocol: dict, data: str, init_seeds=None) -> dict:
    """What a checkpoint must match: ``protocol`` is the protocol's canonical dict (``Protocol.canonical``),
    and ``init_seeds`` is in the key only when the initializations were given (so a training from ``seed``
    alone keys what it keyed before initializations could be given)."""
    key = {"format": FORMAT, "arch_id": arch_id, "seed": int(seed), "protocol": protocol, "data": data}
    if init_seeds is not None:
        key["init_seeds"] = [int(s) for s in init_seeds]
    return key


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


def load_checkpoint(path: str | os.PathLike, key: dict, device: torch.device) -> tuple[dict | None, str]:
    """``(state, "")`` for the checkpoint of this training (``key``) at ``path``; ``(None, "")`` when there is
    no file; ``(None, problem)`` for a file that is not one: it is deleted (discarded) and ``problem`` says
    why in one line. Nothing in the file is executed (``weights_only=True``)."""
    path = Path(path)
    if not path.is_file():
        return None, ""
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - a damaged, foreign or hostile file: whatever failed is the reason
        problem = f"not a valid checkpoint ({type(e).__name__}: {_first_line(e)})"
    else:
        if not isinstance(state, dict) or state.get("key") != key:
            problem = "a checkpoint of another training (architecture, seed, protocol or data differ)"
        else:
            return state, ""
    discard(path)
    return None, problem


def discard(path: str | os.PathLike) -> None:
    """Delete a checkpoint file that is not a valid checkpoint of this training (the next save replaces it)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _first_line(e: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters (torch's weights-only refusals
    are a page long)."""
    text = (str(e).strip().splitlines() or [""])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."

