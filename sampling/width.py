"""The width solver: the hidden width whose exact trainable-parameter count is closest to a budget.

Appendix C of the NLC paper: "Width was chosen automatically as a function of depth so that the number
of trainable parameters in the network is approximately 1 million." The count is exact for every layer
kind (``ArchSpec.num_params``): a Householder layer has 2 * width parameters, so Householder nets
grow much wider for the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .constraints import Integer, SpecError, check
from .spec import ArchSpec


def solve_width(spec: ArchSpec, param_budget: int, min_width: int = 2) -> ArchSpec:
    """``spec`` with the width in ``[min_width, ...)`` whose ``num_params`` is closest to the budget.

    For every layer kind the count is a quadratic in the width, ``a w^2 + b w + c`` with ``a, b >= 0``
    (dense width-to-width layers give the ``w^2`` term, Householder ones ``2 w``, input and output
    layers ``(d_in + 1 + d_out) w``): three exact counts give ``a, b, c``, the quadratic formula gives
    the real root, and the counts of the integers around it (from the same exact integer coefficients)
    decide; ties go to the smaller width.
    """
    param_budget = check("solve_width", "param_budget", Integer(1), param_budget)

    def count(w: int) -> int:
        return spec.replace(width=w).num_params

    n0, n1, n2 = count(min_width), count(min_width + 1), count(min_width + 2)
    a2 = n2 - 2 * n1 + n0  # = 2a
    b1 = n1 - n0 - a2 // 2 * (2 * min_width + 1)  # = b
    c0 = n0 - a2 // 2 * min_width**2 - b1 * min_width
    if a2:
        a = a2 / 2
        root = (-b1 + math.sqrt(b1 * b1 - 4 * a * (c0 - param_budget))) / (2 * a)
    else:
        root = (param_budget - c0) / b1
    w0 = max(min_width, int(math.floor(root)))
    candidates = {max(min_width, w) for w in (w0 - 1, w0, w0 + 1, w0 + 2)}
    # The quadratic is exact in integers (a2 is even: each dense width-to-width layer adds w^2 + w), so the
    # candidates are counted without building a spec for each (building one validates every field).
    best = min(sorted(candidates), key=lambda w: abs(a2 // 2 * w * w + b1 * w + c0 - param_budget))
    return spec.replace(width=best)


# An architecture may need at most this many times the budget: beyond, the budget is below what its smallest
# width needs (the solver never goes below ``min_width``), and the study would get nets many times larger
# than it asked for.
OVER_BUDGET = 1.5


def check_budget(where: str, specs: Iterable[ArchSpec], param_budget: int, shape: str) -> None:
    """Refuse a parameter budget some of ``specs`` (solved for it) need more than ``OVER_BUDGET`` times even at
    their smallest width, in one line naming the budget and ``shape`` (the data's: "d_in 40, 3 classes"):
    ``archstudy run`` (every architecture of a new study) and ``archstudy sample`` refuse alike."""
    specs = list(specs)
    over = [s.num_params for s in specs if s.num_params > OVER_BUDGET * param_budget]
    if over:
        raise SpecError(
            where,
            "param_budget",
            param_budget,
            f"is too small for {shape}: {len(over)} of {len(specs)} architectures need more than "
            f"{OVER_BUDGET:g} times it even at the smallest width (up to {max(over):,} parameters); use "
            f"at least {max(over):,}",
        )
