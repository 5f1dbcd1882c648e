"""What to study: the architecture space, its seeded sampler, the study plan and the width solver.

Never imports torch: a spec is plain data. ``study`` builds and trains it; ``analysis`` reads results.
"""

if __name__ != "archstudy.sampling":  # one module object per file: the packages are imported as archstudy.sampling
    raise ImportError(f"import archstudy.sampling, not {__name__} (archstudy's packages live under archstudy)")

from .constraints import SpecError, UserError
from .plan import BASE, MAX_INIT_SEEDS, Planned, init_seed, plan_study, replicate_seeds
from .space import (
    DEFAULT_PARAM_BUDGET,
    DEFAULT_PRESET,
    EXTENDED,
    PAPER,
    PRESETS,
    BUDGET_AXES,
    SIBLING_AXES,
    Space,
    get_space,
    sample_spec,
    sample_specs,
    siblings,
)
from .spec import ACTIVATIONS, BIAS_VARIANCE, NORMS, PAPER_ACTIVATIONS, SPEC_FIELDS, ArchSpec, Layer, Skip
from .width import solve_width

__all__ = [
    "ACTIVATIONS",
    "ArchSpec",
    "BASE",
    "BIAS_VARIANCE",
    "DEFAULT_PARAM_BUDGET",
    "DEFAULT_PRESET",
    "EXTENDED",
    "Layer",
    "NORMS",
    "PAPER",
    "PAPER_ACTIVATIONS",
    "PRESETS",
    "MAX_INIT_SEEDS",
    "Planned",
    "BUDGET_AXES",
    "SIBLING_AXES",
    "SPEC_FIELDS",
    "Skip",
    "Space",
    "SpecError",
    "get_space",
    "init_seed",
    "plan_study",
    "replicate_seeds",
    "sample_spec",
    "sample_specs",
    "siblings",
    "solve_width",
    "UserError",
]
