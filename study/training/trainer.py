"""``train_architecture``: all learning rates of one architecture, trained as one stacked float64 model.

The protocol is NLC paper appendix E.2 (``study.protocol``); in order:

1. c_out = Q_{x,j} f(x, j) of the initial network on the training set (appendix C); the loss divides the
   output by it for the whole training (``study.training.loss``).
2. lr_min from one epoch at rate 1 without applying updates (``study.training.lr_min``), and the starting
   rates lr_min * 3^k (or the protocol's explicit ``lrs``).
3. The R runs as one stacked network (``build_network(spec, seed, runs=R)``: R identical copies of the
   initialization), trained epoch by epoch on one shared minibatch order, each run at its own rate.
   After every epoch each run's monitored error (VCE, in evaluation mode) goes through the schedule of
   E.2 (``study.training.schedule``): improved runs save their state, ended windows rewind and divide,
   finished runs are evaluated on the three splits and leave the stack. A run whose loss turned
   non-finite during the epoch (or whose parameters did) ends its window then, whatever its patience:
   "at once" is at the end of that epoch, the only point where the schedule acts.
4. The selected run (lowest VCE, ties to the lower rate) gives ``outcome.best`` and ``outcome.network``,
   with its NLC and output bias after training on the training set (``study.metrics``).

A network whose output scale or lr_min is not finite at initialization cannot be trained at any rate:
every run is recorded as diverged at its initial state (epoch 0), without training.

Reproducible: the initialization, the minibatch orders and the measurement depend on ``seed`` alone,
and a run trained inside a stack follows the same trajectory as the run trained alone (up to
floating-point reduction order). With ``checkpoint_path`` the state is saved every
``checkpoint_every_s`` seconds (checked after every step) and at the end; a matching file at start is
resumed, giving the outcome an uninterrupted run gives. The file stays when training ends (with the
finished state: a crash before the caller has stored the outcome costs only the final metrics); the
caller deletes it once the outcome is stored.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from sampling import ArchSpec, SpecError
from sampling.constraints import Choice, Integer, Real, check

from ..metrics.measure import nlc_seed
from ..metrics.nlc import nlc, output_bias
from ..network import Network, build_network, output_scale
from ..protocol import Protocol
from . import checkpoint as ckpt
from .allocator import keep_freed_memory
from .compiled import FORWARDS, select_forward
from .loss import errors
from .lr_min import measure_lr_min
from .outcome import BestRecord, Outcome, RunRecord, select
from .schedule import Schedule, after_epoch, start
from .splits import TRAIN_ORDER, Splits, check_splits, epoch_order
from .stack import Stack, keep, new_stack, nonfinite_parameters, rewind, save_best, set_rates, train_step


@dataclass(frozen=True)
class TrainingProgress:
    """Passed to ``progress`` after every epoch."""

    epoch: int  # epochs done by the stack
    live_runs: int
    finished_runs: int
    total_runs: int
    elapsed_s: float


# Elements of one chunk's widest activation tensor [runs, batch, width]; see ``auto_chunk``.
CHUNK_ELEMENTS = 1 << 17


def auto_chunk(spec: ArchSpec, runs: int, batch_size: int, device: torch.device) -> int | None:
    """How many runs one step processes at once: all of them on a GPU; on a CPU about
    ``CHUNK_ELEMENTS`` x threads / (batch x width) (1 MiB of float64 per activation tensor and thread),
    so that a chunk's intermediates stay in the caches and are recycled by malloc
    (``study.training.stack``).

    Measured (one thread, R = 40, batch 250, dense batchnorm-relu nets, CPU time per step relative to the
    best chunk size, best of 5 interleaved repeats; chunks of 2, 4, 7, 10, 14, 20, 40 runs):
    width 121 (depth 3, 20k parameters): 1.19 1.00 1.00 1.02 1.04 1.02 1.14;
    width 50 (depth 9, 20k): 1.38 1.13 1.04 1.00 1.07 1.18 1.30;
    width 28 (depth 25, 20k): 1.66 1.34 1.12 1.04 1.00 1.10 1.15;
    width 156 (depth 5, 80k): 1.03 1.00 1.01 1.00 1.05 1.16 1.17;
    width 354 (depth 9, 1M; chunks of 1, 2, 4, 8, 40): 1.02 1.01 1.00 1.05 1.17.
    The best chunks hold 100k-200k activations; this rule picks 4, 10, 19 (as 3 chunks of 13-14), 3, 1.
    With two threads (wall time, same nets): width 121: 1.62 1.23 1.05 1.00 1.07 1.05 1.21; width 50:
    1.55 1.23 1.02 1.04 1.00 1.05 1.07; width 28: 2.86 1.81 1.36 1.18 1.11 1.09 1.00: the best chunks
    are about twice as large (each thread works on half of every tensor); the rule picks 9, 21, 37."""
    if device.type != "cpu":
        return None
    per_run = batch_size * max(spec.width, spec.d_out)  # the input minibatch is shared by all runs
    return max(1, min(runs, round(CHUNK_ELEMENTS * torch.get_num_threads() / per_run)))


def _device(device) -> torch.device:
    if device is None:
        return torch.device("cpu")
    try:
        checked = torch.device(device)
        torch.empty(0, device=checked)  # an unavailable device (no CUDA here, say) fails now, in one line
        return checked
    except (RuntimeError, TypeError, AssertionError):
        raise SpecError("train_architecture", "device", device,
                        "must be an available torch device such as 'cpu' or 'cuda'") from None


def _widest(spec: ArchSpec) -> int:
    return max(spec.width, spec.d_in, spec.d_out)


def _monitored(splits: Splits, protocol: Protocol):
    return splits.val if protocol.monitor == "val" else splits.train


@torch.no_grad()
def _load_tensors(net: Network, tensors: dict[str, torch.Tensor]) -> Network:
    for name, t in net.stacked_tensors():
        t.copy_(tensors[name])
    return net


def _state_dict(net: Network) -> dict[str, torch.Tensor]:
    return {name: t.detach() for name, t in net.stacked_tensors()}


@dataclass
class _Candidate:
    """The best finished run so far: its index, monitored error and trained network (R = 1)."""

    index: int
    error: float
    net: Network


@dataclass
class _State:
    """Everything training has in memory between two steps (what a checkpoint holds)."""

    lr_min: float
    c_out: float
    lrs: list[float]  # starting rate of each run
    schedule: Schedule  # of all runs
    stack: Stack | None  # the live runs; None when all are finished
    epoch: int  # epochs the stack has completed
    step: int  # steps done in the current epoch
    epoch_s: float  # seconds spent in the current epoch before this session
    wall: np.ndarray  # each run's share of the time so far
    records: dict[int, RunRecord]  # finished runs
    candidate: _Candidate | None  # the selected-so-far finished run
    elapsed_s: float  # seconds of earlier sessions
    forward: str | None = None  # "eager" or "compiled" once chosen: a resumed session keeps the choice


def train_architecture(spec: ArchSpec, data, seed: int = 0, protocol: "str | dict | Protocol" = "paper", *,
                       device=None, checkpoint_path: str | os.PathLike | None = None,
                       checkpoint_every_s: float = 300.0, progress: Callable[[TrainingProgress], None] | None = None,
                       chunk_runs: int | None = None, forward: "str | Callable" = "auto") -> Outcome:
    """Train ``spec`` on ``data`` (``.train/.val/.test`` with ``.x`` [N, d_in] and ``.y`` [N]) at all the
    protocol's learning rates as one stacked float64 model; see the module docstring.

    Speed knobs only (the same function is computed, up to round-off): ``chunk_runs``, runs per
    forward/backward chunk (None chooses: ``auto_chunk``); ``forward``, the training forward: "eager",
    "compiled" (``torch.compile``), "auto" (the measured rule of ``study.training.compiled.choose``) or a
    callable ``forward(net, x)``."""
    session_start = time.perf_counter()
    if not isinstance(spec, ArchSpec):
        raise SpecError("train_architecture", "spec", type(spec).__name__, "must be an ArchSpec")
    keep_freed_memory()
    protocol = Protocol.of(protocol)
    seed = check("train_architecture", "seed", Integer(0), seed)
    checkpoint_every_s = check("train_architecture", "checkpoint_every_s", Real(0.0), checkpoint_every_s)
    if chunk_runs is not None:
        chunk_runs = check("train_architecture", "chunk_runs", Integer(1), chunk_runs)
    if not callable(forward):
        forward = check("train_architecture", "forward", Choice(FORWARDS), forward)
    device = _device(device)
    splits = check_splits(data, spec, device)
    key = ckpt.checkpoint_key(spec.content_id, seed, protocol.to_dict(), splits.fingerprint())
    saved = ckpt.load_checkpoint(checkpoint_path, key, device) if checkpoint_path is not None else None
    if saved is None:
        state = _fresh(spec, splits, seed, protocol, device)
        if state is None:
            return _untrainable(spec, splits, seed, protocol, device, session_start)
    else:
        state = _restore(spec, seed, saved, device)
    trainer = _Trainer(spec, splits, seed, protocol, device, state, session_start, checkpoint_path,
                       checkpoint_every_s, progress, key, chunk_runs, forward)
    return trainer.run()


def _fresh(spec, splits, seed, protocol, device) -> _State | None:
    """The state before the first epoch; None when the network cannot be trained at all."""
    base = build_network(spec, seed, runs=1, device=device)
    c_out = float(output_scale(base, splits.train.x, batch_size=protocol.batch_size))
    if not (math.isfinite(c_out) and c_out > 0):
        return None
    lr_min = measure_lr_min(base, splits.train, c_out, protocol, seed)
    if protocol.lrs is None and math.isnan(lr_min):
        return None
    lrs = protocol.rates(lr_min)
    net = build_network(spec, seed, runs=len(lrs), device=device)
    monitored = _monitored(splits, protocol)
    initial = errors(net, monitored.x, monitored.y, _widest(spec), net.runs).cpu().numpy()
    return _State(lr_min=lr_min, c_out=c_out, lrs=lrs, schedule=start(lrs, initial),
                  stack=new_stack(net, lrs, protocol), epoch=0, step=0, epoch_s=0.0, wall=np.zeros(len(lrs)),
                  records={}, candidate=None, elapsed_s=0.0)


def _restore(spec, seed, saved: dict, device) -> _State:
    live = np.asarray(saved["live"], dtype=np.int64)
    stack = None
    if len(live):
        net = _load_tensors(build_network(spec, seed, runs=len(live), device=device), saved["net"])
        stack = Stack(net=net, runs=live, lr=saved["lr"].to(device), opt=dict(saved["opt"]),
                      best=dict(saved["best"]), nonfinite=saved["nonfinite"].to(device))
    candidate = None
    if saved["candidate"] is not None:
        c = saved["candidate"]
        candidate = _Candidate(c["index"], c["error"], _load_tensors(build_network(spec, seed, 1, device), c["net"]))
    return _State(lr_min=saved["lr_min"], c_out=saved["c_out"], lrs=saved["lrs"],
                  schedule=Schedule.from_dict(saved["schedule"]), stack=stack, epoch=saved["epoch"],
                  step=saved["step"], epoch_s=saved["epoch_s"], wall=np.asarray(saved["wall"]),
                  records={int(k): RunRecord(**v) for k, v in saved["records"].items()}, candidate=candidate,
                  elapsed_s=saved["elapsed_s"], forward=saved.get("forward"))


class _Trainer:
    """The epoch loop over one training state."""

    def __init__(self, spec, splits, seed, protocol, device, state: _State, session_start, checkpoint_path,
                 checkpoint_every_s, progress, key, chunk_runs, forward="auto"):
        self.spec, self.splits, self.seed, self.protocol, self.device = spec, splits, seed, protocol, device
        self.s = state
        self.session_start = session_start
        self.checkpoint_path, self.every_s, self.progress, self.key = checkpoint_path, checkpoint_every_s, progress, key
        self.last_save = time.perf_counter()
        self.chunk_runs = chunk_runs
        self.forward_option = forward
        self.forward_choice = None  # ``study.training.compiled.ForwardChoice`` of this session

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> Outcome:
        s, p = self.s, self.protocol
        train = self.splits.train
        forward = None
        while s.stack is not None:
            stack: Stack = s.stack
            chunk = self.chunk_runs or auto_chunk(self.spec, stack.size, p.batch_size, self.device)
            order = epoch_order(len(train), p.batch_size, self.seed, TRAIN_ORDER, s.epoch + 1, self.device)
            if forward is None:
                forward = self._forward(stack, order, chunk)
            mark = self._steps(stack, order, chunk, forward, time.perf_counter())
            self._end_epoch(stack, s.epoch_s + time.perf_counter() - mark)
            if self._due():
                self._save()
            if self.progress is not None:
                live = 0 if s.stack is None else s.stack.size
                n = len(s.lrs)
                self.progress(TrainingProgress(s.epoch, live, n - live, n, self._elapsed()))
        return self._finish()

    def _steps(self, stack: Stack, order: torch.Tensor, chunk: int | None, forward, mark: float) -> float:
        """The rest of the epoch's steps; returns the time from which the epoch's time still counts.

        Nothing here waits for the device (no ``.item()``, no copy to the host, no branch on a tensor's
        value, no index built on the host: the minibatch is gathered on the device from the epoch's order),
        so on a GPU the host queues the epoch ahead of the kernels; only a checkpoint, when one is due,
        waits."""
        s, train = self.s, self.splits.train
        for i in range(s.step, order.shape[0]):
            idx = order[i]
            train_step(stack, train.x.index_select(0, idx), train.y.index_select(0, idx), s.c_out, self.protocol,
                       chunk, forward)
            if self._due():
                s.step = i + 1
                now = time.perf_counter()
                s.epoch_s += now - mark
                mark = now
                self._save()
        return mark

    def _forward(self, stack: Stack, order: torch.Tensor, chunk: int | None):
        """The training forward of this session (``study.training.compiled.select_forward``); the choice
        is kept in the checkpoint, so a resumed training computes as it did (also if the rule changed)."""
        s, train = self.s, self.splits.train
        option = self.forward_option
        if option == "auto" and s.forward is not None:
            option = s.forward
        x, y = train.x.index_select(0, order[0]), train.y.index_select(0, order[0])
        forward, self.forward_choice = select_forward(option, stack, x, y, s.c_out, self.protocol, chunk, len(train))
        if self.forward_choice.kind in ("eager", "compiled"):
            s.forward = self.forward_choice.kind
        return forward

    def _end_epoch(self, stack: Stack, epoch_s: float) -> None:
        s, p = self.s, self.protocol
        bad = stack.nonfinite | nonfinite_parameters(stack)
        monitored = _monitored(self.splits, p)
        errs = errors(stack.net, monitored.x, monitored.y, _widest(self.spec), stack.size)
        s.schedule, decision = after_epoch(s.schedule, p, stack.runs, errs.cpu().numpy(), bad.cpu().numpy())
        save_best(stack, decision.improved)
        rewind(stack, decision.rewind)
        set_rates(stack, s.schedule.lr)
        stack.nonfinite.zero_()
        s.wall[stack.runs] += epoch_s / stack.size
        if len(decision.finished):
            self._record(stack, decision.finished)
            remaining = s.schedule.live
            s.stack = keep(stack, remaining) if len(remaining) else None
        s.epoch += 1
        s.step = 0
        s.epoch_s = 0.0

    def _record(self, stack: Stack, finished: np.ndarray) -> None:
        """Errors of the finished runs at their best (rewound) state; the best of them may become the
        candidate for selection."""
        s, spec, splits, p = self.s, self.spec, self.splits, self.protocol
        pos = np.searchsorted(stack.runs, finished)
        sub = stack.net.take(pos)
        width = _widest(spec)
        measured = {name: errors(sub, split.x, split.y, width, len(pos)).cpu().numpy()
                    for name, split in (("val", splits.val), ("train", splits.train), ("test", splits.test))}
        # The monitored error is the one the schedule kept (measured in the stack that chose the state).
        measured[p.monitor] = s.schedule.best[finished]
        sched = s.schedule
        for j, run in enumerate(finished):
            run = int(run)
            rec = RunRecord(
                lr=float(s.lrs[run]), lr_index=run, epochs=int(sched.epochs[run]),
                divisions=int(sched.divisions[run]), val_error=float(measured["val"][j]),
                train_error=float(measured["train"][j]), test_error=float(measured["test"][j]),
                diverged=bool(sched.diverged[run]), wall_s=0.0,
            )
            s.records[run] = rec
            score = float(sched.best[run])
            c = s.candidate
            if c is None or (score, run) < (c.error, c.index):
                s.candidate = _Candidate(run, score, sub.take([j]))

    def _finish(self) -> Outcome:
        s, p = self.s, self.protocol
        if self.checkpoint_path is not None:
            self._save()  # a crash before the caller stores the outcome loses only the final metrics
        runs = [_with_wall(s.records[k], s.wall[k]) for k in range(len(s.lrs))]
        chosen = select(runs, p.monitor)
        assert chosen.lr_index == s.candidate.index
        network = s.candidate.net
        network.eval()
        return _outcome(runs, chosen, network, self.splits, self.seed, p, s.lr_min, s.c_out,
                        self._elapsed)

    # -- checkpoints -----------------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self.s.elapsed_s + time.perf_counter() - self.session_start

    def _due(self) -> bool:
        return self.checkpoint_path is not None and time.perf_counter() - self.last_save >= self.every_s

    def _save(self) -> None:
        s = self.s
        stack: Stack | None = s.stack
        c = s.candidate
        state = {
            "key": self.key, "lr_min": s.lr_min, "c_out": s.c_out, "lrs": list(s.lrs),
            "schedule": s.schedule.to_dict(), "epoch": s.epoch, "step": s.step,
            "epoch_s": s.epoch_s, "wall": s.wall.tolist(),
            "records": {k: vars(r) for k, r in s.records.items()},
            "candidate": None if c is None else {"index": c.index, "error": c.error, "net": _state_dict(c.net)},
            "elapsed_s": self._elapsed(),
            "live": [] if stack is None else stack.runs.tolist(), "forward": s.forward,
        }
        if stack is not None:
            state.update(net=_state_dict(stack.net), opt=stack.opt, best=stack.best, lr=stack.lr,
                         nonfinite=stack.nonfinite)
        ckpt.save_checkpoint(self.checkpoint_path, state)
        self.last_save = time.perf_counter()


def _with_wall(rec: RunRecord, wall_s: float) -> RunRecord:
    return RunRecord(**{**vars(rec), "wall_s": float(wall_s)})


def _outcome(runs, chosen, network, splits, seed, protocol, lr_min, c_out, elapsed) -> Outcome:
    """The outcome, with the selected network's NLC and output bias on the training set (the NLC from the
    same seeded draws as ``measure``'s at initialization: common random numbers for before vs after)."""
    x = splits.train.x
    best = BestRecord(**vars(chosen), nlc_after=float(nlc(network, x, seed=nlc_seed(seed))),
                      bias_after=float(output_bias(network, x)), lr_edge=protocol.is_edge(chosen.lr_index))
    return Outcome(runs=runs, best=best, lr_min=float(lr_min), c_out=float(c_out), train_s=float(elapsed()),
                   protocol=protocol, network=network)


def _untrainable(spec, splits, seed, protocol, device, session_start) -> Outcome:
    """A network whose output or gradients are not finite at initialization (or whose output is zero):
    no learning rate can be derived or used. Every run is recorded as diverged at its initial state,
    epoch 0, which is where the schedule would rewind it to."""
    base = build_network(spec, seed, runs=1, device=device)
    width = _widest(spec)
    err = {name: float(errors(base, split.x, split.y, width, 1)[0])
           for name, split in (("val", splits.val), ("train", splits.train), ("test", splits.test))}
    c_out = float(output_scale(base, splits.train.x, batch_size=protocol.batch_size))
    lrs = protocol.rates(math.nan)
    runs = [RunRecord(lr=float(lr), lr_index=k, epochs=0, divisions=0, val_error=err["val"],
                      train_error=err["train"], test_error=err["test"], diverged=True, wall_s=0.0)
            for k, lr in enumerate(lrs)]
    chosen = select(runs, protocol.monitor)
    base.eval()
    return _outcome(runs, chosen, base, splits, seed, protocol, math.nan, c_out,
                    lambda: time.perf_counter() - session_start)
