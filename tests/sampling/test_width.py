"""The width solver (sampling.solve_width) against a brute-force search over the exact parameter counts."""

import pytest

from archstudy.sampling import ArchSpec, SpecError, solve_width

SPECS = {
    "dense": ArchSpec(depth=9, width=2, d_in=40, d_out=3),
    "householder": ArchSpec(depth=7, width=2, d_in=40, d_out=3, weights="householder"),
    "gmp-skips": ArchSpec(
        depth=7, width=2, d_in=64, d_out=10, param="gmp", skip="after_linear", skip_length=3, norm="batch"
    ),
    "deep-narrow-input": ArchSpec(depth=49, width=2, d_in=2, d_out=2, skip="after_norm", norm="layer"),
}


def brute_force(spec: ArchSpec, budget: int, min_width: int = 2) -> int:
    """The smallest width whose exact count is closest to the budget, by trying every width up to past it."""
    best, best_gap, w = None, None, min_width
    while True:
        n = spec.replace(width=w).num_params
        gap = abs(n - budget)
        if best_gap is None or gap < best_gap:
            best, best_gap = w, gap
        if n > budget:  # counts grow with the width: every wider net is further away
            return best
        w += 1


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("budget", [300, 3_000, 20_011, 1_000_000])
def test_the_width_is_the_one_whose_exact_count_is_closest_to_the_budget(name, budget):
    spec = SPECS[name]
    solved = solve_width(spec, budget)
    assert solved == spec.replace(width=solved.width)  # only the width changes
    assert solved.width == brute_force(spec, budget)


def test_ties_go_to_the_smaller_width_and_the_width_never_drops_below_the_minimum():
    # input 3w, one Householder layer 2w, output w + 1: 6w + 1 parameters, so 34 lies midway between w = 5, 6
    spec = ArchSpec(depth=3, width=2, d_in=2, d_out=1, weights="householder")
    assert [spec.replace(width=w).num_params for w in (5, 6)] == [31, 37]
    assert [solve_width(spec, b).width for b in (33, 34, 35)] == [5, 5, 6]
    assert solve_width(spec, 1).width == 2 and solve_width(spec, 1, min_width=4).width == 4


def test_a_bad_budget_is_a_one_line_error():
    with pytest.raises(SpecError, match=r"^solve_width\.param_budget = 0: must be an integer >= 1$"):
        solve_width(SPECS["dense"], 0)
