"""Trainer checkpoints: the whole training state in one file, written atomically, and read back authenticated.

The file holds everything an uninterrupted trainer would still have in memory (``TrainingState``): the live
stack's stacked tensors (parameters, per-run buffers, optimizer state: Adam moments or SGD momentum buffers),
every live run's best state and its loss sum of the current epoch, the schedule of all runs (the current
rates and divisions, also of a step schedule stopped between two of its steps), the records of the finished
runs and the selected-so-far network, the curves so far, the epoch and the step within it, the per-run
non-finite flags of the current epoch, the initialization seeds, lr_min and c_out (one per initialization),
the forward chosen and the elapsed time. The minibatch order of an epoch is a function of (seed, epoch)
(``study.training.splits``), so no generator state is needed: a resumed trainer continues with exactly the
minibatches and tensors it would have had.

The file is data only: tensors and plain containers (dicts, lists, str, int, float, bool, None), read
with ``torch.load(weights_only=True)``, whose unpickler admits no other global, so a file planted in a
study's ``checkpoints/`` (by anyone who can write there, an object-storage prefix included) cannot run
code. A checkpoint belongs to one (architecture content id, seed, protocol, data fingerprint); a file
that is not a checkpoint of this training (unreadable, not data only, another key, or contents that do not
fit: names, shapes and dtypes of the stacked tensors, the run bookkeeping, a layout an older version wrote)
is discarded: deleted, and training starts afresh; the caller reports the one-line reason.

A checkpoint is authenticated: it carries ``MAC``, the HMAC-SHA256 (Bellare, Canetti and Krawczyk, *Keying Hash
Functions for Message Authentication*, 1996; RFC 2104) of its content under a secret key, written with it
(``content_mac``: each tensor's dtype, shape and bytes, each plain value, dicts in key order). The key is
``SECRET_BYTES`` random bytes in a file only its owner may read (mode 0600, ``secret_at``): a study's own
(``study.execution.store.Store.checkpoint_secret``, made with the study, never put in a result, a report, a log
line or a job's payload), else, for a caller of ``train_architecture`` without one, the ``SECRET_NAME`` file beside
the checkpoint. An unkeyed digest could be recomputed by whoever changed the file, with this module's own
function; a MAC cannot without the key. A file whose MAC does not verify (weights scaled, the epoch or a flag
edited, NaN planted: a file loaded, changed and saved again, with any key but this one) or that has none is
discarded the same way, never trained from: a result is only ever computed from the state the trainer itself
saved. A checkpoint is transient (it lives while its architecture trains), so only the layout written here is
read: a file of another layout or key costs the architecture's training so far, never a result.

Writes go to a temporary file in the same directory, are flushed to disk and renamed over the target, so the file
is always whole. The directory is resolved once, when training starts (``CheckpointFile.at``), and opened at every
read, write and delete with ``O_NOFOLLOW``: a link planted there since (a study's ``checkpoints -> /elsewhere``)
is refused (ELOOP), never written, read or deleted through.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field

import numpy as np
import torch

from archstudy.sampling import ArchSpec

from ..experiment.checkpoint_key import SECRET_NAME, secret_at
from ..experiment.protocol import Protocol
from ..nn.network import Network, build_network
from .compiled import KINDS
from .curves import Curves
from .outcome import RunRecord
from .schedule import Schedule
from .stack import Stack, new_stack

FORMAT = 1


def checkpoint_key(arch_id: str, seed: int, protocol: dict, data: str, init_seeds=None) -> dict:
    """What a checkpoint must match: ``protocol`` is the protocol's canonical dict (``Protocol.canonical``),
    and ``init_seeds`` is in the key only when the initializations were given (so a training from ``seed``
    alone keys what it keyed before initializations could be given)."""
    key = {"format": FORMAT, "arch_id": arch_id, "seed": int(seed), "protocol": protocol, "data": data}
    if init_seeds is not None:
        key["init_seeds"] = [int(s) for s in init_seeds]
    return key


MAC = "mac"  # the entry holding the MAC of the others (``content_mac``)
MAC_SCHEME = "hmac-sha256"


def content_mac(state: dict, secret: bytes) -> str:
    """``hmac-sha256:<hex>`` of a checkpoint's content (every entry but ``MAC``) under ``secret``: the same for the
    state saved and the state ``torch.load`` gives back, on any device; a value of any other type raises
    ``TypeError``."""
    h = hmac.new(bytes(secret), digestmod=hashlib.sha256)

    def feed(tag: bytes, data) -> None:  # bytes, or a numpy array of bytes (hashed in place)
        h.update(tag + len(data).to_bytes(8, "little"))
        h.update(data)

    def walk(v) -> None:
        if isinstance(v, torch.Tensor):
            t = v.detach().to("cpu").contiguous().reshape(-1)
            feed(b"T", f"{t.dtype}{tuple(v.shape)}".encode())
            feed(b"B", t.view(torch.uint8).numpy())
        elif v is None or isinstance(v, (bool, np.bool_)):
            feed(b"N" if v is None else b"b", b"" if v is None else str(bool(v)).encode())
        elif isinstance(v, (int, np.integer)):
            feed(b"i", str(int(v)).encode())
        elif isinstance(v, (float, np.floating)):
            feed(b"f", float(v).hex().encode())
        elif isinstance(v, str):
            feed(b"s", v.encode())
        elif isinstance(v, (list, tuple)):
            feed(b"l", str(len(v)).encode())
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            feed(b"d", str(len(v)).encode())
            for k in sorted(v, key=lambda k: (type(k).__name__, str(k))):
                walk(k)
                walk(v[k])
        else:
            raise TypeError(f"a checkpoint holds tensors and plain data, not {type(v).__name__}")

    walk({k: v for k, v in state.items() if k != MAC})
    return f"{MAC_SCHEME}:{h.hexdigest()}"


# -- the file -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointFile:
    """Where one training checkpoints: its ``folder`` (resolved when training starts: every later operation opens it
    with ``O_NOFOLLOW``), the file's ``name`` there, and the ``secret`` key its MAC is made with."""

    folder: str
    name: str
    secret: bytes = field(repr=False)

    @classmethod
    def at(cls, path: str | os.PathLike, secret: bytes | None = None) -> "CheckpointFile":
        """The checkpoint file ``path`` (its folder made if missing) under ``secret``; None: the key in the
        ``SECRET_NAME`` file beside it, made if missing (``secret_at``)."""
        path = os.path.abspath(os.fspath(path))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        folder = os.path.realpath(os.path.dirname(path))
        if secret is None:
            secret, _ = secret_at(os.path.join(folder, SECRET_NAME), create=True)
        return cls(folder, os.path.basename(path), bytes(secret))

    @property
    def path(self) -> str:
        return os.path.join(self.folder, self.name)

    @contextlib.contextmanager
    def opened_folder(self):
        """The folder's descriptor, opened without following a link (a link planted since training started is
        ``OSError`` ELOOP naming it)."""
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OSError(
                    errno.ELOOP,
                    "the checkpoints' folder is now a symbolic link; a checkpoint is never written, read or deleted "
                    "through a link",
                    self.folder,
                ) from None
            raise
        try:
            yield fd
        finally:
            os.close(fd)


def _file(where: "str | os.PathLike | CheckpointFile", secret: bytes | None = None) -> CheckpointFile:
    return where if isinstance(where, CheckpointFile) else CheckpointFile.at(where, secret)


def save_checkpoint(where: "str | os.PathLike | CheckpointFile", state: dict, secret: bytes | None = None) -> None:
    """Write ``state`` (tensors and plain data) with its MAC (``content_mac``) to the checkpoint file ``where``
    (a path: ``CheckpointFile.at(where, secret)``) atomically: temp file, fsync, rename, all in its folder opened
    without following a link."""
    file = _file(where, secret)
    state = {**state, MAC: content_mac(state, file.secret)}
    with file.opened_folder() as folder:
        tmp = f"{file.name}.{secrets.token_hex(4)}.tmp"  # what ``Store.temp_files`` finds of a killed write
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, file.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise


def load_checkpoint(
    where: "str | os.PathLike | CheckpointFile", key: dict, device: torch.device, secret: bytes | None = None
) -> tuple[dict | None, str]:
    """``(state, "")`` for the checkpoint of this training (``key``) at ``where``; ``(None, "")`` when there is
    no file; ``(None, problem)`` for a file that is not one: it is deleted (discarded) and ``problem`` says
    why in one line: not a regular file, not data only, no MAC or one that does not verify under this key (changed
    since it was written, or written with another key), another key. Nothing in the file is executed
    (``weights_only=True``)."""
    file = _file(where, secret)
    with file.opened_folder() as folder:
        try:
            fd = os.open(file.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        except FileNotFoundError:
            return None, ""
        except OSError as e:
            fd, problem = None, f"not a checkpoint ({'a symbolic link' if e.errno == errno.ELOOP else e.strerror})"
        if fd is not None:
            with os.fdopen(fd, "rb") as f:
                problem = "" if stat.S_ISREG(os.fstat(fd).st_mode) else "not a checkpoint (not a regular file)"
                if not problem:
                    try:
                        state = torch.load(f, map_location=device, weights_only=True)
                    except Exception as e:  # noqa: BLE001 - a damaged, foreign or hostile file: the reason
                        problem = f"not a valid checkpoint ({type(e).__name__}: {_first_line(e)})"
                    else:
                        problem = _unauthentic(state, file.secret)
                        if not problem and state.get("key") != key:
                            problem = "a checkpoint of another training (architecture, seed, protocol or data differ)"
                        if not problem:
                            return state, ""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file.name, dir_fd=folder)
    return None, problem


def _unauthentic(state, secret: bytes) -> str:
    """Why a loaded file is not a checkpoint as ``save_checkpoint`` wrote it under ``secret`` (its MAC), or ""."""
    if not isinstance(state, dict):
        return f"not a valid checkpoint (a {type(state).__name__}, not a dict of the training state)"
    recorded = state.get(MAC)
    if not isinstance(recorded, str):
        return "not a valid checkpoint (no MAC: not written by archstudy's trainer)"
    try:
        mac = content_mac(state, secret)
    except (TypeError, RuntimeError) as e:
        return f"not a valid checkpoint ({type(e).__name__}: {_first_line(e)})"
    if not hmac.compare_digest(mac, recorded):
        return "its MAC does not verify (changed since it was written, or written under another key)"
    return ""


def discard(where: "str | os.PathLike | CheckpointFile") -> None:
    """Delete a checkpoint file that is not a valid checkpoint of this training (the next save replaces it), in its
    folder opened without following a link."""
    file = where if isinstance(where, CheckpointFile) else None
    if file is None:
        path = os.path.abspath(os.fspath(where))  # type: ignore[arg-type]
        file = CheckpointFile(os.path.realpath(os.path.dirname(path)), os.path.basename(path), b"")
    with file.opened_folder() as folder, contextlib.suppress(FileNotFoundError):
        os.unlink(file.name, dir_fd=folder)


def _first_line(e: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters (torch's weights-only refusals
    are a page long)."""
    text = (str(e).strip().splitlines() or [""])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the training state a checkpoint holds ----------------------------------------------------------------
@dataclass
class Candidate:
    """The best finished run so far: its index, selection error and trained network (R = 1)."""

    index: int
    error: float
    net: Network


@dataclass
class TrainingState:
    """Everything training has in memory between two steps (what a checkpoint holds)."""

    seeds: list[int]  # initialization seed of each group of runs (runs are seed-major)
    lr_min: list[float]  # per initialization
    c_out: list[float]  # per initialization
    lrs: list[float]  # starting rate of each run
    schedule: Schedule  # of all runs
    stack: Stack | None  # the live runs; None when all are finished
    epoch: int  # epochs the stack has completed
    step: int  # steps done in the current epoch
    epoch_s: float  # seconds spent in the current epoch before this session
    wall: np.ndarray  # each run's share of the time so far
    records: dict[int, RunRecord]  # finished runs
    candidate: Candidate | None  # the selected-so-far finished run
    elapsed_s: float  # seconds of earlier sessions
    curves: Curves  # every run's points so far
    forward: str | None = None  # one of compiled.KINDS once chosen: a resumed session keeps the choice

    @property
    def n_rates(self) -> int:
        return len(self.lrs) // len(self.seeds)


def stacked_state(net: Network) -> dict[str, torch.Tensor]:
    """Every stacked tensor of ``net`` (parameters and per-run buffers) by name, detached."""
    return {name: t.detach() for name, t in net.stacked_tensors()}


@torch.no_grad()
def load_stacked(net: Network, tensors: dict[str, torch.Tensor]) -> Network:
    """``net`` with its stacked tensors set to ``tensors`` (as ``stacked_state`` names them)."""
    for name, t in net.stacked_tensors():
        t.copy_(tensors[name])
    return net


def save_state(path: "str | os.PathLike | CheckpointFile", key: dict, s: TrainingState, elapsed_s: float) -> None:
    """Write ``s`` as the checkpoint of the training ``key`` at ``path`` (``save_checkpoint``): tensors and plain
    Python values only, as ``load_checkpoint`` reads them; the stacked optimizer state is saved whatever tensors
    the optimizer keeps in it."""
    stack, c = s.stack, s.candidate
    state = {
        "key": key,
        "seeds": [int(v) for v in s.seeds],
        "lr_min": [float(v) for v in s.lr_min],
        "c_out": [float(v) for v in s.c_out],
        "lrs": [float(v) for v in s.lrs],
        "schedule": s.schedule.to_dict(),
        "epoch": int(s.epoch),
        "step": int(s.step),
        "epoch_s": float(s.epoch_s),
        "wall": s.wall.tolist(),
        "records": {int(k): _plain_record(r) for k, r in s.records.items()},
        "candidate": None
        if c is None
        else {"index": int(c.index), "error": float(c.error), "net": stacked_state(c.net)},
        "elapsed_s": float(elapsed_s),
        "live": [] if stack is None else stack.runs.tolist(),
        "forward": s.forward,
        "curves": s.curves.to_dict(),
    }
    if stack is not None:
        state.update(
            net=stacked_state(stack.net),
            opt=dict(stack.opt),
            best=dict(stack.best),
            lr=stack.lr,
            nonfinite=stack.nonfinite,
            loss_sum=stack.loss_sum,
        )
    save_checkpoint(path, state)


def resume(
    path: "str | os.PathLike | CheckpointFile", key: dict, spec: ArchSpec, protocol: Protocol, device: torch.device
) -> tuple[TrainingState | None, str]:
    """The training state saved at ``path`` for the training ``key``, or None and why the file (if any) was
    discarded: not a data-only checkpoint of this key (``load_checkpoint``), or one whose contents do not fit this
    architecture and protocol (``restore``)."""
    saved, problem = load_checkpoint(path, key, device)
    if saved is None:
        return None, problem
    try:
        return restore(spec, saved, device, protocol), ""
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as e:
        discard(path)
        return None, f"its contents do not fit this training ({type(e).__name__}: {_first_line(e)})"


def restore(spec: ArchSpec, saved: dict, device: torch.device, protocol: Protocol) -> TrainingState:
    """The state ``save_state`` wrote, checked against what this architecture and protocol make: every stacked
    tensor (parameters, buffers, optimizer state, best states, the stack's rates, flags and loss sums) as a
    fresh stack of the live runs has it, and every run index within the rates; anything else raises."""
    lrs = [float(v) for v in saved["lrs"]]
    seeds = [int(v) for v in saved["seeds"]]
    lr_min = [float(v) for v in saved["lr_min"]]
    c_out = [float(v) for v in saved["c_out"]]
    if not seeds or len(lrs) % len(seeds) or len(lr_min) != len(seeds) or len(c_out) != len(seeds):
        raise ValueError("seeds: not one lr_min and c_out per initialization, and the rates per initialization")
    n = len(lrs) // len(seeds)
    live_list = saved["live"]
    if not isinstance(live_list, list) or not all(type(r) is int for r in live_list):
        raise TypeError("live: not a list of run indices")
    live = np.asarray(live_list, dtype=np.int64)
    if len(live) and (np.any(np.diff(live) <= 0) or live[0] < 0 or live[-1] >= len(lrs)):
        raise ValueError("live: not increasing run indices of the rates")
    schedule = Schedule.from_dict(saved["schedule"])
    if any(len(getattr(schedule, f)) != len(lrs) for f in ("lr", "best", "done", "epochs")):
        raise ValueError("schedule: not one entry per rate")

    stack = None
    if len(live):
        if len(seeds) == 1:
            net = build_network(spec, seeds[0], runs=len(live), device=device)
        else:
            net = build_network(spec, seeds=[seeds[r // n] for r in live], device=device)
        fresh = new_stack(net, [lrs[r] for r in live], protocol)
        _same_tensors(saved["net"], stacked_state(net), "net")
        _same_tensors(saved["opt"], fresh.opt, "opt")
        _same_tensors(saved["best"], fresh.best, "best")
        _same_tensors(
            {"lr": saved["lr"], "nonfinite": saved["nonfinite"], "loss_sum": saved["loss_sum"]},
            {"lr": fresh.lr, "nonfinite": fresh.nonfinite, "loss_sum": fresh.loss_sum},
            "stack",
        )
        stack = Stack(
            net=load_stacked(net, saved["net"]),
            runs=live,
            lr=saved["lr"].to(device),
            optimizer=fresh.optimizer,
            opt=dict(saved["opt"]),
            best=dict(saved["best"]),
            nonfinite=saved["nonfinite"].to(device),
            loss_sum=saved["loss_sum"].to(device),
        )
    candidate = None
    if saved["candidate"] is not None:
        c = saved["candidate"]
        index = int(c["index"])
        if not 0 <= index < len(lrs):
            raise ValueError("candidate: a run index outside the rates")
        one = build_network(spec, seeds[index // n], 1, device)
        _same_tensors(c["net"], stacked_state(one), "candidate.net")
        candidate = Candidate(index, float(c["error"]), load_stacked(one, c["net"]))
    records = {int(k): RunRecord(**v) for k, v in saved["records"].items()}
    if any(not 0 <= k < len(lrs) for k in records):
        raise ValueError("records: a run index outside the rates")
    wall = np.asarray(saved["wall"], dtype=np.float64)
    if wall.shape != (len(lrs),):
        raise ValueError("wall: not one entry per rate")
    forward = saved["forward"]
    if forward is not None and forward not in KINDS:  # None: not chosen yet
        raise ValueError(f"forward: {forward!r} is not one of {', '.join(KINDS)}")
    return TrainingState(
        seeds=seeds,
        lr_min=lr_min,
        c_out=c_out,
        lrs=lrs,
        schedule=schedule,
        stack=stack,
        epoch=int(saved["epoch"]),
        step=int(saved["step"]),
        epoch_s=float(saved["epoch_s"]),
        wall=wall,
        records=records,
        candidate=candidate,
        elapsed_s=float(saved["elapsed_s"]),
        curves=Curves.from_dict(saved["curves"]),
        forward=forward,
    )


def _same_tensors(got, like: dict[str, torch.Tensor], what: str) -> None:
    """``got`` holds exactly ``like``'s names, each a tensor of the same shape and dtype (else ValueError)."""
    if not isinstance(got, dict) or set(got) != set(like):
        raise ValueError(f"{what}: names differ")
    for name, t in like.items():
        g = got[name]
        if not isinstance(g, torch.Tensor) or g.shape != t.shape or g.dtype != t.dtype:
            raise ValueError(f"{what}.{name}: not a {t.dtype} tensor of shape {tuple(t.shape)}")


def _plain_record(rec: RunRecord) -> dict:
    """A run record as plain Python values (numpy scalars converted) for a data-only checkpoint."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in vars(rec).items()}
