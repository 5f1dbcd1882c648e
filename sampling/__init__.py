"""What to study: the architecture space, its seeded sampler and the width solver.

Never imports torch: a spec is plain data. ``study`` builds and trains it; ``analysis`` reads results.
"""

from .constraints import SpecError, UserError
from .space import EXTENDED, PAPER, PRESETS, SIBLING_AXES, Space, get_space, sample_spec, sample_specs, siblings
from .spec import (
    ACTIVATIONS, BIAS_VARIANCE, NORMS, PAPER_ACTIVATIONS, SPEC_FIELDS, ArchSpec, Layer, Skip,
)
from .width import solve_width

__all__ = [
    "ACTIVATIONS", "ArchSpec", "BIAS_VARIANCE", "EXTENDED", "Layer", "NORMS", "PAPER", "PAPER_ACTIVATIONS",
    "PRESETS", "SIBLING_AXES", "SPEC_FIELDS", "Skip", "Space", "SpecError", "get_space", "sample_spec",
    "sample_specs", "siblings", "solve_width", "UserError",
]
