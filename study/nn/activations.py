"""The activation family ``c * tau(d s + t) + b`` and its Gaussian constants.

NLC paper, appendix C: "If the initial activation function is tau(s), we replace it by c tau(ds + t) + b.
[...] with a 50% probability, we set b so that if s follows a unit Gaussian distribution, tau(s) is
unbiased [...] Finally, we always set c so that if s is a unit Gaussian, then Q_s tau(s) = 1."

Every base ``tau`` is one declaration (``Base`` in ``BASES``: its torch expression, where it has kinks, whether
it is positively homogeneous; Table 1 of the NLC paper, abs from Yu and Zhang, selu with the constants of the
paper's footnote 1), so a new activation is one entry there. The constants ``c`` and ``b`` are Gaussian
expectations computed once per variant by quadrature (``study.nn.gaussian``), and the network evaluates the
very same expression, so there is one definition of each activation. ``scaled = False``
(``ArchSpec.scale_activation``) keeps c = 1: the activation as papers without appendix C's rescaling write it
(Yu and Zhang's plain ReLU and ABS).

Also here, because they are properties of an activation alone (NLC paper section 5 and E.4):

* ``nlc_tau(act, sigma)`` = sigma * Q tau'(s) / S tau(s), s ~ N(0, sigma^2)   (section 5; Table 1 line A)
* ``linear_approx_error(act)`` = (Q(tau - taubar) / Q taubar)^2 with taubar the best affine fit of
  tau(d s + t) under s ~ N(0, 1)                                             (E.4; Table 1 line E)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from archstudy.sampling import ArchSpec
from archstudy.sampling.constraints import Boolean, Choice, Real, check
from archstudy.sampling.spec import ACTIVATIONS

from .gaussian import gauss_nodes

_SQRT_2PI = math.sqrt(2 * math.pi)


@dataclass(frozen=True)
class Base:
    """One base activation tau, declared once: its formula, where it is not smooth, and whether it is positively
    homogeneous (tau(k u) = k tau(u) for every k > 0).

    ``kinks``: the points u where tau or one of its first derivatives jumps; the quadrature splits its panels
    there (``Activation.breaks``, ``study.nn.gaussian``), so every panel integrates a smooth function.
    ``homogeneous``: then c tau(d y + t) = tau(c d y + c t) for c > 0, which lets the trainer's folded forward
    compute the scale c inside a normalization's affine (``Network.propagate``)."""

    name: str
    tau: Callable[[torch.Tensor], torch.Tensor]
    kinks: tuple[float, ...] = ()
    homogeneous: bool = False


def _selu(s: torch.Tensor) -> torch.Tensor:
    """The NLC paper's footnote 1: 1.0507 s for s > 0, 1.75814 (e^s - 1) otherwise."""
    return torch.where(s > 0, 1.0507 * s, 1.75814 * torch.expm1(torch.clamp(s, max=0.0)))


def _gaussian(s: torch.Tensor) -> torch.Tensor:
    """The N(0, 1) density (Table 1 of the NLC paper)."""
    return torch.exp(-0.5 * s * s) / _SQRT_2PI


# The base activations of the space (Table 1 of the NLC paper; abs, the Han activation, from Yu and Zhang,
# *Householder-Absolute Neural Layers*; linear for tests and ablations). A new activation is one entry here and
# its name in ``archstudy.sampling.spec.ACTIVATIONS``.
BASES: dict[str, Base] = {
    b.name: b
    for b in (
        Base("relu", torch.relu, kinks=(0.0,), homogeneous=True),
        Base("selu", _selu, kinks=(0.0,)),
        Base("tanh", torch.tanh),
        Base("sigmoid", torch.sigmoid),
        Base("even_tanh", lambda s: torch.tanh(s.abs()), kinks=(0.0,)),
        Base("gaussian", _gaussian),
        Base("square", lambda s: s * s),
        Base("odd_square", lambda s: s * s.abs(), kinks=(0.0,)),  # C^1, its second derivative jumps at 0
        Base("abs", torch.abs, kinks=(0.0,), homogeneous=True),
        Base("linear", lambda s: s, homogeneous=True),
    )
}
assert set(BASES) == set(ACTIVATIONS), "every activation of the space is declared once, and only those"
TAU: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {name: b.tau for name, b in BASES.items()}


@dataclass(frozen=True)
class Activation:
    """``c * tau(d s + t) + b`` with c, b from the Gaussian conditions of appendix C."""

    name: str
    dilation: float = 1.0
    shift: float = 0.0
    debias: bool = False
    scaled: bool = True  # c from Q = 1 (appendix C); False: c = 1 (``ArchSpec.scale_activation``)

    def __post_init__(self):
        object.__setattr__(self, "name", check("Activation", "name", Choice(ACTIVATIONS), self.name))
        object.__setattr__(self, "dilation", check("Activation", "dilation", Real(0.0, lo_open=True), self.dilation))
        object.__setattr__(self, "shift", check("Activation", "shift", Real(), self.shift))
        object.__setattr__(self, "debias", check("Activation", "debias", Boolean(), self.debias))
        object.__setattr__(self, "scaled", check("Activation", "scaled", Boolean(), self.scaled))

    @classmethod
    def of(cls, spec_or_name: "ArchSpec | Activation | str") -> "Activation":
        if isinstance(spec_or_name, Activation):
            return spec_or_name
        if isinstance(spec_or_name, ArchSpec):
            s = spec_or_name
            return cls(s.activation, s.dilation, s.shift, s.debias, s.scale_activation)
        return cls(spec_or_name)

    @property
    def base(self) -> Base:
        return BASES[self.name]

    @property
    def tau(self) -> Callable[[torch.Tensor], torch.Tensor]:
        return self.base.tau

    @property
    def homogeneous(self) -> bool:
        """Whether tau is positively homogeneous (``Base.homogeneous``)."""
        return self.base.homogeneous

    def inner(self, s: torch.Tensor) -> torch.Tensor:
        """``tau(d s + t)``."""
        if self.dilation != 1.0:
            s = s * self.dilation
        if self.shift != 0.0:
            s = s + self.shift
        return self.tau(s)

    def breaks(self) -> tuple[float, ...]:
        """Where ``tau(d s + t)`` has a kink, in units of s: (u - t) / d for each kink u of tau."""
        return tuple((u - self.shift) / self.dilation for u in self.base.kinks)

    @property
    def constants(self) -> tuple[float, float]:
        """``(c, b)``: Q[c tau(ds+t) + b] = 1 (c = 1 when not ``scaled``), and E[.] = 0 when debiased, under
        s ~ N(0, 1)."""
        return _constants(self)

    def __call__(self, s: torch.Tensor, constants: tuple[float, float] | None = None) -> torch.Tensor:
        """``c * tau(d s + t) + b``; ``constants``: (c, b) when the caller has them (a traced forward cannot run
        the cached quadrature behind ``constants``)."""
        c, b = self.constants if constants is None else constants
        y = self.inner(s)
        if c != 1.0:
            y = y * c
        if b != 0.0:
            y = y + b
        return y

    # -- folded into a normalization's affine (the trainer's folded forward, ``Network.propagate``) -------
    def norm_affine(self, c: float) -> tuple[float | None, float | None]:
        """The scale and shift a normalization applies in place of the activation's dilation and shift (and,
        for a positively homogeneous tau, its scale c): c tau(d y + t) = tau(c d y + c t); None where it is
        the identity (scale 1, shift 0)."""
        k = c if self.homogeneous else 1.0
        return (None if k * self.dilation == 1.0 else k * self.dilation, None if self.shift == 0.0 else k * self.shift)

    def after_affine(self, s: torch.Tensor, constants: tuple[float, float]) -> torch.Tensor:
        """What is left of ``c * tau(d y + t) + b`` once a normalization applied ``norm_affine``: tau, ``* c``
        unless tau is positively homogeneous, ``+ b``."""
        c, b = constants
        y = self.tau(s)
        if not self.homogeneous and c != 1.0:
            y = y * c
        if b != 0.0:
            y = y + b
        return y

    def moments(self, sigma: float = 1.0) -> dict[str, float]:
        """Gaussian moments of ``tau(d s + t)`` and of its derivative, s ~ N(0, sigma^2)."""
        return _moments(self, float(sigma))


@lru_cache(maxsize=None)
def _moments(act: Activation, sigma: float) -> dict[str, float]:
    x, w = gauss_nodes(sigma, act.breaks())
    with torch.enable_grad():  # callers may be inside no_grad (the first forward of a network, say)
        x = x.clone().requires_grad_(True)
        y = act.inner(x)
        (dy,) = torch.autograd.grad(y.sum(), x)
    y = y.detach()
    return {
        "mean": float((w * y).sum()),
        "second": float((w * y * y).sum()),
        "x_moment": float((w * x.detach() * y).sum()),  # E[s tau(ds+t)]
        "deriv_second": float((w * dy * dy).sum()),  # E[(d/ds tau(ds+t))^2]
    }


@lru_cache(maxsize=None)
def _constants(act: Activation) -> tuple[float, float]:
    m = act.moments(1.0)
    if not act.scaled:
        return 1.0, -m["mean"] if act.debias else 0.0
    if act.debias:
        c = 1.0 / math.sqrt(m["second"] - m["mean"] ** 2)
        return c, -c * m["mean"]
    return 1.0 / math.sqrt(m["second"]), 0.0


def nlc_tau(activation: "ArchSpec | Activation | str", sigma: float = 1.0) -> float:
    """NLC of the activation alone (NLC paper section 5):

        NLC_tau(sigma) = sigma * Q_{s ~ N(0, sigma^2)} tau'(s) / S_{s ~ N(0, sigma^2)} tau(s)

    for the variant ``c tau(d s + t) + b`` (c and b cancel). ``sigma`` is the standard deviation, so a
    linear tau has NLC 1 at every sigma. Table 1 line A: relu 1.211, selu 1.035, tanh 1.085, sigmoid 1.017,
    even_tanh 2.335, gaussian 1.577, square 1.414, odd_square 1.155.
    """
    act = Activation.of(activation)
    m = act.moments(sigma)
    return sigma * math.sqrt(m["deriv_second"]) / math.sqrt(m["second"] - m["mean"] ** 2)


def linear_approx_error(activation: "ArchSpec | Activation | str") -> float:
    """Linear approximation error (NLC paper E.4; Table 1 line E):

        (Q(tau(s) - taubar(s)) / Q taubar(s))^2,  s ~ N(0, 1),

    taubar the best affine fit ``alpha + beta s``: beta = E[s tau], alpha = E[tau], so
    Q(taubar)^2 = alpha^2 + beta^2 and Q(tau - taubar)^2 = E[tau^2] - alpha^2 - beta^2. Computed on
    ``tau(d s + t)``, the activation's shape with its dilation and shift; the output scale c cancels, and the
    debiasing offset b is left out as Table 1 leaves it out: an offset is no nonlinearity, yet it would enter
    Q(taubar), and for an even tau with t = 0 (beta = 0) debiasing would leave 0 / 0.
    """
    act = Activation.of(activation)
    m = act.moments(1.0)
    alpha, beta = m["mean"], m["x_moment"]
    return (m["second"] - alpha**2 - beta**2) / (alpha**2 + beta**2)
