"""``MetricOptions``: how much work ``study.measure`` does (and the constants its defaults are), torch-free.

A study's config holds these options (``StudyConfig.metrics``), so they live apart from the metrics
themselves (which need torch): building or reading a config never imports torch. ``study.MetricOptions``
and ``study.metrics.MetricOptions`` are this class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from archstudy.sampling.constraints import Boolean, Declared, Integer, Real, declare

from .protocol import Increasing

# Mellor, Turner, Storkey and Crowley, *Neural Architecture Search without Training* (2021), both versions: the
# minibatch of the zero-cost proxies
PROXY_BATCH = 128
# E.1 / E.3 (``study.metrics.regions``): the ladder of steps k starts at 1e-9 ("starting with k = 10^-9 and
# then checking the condition for increasing k until it fails") and stops at a thousand diameters of the
# data; E.3 allows the error over the path to be 5% (absolute) higher than at the start.
K_MIN = 1e-9
K_MAX = 1e3
# The largest k a study may ask for: a step of k diameters moves a point by k times the data's scale, and from about
# 1 / eps = 4.5e15 diameters on (eps = 2.2e-16, float64's relative precision) the point itself is lost in the sum,
# so a larger k measures nothing of the data (1e308 overflowed in every unit).
K_CEILING = 1e15
PERTURBATION_TOLERANCE = 0.05


@dataclass(frozen=True)
class MetricOptions(Declared, key="an option", keys="metric options"):
    """How much work ``measure`` does; the defaults are the paper's where it has them."""

    nlc_batches: int = declare(
        Integer(1), 100, doc="minibatches with one Gaussian backward each for Q_x|J| (section G)"
    )
    batch_size: int = declare(Integer(2), 250, doc="minibatch size of every batch-mode pass (the paper's 250)")
    gradient_batches: int = declare(Integer(1), 10, doc="training minibatches for GVCS and gradient length")
    proxy_batch_size: int = declare(Integer(2), PROXY_BATCH, doc="minibatch of grad_norm, snip, jacob_cov, NWOT")
    variability_grid: int = declare(Integer(4), 65, doc="grid points per side of each variability plane")
    variability_planes: int = declare(Integer(1), 4, doc="random planes through the data (inputs of > 2 dims)")
    lar: bool = declare(Boolean(), False, doc="compute the E.1 relative diameter of linearly approximable regions")
    perturbation: bool = declare(
        Boolean(), False, doc="compute the E.3 maximal error-preserving perturbation (after training: measure_trained)"
    )
    region_batches: int = declare(Integer(1), 10, doc="minibatches of E.1 / E.3 (the paper's 10)")
    region_directions: int = declare(Integer(1), 10, doc="Gaussian direction matrices U (and V) per minibatch (10)")
    region_k_max: float = declare(
        Real(K_MIN, K_CEILING), K_MAX, doc="largest step k of E.1 / E.3, in diameters of the data"
    )
    perturbation_tolerance: float = declare(
        Real(0.0, 1.0, lo_open=True),
        PERTURBATION_TOLERANCE,
        doc="E.3: allowed increase of the error over the path (absolute)",
    )
    nlc_trajectory: tuple[int, ...] = declare(
        Increasing(Integer(0), "epochs", empty=True),
        (),
        doc="epochs (0: the initialization) at which every run's NLC is measured during "
        "training, into the curves table; empty: off (the cost: one NLC measurement "
        "of the live stack per epoch listed)",
    )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "MetricOptions":
        """The options of a mapping (None: the defaults)."""
        return super().from_dict({} if d is None else d)
