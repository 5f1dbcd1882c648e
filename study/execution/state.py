"""Where a study stands: which of its planned architectures are finished, failed, corrupt, in progress, left.

The study's files are the only truth (docs/results.md): an architecture is finished when its
``architectures`` file (the commit point) is there and valid, with the files it requires (``study.execution.store``:
a trained architecture's ``runs`` file; none for one pruned at launch) and its ``curves`` file valid where
there is one (a unit finished before curves were recorded has none and stays finished). Finished units that
were pruned at launch (``trained`` false) are listed apart (``pruned``). ``survey`` reads them all (concurrently)
and compares them with the plan (``study.execution.unit.work_units``), so ``archstudy status`` and a resume see
the same thing. A unit held by a good pack (``study.experiment.packs``, written by ``study.execution.compaction``) is
finished as its pack is: whole (every table file it records there, with its row count) and of this study's science
config; a unit recorded only by a pack that is not whole is corrupt. Nothing here writes.

``survey_files`` (``archstudy status``) finds the same without sampling the whole plan (sampling grows with the
plan: a large study would wait for every spec): the units are named by the study's files, failure records, checkpoints
and the driver's units in flight, and the planned units none of them names are counted, not named
(``StudyState.unnamed``). A name at a planned index whose architectures file (or good pack) holds this study's
science config is the unit the plan holds there: architecture i is a function of (study seed, i) and of the
science config alone, the same in every version (``sampling.plan``); ``SPOT_CHECKS`` of them, spread over
the study, are sampled to check it (on a mismatch the whole plan is sampled, as ``survey`` does). Every other name
at a planned index (a failure record, another config's file, a corrupt one, two names at one index) is
checked against its index's sampled spec. With sibling axes the count of units per index is known only by
sampling them, so the whole plan is sampled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from typing import Callable, Iterable, Sequence

from archstudy.sampling import plan_study
from archstudy.sampling.unit_names import INDEX_DIGITS

from ..experiment.config import StudyConfig
from ..experiment.packs import sources
from ..experiment.provenance import entries, merge
from ..experiment.layout import HEARTBEAT_S, STALE_S  # noqa: F401 - HEARTBEAT_S: the driver's, imported from here
from ..experiment.value_checks import planned_runs
from .store import ARCHITECTURES, CHECKPOINTS, CURVES, RUNS, FileCheck, Store, recorded_science
from .unit import WorkUnit, work_units

PLAN_PROGRESS_S = 2.0  # planning says how far it is after this long, and again every this long


def work_units_saying(config: StudyConfig, say) -> list:
    """``work_units``, saying how far it is (``say(line)``) when planning takes more than ``PLAN_PROGRESS_S``:
    a large study samples for minutes before its first unit can start."""
    t0 = last = time.monotonic()
    n = config.architectures

    def on_index(done: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PLAN_PROGRESS_S:
            last = now
            eta = (now - t0) * (n - done) / done
            say(
                f"planning: {done:,}/{n:,} architectures sampled, about {eta / 60:.0f} min left"
                if eta >= 60
                else f"planning: {done:,}/{n:,} architectures sampled, about {eta:.0f} s left"
            )

    return work_units(config, on_index)


@dataclass
class StudyState:
    config: StudyConfig
    units: list[WorkUnit]
    finished: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # finished, not trained: NLC outside the study's window
    corrupt: dict[str, str] = field(default_factory=dict)  # name -> problem; redone by resume
    foreign: dict[str, str] = field(default_factory=dict)  # name -> another schema version (never touched)
    failed: dict[str, dict] = field(default_factory=dict)  # name -> failure record (not finished)
    remaining: list[str] = field(default_factory=list)  # not finished (corrupt included), failed or in progress
    in_progress: list[str] = field(default_factory=list)  # in flight in a running driver
    nodes: dict[str, dict] = field(default_factory=dict)  # in progress -> its node (node_id, ip, type), where known
    extra: list[str] = field(default_factory=list)  # architecture files that are no unit of the plan
    # planned units whose valid files were computed under another science config (never counted, never deleted)
    other_config: dict[str, str] = field(default_factory=dict)
    # the science config recorded by the files of another config or of no plan (name -> dict, None: no record)
    recorded: dict[str, dict | None] = field(default_factory=dict)
    checkpoints: list[str] = field(default_factory=list)  # units with trainer state saved
    packed: dict[str, str] = field(default_factory=dict)  # finished units read from a pack -> the pack's stem
    packs: list[str] = field(default_factory=list)  # the good packs (study.experiment.packs)
    bad_packs: dict[str, str] = field(default_factory=dict)  # committed packs that are not whole -> why
    driver: dict | None = None  # driver.json
    driver_running: bool = False
    # planned units not finished that nothing of the study names (no file, failure record, checkpoint, nor in
    # flight): counted in remaining, not named (``survey_files``, which does not sample them; 0 for ``survey``)
    unnamed: int = 0
    planned: int | None = None  # the count of planned units where ``units`` does not list them (``survey_files``)
    # who computed the finished units (``study.experiment.provenance``): each distinct record -> its units
    provenance: list[tuple[dict, int]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.units) if self.planned is None else self.planned

    @property
    def remaining_count(self) -> int:
        """The units remaining: those named in ``remaining`` and the ``unnamed``."""
        return len(self.remaining) + self.unnamed

    @property
    def done(self) -> bool:
        return len(self.finished) == self.total

    def to_dict(self) -> dict:
        return {
            "total": self.total,
            "finished": len(self.finished),
            "pruned": len(self.pruned),
            "in_progress": len(self.in_progress),
            "failed": len(self.failed),
            "remaining": self.remaining_count,
            "corrupt": dict(self.corrupt),
            "foreign": dict(self.foreign),
            "extra": list(self.extra),
            "other_config": dict(self.other_config),
            "checkpoints": len(self.checkpoints),
            "driver_running": self.driver_running,
            "in_progress_names": list(self.in_progress),
            "in_progress_nodes": dict(self.nodes),
            "failures": {n: r.get("reason", "") for n, r in self.failed.items()},
            "packed": len(self.packed),
            "packs": len(self.packs),
            "bad_packs": dict(self.bad_packs),
            "provenance": [{"record": r, "architectures": n} for r, n in self.provenance],
        }


SPOT_CHECKS = 8  # names trusted by their files' science config that ``survey_files`` checks against the plan


class _Expected:
    """The planned units a survey compares the files with: every unit's name (``survey``), or the planned
    indices, with the names of those the study's files name found by ``resolve`` (``survey_files``)."""

    def __init__(self, config: StudyConfig, units: list[WorkUnit] | None) -> None:
        self.config, self.units = config, units
        self.names = [u.name for u in units] if units is not None else []
        self.scope = set(self.names)
        # without units: the planned indices in plan order, and each one's position there (its draw)
        self.indices: Sequence[int] = (
            config.indices[: config.architectures] if config.indices else range(config.architectures)
        )
        self.positions = {i: p for p, i in enumerate(self.indices)} if config.indices and units is None else None
        self.sampled: dict[int, str] = {}  # index -> the name of its planned unit, as sampled

    @property
    def total(self) -> int:
        return len(self.indices) if self.units is None else len(self.names)

    def position(self, index: int) -> int | None:
        """Where the plan draws ``index`` (None: it does not)."""
        if self.positions is not None:
            return self.positions.get(index)
        return index if 0 <= index < len(self.indices) else None

    def _drawn(self, index: int) -> int:
        """The position of a planned index (0 for one the plan does not draw)."""
        return self.position(index) or 0

    def index(self, name: str) -> int | None:
        """The planned index a unit name holds (None: no unit name, or an index the plan does not hold). Only the
        index is parsed: the id is compared whole wherever it decides anything."""
        head = name[:INDEX_DIGITS]
        if len(name) <= INDEX_DIGITS or name[INDEX_DIGITS] != "-" or not (head.isascii() and head.isdigit()):
            return None
        i = int(head)
        return i if self.position(i) is not None else None

    def in_scope(self, name: str) -> bool:
        """Whether ``name`` may be a planned unit (its files are then checked)."""
        return name in self.scope if self.units is not None else self.index(name) is not None

    def name_at(self, index: int) -> str:
        """The name of the unit the plan holds at ``index`` (sampled once: no sibling axes, one unit per index)."""
        if index not in self.sampled:
            c = self.config
            assert c.d_in is not None and c.d_out is not None  # survey_files samples only where they are set
            planned = next(
                plan_study(
                    c.seed,
                    c.architectures,
                    c.d_in,
                    c.d_out,
                    c.space_obj,
                    c.param_budget,
                    start=self._drawn(index),
                    indices=c.indices,
                )
            )
            self.sampled[index] = WorkUnit(*planned).name
        return self.sampled[index]

    def resolve(self, candidates: Iterable[str], trusted: set[str]) -> list[str] | None:
        """The planned units among ``candidates`` (the names the study's files give), in plan order; a name in
        ``trusted`` (a result of this study's science config) that is alone at its index is taken as it is, after
        ``SPOT_CHECKS`` of them are checked (None: one was not the plan's, so the whole plan must be sampled)."""
        if self.units is not None:
            return self.names
        by_index: dict[int, list[str]] = {}
        for name in candidates:  # self.index, inlined: a large study has a name per planned unit
            head = name[:INDEX_DIGITS]
            if name[INDEX_DIGITS : INDEX_DIGITS + 1] == "-" and head.isascii() and head.isdigit():
                by_index.setdefault(int(head), []).append(name)
        planned: list[str] = []
        taken: list[int] = []  # the indices of trusted names, alone there
        indices = (  # the planned indices that files name, in plan order
            self.indices
            if len(by_index) > len(self.indices) / 64
            else sorted((i for i in by_index if self.position(i) is not None), key=self._drawn)
        )
        for i in indices:
            names = by_index.get(i)
            if names is None:
                continue
            if len(names) == 1 and names[0] in trusted:
                taken.append(i)
                planned.append(names[0])
            else:
                planned.extend(n for n in names if n == self.name_at(i))
        spots = {taken[round(k * (len(taken) - 1) / (SPOT_CHECKS - 1))] for k in range(SPOT_CHECKS)} if taken else ()
        if any(self.name_at(i) != by_index[i][0] for i in sorted(spots)):
            return None
        return planned

    def more(self, names: Iterable[str]) -> list[str]:
        """The planned units among ``names`` (sampled at their indices)."""
        return [n for n in names if (i := self.index(n)) is not None and self.name_at(i) == n]

    def order(self, names: list[str]) -> list[str]:
        """Planned names in plan order (one unit per index where the plan is not listed)."""
        if self.units is not None:
            at = {n: k for k, n in enumerate(self.names)}
            return sorted(names, key=at.__getitem__)
        return sorted(names, key=lambda n: self._drawn(int(n[:INDEX_DIGITS])))


def survey(
    store: Store, config: StudyConfig | None = None, units: list[WorkUnit] | None = None, *, driver: bool = True
) -> StudyState:
    """Compare the study's files with its plan (read-only). ``driver=False`` skips asking whether a driver is
    running (the driver itself surveys while holding the lock)."""
    config = config or store.read_config()
    units = units if units is not None else work_units(config)
    state = _survey(store, config, _Expected(config, units), driver)
    assert state is not None  # a listed plan is never rejected
    return state


def survey_files(
    store: Store, config: StudyConfig | None = None, *, driver: bool = True, say: Callable[[str], None] | None = None
) -> StudyState:
    """``survey`` without sampling the plan's units that no file names (module docstring); ``state.units`` is
    then empty, ``state.unnamed`` counts the remaining units not named. With sibling axes, or when a spot check
    finds a name that is not the plan's, the whole plan is sampled (``work_units_saying``, saying how far with
    ``say``) and this is ``survey``."""
    config = config or store.read_config()
    if not config.siblings and config.d_in is not None and config.d_out is not None:
        state = _survey(store, config, _Expected(config, None), driver)
        if state is not None:
            return state
    return survey(store, config, work_units_saying(config, say or (lambda line: None)), driver=driver)


def _provenance(state: StudyState, packs: dict, checks: dict[str, FileCheck]) -> list[tuple[dict, int]]:
    """Who computed the finished units: the records of the packs they are read from and of their own files."""
    stems = sorted({state.packed[n] for n in state.finished if n in state.packed})
    own = [checks[n].provenance for n in state.finished if n in checks]
    return merge([*(entries(packs[stem].metadata) for stem in stems), *own])


def _survey(store: Store, config: StudyConfig, plan: _Expected, driver: bool) -> StudyState | None:
    """``survey`` against ``plan``: None where ``plan.resolve`` finds a name the plan does not hold there."""
    state = StudyState(config=config, units=plan.units or [], planned=None if plan.units is not None else plan.total)
    loose = set(store.names(ARCHITECTURES, ".parquet"))  # listed before the packs (study.experiment.packs)
    packs = store.packs()
    winners = sources(packs)  # unit -> the good pack it is read from; its own files there are leftovers
    arch_names = loose | set(winners)
    present = sorted(n for n in loose if n not in winners and plan.in_scope(n))
    fingerprint = config.science_fingerprint
    by_stem = {p.stem: p for p in packs}
    pack_checks = {p.stem: store.check_pack(p, fingerprint) for p in packs if p.ok}
    state.packs = [p.stem for p in packs if p.ok]
    state.bad_packs = {p.stem: p.problem for p in packs if not p.ok}
    in_bad = {n: p for p in packs if not p.ok for n in p.names}  # the units a bad pack records
    trained = {
        n: t is not False
        for p in packs
        if p.ok and p.architectures is not None
        for n, t in zip(p.names, p.architectures.column("trained").to_pylist())
    }
    runs = planned_runs(
        config.protocol, config.lr_window
    )  # every trained unit has as many (study.experiment.value_checks)
    arch_checks = store.check_files(ARCHITECTURES, present, fingerprint=fingerprint, runs=runs)
    failures = store.failures()
    checkpoints = store.names(CHECKPOINTS, ".pt")
    trusted = {n for n, stem in winners.items() if pack_checks[stem].ok} | {n for n in present if arch_checks[n].ok}
    resolved = plan.resolve(arch_names | set(in_bad) | set(failures) | set(checkpoints), trusted)
    if resolved is None:
        return None
    planned = resolved
    planned_set = set(planned)
    committed = [n for n in planned if n in arch_checks and n not in winners and arch_checks[n].ok]
    # The other files of the committed units: absent where a unit does not require them, else checked.
    others = {}
    kind: str | None  # here a table kind; below the kind of a unit's bad file, if any
    for kind in (RUNS, CURVES):
        listed = set(store.names(kind, ".parquet"))
        others[kind] = store.check_files(
            kind, [n for n in committed if n in listed], fingerprint=fingerprint, runs=runs
        )
    for name in planned:
        stem = winners.get(name)
        if stem is not None:
            pc = pack_checks[stem]
            if pc.ok:
                state.finished.append(name)
                state.packed[name] = stem
                if not trained[name]:
                    state.pruned.append(name)
                continue
            state.other_config[name] = f"pack {stem}: {pc.problem}"
            state.recorded[name] = pc.science
            state.remaining.append(name)
            continue
        if name not in loose and name in in_bad:  # recorded only by a pack that is not whole
            bad_pack = in_bad[name]
            if bad_pack.foreign:
                state.foreign[name] = f"pack {bad_pack.stem}: {bad_pack.problem}"
                continue
            state.corrupt[name] = f"pack {bad_pack.stem}: {bad_pack.problem}"
        if name in loose:
            a = arch_checks[name]
            bad: FileCheck | None  # the first bad file of the unit, and its kind
            bad, kind = (a, ARCHITECTURES) if not a.ok else (None, None)
            for k in (RUNS, CURVES) if a.ok else ():
                c = others[k].get(name)
                if (c is None and k in a.requires) or (c is not None and not c.ok):
                    bad, kind = c, k
                    break
            if bad is None and kind is None:
                state.finished.append(name)
                if not a.trained:
                    state.pruned.append(name)
                continue
            problem = bad.problem if bad is not None else "missing"
            if bad is not None and bad.foreign:
                state.foreign[name] = f"{kind} file: {problem}"
                continue
            if bad is not None and bad.other_config:
                state.other_config[name] = f"{kind} file: {problem}"
                state.recorded[name] = bad.science
                state.remaining.append(name)  # to do, once the study holds only its own config's files
                continue
            state.corrupt[name] = f"{kind} file: {problem}"
        if name in failures:
            state.failed[name] = failures[name]
        else:
            state.remaining.append(name)
    state.provenance = _provenance(state, by_stem, arch_checks)
    state.extra = sorted(arch_names - planned_set)
    for name in state.extra[:1]:  # what the first of them was computed under (for the one-line messages)
        in_pack = by_stem[winners[name]] if name in winners else None
        state.recorded[name] = (
            recorded_science(in_pack.metadata)[1] if in_pack is not None else store.science_of(ARCHITECTURES, name)[1]
        )
    state.unnamed = plan.total - len(planned)  # planned units that nothing names: remaining
    state.checkpoints = [n for n in checkpoints if n in planned_set]
    state.driver = store.read_driver_state()
    if not driver:
        return state
    running = store.driver_running()
    if running is None:  # object storage: judge by the heartbeat
        d = state.driver or {}
        running = bool(d.get("running")) and time.time() - float(d.get("heartbeat_unix", 0)) < STALE_S
    state.driver_running = bool(running)
    if state.driver_running and state.driver:
        if plan.units is None:  # units in flight that nothing else names: remaining, now named
            flying = plan.more(n for n in state.driver.get("in_flight", []) if n not in planned_set)
            state.remaining = plan.order(state.remaining + flying)
            state.unnamed -= len(flying)
        unfinished = set(state.remaining) | set(state.failed) | set(state.corrupt)
        state.in_progress = [n for n in state.driver.get("in_flight", []) if n in unfinished]
        state.nodes = {n: d for n, d in (state.driver.get("nodes") or {}).items() if n in state.in_progress}
        busy = set(state.in_progress)  # counted once: in progress, not also remaining or failed
        state.remaining = [n for n in state.remaining if n not in busy]
        state.failed = {n: r for n, r in state.failed.items() if n not in busy}
    return state
