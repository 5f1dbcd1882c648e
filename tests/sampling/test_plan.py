"""The study plan (sampling.plan_study): which architectures a study holds, in the runner's order, with their
init seeds; lazy, pure, independent of the count and of where it starts; duplicates left out; bad arguments
are one-line errors."""

import itertools

import numpy as np
import pytest

from archstudy.sampling import plan as sampling_plan
from archstudy.sampling import BASE, SIBLING_AXES, SpecError, init_seed, plan_study, sample_spec, siblings

D_IN, D_OUT, BUDGET = 40, 3, 5000


def test_the_plan_is_each_draw_then_its_siblings_along_each_axis_in_turn():
    planned = list(plan_study(4, 6, D_IN, D_OUT, "extended", BUDGET, SIBLING_AXES))
    expected = []  # built independently from the sampler's public functions
    for i in range(6):
        base = sample_spec(4, i, D_IN, D_OUT, "extended", BUDGET)
        seed = init_seed(4, i)
        expected.append((i, "base", base, seed))
        for axis in SIBLING_AXES:
            expected += [(i, axis, s, seed) for s in siblings(base, axis, BUDGET)]
    assert [tuple(p) for p in planned] == expected
    kept = [p for p in planned if p.variant != "width"]
    assert all(p.spec.num_params == pytest.approx(BUDGET, rel=0.2) for p in kept)  # siblings re-solved
    bases = {p.index: p.spec for p in planned if p.variant == "base"}
    wide = [p for p in planned if p.variant == "width"]
    assert len(wide) == 6 and all(p.spec == bases[p.index].replace(width=2 * bases[p.index].width) for p in wide)
    assert len({(p.index, p.spec.content_id) for p in planned}) == len(planned)  # every unit's name is unique


def test_without_siblings_the_plan_is_the_draws():
    planned = list(plan_study(0, 5, D_IN, D_OUT, "paper", BUDGET))
    assert [(p.index, p.variant) for p in planned] == [(i, BASE) for i in range(5)]
    assert [p.spec for p in planned] == [sample_spec(0, i, D_IN, D_OUT, "paper", BUDGET) for i in range(5)]


def test_architecture_i_does_not_depend_on_the_count_and_the_plan_is_lazy():
    small = list(plan_study(9, 3, D_IN, D_OUT, "extended", BUDGET, ("norm",)))
    larger = list(plan_study(9, 7, D_IN, D_OUT, "extended", BUDGET, ("norm",)))
    assert larger[: len(small)] == small
    # A generator: the first units of a 10^12-architecture study come at once, and are the same ones.
    huge = plan_study(9, 10**12, D_IN, D_OUT, "extended", BUDGET, ("norm",))
    assert list(itertools.islice(huge, len(small))) == small
    # and it may start at any index: the units of indices 3 .. 6 are those of the whole plan
    assert list(plan_study(9, 7, D_IN, D_OUT, "extended", BUDGET, ("norm",), start=3)) == [
        p for p in larger if p.index >= 3
    ]


def test_init_seed_is_seedsequence_of_the_study_seed_and_index_on_a_child_branch():
    for study_seed, index in ((0, 0), (11, 3), (5, 123456)):
        expected = np.random.SeedSequence([study_seed, index], spawn_key=(1,)).generate_state(1, np.uint32)[0]
        assert init_seed(study_seed, index) == int(expected)
    # the values every study written so far holds (a change here changes every stored result)
    assert (init_seed(0, 0), init_seed(11, 3), init_seed(5, 123456)) == (673228719, 2670496738, 1030361883)


def test_a_sibling_whose_content_is_already_planned_is_left_out(monkeypatch):
    """Two variants with the same content would be one unit (one file name): the plan keeps the first."""
    monkeypatch.setattr(
        sampling_plan,
        "siblings",
        lambda spec, axis, budget: (
            [spec, spec.replace(norm="layer")] if axis == "norm" else [spec.replace(norm="layer")]
        ),
    )
    planned = list(plan_study(2, 1, D_IN, D_OUT, "paper", BUDGET, ("norm", "skip")))
    base = sample_spec(2, 0, D_IN, D_OUT, "paper", BUDGET)
    layer = base.replace(norm="layer")
    assert base.norm != "layer"
    assert [(p.variant, p.spec) for p in planned] == [("base", base), ("norm", layer)]


@pytest.mark.parametrize(
    "args, message",
    [
        ((-1, 3, D_IN, D_OUT, "paper", BUDGET), "plan_study.study_seed = -1: must be an integer >= 0"),
        ((0, 2.5, D_IN, D_OUT, "paper", BUDGET), "plan_study.architectures = 2.5"),
        ((0, 3, 0, D_OUT, "paper", BUDGET), "plan_study.d_in = 0"),
        ((0, 3, D_IN, D_OUT, "paper", 0), "plan_study.param_budget = 0"),
        ((0, 3, D_IN, D_OUT, "paper", BUDGET, ("colour",)), "plan_study.sibling_axes = 'colour'"),
        ((0, 3, D_IN, D_OUT, "paper", BUDGET, (), -2), "plan_study.start = -2"),
        ((0, 3, D_IN, D_OUT, "nowhere", BUDGET), "sample.preset = 'nowhere'"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_anything_is_drawn(args, message):
    with pytest.raises(SpecError) as e:
        plan_study(*args)  # not iterated: the arguments are checked when the plan is made
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_plan_of_chosen_draws_holds_each_as_the_plan_of_all_draws_does():
    everything = list(plan_study(4, 12, D_IN, D_OUT, "extended", BUDGET, SIBLING_AXES))
    chosen = (9, 2, 5)
    planned = list(plan_study(4, 3, D_IN, D_OUT, "extended", BUDGET, SIBLING_AXES, indices=chosen))
    assert planned == [p for i in chosen for p in everything if p.index == i]  # in the list's order, siblings too
    assert list(plan_study(4, 2, D_IN, D_OUT, "extended", BUDGET, indices=chosen)) == [
        p for i in chosen[:2] for p in everything if p.index == i and p.variant == BASE
    ]
    assert list(plan_study(4, 3, D_IN, D_OUT, "extended", BUDGET, indices=chosen, start=2)) == [
        p for p in everything if p.index == 5 and p.variant == BASE
    ]


@pytest.mark.parametrize(
    "indices, architectures, message",
    [
        ([], 0, "plan_study.indices = []: must be a non-empty list of distinct draw indices in [0, 999999]"),
        ([3, 1, 3], 2, "plan_study.indices = 3: is listed twice"),
        ([1, -4], 2, "plan_study.indices = -4: must be an integer in [0, 999999]"),
        ([1, 10**6], 2, "plan_study.indices = 1000000: must be an integer in [0, 999999]"),
        ("12", 1, "plan_study.indices = '12': must be a non-empty list"),
        ([1, 2], 3, "plan_study.architectures = 3: must be at most the 2 indices listed"),
    ],
)
def test_bad_chosen_draws_are_one_line_errors(indices, architectures, message):
    with pytest.raises(SpecError) as e:
        plan_study(0, architectures, D_IN, D_OUT, "paper", BUDGET, indices=indices)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_fresh_draws_come_from_a_seed_of_their_own_and_skip_the_specs_given():
    seeds = {s: sampling_plan.fresh_seed(s) for s in (0, 1, 5, 2**63 - 1)}
    for s, fresh in seeds.items():
        expected = int(np.random.SeedSequence([s], spawn_key=(2,)).generate_state(1, np.uint64)[0]) >> 1
        assert fresh == (expected if expected != s else expected ^ 1) and fresh != s and 0 <= fresh < 2**63
    assert len(set(seeds.values())) == len(seeds) and sampling_plan.fresh_seed(5) == seeds[5]
    first = sampling_plan.fresh_indices(11, 6, D_IN, D_OUT, "paper", BUDGET)
    assert first == list(range(6))
    skip = {sample_spec(11, i, D_IN, D_OUT, "paper", BUDGET).content_id for i in (1, 4)}
    assert sampling_plan.fresh_indices(11, 6, D_IN, D_OUT, "paper", BUDGET, skip) == [0, 2, 3, 5, 6, 7]
