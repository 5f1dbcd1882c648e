"""The torch device a caller names, checked once, where it is given: one function for every entry point that
takes a device (the trainer, ``archstudy bench``, ``archstudy reproduce``)."""

from __future__ import annotations

from typing import Any

import torch

from archstudy.sampling import SpecError


def available_device(device: Any, where: str) -> torch.device:
    """``device`` (a name such as "cpu" or "cuda:0", a ``torch.device``, or None: the CPU) as a ``torch.device``
    that exists here, or a one-line ``SpecError`` naming ``where`` (the function or command it was given to).
    An empty tensor is made on it: a device torch can name but not reach (CUDA without a GPU) fails now, in
    one line, rather than at the first tensor of a training."""
    if device is None:
        return torch.device("cpu")
    try:
        checked = torch.device(device)
        torch.empty(0, device=checked)
    except (RuntimeError, TypeError, AssertionError):
        raise SpecError(where, "device", device, "must be an available torch device (cpu, cuda, ...)") from None
    return checked
