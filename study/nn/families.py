"""The layer families by ``Layer.kind`` (``archstudy.sampling.spec``): each declared once (``study.nn.family``).

* ``dense``: ``s = W x + b`` (NLC paper, appendix C), with optional input mean normalization (``study.nn.layers``);
* ``gmp``: ``s = u(theta)^T (x - E[x]) + lambda``, then ``r *`` after the activation (Chen and Ge, *Neural
  Characteristic Activation Value Analysis*, eq. 15, 16; ``study.nn.gmp``);
* ``householder``: ``s = H(u) x + b`` (Yu and Zhang, *Householder-Absolute Neural Layers*, Algorithm 1;
  ``study.nn.householder``).

A new family is one ``Family`` subclass (its own module, with its GPU compile threshold where the default does not
fit: ``Family.cuda_compile_min_layer_steps``), its entry here, and in ``archstudy.sampling.spec`` its kind
(``WEIGHT_KINDS``: the sampler, the siblings and the analysis' levels take it from there) and parameter count
(``Layer.num_params``).
"""

from __future__ import annotations

from .family import Family
from .gmp import GmP
from .householder import Householder
from .layers import Dense

FAMILIES: dict[str, type[Family]] = {f.kind: f for f in (Dense, GmP, Householder)}


def family(kind: str) -> type[Family]:
    """The family declared for ``Layer.kind`` ``kind``."""
    try:
        return FAMILIES[kind]
    except KeyError:
        raise ValueError(f"no layer family is declared for kind {kind!r} (declared: {', '.join(FAMILIES)})") from None
