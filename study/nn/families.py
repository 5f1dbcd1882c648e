"""The layer families by ``Layer.kind`` (``archstudy.sampling.spec``): each declared once (``study.nn.family``).

* ``dense``: ``s = W x + b`` (NLC paper, appendix C), with optional input mean normalization (``study.nn.layers``);
* ``gmp``: ``s = u(theta)^T (x - E[x]) + lambda``, then ``r *`` after the activation (Chen and Ge, *Neural
  Characteristic Activation Value Analysis*, eq. 15, 16; ``study.nn.gmp``);
* ``householder``: ``s = H(u) x + b`` (Yu and Zhang, *Householder-Absolute Neural Layers*, Algorithm 1;
  ``study.nn.householder``).

A new family is one ``Family`` subclass under ``@layer_family`` (its own module of this package, which ``FAMILIES``
finds by importing every module of the package; with its GPU compile threshold where the default does not fit:
``Family.cuda_compile_min_layer_steps``), and in ``archstudy.sampling.spec`` its kind (``WEIGHT_KINDS``: the sampler,
the siblings and the analysis' levels take it from there) and parameter count (``Layer.num_params``).
"""

from __future__ import annotations

from typing import TypeVar

from archstudy.sampling.registry import Registry

from .family import Family

FAMILIES: Registry[type[Family]] = Registry("layer family", __package__)  # by kind
F = TypeVar("F", bound=type[Family])


def layer_family(cls: F) -> F:
    """Declares the decorated ``Family`` subclass as the family of its ``kind``. The class itself is unchanged."""
    FAMILIES.register(cls.kind, cls, module=cls.__module__)
    return cls


def family(kind: str) -> type[Family]:
    """The family declared for ``Layer.kind`` ``kind``."""
    try:
        return FAMILIES[kind]
    except KeyError:
        raise ValueError(f"no layer family is declared for kind {kind!r} (declared: {', '.join(FAMILIES)})") from None
