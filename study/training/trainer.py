"""``train_architecture``: all learning rates of one architecture, trained as one stacked float64 model.

The protocol is NLC paper appendix E.2 (``study.experiment.protocol``); in order:

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

Every run's training curves are recorded on the way (``study.training.curves``): after every epoch its
learning rate, mean minibatch loss and monitored error, and with ``trajectory`` its NLC at the listed
epochs; ``outcome.curves``.

The protocol's other options (``study.experiment.protocol``) change only their step: the loss (cross-entropy or mse),
the optimizer's update (SGD, SGD with momentum, Adam), the schedule (E.2's plateau schedule, or a fixed
number of iterations with divisions at given fractions of them: then nothing is evaluated during training
and every run's result is its final state) and the split that selects the run (``selected_by``).

Several initializations in one stack (``init_seeds=[s_1, ..., s_J]``): run j * n_rates + k (seed-major) starts
from ``build_network(spec, s_j)`` at rate k. Every initialization trains at the same rates: the protocol's explicit
``lrs``, or the series of the first initialization's lr_min (a study's ``init_seeds: k`` compares initializations
at the same rates). c_out is measured on each initialization (the cross-entropy of run j * n_rates + k divides by
its own c_out), and ``seed`` still fixes the minibatch order and the measurements, so every run follows the
trajectory it follows trained alone with ``init_seeds=[s_j]`` at those rates (tests check this).
``Outcome.best_per_seed()`` gives each initialization's selected run; ``selected_from`` restricts ``Outcome.best``
to one initialization's runs.

A network whose output scale or lr_min is not finite at initialization cannot be trained at any rate:
every run is recorded as diverged at its initial state (epoch 0), without training (in a stack of several
initializations, the runs of such an initialization; the others train).

Reproducible: the initialization, the minibatch orders and the measurement depend on ``seed`` alone,
and a run trained inside a stack follows the same trajectory as the run trained alone (up to
floating-point reduction order). With ``checkpoint_path`` the state is saved (``study.training.checkpoint``) every
``checkpoint_every_s`` seconds (checked after every step) and at the end; a matching file at start is
resumed, giving the outcome an uninterrupted run gives. The file stays when training ends (with the
finished state: a crash before the caller has stored the outcome costs only the final metrics); the
caller deletes it once the outcome is stored.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from archstudy.sampling import ArchSpec, SpecError
from archstudy.sampling.constraints import SEED, Choice, Integer, Real, check

from ..metrics.measurement import nlc_seed
from ..metrics.nlc import nlc, output_bias
from ..nn.network import Network, Seeds, build_network, output_scale
from ..experiment.protocol import Protocol
from . import checkpoint as ckpt
from .checkpoint import Candidate, TrainingState
from .compiled import FORWARDS, FUSED, KINDS, WITHOUT_GRAPH, ForwardChoice, select_forward
from .curves import Curves, Trajectory
from .device import available_device
from . import graphed
from .graphed import GraphedStep
from .loss import errors
from .lr_min import measure_lr_min
from .outcome import BestRecord, Outcome, RunRecord, select
from .schedule import give_up, scheduler_of
from .splits import TRAIN_ORDER, Splits, check_splits, epoch_order, steps_per_epoch
from .stack import (
    Stack,
    fused_forward,
    keep,
    new_stack,
    nonfinite_parameters,
    rewind,
    save_best,
    set_rates,
    train_step,
)


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
    """How many runs one step processes at once: all of them on a GPU; on a CPU ``chunk_size`` with this
    process's torch threads."""
    if device.type != "cpu":
        return None
    return chunk_size(spec, runs, batch_size, torch.get_num_threads())


def chunk_size(spec: ArchSpec, runs: int, batch_size: int, threads: int) -> int:
    """The runs of a CPU step's chunk: about ``CHUNK_ELEMENTS`` x threads / (batch x width) (1 MiB of float64 per
    activation tensor and thread), so that a chunk's intermediates stay in the caches and are recycled by malloc
    (``study.training.stack``); with several threads a multiple of them, or one run: a batched product
    (``torch.bmm``) shares its batch out over the threads, so a chunk of 3 on 2 threads leaves one of them idle a
    third of the time, where a chunk of one run is split inside its one product.

    ``CHUNK_ELEMENTS`` is where the best chunk sizes measured on the bench's nets lie, with one thread and with
    two (each thread works on its share of every tensor, so the best chunks grow with the threads), and the
    multiple of the threads is measured too: docs/performance.md."""
    per_run = batch_size * max(spec.width, spec.d_out)  # the input minibatch is shared by all runs
    chunk = max(1, min(runs, round(CHUNK_ELEMENTS * threads / per_run)))
    if threads > 1 and 1 < chunk < runs:
        chunk = min(runs, threads * max(1, (chunk + (threads - 1) // 2) // threads))  # the nearest; a tie: the smaller
    return chunk


def _widest(spec: ArchSpec) -> int:
    return max(spec.width, spec.d_in, spec.d_out)


def _monitored(splits: Splits, protocol: Protocol):
    return splits.val if protocol.monitor == "val" else splits.train


def train_architecture(
    spec: ArchSpec,
    data,
    seed: int = 0,
    protocol: "str | dict | Protocol" = "paper",
    *,
    device=None,
    checkpoint_path: str | os.PathLike | None = None,
    checkpoint_every_s: float = 300.0,
    checkpoint_secret: bytes | None = None,
    progress: Callable[[TrainingProgress], None] | None = None,
    chunk_runs: int | None = None,
    init_seeds=None,
    selected_from: int | None = None,
    trajectory: Trajectory | None = None,
    report: Callable[[str], None] | None = None,
    forward: "str | Callable" = "auto",
    rate_window: tuple[int, int] | None = None,
) -> Outcome:
    """Train ``spec`` on ``data`` (``.train/.val/.test`` with ``.x`` [N, d_in] and ``.y`` [N]) at all the
    protocol's learning rates as one stacked float64 model; see the module docstring.

    ``init_seeds``: train one group of runs (one per rate) from each of these initializations, all in one
    stack (seed-major: run j * n_rates + k is seed j at rate k); ``seed`` still fixes the minibatch order
    and the measurements. Every initialization trains at the rates of the first one's ``lr_min`` (or the protocol's
    explicit ``lrs``). None: one group from ``seed``. ``selected_from``: the position in ``init_seeds`` of the
    initialization the selected run (``Outcome.best``, its network) is chosen from (a study's row is its first
    initialization's, ``init_seeds: k``); None: from all runs.
    ``rate_window`` (s, m): train only the rates of index s .. s + m - 1 of the protocol's series (a study's
    ``lr_window``, ``study.experiment.rate_window``): the same runs the full sweep trains at those rates, each
    run's ``lr_index`` its index in the whole series; None: every rate.
    ``trajectory``: the epochs at which every run's NLC is measured for the curves (``study.training.curves``);
    None: none (the cost: one NLC measurement of the whole stack per listed epoch).
    ``checkpoint_secret``: the key the checkpoint's MAC is made with (``study.training.checkpoint``: a study's own);
    None: the key file beside the checkpoint, made if missing.
    ``report`` gets one line when the file at ``checkpoint_path`` is not a valid checkpoint of this
    training and is discarded, or when the step cannot be captured as a CUDA graph and the training goes on
    eagerly (default: a ``warnings.warn``).

    Speed knobs only (the same function is computed, up to round-off): ``chunk_runs``, runs per
    forward/backward chunk (None chooses: ``auto_chunk``); ``forward``, the training step: "eager",
    "compiled" (the forward through ``torch.compile``), "graph" (CUDA only: the eager step captured as a CUDA
    graph and replayed, ``study.training.graphed``), "compiled-graph" (CUDA only: the step of the compiled forward
    captured likewise), "fused" (the eager forward with each normalization and its activation as one compiled
    epilogue, ``study.nn.epilogue``; its evaluation too), "fused-graph" (CUDA only: its step captured likewise),
    "auto" (the measured rule of ``study.training.compiled.choose``) or a callable ``forward(net, x)``."""
    session_start = time.perf_counter()
    if not isinstance(spec, ArchSpec):
        raise SpecError("train_architecture", "spec", type(spec).__name__, "must be an ArchSpec")
    protocol = Protocol.of(protocol)
    seed = check("train_architecture", "seed", SEED, seed)
    checkpoint_every_s = check("train_architecture", "checkpoint_every_s", Real(0.0), checkpoint_every_s)
    if chunk_runs is not None:
        chunk_runs = check("train_architecture", "chunk_runs", Integer(1), chunk_runs)
    seeds = [seed] if init_seeds is None else list(check("train_architecture", "init_seeds", Seeds(), init_seeds))
    if selected_from is not None:
        selected_from = check("train_architecture", "selected_from", Integer(0, len(seeds) - 1), selected_from)
    window = _rate_window(rate_window, protocol.num_lrs)
    if not callable(forward):
        forward = check("train_architecture", "forward", Choice(FORWARDS), forward)
    device = available_device(device, "train_architecture")
    if isinstance(forward, str) and forward in WITHOUT_GRAPH and not graphed.supported(device):
        raise SpecError("train_architecture", "forward", forward, f"needs a CUDA device (the device is {device})")
    splits = check_splits(data, spec, device, classes=protocol.classes(spec.d_out))
    key = ckpt.checkpoint_key(
        spec.content_id,
        seed,
        protocol.canonical(),
        splits.fingerprint(),
        init_seeds=None if init_seeds is None else seeds,
    )
    if selected_from is not None:  # a candidate chosen over other runs cannot continue
        key["selected_from"] = selected_from
    if rate_window is not None:  # another window trains other rates
        key["rate_window"] = [window.start, window.stop - window.start]
    trajectory = trajectory if trajectory is not None and trajectory.epochs else None
    if trajectory is not None:  # the curves hold its NLCs: a checkpoint without them cannot continue them
        key["nlc_trajectory"] = [list(trajectory.epochs), trajectory.batches, trajectory.batch_size]
    state, checkpoint = None, None
    if checkpoint_path is not None:
        checkpoint = ckpt.CheckpointFile.at(checkpoint_path, checkpoint_secret)
        state, problem = ckpt.resume(checkpoint, key, spec, protocol, device)
        if problem:
            (report or _warn)(f"checkpoint {checkpoint_path}: {problem}; discarded; training starts afresh")
    if state is None:
        state = _fresh(spec, splits, seed, seeds, protocol, device, trajectory, window)
        if state is None:
            return _untrainable(
                spec, splits, seed, seeds, protocol, device, session_start, trajectory, selected_from, window
            )
    settings = _Settings(
        spec,
        splits,
        seed,
        protocol,
        device,
        session_start,
        checkpoint,
        checkpoint_every_s,
        progress,
        key,
        chunk_runs,
        trajectory,
        forward,
        report,
        selected_from,
        window.start,
    )
    trainer = _Trainer(settings, state)
    return trainer.train()


def _rate_window(rate_window: Any, n: int) -> slice:
    """The rate indices a training trains: ``rate_window`` (s, m) checked against the protocol's ``n`` rates, as
    the slice s .. s + m - 1 of the series; None: all of it."""
    if rate_window is None:
        return slice(0, n)
    allowed = f"must be (s, m): integers with s >= 0, m >= 1 and s + m <= {n}, the protocol's rates"
    try:
        start, size = (int(v) for v in rate_window)
        ok = all(float(v) == int(v) for v in rate_window) and start >= 0 and size >= 1 and start + size <= n
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise SpecError("train_architecture", "rate_window", rate_window, allowed)
    return slice(start, start + size)


def _trainable(c_out: float, protocol: Protocol) -> bool:
    """Whether a network with output scale ``c_out`` can be trained: a finite scale, positive where the loss
    divides by it (cross-entropy)."""
    return math.isfinite(c_out) and (c_out > 0 or protocol.loss == "mse")


def _stack_network(spec, seeds: list[int], runs_per_seed: int, device) -> Network:
    """The stack of ``runs_per_seed`` copies of each initialization, seed-major."""
    if len(seeds) == 1:
        return build_network(spec, seeds[0], runs=runs_per_seed, device=device)
    return build_network(spec, seeds=[s for s in seeds for _ in range(runs_per_seed)], device=device)


def _trajectory_nlc(net, splits, seed, trajectory: Trajectory | None, epoch: int):
    """The NLC of every run of ``net`` on the training set when ``epoch`` is a trajectory epoch, else None;
    the draws of ``measure``'s NLC (``nlc_seed``), running statistics untouched."""
    if trajectory is None or epoch not in trajectory:
        return None
    value = nlc(net, splits.train.x, trajectory.batches, trajectory.batch_size, seed=nlc_seed(seed))
    return value.cpu().numpy() if isinstance(value, torch.Tensor) else value


def _fresh(spec, splits, seed, seeds, protocol, device, trajectory=None, window=None) -> TrainingState | None:
    """The state before the first epoch; None when no initialization can be trained at all."""
    c_outs, lr_mins, nlc0 = [], [], []
    for s in seeds:
        base = build_network(spec, s, runs=1, device=device)
        nlc0.append(_trajectory_nlc(base, splits, seed, trajectory, 0))
        c_out = float(output_scale(base, splits.train.x, batch_size=protocol.batch_size))
        c_outs.append(c_out)
        lr_mins.append(
            measure_lr_min(base, splits.train, c_out, protocol, seed) if _trainable(c_out, protocol) else math.nan
        )
    untrainable = [j for j, c in enumerate(c_outs) if not _trainable(c, protocol)]
    if len(untrainable) == len(seeds) or (protocol.lrs is None and math.isnan(lr_mins[0])):
        return None
    # every initialization at the first one's rates (module docstring), those of the window
    rates = protocol.rates(lr_mins[0])[window if window is not None else slice(None)]
    n = len(rates)
    lrs = rates * len(seeds)
    net = _stack_network(spec, seeds, n, device)
    scheduler = scheduler_of(protocol)
    initial: float | np.ndarray
    if scheduler.monitors:
        monitored = _monitored(splits, protocol)
        initial = errors(net, monitored.x, monitored.y, _widest(spec), net.runs, protocol.loss).cpu().numpy()
    else:
        initial = math.nan  # a schedule that does not monitor keeps no best error
    schedule = scheduler.start(lrs, initial)
    if untrainable:
        schedule = give_up(schedule, [j * n + k for j in untrainable for k in range(n)])
    curves = Curves()
    curves.add(
        range(len(lrs)),
        0,
        lrs,
        None,
        initial,
        None if trajectory is None or 0 not in trajectory else [nlc0[r // n] for r in range(len(lrs))],
    )
    return TrainingState(
        seeds=list(seeds),
        lr_min=lr_mins,
        c_out=c_outs,
        lrs=lrs,
        schedule=schedule,
        stack=new_stack(net, lrs, protocol),
        epoch=0,
        step=0,
        epoch_s=0.0,
        wall=np.zeros(len(lrs)),
        records={},
        candidate=None,
        elapsed_s=0.0,
        curves=curves,
    )


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


@dataclass(frozen=True)
class _Settings:
    """What one call of ``train_architecture`` trains and how (its arguments, checked): the architecture, the data,
    the seed, the protocol and the device; when the session started, the checkpoint and how often it is written, the
    progress callback, the key a checkpoint must match, the runs per chunk, the NLC trajectory, the forward asked
    for, and where one-line notes go."""

    spec: ArchSpec
    splits: Any
    seed: int
    protocol: Protocol
    device: torch.device
    session_start: float
    checkpoint_path: Any
    checkpoint_every_s: float
    progress: Any
    key: dict
    chunk_runs: int | None
    trajectory: Any = None
    forward: Any = "auto"
    report: Callable[[str], None] | None = None
    selected_from: int | None = None
    first_index: int = 0  # the series index of the first rate trained (a rate window's s)


class _Trainer:
    """The epoch loop over one training state."""

    def __init__(self, settings: _Settings, state: TrainingState):
        t = settings
        self.spec, self.splits, self.seed, self.protocol, self.device = t.spec, t.splits, t.seed, t.protocol, t.device
        self.s = state
        self.session_start = t.session_start
        self.checkpoint_path, self.every_s = t.checkpoint_path, t.checkpoint_every_s
        self.progress, self.key = t.progress, t.key
        self.chunk_runs, self.trajectory, forward = t.chunk_runs, t.trajectory, t.forward
        self.last_save = time.perf_counter()
        # the monitored errors of the epoch just trained (a schedule that monitors)
        self._errors: np.ndarray | None = None
        self.scheduler = scheduler_of(t.protocol)
        self._scales: tuple[bytes, torch.Tensor] | None = None  # (live runs, their c_out)
        self.forward_option = forward
        self.forward_choice: ForwardChoice | None = None  # the training forward chosen in this session
        # the evaluation's forward (``errors``): the network's own, or the fused one
        self.eval_forward: Callable | None = None
        self.graph: GraphedStep | None = None  # the step as a CUDA graph, when that is the choice
        self.report = t.report or _warn
        self.selected_from = t.selected_from
        self.first_index = t.first_index

    # -- the loop --------------------------------------------------------------------------------
    def train(self) -> Outcome:
        s, p = self.s, self.protocol
        train = self.splits.train
        steps = steps_per_epoch(len(train), p.batch_size)
        self._give_up_runs()
        forward = None
        while s.stack is not None:
            stack: Stack = s.stack
            chunk = self.chunk_runs or auto_chunk(self.spec, stack.size, p.batch_size, self.device)
            order = epoch_order(len(train), p.batch_size, self.seed, TRAIN_ORDER, s.epoch + 1, self.device)
            # The schedule says how many steps the epoch has (a step schedule stops after its iterations,
            # possibly within an epoch).
            last = self.scheduler.epoch_steps(s.epoch, steps)
            c_out = self._loss_scale(stack)
            if forward is None:
                forward = self._forward(stack, order, chunk, c_out)
            if self.graph is not None:  # a capture waits for the device: here, never inside the epoch's steps
                self._prepare_graph(stack, train, order, c_out, chunk)
            mark = self._steps(stack, order, last, c_out, chunk, forward, time.perf_counter())
            epoch_s = s.epoch_s + time.perf_counter() - mark
            self._record_curves(stack, last, s.epoch * steps + last)
            self._end_epoch(stack, epoch_s, s.epoch * steps + last)
            if self._due():
                self._save()
            if self.progress is not None:
                live = 0 if s.stack is None else s.stack.size
                n = len(s.lrs)
                self.progress(TrainingProgress(s.epoch, live, n - live, n, self._elapsed()))
        return self._finish()

    def _loss_scale(self, stack: Stack):
        """What the loss divides the output by: c_out (a number), or with several initializations each live
        run's own c_out ([R], made once per stack)."""
        s = self.s
        if self.protocol.loss == "mse":
            return 1.0  # unused
        if len(s.seeds) == 1:
            return s.c_out[0]
        live = stack.runs.tobytes()
        if self._scales is None or self._scales[0] != live:
            per_run = [s.c_out[r // s.n_rates] for r in stack.runs]
            self._scales = (live, torch.tensor(per_run, dtype=torch.float64, device=self.device))
        return self._scales[1]

    def _give_up_runs(self) -> None:
        """Record the runs of initializations that cannot be trained (finished in the schedule before the
        first step) from the initial stack, and drop them from it."""
        s = self.s
        stack = s.stack
        if stack is None:
            return
        gone = np.asarray([r for r in stack.runs if s.schedule.done[r]], dtype=np.int64)
        if len(gone) == 0:
            return
        self._record(stack, gone)
        remaining = np.asarray([r for r in stack.runs if not s.schedule.done[r]], dtype=np.int64)
        s.stack = keep(stack, remaining) if len(remaining) else None

    def _steps(
        self, stack: Stack, order: torch.Tensor, last: int, c_out, chunk: int | None, forward, mark: float
    ) -> float:
        """The epoch's steps from ``s.step`` to ``last`` (the rates are divided where the schedule says, a steps
        schedule at its boundaries); returns the time from which the epoch's time still counts.

        Nothing here waits for the device (no ``.item()``, no copy to the host, no branch on a tensor's
        value, no index built on the host: the minibatch is gathered on the device from the epoch's order),
        so on a GPU the host queues the epoch ahead of the kernels; only a checkpoint, when one is due,
        waits. A division of the steps schedule copies the new rates from the host (no wait)."""
        s, p, train = self.s, self.protocol, self.splits.train
        steps = order.shape[0]
        for i in range(s.step, last):
            times = self.scheduler.divisions_at(s.epoch * steps + i)
            if times:  # the rate of this step and the later ones is divided (steps schedule)
                s.schedule = self.scheduler.divide(s.schedule, stack.runs, times)
                set_rates(stack, s.schedule.lr)
            idx = order[i]
            if self.graph is not None:
                self.graph.step(idx)
            else:
                train_step(stack, train.x.index_select(0, idx), train.y.index_select(0, idx), c_out, p, chunk, forward)
            if self._due():
                s.step = i + 1
                now = time.perf_counter()
                s.epoch_s += now - mark
                mark = now
                self._save()
        return mark

    def _forward(self, stack: Stack, order: torch.Tensor, chunk: int | None, c_out):
        """The training forward of this session (``study.training.compiled.select_forward``); the choice
        is kept in the checkpoint, so a resumed training computes as it did (also if the rule changed). A training
        chosen as a CUDA graph and resumed off CUDA continues with the same forward launched kernel by kernel
        (``compiled.WITHOUT_GRAPH``: eager, or compiled): a replay runs that step's kernels, so the two compute the
        same function (``study.training.graphed``); its checkpoints then say so, and a later resume on CUDA keeps
        it."""
        s, train = self.s, self.splits.train
        option = self.forward_option
        if option == "auto" and s.forward is not None:
            graphs = graphed.supported(self.device)
            option = WITHOUT_GRAPH[s.forward] if s.forward in WITHOUT_GRAPH and not graphs else s.forward
        x, y = train.x.index_select(0, order[0]), train.y.index_select(0, order[0])
        forward, self.forward_choice = select_forward(option, stack, x, y, c_out, self.protocol, chunk, len(train))
        if self.forward_choice.kind in KINDS:
            s.forward = self.forward_choice.kind
        # a training with fused epilogues evaluates with them too (in evaluation mode: the running statistics)
        self.eval_forward = fused_forward if self.forward_choice.kind in FUSED else None
        if self.forward_choice.kind in WITHOUT_GRAPH:
            self.graph = GraphedStep(forward)
        return forward

    def _prepare_graph(self, stack: Stack, train, order: torch.Tensor, c_out, chunk: int | None) -> None:
        """The step of ``stack`` as a CUDA graph (``study.training.graphed``). A capture that fails leaves the state as
        it was (the warm-up is undone and a capture runs nothing): the training goes on with the same forward
        without the graph (eager, or compiled), and says so in one line."""
        assert self.graph is not None and self.forward_choice is not None
        try:
            self.graph.prepare(stack, train.x, train.y, order[0], c_out, self.protocol, chunk)
        except RuntimeError as e:
            without = WITHOUT_GRAPH[self.forward_choice.kind]
            self.report(
                f"the step as a CUDA graph could not be captured ({type(e).__name__}: {ckpt._first_line(e)}); training "
                f"goes on with the {without} step"
            )
            self.graph = None
            self.s.forward = without

    def _record_curves(self, stack: Stack, steps: int, steps_done: int) -> None:
        """The epoch's points of the live runs (``study.training.curves``), before the schedule acts: the rate,
        the mean loss of the epoch's ``steps`` steps, the NLC at trajectory epochs; the error of the split the
        schedule tracks (``Scheduler.tracked``: the monitored one, or the test split every ``test_every`` epochs
        of a steps schedule) is measured once here and kept for the schedule (``_end_epoch``). The loss sums
        restart at zero."""
        s, p = self.s, self.protocol
        self._errors = None
        split = self.scheduler.tracked(s.epoch + 1, steps_done)
        if split is not None:
            evaluated = getattr(self.splits, split)
            widest = _widest(self.spec)
            found = errors(stack.net, evaluated.x, evaluated.y, widest, stack.size, p.loss, forward=self.eval_forward)
            self._errors = found.cpu().numpy()
        epoch = s.epoch + 1
        loss = (stack.loss_sum / steps).cpu().numpy()
        s.curves.add(
            stack.runs,
            epoch,
            stack.lr.cpu().numpy(),
            loss,
            self._errors,
            _trajectory_nlc(stack.net, self.splits, self.seed, self.trajectory, epoch),
        )
        stack.loss_sum.zero_()

    def _end_epoch(self, stack: Stack, epoch_s: float, steps_done: int) -> None:
        """The schedule's decision at the end of an epoch (``Scheduler.end_epoch``: under E.2's the monitored
        errors drive it; under the steps schedule nothing is evaluated and finished runs are recorded at their
        final state, diverged ones at their initial state), then the improved runs' states are saved."""
        s = self.s
        bad = stack.nonfinite | nonfinite_parameters(stack)
        s.schedule, decision = self.scheduler.end_epoch(
            s.schedule, stack.runs, self._errors, bad.cpu().numpy(), steps_done
        )
        save_best(stack, decision.improved)
        self._apply(stack, decision, epoch_s)

    def _apply(self, stack: Stack, decision, epoch_s: float) -> None:
        """Rewinds, rates, time shares and finished runs after an epoch's schedule decision."""
        s = self.s
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
        """Errors of the finished runs at their final state (the best, rewound one under E.2's schedule);
        the best of them may become the candidate for selection."""
        s, spec, splits, p = self.s, self.spec, self.splits, self.protocol
        pos = np.searchsorted(stack.runs, finished)
        sub = stack.net.take(pos)
        width = _widest(spec)
        measured = {
            name: errors(sub, split.x, split.y, width, len(pos), p.loss, forward=self.eval_forward).cpu().numpy()
            for name, split in (("val", splits.val), ("train", splits.train), ("test", splits.test))
        }
        if self.scheduler.monitors:
            # The monitored error is the one the schedule kept (measured in the stack that chose the state).
            measured[p.monitor] = s.schedule.best[finished]
        sched = s.schedule
        for j, run in enumerate(finished):
            run = int(run)
            rec = RunRecord(
                lr=float(s.lrs[run]),
                lr_index=self.first_index + run % s.n_rates,
                epochs=int(sched.epochs[run]),
                divisions=int(sched.divisions[run]),
                val_error=float(measured["val"][j]),
                train_error=float(measured["train"][j]),
                test_error=float(measured["test"][j]),
                diverged=bool(sched.diverged[run]),
                wall_s=0.0,
            )
            s.records[run] = rec
            if self.selected_from is not None and run // s.n_rates != self.selected_from:
                continue  # not a candidate: the selection is over one initialization's runs
            score = float(measured[p.selected_by][j])
            c = s.candidate
            if c is None or (score, run) < (c.error, c.index):
                s.candidate = Candidate(run, score, sub.take([j]))

    def _finish(self) -> Outcome:
        s, p = self.s, self.protocol
        if self.checkpoint_path is not None:
            self._save()  # a crash before the caller stores the outcome loses only the final metrics
        runs = [_with_wall(s.records[k], s.wall[k]) for k in range(len(s.lrs))]
        chosen = selected_run(runs, p.selected_by, s.n_rates, self.selected_from)
        assert s.candidate is not None and chosen == s.candidate.index
        network = s.candidate.net
        network.eval()
        j = chosen // s.n_rates
        return _outcome(
            runs,
            chosen,
            network,
            self.splits,
            self.seed,
            s.seeds,
            p,
            s.lr_min[j],
            s.c_out[j],
            self._elapsed,
            s.curves,
            self.first_index,
        )

    # -- checkpoints -----------------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self.s.elapsed_s + time.perf_counter() - self.session_start

    def _due(self) -> bool:
        return self.checkpoint_path is not None and time.perf_counter() - self.last_save >= self.every_s

    def _save(self) -> None:
        ckpt.save_state(self.checkpoint_path, self.key, self.s, self._elapsed())
        self.last_save = time.perf_counter()


def _with_wall(rec: RunRecord, wall_s: float) -> RunRecord:
    return RunRecord(**{**vars(rec), "wall_s": float(wall_s)})


def _outcome(
    runs, chosen: int, network, splits, seed, seeds, protocol, lr_min, c_out, elapsed, curves: Curves, first_index=0
) -> Outcome:
    """The outcome, with the selected network's NLC and output bias on the training set (the NLC from the
    same seeded draws as ``measure``'s at initialization: common random numbers for before vs after)."""
    x = splits.train.x
    run = runs[chosen]
    best = BestRecord(
        **vars(run),
        nlc_after=float(nlc(network, x, seed=nlc_seed(seed))),
        bias_after=float(output_bias(network, x)),
        lr_edge=protocol.is_edge(run.lr_index),
        selected_by=protocol.selected_by,
    )
    return Outcome(
        runs=runs,
        best=best,
        lr_min=float(lr_min),
        c_out=float(c_out),
        train_s=float(elapsed()),
        protocol=protocol,
        network=network,
        init_seeds=tuple(seeds),
        selected=chosen,
        curves=curves.to_dict(),
        first_index=int(first_index),
    )


def selected_run(runs: list[RunRecord], split: str, n_rates: int, selected_from: int | None) -> int:
    """The position of the selected run: the lowest error on ``split`` over all ``runs`` (``outcome.select``), or
    with ``selected_from`` j over initialization j's (runs j * n_rates .. (j + 1) * n_rates - 1)."""
    if selected_from is None:
        return select(runs, split)
    first = selected_from * n_rates
    return first + select(runs[first : first + n_rates], split)


def _untrainable(
    spec, splits, seed, seeds, protocol, device, session_start, trajectory=None, selected_from=None, window=None
) -> Outcome:
    """No initialization can be trained: its output or gradients are not finite at initialization (or, under
    cross-entropy, its output is zero), so no learning rate can be derived or used. Every run is recorded as
    diverged at its initial state, epoch 0, which is where the schedule would rewind it to (its curves: that
    one point)."""
    width = _widest(spec)
    window = window if window is not None else slice(0, protocol.num_lrs)
    lrs = protocol.rates(math.nan)[window]
    runs, c_outs, bases = [], [], []
    curves = Curves()
    for j, s in enumerate(seeds):
        base = build_network(spec, s, runs=1, device=device)
        err = {
            name: float(errors(base, split.x, split.y, width, 1, protocol.loss)[0])
            for name, split in (("val", splits.val), ("train", splits.train), ("test", splits.test))
        }
        c_outs.append(float(output_scale(base, splits.train.x, batch_size=protocol.batch_size)))
        bases.append(base)
        curves.add(
            range(j * len(lrs), (j + 1) * len(lrs)),
            0,
            lrs,
            None,
            err[protocol.monitor] if scheduler_of(protocol).monitors else None,
            _trajectory_nlc(base, splits, seed, trajectory, 0),
        )
        runs += [
            RunRecord(
                lr=float(lr),
                lr_index=window.start + k,
                epochs=0,
                divisions=0,
                val_error=err["val"],
                train_error=err["train"],
                test_error=err["test"],
                diverged=True,
                wall_s=0.0,
            )
            for k, lr in enumerate(lrs)
        ]
    chosen = selected_run(runs, protocol.selected_by, len(lrs), selected_from)
    j = chosen // len(lrs)
    base = bases[j]
    base.eval()
    return _outcome(
        runs,
        chosen,
        base,
        splits,
        seed,
        seeds,
        protocol,
        math.nan,
        c_outs[j],
        lambda: time.perf_counter() - session_start,
        curves,
        window.start,
    )
