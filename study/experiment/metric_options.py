"""``MetricOptions``: how much work ``study.measure`` does (and the constants its defaults are), torch-free.

A study's config holds these options (``StudyConfig.metrics``), so they live apart from the metrics
themselves (which need torch): building or reading a config never imports torch. ``study.MetricOptions``
and ``study.metrics.MetricOptions`` are this class.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Boolean, Integer, Real, check

from .protocol import Increasing

PROXY_BATCH = 128  # Mellor et al. (2021), both versions: the minibatch of the zero-cost proxies
# E.1 / E.3 (``study.metrics.regions``): the ladder of steps k starts at 1e-9 ("starting with k = 10^-9 and
# then checking the condition for increasing k until it fails") and stops at a thousand diameters of the
# data; E.3 allows the error over the path to be 5% (absolute) higher than at the start.
K_MIN = 1e-9
K_MAX = 1e3
PERTURBATION_TOLERANCE = 0.05


def _opt(constraint, default, doc):
    return field(default=default, metadata={"constraint": constraint, "doc": doc})


@dataclass(frozen=True)
class MetricOptions:
    """How much work ``measure`` does; the defaults are the paper's where it has them."""

    nlc_batches: int = _opt(Integer(1), 100, "minibatches with one Gaussian backward each for Q_x|J| (section G)")
    batch_size: int = _opt(Integer(2), 250, "minibatch size of every batch-mode pass (the paper's 250)")
    gradient_batches: int = _opt(Integer(1), 10, "training minibatches for GVCS and gradient length")
    proxy_batch_size: int = _opt(Integer(2), PROXY_BATCH, "minibatch of grad_norm, snip, jacob_cov, NWOT")
    variability_grid: int = _opt(Integer(4), 65, "grid points per side of each variability plane")
    variability_planes: int = _opt(Integer(1), 4, "random planes through the data (inputs of > 2 dims)")
    lar: bool = _opt(Boolean(), False, "compute the E.1 relative diameter of linearly approximable regions")
    perturbation: bool = _opt(Boolean(), False, "compute the E.3 maximal error-preserving perturbation "
                                                    "(after training: measure_trained)")
    region_batches: int = _opt(Integer(1), 10, "minibatches of E.1 / E.3 (the paper's 10)")
    region_directions: int = _opt(Integer(1), 10, "Gaussian direction matrices U (and V) per minibatch (10)")
    region_k_max: float = _opt(Real(K_MIN), K_MAX, "largest step k of E.1 / E.3, in diameters of the data")
    perturbation_tolerance: float = _opt(Real(0.0, 1.0, lo_open=True), PERTURBATION_TOLERANCE,
                                         "E.3: allowed increase of the error over the path (absolute)")
    nlc_trajectory: tuple = _opt(Increasing(Integer(0), "epochs", empty=True), (),
                                 "epochs (0: the initialization) at which every run's NLC is measured during "
                                 "training, into the curves table; empty: off (the cost: one NLC measurement of "
                                 "the live stack per epoch listed)")

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, check("MetricOptions", f.name, f.metadata["constraint"],
                                                   getattr(self, f.name)))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "MetricOptions":
        d = dict(d or {})
        names = {f.name for f in fields(cls)}
        for key in d:
            if key not in names:
                raise SpecError("MetricOptions", key, d[key], "is not an option; options: " + ", ".join(sorted(names)))
        return cls(**d)
