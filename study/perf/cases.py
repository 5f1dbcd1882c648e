"""The cases ``archstudy bench`` times (``study.perf.bench``) and the projection interpolates between
(``study.perf.projection``): nets of the sampler's shapes at the sizes of its datasets. Torch-free, so that the
command line lists them without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from archstudy.sampling import ArchSpec, solve_width


@dataclass(frozen=True)
class BenchCase:
    name: str
    spec: ArchSpec
    samples: int  # training examples per epoch
    steps: int  # timed steps per measurement
    eval_samples: int  # validation examples (evaluated once per epoch)

    @property
    def params(self) -> int:
        return self.spec.num_params


def _solved(depth: int, d_in: int, d_out: int, budget: int, weights: str = "dense") -> ArchSpec:
    return solve_width(
        ArchSpec(depth=depth, width=8, d_in=d_in, d_out=d_out, activation="relu", norm="batch", weights=weights), budget
    )


def _cifar(depth: int, weights: str = "dense") -> ArchSpec:
    # CIFAR10 sized: a PCA input of 334 dimensions, 10 classes; the paper's budget of 1,000,000 parameters
    return _solved(depth, 334, 10, 1_000_000, weights)


CASES = {
    # waveform-noise sized (40 inputs, 3 classes, 3,000 training examples, 1,000 validation), 20k parameters
    # at three of the depths the sampler draws (3 .. 49): the speedup depends on the shape far more than on
    # the size
    "small": BenchCase("small", _solved(9, 40, 3, 20_000), 3_000, 12, 1_000),
    "small-d3": BenchCase("small-d3", _solved(3, 40, 3, 20_000), 3_000, 12, 1_000),
    "small-d25": BenchCase("small-d25", _solved(25, 40, 3, 20_000), 3_000, 12, 1_000),
    # CIFAR10 sized (40,000 training examples, 10,000 validation), the paper's 1M-parameter nets at depths
    # 3, 9, 25 and 49 of the 3 .. 49 that appendix C draws, and a Householder net of the extended space
    # at the middle depth, its width solved for 1M parameters as the sampler solves it (2 per reflector)
    "1M": BenchCase("1M", _cifar(9), 40_000, 2, 10_000),
    "1M-d3": BenchCase("1M-d3", _cifar(3), 40_000, 2, 10_000),
    "1M-d25": BenchCase("1M-d25", _cifar(25), 40_000, 2, 10_000),
    "1M-d49": BenchCase("1M-d49", _cifar(49), 40_000, 2, 10_000),
    "1M-householder": BenchCase("1M-householder", _cifar(25, "householder"), 40_000, 2, 10_000),
}
CPU_CASES = ("small-d3", "small", "small-d25", "1M")
GPU_CASES = CPU_CASES + ("1M-d3", "1M-d25", "1M-d49", "1M-householder")
PAPER_CASES = ("1M-d3", "1M", "1M-d25", "1M-d49")  # the depths the projection interpolates between
