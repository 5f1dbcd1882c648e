"""The study plan: which architectures a study contains, in which order, and the seed each is built with.

Architecture ``index`` of a study is ``sample_spec(study_seed, index, ...)``; with sibling axes, each draw
is followed by its siblings along each axis in turn (``siblings``, width re-solved to the budget), leaving
out a sibling whose content is already planned for that index. Each planned architecture is a ``Planned``
(index, variant, spec, init seed); ``variant`` is ``"base"`` for the draw, else the sibling's axis.

A study may also hold chosen draws of its seed instead of the first ones (``indices``: the top K of ``archstudy
rank``): the draws listed, in their order, each exactly as the study of all draws would hold it (spec, init
seed, siblings), so a study of chosen draws is a subset of that study, row for row. ``fresh_seed`` and
``fresh_indices`` give draws of the same space that a study does not hold (``archstudy rank``).

``plan_study`` is the one place this is computed: the runner (``study.execution.unit.work_units``), ``archstudy
status``, the analysis' planned count (``analysis.results.planned_count``) and the tests all use it. It is
pure (everything is seeded by (study seed, index)), so every machine, every resume and every reader
agrees on the same units, and lazy: it yields one architecture at a time, so a caller can stop early or
stream. Never imports torch.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from .constraints import SEED, Choice, Integer, SpecError, check
from .space import SIBLING_AXES, Space, get_space, sample_spec, siblings
from .spec import ArchSpec
from .unit_names import MAX_ARCHITECTURES

BASE = "base"  # the variant of a study's random draw (a sibling's variant is its axis)


class Planned(NamedTuple):
    """One architecture of a study: its index, variant (``BASE`` or a sibling axis), spec and init seed."""

    # The field shadows tuple.index, as a NamedTuple field may; mypy flags any such name.
    index: int  # type: ignore[assignment]
    variant: str
    spec: ArchSpec
    seed: int


def init_seed(study_seed: int, index: int) -> int:
    """The initialization (and data-order) seed of architecture ``index`` of a study, shared by its siblings.

    Drawn from ``SeedSequence([study_seed, index])`` on a child branch (``spawn_key=(1,)``), so it is
    independent of the draws that chose the architecture, the same on every machine, in any order."""
    ss = np.random.SeedSequence([study_seed, index], spawn_key=(1,))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def plan_study(
    study_seed: int,
    architectures: int,
    d_in: int,
    d_out: int,
    space: str | Space | Mapping[str, Any],
    param_budget: int,
    sibling_axes: Sequence[str] = (),
    start: int = 0,
    indices: Sequence[int] | None = None,
) -> Iterator[Planned]:
    """The architectures of a study in order: index ``start`` (the draw, then its siblings along each of
    ``sibling_axes``), ``start + 1``, ... up to ``architectures - 1``. With ``indices`` (distinct draw indices,
    at least ``architectures`` of them): the draws ``indices[start]``, ... ``indices[architectures - 1]`` instead
    (``start`` and ``architectures`` then count positions in the list). A generator: nothing is drawn until
    asked (the arguments are checked at once)."""
    where = "plan_study"
    study_seed = check(where, "study_seed", Integer(0), study_seed)
    architectures = check(where, "architectures", Integer(0), architectures)
    start = check(where, "start", Integer(0), start)
    d_in, d_out = check(where, "d_in", Integer(1), d_in), check(where, "d_out", Integer(1), d_out)
    param_budget = check(where, "param_budget", Integer(1), param_budget)
    axes = tuple(check(where, "sibling_axes", Choice(SIBLING_AXES), a) for a in sibling_axes)
    space = get_space(space)
    if indices is None:
        return _plan(study_seed, range(start, architectures), d_in, d_out, space, param_budget, axes)
    indices = check_indices(where, indices)
    if architectures > len(indices):
        raise SpecError(where, "architectures", architectures, f"must be at most the {len(indices)} indices listed")
    return _plan(study_seed, indices[start:architectures], d_in, d_out, space, param_budget, axes)


def check_indices(where: str, indices: Any) -> tuple[int, ...]:
    """A list of draw indices as a study holds it: distinct integers in [0, ``MAX_ARCHITECTURES``) (what the unit
    names hold), at least one; else a one-line ``SpecError`` naming the first bad entry."""
    if isinstance(indices, (str, bytes, Mapping)) or not isinstance(indices, Sequence) or not len(indices):
        raise SpecError(where, "indices", indices, INDICES)
    out = tuple(check(where, "indices", Integer(0, MAX_ARCHITECTURES - 1), i) for i in indices)
    if len(set(out)) != len(out):
        twice = next(i for i in out if out.count(i) > 1)
        raise SpecError(where, "indices", twice, "is listed twice: " + INDICES)
    return out


MAX_INIT_SEEDS = 16  # initializations per architecture (``init_seeds``): each multiplies the stack's runs


def replicate_seeds(seed: int, k: int) -> tuple[int, ...]:
    """The ``k`` initializations an architecture is trained from under ``init_seeds: k``: its own ``seed`` first (so
    initialization 0 is the architecture of a study with one, the paper's protocol), then k - 1 from
    ``SeedSequence([seed])`` on a child branch of their own (``spawn_key=(3,)``: ``init_seed`` uses 1,
    ``fresh_seed`` 2), 32 bits each, all distinct. The same on every machine and in any order; its siblings, which
    share ``seed``, share them too."""
    seed = check("replicate_seeds", "seed", SEED, seed)
    k = check("replicate_seeds", "k", Integer(1, MAX_INIT_SEEDS), k)
    out = [seed]
    draws = np.random.SeedSequence([seed], spawn_key=(3,)).generate_state(2 * MAX_INIT_SEEDS, dtype=np.uint32)
    for d in draws:
        if len(out) == k:
            break
        if int(d) not in out:
            out.append(int(d))
    return tuple(out)


INDICES = f"must be a non-empty list of distinct draw indices in [0, {MAX_ARCHITECTURES - 1}]"


def fresh_seed(study_seed: int) -> int:
    """A study seed for new draws of a study's space (``archstudy rank``): from ``SeedSequence([study_seed])`` on
    a child branch of its own (``spawn_key=(2,)``; ``init_seed`` uses 1), 63 bits, never ``study_seed`` itself,
    so no (seed, index) pair of the new draws is one of the study's. The same on every machine: ranking from
    a study twice draws the same architectures (and a larger count extends them)."""
    study_seed = check("fresh_seed", "study_seed", SEED, study_seed)
    ss = np.random.SeedSequence([study_seed], spawn_key=(2,))
    seed = int(ss.generate_state(1, dtype=np.uint64)[0]) >> 1  # a SEED: at most 2**63 - 1
    return seed if seed != study_seed else seed ^ 1


def fresh_indices(
    study_seed: int,
    n: int,
    d_in: int,
    d_out: int,
    space: str | Space | Mapping[str, Any],
    param_budget: int,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> list[int]:
    """The first ``n`` draw indices of ``study_seed`` whose spec's content id is not in ``exclude`` (the
    architectures of another study: a draw of a fresh seed can still repeat one of its specs, the discrete
    axes having finitely many combinations)."""
    n = check("fresh_indices", "n", Integer(1, MAX_ARCHITECTURES), n)
    out: list[int] = []
    for planned in _plan(
        check("fresh_indices", "study_seed", SEED, study_seed),
        range(MAX_ARCHITECTURES),
        d_in,
        d_out,
        get_space(space),
        param_budget,
        (),
    ):
        if planned.spec.content_id not in exclude:
            out.append(planned.index)
            if len(out) == n:
                return out
    raise SpecError(
        "fresh_indices",
        "n",
        n,
        f"must leave room for the excluded architectures among the {MAX_ARCHITECTURES} draws of a seed",
    )


def _plan(
    study_seed: int,
    indices: Iterable[int],
    d_in: int,
    d_out: int,
    space: Space,
    param_budget: int,
    axes: tuple[str, ...],
) -> Iterator[Planned]:
    for i in indices:
        base = sample_spec(study_seed, i, d_in, d_out, space, param_budget)
        seed = init_seed(study_seed, i)
        yield Planned(i, BASE, base, seed)
        seen = {base.content_id}
        for axis in axes:
            for sib in siblings(base, axis, param_budget):
                if sib.content_id not in seen:
                    seen.add(sib.content_id)
                    yield Planned(i, axis, sib, seed)
