"""The study driver: create or resume a study, run its unfinished architectures on Ray, commit each result once.

``run_study(config, out)`` starts a study (or resumes it, when ``out`` already holds the same study);
``resume_study(out)`` continues one from its own ``study.yaml``. Either is ``prepare_study`` (read-only: what will
run, or the one line that refuses it) and then ``run_prepared``; ``archstudy run`` prints the same plan before it runs
it. Either way:

1. everything is checked before anything is written (the config, the location, the dataset): a refused
   command leaves the study directory exactly as it was;
2. the driver takes the study's lock (local stores), writes ``study.yaml`` once (new studies), removes
   temporary files of writes a killed driver left, and reports and removes result files that are
   truncated or unreadable (they are redone);
3. every finished unit (its result files there and valid, ``study.execution.state``) is skipped; the others
   (failed ones too, unless ``retry_failed=False``) go to the engine (``study.execution.engine``): Ray tasks on
   CPUs, an actor pool on GPUs, one architecture per job, the dataset shared through Ray's object store;
4. each result comes back to the driver, the only writer, which writes the ``runs`` and ``curves`` files and
   then the ``architectures`` file (the commit point), each whole or not at all, then drops the unit's
   checkpoint and any earlier failure record. A unit that keeps failing is recorded in ``failed/`` with its
   reason.

With an NLC window (``nlc_window``; pruning at launch, ``study.execution.pruning``) the workers train only the units
whose NLC at initialization lies in it. With ``auto`` the pilot's units run first, then the window is
computed from their stored rows and the other units run with it (``_launch``).

Killing the driver at any moment loses at most the work in flight (and a long architecture restarts from
its checkpoint): the next resume sees exactly the committed files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, TextIO

import pyarrow as pa
import pyarrow.fs as pafs

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.width import check_budget
from archstudy.sampling.constraints import Real, check

from ..experiment.config import (
    CONFIG_NAME,
    CONNECT_TIMEOUT_S,
    StudyConfig,
    execution_settings,
    science_differences,
)
from ..experiment import provenance
from ..experiment.window_rule import pilot_window
from .dispatch import Dispatch
from .engine import Engine
from . import memory
from ..experiment.location import study_above
from .costs import count_text, launch_line
from .live import clear_all
from ..experiment.terminal import phase
from .progress import Progress
from .pruning import is_pilot, pilot_points
from .ray_session import check_address, ray_session
from .state import StudyState, work_units_saying, survey
from .store import (
    ARCHITECTURES,
    CURVES,
    LOCK_NAME,
    RUNS,
    Store,
    StoreWriteError,
)
from .unit import WorkUnit, execute_unit


@dataclass
class DriverSummary:
    """What one ``run_study``/``resume_study`` call did."""

    location: str
    total: int
    finished_before: int
    finished: int = 0  # in this call
    failed: dict[str, str] = field(default_factory=dict)  # name -> reason, in this call
    redone: dict[str, str] = field(default_factory=dict)  # corrupt files removed (name -> problem)
    skipped_failed: int = 0  # failed earlier and not retried (retry_failed=False)
    wall_s: float = 0.0

    @property
    def complete(self) -> bool:
        return self.finished_before + self.finished == self.total


# -- the driver ------------------------------------------------------------------------------------------
def _check_not_inside_a_study(store: Store) -> None:
    """Refuse a location inside another study's directory (``checkpoints/x``, ``architectures/x``, ``inner``): a
    study's directory and everything under it belong to that study (its table folders are read whole)."""
    above = study_above(store.fs, store.root)
    if above is not None:
        raise UserError(
            f"{store.location}: lies inside the study {above} (it holds {CONFIG_NAME}); nothing was changed: "
            "a study's directory and everything under it belong to that study: choose a directory outside it"
        )


def _check_new_location(store: Store) -> None:
    kind = store.root_kind()
    if kind == "file":
        raise UserError(f"{store.location} is a file, not a study directory")
    if kind == "dir" and store.listing():
        if store.has_lock():  # a driver that started here has not written study.yaml yet: say that, if it runs
            with store.driver_lock():
                pass
        raise UserError(
            f"{store.location} exists and is not a study (no {CONFIG_NAME}); choose a new or empty "
            "directory, or `archstudy resume` a study"
        )


def _load_data(config: StudyConfig):
    """The study's dataset, its splits checked up front (``study.datasets.dataset.unusable``): a split a worker
    could not train or evaluate on is one line here, not a failure of every unit."""
    from ..datasets import load_dataset
    from ..datasets.dataset import unusable

    data = load_dataset(config.dataset, seed=config.dataset_seed, root=config.root, **config.dataset_options)
    problem = unusable(data)
    if problem:
        raise UserError(
            f"{config.dataset}: {problem}; a study needs a training, a validation and a test split "
            "to train and select every architecture"
        )
    return data


def data_fingerprint(data) -> str:
    """16 hex digits of the sha256 of the dataset's splits (shapes, dtypes and bytes of x and y, in order)."""
    h = hashlib.sha256()
    for split in (data.train, data.val, data.test):
        for t in (split.x, split.y):
            a = t.detach().cpu().contiguous().numpy()
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(a.tobytes())
    return h.hexdigest()[:16]


def _execution(config: StudyConfig, overrides: Mapping[str, Any]) -> StudyConfig:
    return config.with_execution(**{k: v for k, v in overrides.items() if v is not None})


def _named_execution(config: StudyConfig | Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The execution settings a call names explicitly: every one of a StudyConfig, those a mapping holds, and
    the non-None ``overrides`` (as ``StudyConfig.with_execution`` keywords)."""
    return {**execution_settings(config), **{k: v for k, v in overrides.items() if v is not None}}


FRESH_S = 2.0  # a listing with an entry this recent cannot stand for a survey (``_files``)

# The line a plan says where another driver holds the study's lock: what that driver's ``Store.driver_lock`` refuses.
LOCKED = "another archstudy driver is running on this study (see `archstudy status`)"


@dataclass
class Preparation:
    """What a driver will do on a study, decided before anything is written or started (``prepare_study``, read-only):
    the config it runs, with the keys derived from the data (``derived``: ``d_in``, ``d_out``, ``data_fingerprint``),
    the study's units and those left to run (``todo``), and the refusals that come from the study's files
    (``refusal``): a path where an architecture's file goes that holds something else (``blocked``), files of
    another schema version or science config, another driver holding the study's lock (``locked``).

    ``archstudy run`` prints its plan from it and then runs it (``run_prepared``), and ``run_study``/``resume_study``
    are ``prepare_study`` then ``run_prepared``: what is said before the start is what runs. The driver surveys the
    files again once it holds the lock (``surveyed``), with the same code: another process may have finished
    units between the plan and the start."""

    store: Store
    config: StudyConfig
    data: Any
    units: list[WorkUnit]
    state: StudyState
    new: bool  # the location held no study: the driver creates it
    write_config: bool  # the driver writes study.yaml (a new study, an extended one, --force-config)
    note: str | None  # what the driver says of the config before it writes (extending it, replacing it)
    needs: Any  # (spec, ``memory.Estimate``) of the unit that needs the most memory; None without units
    address: str | None
    max_in_flight: int | None
    retry_failed: bool
    blocked: list[str] = field(default_factory=list)
    locked: str | None = None
    files: frozenset | None = None  # the study's files when ``state`` was surveyed (``_files``)
    # unit -> its estimated seconds (``archstudy run``'s plan: ``study.cli.run.estimate_line``), the driver's ETA's
    # weights; None: each unit's depth (``costs.relative_cost``)
    weights: dict[str, float] | None = None

    @property
    def derived(self) -> dict[str, Any]:
        """The keys the driver derives from the data loaded now (recorded in a new study's study.yaml)."""
        return {k: getattr(self.config, k) for k in ("d_in", "d_out", "data_fingerprint")}

    @property
    def todo(self) -> list[WorkUnit]:
        """The units this session runs: those not finished (failed ones too, unless ``retry_failed`` is off)."""
        finished = set(self.state.finished)
        return [
            u for u in self.units if u.name not in finished and (self.retry_failed or u.name not in self.state.failed)
        ]

    def refusal(self) -> str | None:
        """The one line that refuses to run this plan, in the driver's order, or None."""
        if self.locked:
            return self.locked
        if self.blocked:
            more = f" (and {len(self.blocked) - 1} more)" if len(self.blocked) > 1 else ""
            return (
                f"{self.blocked[0]}{more}: not a file, where the study writes one of an architecture's files (a "
                "directory?); nothing was run: move it away"
            )
        if self.state.foreign:
            name, problem = next(iter(self.state.foreign.items()))
            return f"{self.store.location}: {name}: {problem}; resume it with the archstudy version that wrote it"
        return _mixed_problem(self.store, self.state, self.config) or _science_version_problem(self.store, self.state)

    def check(self) -> None:
        """Raise the ``refusal`` as a one-line ``UserError``, if there is one."""
        problem = self.refusal()
        if problem:
            raise UserError(problem)

    def surveyed(self) -> Preparation:
        """The plan with the study's files surveyed again (the driver, holding the lock: not ``locked``); the
        plan's own survey where no file of the study changed since it was taken (``_files``: one listing, where a
        survey reads every result file: most of a large study's start)."""
        files = _files(self.store)
        if files is not None and files == self.files:
            return replace(self, locked=None)
        state, blocked = _survey(self.store, self.config, self.units)
        return replace(self, state=state, blocked=blocked, locked=None, files=files)


def _files(store: Store) -> frozenset | None:
    """Every entry under the study's directory (path, type, size, modification time: a directory where a unit's
    file goes is a change too), its lock file aside (the driver creates it), from one recursive listing; None where
    the location is not a directory or cannot be listed, or where an entry changed within ``FRESH_S`` (a rewrite
    within a timestamp's resolution, a second on object storage, would keep its time). Two equal listings, the
    second taken later, mean a survey between them reads the same files (result files are written by rename or
    whole-object put: a rewrite is a new modification time)."""
    try:
        if store.root_kind() != "dir":
            return None
        found = store.fs.get_file_info(pafs.FileSelector(store.root, recursive=True, allow_not_found=True))
    except (OSError, pa.ArrowException):
        return None
    entries = frozenset((f.path, f.type, f.size, f.mtime_ns) for f in found if f.base_name != LOCK_NAME)
    newest = max((m for *_, m in entries if m is not None), default=0)
    return None if newest > (time.time() - FRESH_S) * 1e9 else entries


def _survey(store: Store, config: StudyConfig, units: list[WorkUnit]) -> tuple[StudyState, list[str]]:
    """The study's files against its units (``study.execution.state.survey``) and the blocked paths; an empty
    state where the location does not exist yet."""
    if store.root_kind() != "dir":
        return StudyState(config=config, units=units), []
    return survey(store, config, units, driver=False), store.blocked(u.name for u in units)


@dataclass(frozen=True)
class _Asked:
    """The config a driver is asked to run, before the data is loaded (``_asked_config``): whether the location is a
    new study, whether the driver writes study.yaml and what it says of it (``note``), and with --force-config of the
    study's own science keys, the study's config (``unchanged``: rewritten only if the data turns out to differ)."""

    config: StudyConfig
    new: bool
    write_config: bool
    note: str | None = None
    unchanged: StudyConfig | None = None


def _asked_config(
    store: Store, config: StudyConfig | Mapping[str, Any] | None, execution: Mapping[str, Any], force_config: bool
) -> _Asked:
    """The config to run on ``store``: the study's own for a resume (``config`` None), the one given for a new study,
    or the one given reconciled with the study's (``_reconcile``), each with the execution settings asked."""
    if config is None:  # a resume: the study's own config
        return _Asked(_execution(store.read_config(), execution), new=False, write_config=False)
    named = _named_execution(config, execution)
    if not isinstance(config, StudyConfig):
        config = StudyConfig.from_dict(config)
    config = _execution(config, execution)
    _check_not_inside_a_study(store)
    if not store.is_study():
        _check_new_location(store)
        return _Asked(config, new=True, write_config=True)
    stored = store.read_config()
    config, write_config, note = _reconcile(store, stored, config, force_config)
    if not write_config:
        return _Asked(stored.with_execution(**named), new=False, write_config=False, note=note)
    unchanged = None
    if force_config and not stored.differences(config.replace(data_fingerprint=stored.data_fingerprint)):
        unchanged = stored.with_execution(**named)
    return _Asked(config, new=False, write_config=True, note=note, unchanged=unchanged)


def _with_data(asked: _Asked, data) -> tuple[StudyConfig, bool, str | None]:
    """(config, write_config, note) once the data is loaded: the config with the keys derived from the data (d_in,
    d_out, data_fingerprint), refused in one line where a study's recorded ones differ."""
    config, write_config, note = asked.config, asked.write_config, asked.note
    d_in, d_out, fingerprint = int(data.d_in), int(data.n_classes), data_fingerprint(data)
    if asked.unchanged is not None and asked.unchanged.data_fingerprint == fingerprint:
        # --force-config asked nothing new (the same science keys, the same data): nothing is rewritten.
        config, write_config, note = asked.unchanged, False, None
    if asked.new:  # d_in, d_out and data_fingerprint are the data's, recorded when a study is created: never a choice
        for key, value in (("d_in", d_in), ("d_out", d_out), ("data_fingerprint", fingerprint)):
            given = getattr(config, key)
            if given is not None and given != value:
                raise UserError(
                    f"study.{key} = {given!r}: is not the data's ({config.dataset} has {key} = {value!r}); "
                    "archstudy derives it from the data when it creates a study: leave it out of the config"
                )
    if config.d_in is not None and (config.d_in, config.d_out) != (d_in, d_out):
        raise UserError(
            f"{config.dataset}: the data now has d_in = {d_in}, {d_out} classes; the study was created "
            f"with d_in = {config.d_in}, {config.d_out} classes"
        )
    if config.data_fingerprint is not None and config.data_fingerprint != fingerprint:
        raise UserError(
            f"{config.dataset}: the data loaded now (fingerprint {fingerprint}) is not the study's "
            f"({config.data_fingerprint}): other files, or another preprocessing; --force-config on "
            "`archstudy run` accepts it"
        )
    return config.replace(d_in=d_in, d_out=d_out, data_fingerprint=fingerprint), write_config, note


def prepare_study(
    config: StudyConfig | Mapping[str, Any] | None,
    out: str | os.PathLike,
    *,
    address: str | None = None,
    force_config: bool = False,
    retry_failed: bool = True,
    max_in_flight: int | None = None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    say: Callable[[str], None] | None = None,
    **execution,
) -> Preparation:
    """The plan of ``run_study(config, out, ...)`` (``config`` None: of ``resume_study(out, ...)``), read-only:
    nothing is written and Ray is not started. Every check that can refuse the command runs here, the cheap
    ones first (``UserError``, one line); the refusals that come from the study's files are the plan's
    ``refusal``. ``say``: lines said while it plans (sampling a large study takes minutes)."""
    say = say or (lambda line: None)
    store = Store(out)
    store.reach()  # object storage that refuses or never answers: one line, in bounded time
    asked = _asked_config(store, config, execution, force_config)
    if max_in_flight is not None and max_in_flight < 1:
        raise UserError(f"max_in_flight = {max_in_flight!r}: must be an integer >= 1")
    connect_timeout_s = check("run", "connect_timeout", Real(0.0, lo_open=True), connect_timeout_s)
    problem = store.write_problem()
    if problem:
        raise UserError(f"{store.location}: {problem}")
    store.check_lock()
    check_address(address, connect_timeout_s)
    data = _load_data(asked.config)
    config, write_config, note = _with_data(asked, data)
    units = work_units_saying(config, say)
    if write_config:
        check_budget(
            "study",
            (u.spec for u in units if u.variant != "width"),  # a width sibling leaves the budget by design
            config.param_budget,
            f"{config.dataset} (d_in {config.d_in}, {config.d_out} classes)",
        )
        _check_pilot(config)
    needs = _memory_needed(config, units, data, store)
    if not address and not os.environ.get("RAY_ADDRESS"):  # an embedded Ray: this machine's memory, before Ray starts
        _check_memory(
            needs,
            engine_nodes=[{"Alive": True, "Resources": {"CPU": float(os.cpu_count() or 1)}}],
            cpus=config.resources.cpus_per_arch,
            gpus=config.resources.gpus_per_arch,
            max_in_flight=max_in_flight,
            embedded=True,
            say=say,
        )
    files = _files(store)  # before the survey: a file written while it reads is a change the driver's survey sees
    state, blocked = _survey(store, config, units)
    return Preparation(
        store=store,
        config=config,
        data=data,
        units=units,
        state=state,
        new=asked.new,
        write_config=write_config,
        note=note,
        needs=needs,
        address=address,
        max_in_flight=max_in_flight,
        retry_failed=retry_failed,
        blocked=blocked,
        locked=f"{store.location}: {LOCKED}" if store.driver_running() else None,
        files=files,
    )


def run_prepared(
    plan: Preparation,
    *,
    progress: TextIO | None = sys.stderr,
    intro: str | None = None,
    announced: bool = False,
    work: Callable[[Any, int], dict] | None = None,
    on_commit: Callable[[int], None] | None = None,
) -> DriverSummary:
    """Run ``plan`` (``prepare_study``): start or join Ray, take the study's lock, survey its files again, refuse
    as the plan's ``refusal`` says, then write the config (a new or changed study) and run the units left.
    ``intro``: a line said once every check has passed, before the line of what will run (the command line's:
    which defaults it took). ``announced``: the caller has already said what will run and the memory it needs
    (``archstudy run``'s plan), so the driver does not say it again. ``work``: what a worker runs per unit
    (None: ``execute_unit``; the driver's own bench gives one that trains nothing, ``study.perf.driver_overhead``);
    ``on_commit(n)``: told after each unit this call commits, ``n`` of them so far."""
    return _drive(plan.store, plan, progress=progress, intro=intro, announced=announced, work=work, on_commit=on_commit)


def run_study(
    config: StudyConfig | Mapping[str, Any],
    out: str | os.PathLike,
    *,
    address: str | None = None,
    force_config: bool = False,
    retry_failed: bool = True,
    max_in_flight: int | None = None,
    progress: TextIO | None = sys.stderr,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    intro: str | None = None,
    announced: bool = False,
    **execution,
) -> DriverSummary:
    """Run the study ``config`` into ``out`` (a directory or ``s3://``/``gs://``/``file://`` URI): ``prepare_study``,
    then ``run_prepared``.

    If ``out`` already holds a study, this is a resume: its science keys must equal ``config``'s (else a
    ``UserError`` names the first that differs), unless ``force_config`` replaces its ``study.yaml``. A larger
    ``architectures`` alone extends the study (architecture i does not depend on the count).
    ``execution`` may override ``root``, ``cpus_per_arch``, ``gpus_per_arch``, ``max_retries``,
    ``checkpoint_every_s``; on an existing study, the execution settings this call does not name (in
    ``execution`` or in a ``config`` mapping) are the study's own. ``connect_timeout_s``: how long ``address``
    may take to answer (``check_address``). ``intro``, ``announced``: as ``run_prepared``'s."""
    return _plan_and_drive(
        config,
        out,
        progress,
        intro=intro,
        announced=announced,
        address=address,
        force_config=force_config,
        retry_failed=retry_failed,
        max_in_flight=max_in_flight,
        connect_timeout_s=connect_timeout_s,
        **execution,
    )


def _plan_and_drive(
    config: StudyConfig | Mapping[str, Any] | None,
    out: str | os.PathLike,
    progress: TextIO | None,
    *,
    intro: str | None = None,
    announced: bool = False,
    **planning,
) -> DriverSummary:
    """``prepare_study(config, out, **planning)`` under a planning line, then ``_drive``: ``run_study``'s and
    ``resume_study``'s one body (``config`` None: the study's own)."""
    t0 = time.monotonic()
    shown = Progress(progress, 0, 0)
    # On a terminal (a line erased once done); not in a log, where a refused command stays one line.
    with phase(progress, f"planning {os.fspath(out)}: loading the data, sampling", in_log=False):
        plan = prepare_study(config, out, say=shown.say, **planning)
    return _drive(plan.store, plan, progress=progress, intro=intro, announced=announced, started=t0)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reconcile(
    store: Store, stored: StudyConfig, asked: StudyConfig, force: bool
) -> tuple[StudyConfig, bool, str | None]:
    """The config to run an existing study with, whether to rewrite its study.yaml, and what to tell the user.

    Same science keys: the stored config. A larger ``architectures`` alone: the study grows. Anything else is
    refused unless ``force``, which rewrites study.yaml with this command's config and the fingerprint of
    the data loaded now."""
    mine = asked.replace(
        d_in=stored.d_in, d_out=stored.d_out, data_fingerprint=stored.data_fingerprint, created=stored.created
    )
    diff = stored.differences(mine)
    if not diff and not force:
        return stored, False, None
    if diff and set(diff) <= {"architectures", "indices"} and _extends(stored, mine) and not force:
        return mine, True, f"extending the study from {stored.architectures} to {mine.architectures} architectures"
    if force:
        # The data may have changed too: the fingerprint of what is loaded now is recorded.
        return (
            mine.replace(data_fingerprint=None),
            True,
            f"replacing the study's config (--force-config): {', '.join(diff) or 'the data'} changed",
        )
    k, more = diff[0], f" and {len(diff) - 1} more key(s)" if len(diff) > 1 else ""
    raise UserError(
        f"{store.location} is a study with a different {k} ({_short(stored.to_dict()[k])}, asked "
        f"{_short(mine.to_dict()[k])}){more}: `archstudy resume {store.location}` continues it as it is; "
        "--force-config replaces its config"
    )


def _extends(stored: StudyConfig, mine: StudyConfig) -> bool:
    """Whether ``mine`` holds more draws than ``stored`` and every draw of ``stored`` first, in its order: a larger
    count, of the draws 0 .. n-1 or of a list of chosen ones (``indices``) that begins with the stored list."""
    if mine.architectures <= stored.architectures:
        return False
    drawn = lambda c, n: list(range(n) if c.indices is None else c.indices[:n])  # noqa: E731
    return drawn(mine, stored.architectures) == drawn(stored, stored.architectures)


def resume_study(
    out: str | os.PathLike,
    *,
    address: str | None = None,
    retry_failed: bool = True,
    max_in_flight: int | None = None,
    progress: TextIO | None = sys.stderr,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    **execution,
) -> DriverSummary:
    """Continue the study in ``out`` with its own ``study.yaml`` (execution settings may be overridden for this
    session: ``root``, ``cpus_per_arch``, ``gpus_per_arch``, ``max_retries``, ``checkpoint_every_s``):
    ``prepare_study(None, out, ...)``, then ``run_prepared``."""
    return _plan_and_drive(
        None,
        out,
        progress,
        address=address,
        retry_failed=retry_failed,
        max_in_flight=max_in_flight,
        connect_timeout_s=connect_timeout_s,
        **execution,
    )


def _check_still_new(store: Store) -> None:
    """Refuse to create a study where another driver created one since this command checked (between the
    check and the lock: while Ray started, say). Called with the driver lock held, so no other driver
    writes study.yaml between this check and this driver's write."""
    if store.is_study():
        try:
            seed = f" (seed {store.read_config().seed} in its study.yaml)"
        except UserError:
            seed = ""
        raise UserError(
            f"{store.location}: another driver created a study here while this one started{seed}; nothing "
            "was changed: run the command again to continue that study, or choose another directory"
        )


class StudyStopped(UserError):
    """The study's storage stopped accepting writes while the driver ran (a full disk, a directory made read-only
    or removed, the object store refusing): the driver stopped, Ray was shut down, nothing stored was damaged."""


def _stops_on_write_errors(drive):
    """``drive`` that ends, when a write to the study fails (``StoreWriteError``), with one line saying where, why
    and that ``archstudy resume`` continues, after its own cleanup (the engine's jobs cancelled, the lock
    released, an embedded Ray shut down: the ``with`` blocks it leaves)."""

    @functools.wraps(drive)
    def run(store: Store, *args, **kwargs):
        try:
            return drive(store, *args, **kwargs)
        except StoreWriteError as e:
            try:  # a directory without its study.yaml: stopped before the study was written (one that vanished
                # since it was created, or a location that no longer answers, is said as for any study)
                created = store.root_kind() != "dir" or store.is_study()
            except Exception:  # noqa: BLE001 - the location does not answer at all
                created = True
            if not created:  # stopped before its study.yaml was written: there is nothing to resume
                raise StudyStopped(
                    f"{store.location}: the study stopped before it was created: {e}; nothing stored was damaged: "
                    "run the same `archstudy run` again once the location accepts writes"
                ) from None
            raise StudyStopped(
                f"{store.location}: the study stopped: {e}; every architecture committed before is "
                f"kept and nothing stored was damaged: `archstudy resume {store.location}` continues "
                "it once the location accepts writes again"
            ) from None

    return run


class _RayReach:
    """Start or join Ray once, when the driver first needs it, and check that it can run one architecture: its
    capacity, and the memory of the largest unit. ``embedded``: whether this driver started Ray itself."""

    def __init__(self, held: contextlib.ExitStack, engine: Engine, plan: Preparation, progress, shown: Progress):
        self.held, self.engine, self.plan, self.progress, self.shown = held, engine, plan, progress, shown
        self.embedded: bool | None = None  # None until reached

    def __call__(self) -> None:
        if self.embedded is not None:
            return
        import ray

        address = self.plan.address
        if ray.is_initialized():  # the caller's Ray (a test, a notebook, `archstudy rank`)
            self.embedded = self.held.enter_context(ray_session(address))
        else:  # seconds, a minute on a loaded machine: said, and on a terminal its time runs
            where = address or os.environ.get("RAY_ADDRESS")
            label = f"joining the Ray cluster at {where}" if where else "starting Ray here"
            with phase(self.progress, label, in_log=False):  # its checks may refuse: one line in a log
                self.embedded = self.held.enter_context(ray_session(address))
        _check_capacity(self.engine, self.embedded, self.shown)
        _check_memory(
            self.plan.needs,
            engine_nodes=None,
            cpus=self.engine.cpus,
            gpus=self.engine.gpus,
            max_in_flight=self.plan.max_in_flight,
            embedded=self.embedded,
            say=self.shown.say,
        )


def _engine(config: StudyConfig, max_in_flight: int | None, work: Callable[[Any, int], dict] | None) -> Engine:
    """The engine of a study's units: a worker's CPUs and GPUs, retries and units in flight as the config says."""
    res = config.resources
    return Engine(
        work or execute_unit,  # looked up at the call: a test may replace the module's execute_unit
        cpus=res.cpus_per_arch,
        gpus=res.gpus_per_arch,
        max_retries=config.max_retries,
        max_in_flight=max_in_flight,
        name="execute_unit",
    )


def _nothing_to_do(store: Store, plan: Preparation, shown: Progress, result: DriverSummary) -> DriverSummary:
    """Say that every unit is finished (or failed, not retried); with --force-config, record the config asked."""
    units, state = plan.units, plan.state
    what = f"all {len(units)} architectures are finished"
    if state.failed and not plan.retry_failed:
        what = f"{len(state.finished)} of {len(units)} architectures are finished, {len(state.failed)} failed"
    if plan.write_config:  # --force-config on a finished study: record the config (and the data) asked
        if plan.note:
            shown.say(plan.note)
        store.write_config(plan.config)
    shown.say(f"nothing to do: {what} in {store.location}")
    return result


def _start_writing(store: Store, plan: Preparation, shown: Progress) -> None:
    """From here on the driver writes: the config (a new or changed study), the checkpoints' key (made with the study,
    or replaced where it is not one), then the study's mends: temporary files
    of interrupted writes and corrupt result files removed (they are redone), progress records of a killed session
    cleared (no unit of this study runs now)."""
    if plan.note:
        shown.say(plan.note)
    versions = provenance.versions_line(plan.state.provenance, provenance.current())
    if versions:
        shown.say(versions)
    if plan.write_config:
        store.write_config(plan.config)
    _, replaced = store.checkpoint_secret(create=True)  # before any unit runs: every worker reads it
    if replaced:
        shown.say(f"{replaced}; the checkpoints it signed are discarded")
    for path in store.remove_temp_files():
        shown.say(f"removed the temporary file {path} of an interrupted write")
    for name, problem in plan.state.corrupt.items():
        shown.say(f"{name}: {problem}: removed, it will be redone")
        for kind in (ARCHITECTURES, RUNS, CURVES):
            store.delete(kind, f"{name}.parquet")
    clear_all(store)


@_stops_on_write_errors
def _drive(
    store: Store,
    plan: Preparation,
    *,
    progress: TextIO | None,
    intro: str | None = None,
    announced: bool = False,
    started: float | None = None,
    work: Callable[[Any, int], dict] | None = None,
    on_commit: Callable[[int], None] | None = None,
) -> DriverSummary:
    """Run the plan's unfinished units (``run_prepared``); ``started``: when the caller began (the summary's time)."""
    t0 = time.monotonic() if started is None else started
    shown = Progress(progress, 0, 0)  # the progress line and messages on the caller's stream
    engine = _engine(plan.config, plan.max_in_flight, work)
    with contextlib.ExitStack() as held:
        reach_ray = _RayReach(held, engine, plan, progress, shown)
        if plan.new:
            reach_ray()  # a new study has work to do: a machine that cannot run it refuses before any write
        locked = held.enter_context(store.driver_lock())
        if locked:
            shown.say(locked)
        if plan.new:
            _check_still_new(store)  # with the lock held: create the lock, check, then write
        plan = plan.surveyed()  # with the lock held: what the study holds now
        plan.check()
        config, units, state, todo = plan.config, plan.units, plan.state, plan.todo
        result = DriverSummary(
            store.location,
            len(units),
            len(state.finished),
            redone=dict(state.corrupt),
            skipped_failed=0 if plan.retry_failed else len(state.failed),
        )
        # A driver killed between a unit's commit and the removal of its checkpoint leaves a stale one.
        finished = set(state.finished)
        for name in [name for name in state.checkpoints if name in finished]:
            store.delete(*store.checkpoint_parts(name))
            shown.say(f"{name}: removed the checkpoint of an architecture that had finished")
        if not todo and not state.corrupt:
            return _nothing_to_do(store, plan, shown, result)
        reach_ray()
        _start_writing(store, plan, shown)
        if intro:
            shown.say(intro)
        if not announced:
            shown.say(launch_line(config, plan.data, units, todo, engine.limit(), store.location, len(finished)))
            if plan.needs is not None:
                needs = plan.needs[1]
                most = memory.size(needs.bytes)
                shown.say(f"memory: the most an architecture needs is about {most} ({needs.terms()})")
        _launch(
            store,
            config,
            engine,
            units,
            todo,
            state,
            result,
            address=plan.address,
            progress=shown,
            data=plan.data,
            on_commit=on_commit,
            weights=plan.weights,
        )
    shown.close()
    result.wall_s = time.monotonic() - t0
    done = result.finished_before + result.finished
    summary = f"{done}/{count_text(config, result.total)} finished in {store.location}"
    if result.failed:
        summary += f", {len(result.failed)} failed (`archstudy status {store.location}`)"
    shown.say(summary + f" ({Progress.duration(result.wall_s)})")
    return result


def _mixed_problem(store: Store, state: StudyState, config: StudyConfig) -> str | None:
    """One study, one science config: the line that refuses to run ``config`` beside result files computed under
    another one (study.yaml edited, or --force-config over finished rows) or that are no unit of its plan."""
    n = len(state.other_config) + len(state.extra)
    if not n:
        return None
    science = config.science()
    recorded = next(iter(state.recorded.values()), None)
    if state.other_config or recorded != json.loads(config.science_json):  # as a file records it
        what = f"were computed under another science config than this one ({science_differences(recorded, science)})"
    else:
        what = "are no architecture of this config's plan"
    return (
        f"{store.location}: {n} result file(s) {what}; a study holds one science config, so nothing was "
        f"run (`archstudy status {store.location}` lists them): restore study.yaml if it was edited, or "
        "run this config in a new directory"
    )


def _science_version_problem(store: Store, state: StudyState) -> str | None:
    """The line that refuses to run beside finished units of another science version (``study.experiment.provenance``:
    the same config computed to other numbers), or None."""
    units, theirs = provenance.other_science(state.provenance)
    if not units:
        return None
    return (
        f"{store.location}: {units:,} finished architecture(s) were computed by archstudy science version "
        f"{', '.join(theirs)}, whose numbers differ from this archstudy's (science version "
        f"{provenance.SCIENCE_VERSION}); nothing was run: resume it with the archstudy that computed them "
        f"(`archstudy status {store.location}` names it), or run this config in a new directory"
    )


def _check_pilot(config: StudyConfig) -> None:
    """With ``nlc_window: auto``, the pilot (the first ``nlc_pilot`` architectures, trained without a window) must
    leave architectures to prune: a pilot of the whole study would train everything and prune nothing."""
    if config.nlc_window == "auto" and config.nlc_pilot >= config.architectures:
        raise SpecError(
            "study",
            "nlc_pilot",
            config.nlc_pilot,
            f"must be less than architectures ({config.architectures}) with nlc_window = 'auto': the "
            "pilot's architectures are trained without a window, the others are pruned by its window",
        )


def _memory_needed(config: StudyConfig, units: list[WorkUnit], data, store: Store):
    """(spec, ``memory.Estimate``) of the unit that needs the most memory (``study.execution.memory``), or None for a
    study without units."""
    from ..experiment.metric_options import MetricOptions

    res = config.resources
    return memory.largest(
        (u.spec for u in units),
        config.counted_protocol,
        data,
        threads=res.threads,
        gpu=res.gpus_per_arch > 0,
        object_storage=not store.local,
        grid=MetricOptions.from_dict(config.metrics).variability_grid,
        inits=config.init_seeds,
    )


def _check_memory(
    needs,
    *,
    engine_nodes: list[dict] | None,
    cpus: float,
    gpus: float,
    max_in_flight: int | None,
    embedded: bool,
    say: Callable[[str], None],
) -> None:
    """Refuse, before anything runs, a study whose largest unit cannot fit in what a worker has on the nodes
    ``engine_nodes`` (``ray.nodes()`` when None; this machine before an embedded Ray starts: its physical
    memory); on a cluster, say it and go on (an autoscaler may add a larger node). Units on a GPU: not checked
    (the GPU's memory is not known here)."""
    if needs is None or gpus > 0:
        return
    if engine_nodes is None:
        import ray

        engine_nodes = ray.nodes()
    spec, need = needs
    have = memory.worker_memory(engine_nodes, cpus, gpus, max_in_flight)
    if have is None or need.bytes <= have.bytes:
        return
    what = (
        f"an architecture needs about {memory.size(need.bytes)} of memory ({need.terms()}; {spec.depth} layers "
        f"of width {spec.width}), but {have.describe()}"
    )
    if embedded:
        advice = (
            "lower metrics.variability_grid (points per side of the lattice)"
            if need.lattice > need.training
            else "lower --param-budget, use fewer learning rates"
        )
        raise UserError(
            f"{what}: nothing was run; {advice}, or run fewer at once (--max-in-flight 1, or a larger --cpus-per-arch)"
        )
    say(f"{what}; its architectures will fail until a node with more memory per architecture joins")


def _check_capacity(engine: Engine, embedded: bool, shown: Progress) -> None:
    """Refuse, on an embedded Ray, resources per architecture that no node has; on a cluster, say that the
    work waits for a node that can run it (an autoscaler may add one)."""
    import ray

    if engine.capacity() > 0:
        return
    need = f"{engine.cpus:g} CPU" + (f" and {engine.gpus:g} GPU" if engine.gpus else "")
    total = ray.cluster_resources()
    if embedded:
        raise UserError(
            f"this machine cannot run one architecture (each needs {need}; Ray sees "
            f"{total.get('CPU', 0):g} CPU, {total.get('GPU', 0):g} GPU): lower --cpus-per-arch or "
            "--gpus-per-arch, or use a cluster with --address"
        )
    shown.say(f"no node can run an architecture now (each needs {need}); waiting for the cluster to add one")


def _launch(
    store: Store,
    config: StudyConfig,
    engine: Engine,
    units: list[WorkUnit],
    todo: list[WorkUnit],
    state: StudyState,
    result: DriverSummary,
    *,
    address: str | None,
    progress: Progress,
    data,
    on_commit: Callable[[int], None] | None = None,
    weights: Mapping[str, float] | None = None,
) -> None:
    """Run ``todo`` with the study's NLC window: none, the given one, or (``auto``) the pilot's units first, then
    the others with the window of the pilot's stored rows, once every pilot unit is finished."""

    def dispatch(some: list[WorkUnit], window: tuple[float, float] | None = None) -> None:
        Dispatch(
            store,
            config,
            engine,
            some,
            state,
            result,
            address=address,
            progress=progress,
            on_commit=on_commit,
            weights=weights,
        ).run(data, window)

    window = config.nlc_window
    if window != "auto":
        dispatch(todo, None if window is None else (float(window[0]), float(window[1])))
        return
    pilot = [u for u in todo if is_pilot(config, u.index)]
    rest = [u for u in todo if not is_pilot(config, u.index)]
    if pilot:
        progress.say(
            f"the pilot: {len(pilot)} architectures (indices below {config.nlc_pilot}), trained without a window"
        )
        dispatch(pilot)
    if not rest:
        return
    names = [u.name for u in units if is_pilot(config, u.index)]
    ran, done_before = {u.name for u in pilot}, set(state.finished)
    unfinished = [n for n in names if n not in done_before and (n not in ran or n in result.failed)]
    if unfinished:
        progress.say(
            f"the pilot is not complete ({len(unfinished)} failed, e.g. {unfinished[0]}): its window needs "
            f"every pilot architecture; {len(rest)} architectures wait (`archstudy resume` retries the pilot)"
        )
        return
    w = pilot_window(*pilot_points(store, names), seed=config.seed)
    why = "its good range" if w["source"] == "study" else f"the NLC paper's, not the pilot's: {w['reason']}"
    progress.say(
        f"NLC window [{w['lo']:.3g}, {w['hi']:.3g}] from the pilot's {len(names)} architectures ({why}); "
        f"{len(rest)} architectures to measure, the ones inside it to train"
    )
    dispatch(rest, (w["lo"], w["hi"]))
