"""Reproducible float64 training on CUDA: what a worker process sets before it touches the GPU.

A unit must give the same numbers on every run (and a resumed one the numbers of an uninterrupted one).
On a CPU the trainer's kernels are deterministic as they are. On a GPU two things can differ between runs:

* cuBLAS may pick reduction schemes that depend on the workspace it has; NVIDIA's cuBLAS documentation
  ("Results reproducibility") makes its routines bitwise reproducible when ``CUBLAS_WORKSPACE_CONFIG`` is
  ``:4096:8`` (or ``:16:8``). The variable is read when the process creates its cuBLAS handle, so it must
  be set before the first CUDA matrix product of the process: at the worker's entry point, not inside
  a library function that may run after one;
* a few kernels accumulate with atomics in an order that varies (scatter-add, index-add, ...):
  ``torch.use_deterministic_algorithms(True)`` swaps in deterministic versions where PyTorch has them.
  ``warn_only=True``: where it has none (``nll_loss`` on CUDA, which the gradient metrics use), it warns
  instead of failing the unit; the training step itself (batched products, batchnorm, the per-run losses
  by ``gather``, in-place updates) and the per-epoch bookkeeping (``index_copy_``, ``index_select``)
  have deterministic kernels.

Process-wide; set by ``study.execution.unit.execute_unit`` for a unit on a GPU, and by the tests that use CUDA.
"""

from __future__ import annotations

import os

CUBLAS_WORKSPACE = ":4096:8"


def deterministic_cuda() -> None:
    """Set what the module docstring says (an existing ``CUBLAS_WORKSPACE_CONFIG`` is kept)."""
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True, warn_only=True)
