"""``ArchSpec``: one fully-connected architecture, frozen, flat, JSON- and Parquet-friendly.

Everything downstream (the builder, the metrics, the trainer, the store, the report) reads the
architecture from this one object. Its fields are flat scalars so a spec is one row of a table.

Structure (NLC paper, appendix C; ``layers()`` and ``skips()`` spell it out for the builder):

* ``depth`` linear layers, layer ``l`` = linear -> [norm] -> activation; the last layer has neither.
  Every hidden layer has the same ``width``.
* activation ``c * tau(d s + t) + b`` with ``d = dilation``, ``t = shift``; ``b`` debiases when
  ``debias`` (E[.] = 0 for s ~ N(0, 1)) and ``c`` makes the quadratic mean 1 (``study.nn.activations``), as
  appendix C always does; ``scale_activation = False`` sets c = 1, the activation as papers without that
  rescaling write it (Yu and Zhang's ReLU and ABS nets: plain relu(s) = c relu(s) / sqrt(2)).
* skips start after the linear op (``after_linear``) or after the norm op (``after_norm``) of layers
  1, 1 + k, 1 + 2k, ... (k = ``skip_length``; the paper uses k = 2) and end after the linear op k layers
  later: ``h_{l+k} += skip_strength * start value``. The last one ends at the output through a fixed,
  untrained orthogonal projection, so ``depth - 1`` must be a multiple of ``skip_length``.
* ``weights = "householder"`` makes every width-to-width layer a Han-layer (Yu and Zhang,
  *Householder-Absolute Neural Layers*, Algorithm 1, eq. 5): ``x -> x - 2 u (u^T x) / |u|^2 + b`` with
  trainable ``u`` and ``b``; input and output layers stay dense. ``dense_ends = k`` keeps the first k and
  the last k width-to-width layers dense: the HanNet of that paper's checkerboard experiment (section
  3.2.1: "the first and the last hidden layers are fully connected") is ``dense_ends = 1``. Its "20 x 30"
  (20 hidden layers of width 30) is ``depth = 21``: a dense input layer, one dense 30 x 30 layer, 17
  Householder layers, one dense 30 x 30 layer and the output layer; with 2 outputs that is the paper's
  3032 parameters exactly (Table 3), with 1 output 3001.
* ``param = "gmp"`` makes every dense hidden neuron ``r * tau(u(theta)^T x + lambda)`` (Chen and Ge,
  *Neural Characteristic Activation Value Analysis*, eq. 10, 15); the output layer stays a plain linear
  layer, as in their section 4.1.
* ``imn``: input mean normalization (Chen and Ge, eq. 16): an intermediate dense hidden layer (layers
  2 .. L-1, SP or GmP, never a Householder layer) takes ``x - E[x]`` instead of ``x`` (the batch mean in
  training, a running mean in evaluation). ``"auto"`` (the default) is what a spec meant before the field
  existed: on for GmP, off for SP ("for ReLU units in the intermediate layers", their section 4.2, as a
  part of GmP); ``"off"`` and ``"on"`` decide it apart from ``param``, so a GmP net with ``imn = "off"``
  is an exact reparameterization of its SP twin at init (for a positively homogeneous tau without norms
  or skips: ``r tau(u^T x + lambda) = tau(w^T x + b)`` with ``w = r u``, ``b = r lambda``).
  ``input_mean_norm`` is the effective choice.
* init: ``init`` is the distribution of the dense (and GmP) weight matrices: "orthogonal" (appendix C:
  a d_out x d_in submatrix of a Haar-random orthogonal matrix times max(1, sqrt(d_out / d_in))),
  "kaiming" (He, Zhang, Ren and Sun, *Delving Deep into Rectifiers*, 2015: normal, fan_in mode, gain sqrt(2):
  W_ij ~ N(0, 2 / fan_in)), "xavier" (Glorot and Bengio, *Understanding the Difficulty of Training Deep
  Feedforward Neural Networks*, 2010: normal, W_ij ~ N(0, 2 / (fan_in + fan_out))) or "zero" (Li, Jiao, Han and
  Weissman, *Demystifying ResNet*, section 4: the layers inside residual branches start exactly at zero,
  weights and biases, the zero initial point of Theorem 2; the other layers as "orthogonal"). Householder
  vectors are u ~ N(0, I) under every scheme (a reflection does not depend on the length of u);
  ``bias_init``, the biases of every layer: "zero", "gaussian" (N(0, 0.05), weights then times sqrt(0.95):
  appendix C), "normal" (i.i.d. standard normal, N(0, 1): the variability paper, *Variability of Neural Networks
  and Han-Layer*, B.1, "We initialize weight matrices and bias vectors with i.i.d. standard normal random
  numbers", its weights then scaled by their init constant as ``init`` does) or "uniform_fan_in" (U(-1/sqrt(fan_in),
  1/sqrt(fan_in)), PyTorch's ``nn.Linear`` default, the dense layers' biases of a paper whose code is PyTorch and
  that states no bias init: Yu and Zhang); ``householder_bias``, the Householder layers' bias: "bias_init" (as
  every other layer) or "zero" (Algorithm 1 has a bias b but no paper states its init);
  ``init_scale`` multiplies all weights and biases (0.9 / 1 / 1.1 in the paper);
  ``branch_scale`` multiplies the weights and biases of the layers inside residual branches
  (0.01 = the near-zero residual-branch initialization of Li, Jiao, Han and Weissman, *Demystifying ResNet*);
  ``gmp_init``, the GmP layers' parameters: ``"from_sp"`` (the default) takes them from the SP weights the
  scheme above draws (u = w / |w|, lambda = b / |w|, r = |w|: a GmP net starts as its SP twin's function,
  see ``imn``); ``"uniform"`` is Chen and Ge's own section 4.3: every angle theta_k uniform on its range
  ([0, pi] for k < n-1, (-pi, pi] for the last), lambda = 0 and r = 1 (times ``init_scale`` and, inside
  residual branches, ``branch_scale``; ``bias_init`` does not apply to lambda). Uniform angles do NOT give
  a uniformly distributed direction (a uniform direction has theta_k with density proportional to
  sin^(n-1-k) theta_k, concentrated near pi/2), so the two differ beyond the scale: under "uniform" the
  direction leans towards the first input coordinates (|u_1| = |cos theta_1| has mean 2/pi whatever n,
  against about sqrt(2 / (pi n)) for a uniform direction).

Fields added after the first schema (``init``, ``dense_ends``, ``imn``, ``gmp_init``, ``scale_activation``,
``householder_bias``;
declared with ``since``, ``sampling.constraints.declare``) are left out of the canonical JSON while they hold
their default, so every spec that could be written before they existed keeps its ``content_id`` (a study's
unit names hold it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any, Iterable

from .constraints import Boolean, Choice, Declared, Integer, Real, SpecError, Text, declare

# Activations of the NLC paper (Table 1), the Han activation abs (Yu and Zhang), and the identity
# ("linear", not sampled by any preset) for linear baselines and sanity checks.
PAPER_ACTIVATIONS = ("relu", "selu", "tanh", "sigmoid", "even_tanh", "gaussian", "square", "odd_square")
ACTIVATIONS = PAPER_ACTIVATIONS + ("abs", "linear")
NORMS = ("none", "batch", "layer")
SKIPS = ("none", "after_linear", "after_norm")
PARAMS = ("sp", "gmp")
BIAS_INITS = ("zero", "gaussian", "normal", "uniform_fan_in")
HOUSEHOLDER_BIASES = ("bias_init", "zero")  # the Householder layers' bias: as ``bias_init`` says, or zero
INITS = ("orthogonal", "kaiming", "xavier", "zero")
IMNS = ("auto", "off", "on")  # input mean normalization: as ``param`` implies (GmP on, SP off), or decided
GMP_INITS = ("from_sp", "uniform")  # GmP parameters from the SP weights, or Chen and Ge's section 4.3


@dataclass(frozen=True)
class WeightsKind:
    """One value of ``ArchSpec.weights``, declared once: what the spec's rules and the sampler need of it.

    ``replaces``: its layers replace the width-to-width layers between the ``dense_ends`` (their ``Layer.kind``
    is the value itself, the kind of a family of ``study.nn.families``), so a net has one only from depth 3 on
    (``least_depth``) and ``dense_ends`` applies; ``"dense"`` replaces nothing: its hidden layers are dense or GmP
    as ``param`` says. ``scalable``: its weights can be scaled towards zero, so a residual branch of them can
    start near zero (``branch_scale``) or at zero (``init = "zero"``); a reflector H(u) is orthogonal whatever
    u (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 5): no."""

    name: str
    replaces: bool
    scalable: bool

    @property
    def least_depth(self) -> int:
        """The least depth with a layer of this kind: 3 (input, one width-to-width, output) where it replaces
        the width-to-width layers, else 2."""
        return 3 if self.replaces else 2


# A new layer family: its kind here, its parameter count in ``Layer.num_params``, its ``Family`` in ``study.nn``.
WEIGHT_KINDS: dict[str, WeightsKind] = {
    w.name: w
    for w in (
        WeightsKind("dense", replaces=False, scalable=True),
        WeightsKind("householder", replaces=True, scalable=False),  # Han-layers (Yu and Zhang, Algorithm 1)
    )
}
WEIGHTS = tuple(WEIGHT_KINDS)
DENSE = WEIGHTS[0]  # the plain kind: what a net falls back to where no layer of another kind fits
_REPLACING = tuple(w for w in WEIGHT_KINDS.values() if w.replaces)
_SCALABLE = tuple(w for w in WEIGHT_KINDS.values() if w.scalable)


def _either(names: Iterable[str]) -> str:
    """'a' or 'a' or 'b' ...: the values a rule allows, as an error line names them."""
    return " or ".join(repr(n) for n in names)


# Variance of the Gaussian bias init, from Schoenholz, Gilmer, Ganguli and Sohl-Dickstein, *Deep Information
# Propagation* (2017), as used in appendix C.
BIAS_VARIANCE = 0.05

SPEC_VERSION = 5  # of the spec's dict form; bump when a field changes meaning or is added (2: init, dense_ends;
# 3: imn, gmp_init; 4: scale_activation; 5: householder_bias)


@dataclass(frozen=True)
class Layer:
    """One linear layer and what follows it (see ``ArchSpec.layers``)."""

    index: int  # 1-based, as in the paper
    kind: str  # "dense" | "gmp" | "householder"
    fan_in: int
    fan_out: int
    norm: str  # "none" | "batch" | "layer" (always "none" for the output layer)
    activation: bool  # False for the output layer
    imn: bool  # input mean normalization (Chen and Ge, eq. 16): intermediate dense (SP or GmP) layers only
    in_branch: bool  # inside a residual branch: ``branch_scale`` applies to its init

    @property
    def num_params(self) -> int:
        if self.kind == "householder":
            return 2 * self.fan_in  # u and b (Yu and Zhang, Algorithm 1)
        # dense: W and b; gmp: theta (fan_in - 1), lambda and r per neuron: the same count (Chen and Ge, 4.1)
        return self.fan_out * (self.fan_in + 1)


@dataclass(frozen=True)
class Skip:
    """A skip connection from layer ``start`` to layer ``end`` (1-based)."""

    start: int
    end: int
    at: str  # "linear": the start value is taken after the linear op; "norm": after the norm op
    project: bool  # ends at the output layer through the fixed orthogonal projection


@dataclass(frozen=True)
class ArchSpec(Declared):
    depth: int = declare(Integer(2), doc="number of linear layers L")
    width: int = declare(Integer(1), doc="width of every hidden layer")
    d_in: int = declare(Integer(1), doc="input dimension")
    d_out: int = declare(Integer(1), doc="output dimension (number of classes)")
    activation: str = declare(Choice(ACTIVATIONS), "relu", doc="base activation tau")
    dilation: float = declare(Real(0.0, lo_open=True), 1.0, doc="d in c*tau(d s + t) + b")
    shift: float = declare(Real(), 0.0, doc="t in c*tau(d s + t) + b")
    debias: bool = declare(Boolean(), False, doc="b makes E[c tau(d s + t) + b] = 0 for s ~ N(0,1)")
    scale_activation: bool = declare(
        Boolean(), True, since=4, doc="c makes Q[c tau(d s + t) + b] = 1 for s ~ N(0,1) (appendix C); false: c = 1"
    )
    norm: str = declare(Choice(NORMS), "none", doc="normalization between linear op and activation")
    skip: str = declare(Choice(SKIPS), "none", doc="where skip connections start")
    skip_strength: float = declare(Real(0.0), 1.0, doc="h_{l+k} += skip_strength * start value")
    skip_length: int = declare(
        Integer(1), 2, doc="layers a skip bypasses (k): the shortcut depth of Demystifying ResNet"
    )
    weights: str = declare(Choice(WEIGHTS), "dense", doc="dense, or Householder for width-to-width layers")
    dense_ends: int = declare(
        Integer(0), 0, since=2, doc="width-to-width layers kept dense at each end of a Householder net (HanNet: 1)"
    )
    param: str = declare(Choice(PARAMS), "sp", doc="standard or geometric parameterization of dense hidden layers")
    imn: str = declare(
        Choice(IMNS),
        "auto",
        since=3,
        doc="input mean normalization of the intermediate dense layers: auto (as param implies: GmP on, "
        "SP off), off or on",
    )
    init: str = declare(
        Choice(INITS),
        "orthogonal",
        since=2,
        doc="weight init: orthogonal (appendix C), kaiming, xavier, or zero residual branches",
    )
    gmp_init: str = declare(
        Choice(GMP_INITS),
        "from_sp",
        since=3,
        doc="GmP parameters: from_sp (u, lambda, r from the SP weights) or uniform (Chen and Ge "
        "4.3: uniform angles, lambda = 0, r = 1)",
    )
    bias_init: str = declare(
        Choice(BIAS_INITS),
        "zero",
        doc="zero, gaussian (N(0, 0.05), weights times sqrt(0.95)), normal (N(0, 1)) or "
        "uniform_fan_in (U(+-1/sqrt(fan_in)), PyTorch's nn.Linear default)",
    )
    householder_bias: str = declare(
        Choice(HOUSEHOLDER_BIASES), "bias_init", since=5, doc="the Householder layers' bias: as bias_init, or zero"
    )
    init_scale: float = declare(Real(0.0, lo_open=True), 1.0, doc="all weights and biases jointly times this")
    branch_scale: float = declare(Real(0.0, lo_open=True), 1.0, doc="residual-branch weights and biases times this")
    preset: str = declare(Text(), "custom", doc="the space this spec was drawn from")

    def _validate(self) -> None:
        where = self._where
        if self.skip == "none":
            for name, default in (("skip_strength", 1.0), ("skip_length", 2), ("branch_scale", 1.0)):
                if getattr(self, name) != default:
                    raise SpecError(where, name, getattr(self, name), f"must stay {default!r} when skip = 'none'")
        else:
            if (self.depth - 1) % self.skip_length:
                raise SpecError(
                    where,
                    "skip_length",
                    self.skip_length,
                    f"must divide depth - 1 = {self.depth - 1} so the last skip ends at the output layer",
                )
            if self.skip == "after_norm" and self.norm == "none":
                raise SpecError(where, "skip", self.skip, "'after_norm' needs norm = 'batch' or 'layer'")
        kind = WEIGHT_KINDS[self.weights]
        if not kind.scalable and self.branch_scale != 1.0:
            # A reflector is orthogonal by construction: a near-zero branch is not representable.
            raise SpecError(where, "branch_scale", self.branch_scale, f"must stay 1.0 when weights = {self.weights!r}")
        if self.depth < kind.least_depth:
            raise SpecError(
                where,
                "weights",
                self.weights,
                f"{self.weights!r} needs depth >= {kind.least_depth} (a width-to-width layer)",
            )
        if self.dense_ends:
            if not kind.replaces:
                raise SpecError(
                    where,
                    "dense_ends",
                    self.dense_ends,
                    f"must stay 0 unless weights = {_either(w.name for w in _REPLACING)}",
                )
            if 2 * self.dense_ends > self.depth - 3:
                raise SpecError(
                    where,
                    "dense_ends",
                    self.dense_ends,
                    f"must leave a {self.weights!r} layer: 2 * dense_ends <= depth - 3 = {self.depth - 3}",
                )
        if self.init == "zero":
            # Only a residual branch can start at zero (elsewhere a zero layer cuts the signal for good), and
            # only a scalable SP layer can be zero (a reflector cannot; a GmP direction is undefined at w = 0).
            needs = {
                "skip connections (it zeroes the residual branches)": self.skip != "none",
                f"weights = {_either(w.name for w in _SCALABLE)}": kind.scalable,
                "param = 'sp'": self.param == "sp",
                "branch_scale = 1.0 (a zero branch has no scale)": self.branch_scale == 1.0,
            }
            missing = [what for what, ok in needs.items() if not ok]
            if missing:
                raise SpecError(where, "init", self.init, "'zero' needs " + missing[0])
        if self.householder_bias != "bias_init" and self.weights != "householder":
            raise SpecError(
                where, "householder_bias", self.householder_bias, "must stay 'bias_init' unless weights = 'householder'"
            )
        if self.gmp_init != "from_sp" and self.param != "gmp":
            raise SpecError(where, "gmp_init", self.gmp_init, "must stay 'from_sp' unless param = 'gmp'")
        if self.param == "gmp":
            # A unit direction in R^1 is +-1, which the hyperspherical angles of Chen and Ge's eq. 10 cannot hold.
            if self.d_in < 2:
                raise SpecError(where, "d_in", self.d_in, "must be >= 2 when param = 'gmp'")
            if self.width < 2:
                raise SpecError(where, "width", self.width, "must be >= 2 when param = 'gmp'")

    # -- structure -------------------------------------------------------------------------------
    def layers(self) -> tuple[Layer, ...]:
        """The linear layers in order, with their kind, shape and what follows them."""
        out = []
        replaces = WEIGHT_KINDS[self.weights].replaces
        for index in range(1, self.depth + 1):
            last = index == self.depth
            fan_in = self.d_in if index == 1 else self.width
            fan_out = self.d_out if last else self.width
            replaced = replaces and 1 + self.dense_ends < index < self.depth - self.dense_ends
            if last:
                kind = DENSE
            elif replaced:
                kind = self.weights
            else:
                kind = "gmp" if self.param == "gmp" else DENSE
            in_branch = self.skip != "none" and index > 1  # skips chain from layer 1 to the output
            imn = self.input_mean_norm and not replaced and 1 < index < self.depth  # dense (SP or GmP) layers only
            out.append(Layer(index, kind, fan_in, fan_out, "none" if last else self.norm, not last, imn, in_branch))
        return tuple(out)

    def skips(self) -> tuple[Skip, ...]:
        if self.skip == "none":
            return ()
        at = "linear" if self.skip == "after_linear" else "norm"
        k = self.skip_length
        return tuple(Skip(s, s + k, at, s + k == self.depth) for s in range(1, self.depth, k))

    @property
    def input_mean_norm(self) -> bool:
        """Whether the intermediate dense layers subtract their input's mean: ``imn``, with ``"auto"`` read as
        ``param`` implies (GmP: on, SP: off; what every spec meant before ``imn`` existed)."""
        return self.imn == "on" or (self.imn == "auto" and self.param == "gmp")

    @property
    def num_params(self) -> int:
        """Exact number of trainable parameters (the skip projection is fixed, norms have none)."""
        return sum(layer.num_params for layer in self.layers())

    @property
    def activation_units(self) -> int:
        """Number of activation units: every hidden layer applies the activation once per neuron."""
        return (self.depth - 1) * self.width

    @property
    def has_skips(self) -> bool:
        return self.skip != "none"

    # -- serialization (to_dict, from_dict, replace: ``Declared``) ------------------------------------
    def to_json(self) -> str:
        """The canonical JSON (sorted keys; fields added later left out at their default, see above)."""
        return canonical_json(self.canonical())

    @property
    def content_id(self) -> str:
        """A stable 16-hex-digit id of the spec's content (sha256 of its canonical JSON), computed once per
        spec: the spec is frozen, so it is kept beside the fields (outside them: equality, hashing and the dict
        form read the fields only)."""
        cached = self.__dict__.get(_CONTENT_ID)
        if cached is None:
            cached = content_hash(self.to_json())
            object.__setattr__(self, _CONTENT_ID, cached)  # frozen: set once, to the value of the fields
        return cached


_CONTENT_ID = "_content_id"  # where a spec keeps its content id once computed (not a field)


SPEC_FIELDS = tuple(f.name for f in fields(ArchSpec))


def canonical_json(value: Any) -> str:
    """Plain data (dicts, lists, numbers, strings) as canonical JSON: sorted keys, no spaces, so equal data
    gives equal text (a spec's ``to_json``; the science config a result file records)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def content_hash(text: str) -> str:
    """16 hex digits of the sha256 of ``text``: a spec's content id, a study's science fingerprint."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]
