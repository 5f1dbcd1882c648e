"""The study plan: which architectures a study contains, in which order, and the seed each is built with.

Architecture ``index`` of a study is ``sample_spec(study_seed, index, ...)``; with sibling axes, each draw
is followed by its siblings along each axis in turn (``siblings``, width re-solved to the budget), leaving
out a sibling whose content is already planned for that index. Each planned architecture is a ``Planned``
(index, variant, spec, init seed); ``variant`` is ``"base"`` for the draw, else the sibling's axis.

``plan_study`` is the one place this is computed: the runner (``study.run.unit.plan_units``), ``archstudy
status``, the analysis' planned count (``analysis.results.planned_count``) and the tests all use it. It is
pure (everything is seeded by (study seed, index)), so every machine, every resume and every reader
agrees on the same units, and lazy: it yields one architecture at a time, so a caller can stop early or
stream. Never imports torch.
"""

from __future__ import annotations

from typing import Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from .constraints import Choice, Integer, check
from .space import SIBLING_AXES, Space, get_space, sample_spec, siblings
from .spec import ArchSpec

BASE = "base"  # the variant of a study's random draw (a sibling's variant is its axis)


class Planned(NamedTuple):
    """One architecture of a study: its index, variant (``BASE`` or a sibling axis), spec and init seed."""

    index: int
    variant: str
    spec: ArchSpec
    seed: int


def init_seed(study_seed: int, index: int) -> int:
    """The initialization (and data-order) seed of architecture ``index`` of a study, shared by its siblings.

    Drawn from ``SeedSequence([study_seed, index])`` on a child branch (``spawn_key=(1,)``), so it is
    independent of the draws that chose the architecture, the same on every machine, in any order."""
    ss = np.random.SeedSequence([study_seed, index], spawn_key=(1,))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def plan_study(study_seed: int, architectures: int, d_in: int, d_out: int, space: str | Space | Mapping,
               param_budget: int, sibling_axes: Sequence[str] = (), start: int = 0) -> Iterator[Planned]:
    """The architectures of a study in order: index ``start`` (the draw, then its siblings along each of
    ``sibling_axes``), ``start + 1``, ... up to ``architectures - 1``. A generator: nothing is drawn until
    asked (the arguments are checked at once)."""
    where = "plan_study"
    study_seed = check(where, "study_seed", Integer(0), study_seed)
    architectures = check(where, "architectures", Integer(0), architectures)
    start = check(where, "start", Integer(0), start)
    d_in, d_out = check(where, "d_in", Integer(1), d_in), check(where, "d_out", Integer(1), d_out)
    param_budget = check(where, "param_budget", Integer(1), param_budget)
    axes = tuple(check(where, "sibling_axes", Choice(SIBLING_AXES), a) for a in sibling_axes)
    space = get_space(space)
    return _plan(study_seed, range(start, architectures), d_in, d_out, space, param_budget, axes)


def _plan(study_seed, indices, d_in, d_out, space, param_budget, axes) -> Iterator[Planned]:
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
