"""The architecture space and its sampler.

``Space`` holds every probability of the sampling scheme as a plain field, so a user can change any of
them (in Python or in a study's YAML). Two presets:

* ``paper``: appendix C of the NLC paper, exactly, post-processing included.
* ``extended`` (the default): the paper's space plus Householder (Han) layers and the abs activation (Yu
  and Zhang, *Householder-Absolute Neural Layers*), geometric parameterization (Chen and Ge, *Neural
  Characteristic Activation Value Analysis*), shortcut lengths 1/2/3 and near-zero residual-branch
  initialization (Li, Jiao, Han and Weissman, *Demystifying ResNet*).

``sample_spec(study_seed, index, ...)`` draws architecture ``index`` from
``numpy.random.Generator(PCG64(SeedSequence([study_seed, index])))``, so it is the same on every machine
and in any order. Every categorical field consumes exactly one uniform number, always in the same order,
whether or not it ends up mattering: changing one probability of a space changes only that field's draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

import numpy as np

from .constraints import (
    PROBABILITY,
    SEED,
    Boolean,
    Choice,
    Constraint,
    Declared,
    Distribution,
    Integer,
    Real,
    SpecError,
    Text,
    check,
    declare,
)
from .spec import ACTIVATIONS, BIAS_INITS, DENSE, GMP_INITS, IMNS, INITS, NORMS, PARAMS, WEIGHT_KINDS, WEIGHTS, ArchSpec
from .width import solve_width

SKIP_STRENGTH_KINDS = ("none", "one", "uniform")  # no skips / strength 1 / one U(0, 1) strength for all
RANDOM_BIAS_INITS = tuple(b for b in BIAS_INITS if b != "zero")  # what a spec with random biases may get

T = TypeVar("T")


@dataclass(frozen=True)
class _Depths(Constraint):
    def normalize(self, value: Any) -> tuple[int, ...]:
        try:
            out = tuple(Integer(2).normalize(v) for v in value)
        except (TypeError, ValueError):
            self.fail()
        if not out or len(set(out)) != len(out):
            self.fail()
        return out

    def describe(self) -> str:
        return "must be a non-empty list of distinct integers >= 2"

    def invalid_examples(self) -> tuple[Any, ...]:
        return ((), (1, 3), 5)


@dataclass(frozen=True)
class _Activations(Constraint):
    def normalize(self, value: Any) -> tuple[str, ...]:
        try:
            out = tuple(Choice(ACTIVATIONS).normalize(v) for v in value)
        except (TypeError, ValueError):
            self.fail()
        return out

    def describe(self) -> str:
        return "must be a list of activations among " + ", ".join(ACTIVATIONS)

    def invalid_examples(self) -> tuple[Any, ...]:
        return (["swish"], "relu")


# Appendix C: "ReLU, SeLU and Gaussian with probability 2/11 each and tanh, even tanh, sigmoid, square
# and odd square with probability 1/11 each".
_PAPER_ACTIVATIONS = (
    ("relu", 2 / 11),
    ("selu", 2 / 11),
    ("gaussian", 2 / 11),
    ("tanh", 1 / 11),
    ("even_tanh", 1 / 11),
    ("sigmoid", 1 / 11),
    ("square", 1 / 11),
    ("odd_square", 1 / 11),
)
# Extended: abs (the Han activation) joins with the weight of the paper's favoured three.
_EXTENDED_ACTIVATIONS = (
    ("relu", 2 / 13),
    ("selu", 2 / 13),
    ("gaussian", 2 / 13),
    ("abs", 2 / 13),
    ("tanh", 1 / 13),
    ("even_tanh", 1 / 13),
    ("sigmoid", 1 / 13),
    ("square", 1 / 13),
    ("odd_square", 1 / 13),
)


@dataclass(frozen=True)
class Space(Declared):
    """Every probability of the sampling scheme. Defaults are the paper's (appendix C)."""

    name: str = declare(Text(), "paper", doc="name recorded in each spec's ``preset`` field")
    depths: tuple[int, ...] = declare(_Depths(), tuple(range(3, 50, 2)), doc="depth uniform over these (odd 3..49)")
    activations: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(ACTIVATIONS)), _PAPER_ACTIVATIONS, doc="activation tau"
    )
    dilations: tuple[tuple[float, float], ...] = declare(
        Distribution(Real(0.0, lo_open=True)),
        ((1.0, 0.5), (1.2, 0.25), (0.8, 0.25)),
        doc="dilation d of c*tau(d s + t) + b",
    )
    shifts: tuple[tuple[float, float], ...] = declare(
        Distribution(Real()), ((0.0, 0.5), (0.2, 0.25), (-0.2, 0.25)), doc="shift t of c*tau(d s + t) + b"
    )
    p_debias: float = declare(PROBABILITY, 0.5, doc="probability of debiasing the activation")
    p_bias_gaussian: float = declare(
        PROBABILITY,
        0.5,
        doc="probability of random biases (else zero): N(0, 0.05) unless random_bias_inits says otherwise",
    )
    init_scales: tuple[tuple[float, float], ...] = declare(
        Distribution(Real(0.0, lo_open=True)),
        ((1.0, 0.5), (0.9, 0.25), (1.1, 0.25)),
        doc="joint factor on all weights and biases",
    )
    norms: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(NORMS)), (("none", 0.5), ("batch", 0.25), ("layer", 0.25)), doc="normalization"
    )
    skip_strengths: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(SKIP_STRENGTH_KINDS)),
        (("none", 0.5), ("one", 0.25), ("uniform", 0.25)),
        doc="no skips, strength 1, or one U(0,1) strength for all skips",
    )
    skip_starts: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(("after_linear", "after_norm"))),
        (("after_linear", 0.5), ("after_norm", 0.5)),
        doc="where skips start",
    )
    skip_lengths: tuple[tuple[int, float], ...] = declare(
        Distribution(Integer(1)), ((2, 1.0),), doc="layers a skip bypasses"
    )
    branch_scales: tuple[tuple[float, float], ...] = declare(
        Distribution(Real(0.0, lo_open=True)),
        ((1.0, 1.0),),
        doc="residual-branch init factor (0.01: near-zero, Demystifying ResNet)",
    )
    weights: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(WEIGHTS)), ((DENSE, 1.0),), doc="weight kind of width-to-width layers"
    )
    params: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(PARAMS)), (("sp", 1.0),), doc="parameterization of dense hidden layers"
    )
    inits: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(INITS)),
        (("orthogonal", 1.0),),
        doc="weight init scheme (orthogonal: appendix C; kaiming, xavier, zero residual branches)",
    )
    imns: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(IMNS)),
        (("auto", 1.0),),
        doc="input mean normalization of the intermediate dense layers (auto: as param implies)",
    )
    gmp_inits: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(GMP_INITS)),
        (("from_sp", 1.0),),
        doc="GmP parameters: from_sp (the SP weights) or uniform (Chen and Ge 4.3); GmP specs only",
    )
    random_bias_inits: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(RANDOM_BIAS_INITS)),
        (("gaussian", 1.0),),
        doc="the bias init of a spec with random biases: gaussian (appendix C), normal or uniform_fan_in",
    )
    stabilize: bool = declare(Boolean(), True, doc="apply appendix C's post-processing")
    unstable_activations: tuple[str, ...] = declare(
        _Activations(), ("square", "odd_square"), doc="activations that force a norm in post-processing"
    )
    stabilize_norms: tuple[tuple[str, float], ...] = declare(
        Distribution(Choice(("batch", "layer"))), (("batch", 0.5), ("layer", 0.5)), doc="norm given by post-processing"
    )


PAPER = Space()
EXTENDED = PAPER.replace(
    name="extended",
    activations=_EXTENDED_ACTIVATIONS,
    skip_lengths=((1, 0.25), (2, 0.5), (3, 0.25)),
    branch_scales=((1.0, 0.75), (0.01, 0.25)),
    weights=(("dense", 0.5), ("householder", 0.5)),
    params=(("sp", 0.5), ("gmp", 0.5)),
)
PRESETS: dict[str, Space] = {"paper": PAPER, "extended": EXTENDED}
DEFAULT_PRESET = "extended"
# Appendix C: width "chosen automatically as a function of depth so that the number of trainable parameters
# in the network is approximately 1 million".
DEFAULT_PARAM_BUDGET = 1_000_000


def get_space(preset: str | Space | Mapping[str, Any]) -> Space:
    if isinstance(preset, Space):
        return preset
    if isinstance(preset, Mapping):
        return Space.from_dict(preset)
    if preset not in PRESETS:
        raise SpecError("sample", "preset", preset, "must be one of " + ", ".join(repr(p) for p in PRESETS))
    return PRESETS[preset]


def _pick(rng: np.random.Generator, dist: tuple[tuple[T, float], ...]) -> T:
    """One uniform number -> a choice, by the cumulative distribution (zero-probability choices never win)."""
    u = rng.random()
    acc = 0.0
    for value, p in dist:
        acc += p
        if u < acc and p > 0:
            return value
    return next(v for v, p in reversed(dist) if p > 0)  # u within rounding of 1


def sample_spec(
    study_seed: int,
    index: int,
    d_in: int,
    d_out: int,
    preset: str | Space | Mapping[str, Any] = DEFAULT_PRESET,
    param_budget: int = DEFAULT_PARAM_BUDGET,
) -> ArchSpec:
    """Architecture ``index`` of the study with seed ``study_seed``, drawn from ``preset``.

    The draws follow appendix C in order: activation, dilation d, shift t, debias, bias init, joint
    init scale, norm, skips (strength kind and value, start, length, branch init), weight kind,
    parameterization, depth, the stabilizing norm, and last the fields added later, each after the ones
    before it so that a space without a field draws everything else as before: the weight init scheme
    (orthogonal with probability 1 in both presets; "zero" falls back to orthogonal where a spec has no
    dense SP residual branches, and replaces the branch scale), input mean normalization (``auto`` with
    probability 1 in both presets: as the parameterization implies, today's and the paper's behaviour) and
    the GmP initialization (``from_sp`` with probability 1; a drawn ``uniform`` applies to GmP specs only,
    the others keep ``from_sp``), and which random bias init a spec with random biases gets (``gaussian``, appendix
    C's, with probability 1 in both presets: ``normal`` and ``uniform_fan_in`` only where a space asks); then the
    post-processing ("All networks that have square or odd square
    activation functions, or skip connections, that also do not have normalization were assigned
    either batch normalization or layer normalization with 50% probability each"); then the width
    is solved for the parameter budget.
    """
    study_seed = check("sample", "study_seed", SEED, study_seed)
    index = check("sample", "index", Integer(0), index)
    d_in = check("sample", "d_in", Integer(1), d_in)
    d_out = check("sample", "d_out", Integer(1), d_out)
    param_budget = check("sample", "param_budget", Integer(1), param_budget)
    space = get_space(preset)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([study_seed, index])))

    activation = _pick(rng, space.activations)
    dilation = _pick(rng, space.dilations)
    shift = _pick(rng, space.shifts)
    debias = bool(rng.random() < space.p_debias)
    random_biases = rng.random() < space.p_bias_gaussian
    init_scale = _pick(rng, space.init_scales)
    norm = _pick(rng, space.norms)
    strength_kind = _pick(rng, space.skip_strengths)
    strength_u = rng.random()
    skip_start = _pick(rng, space.skip_starts)
    skip_length = _pick(rng, space.skip_lengths)
    branch_scale = _pick(rng, space.branch_scales)
    weights = _pick(rng, space.weights)
    param = _pick(rng, space.params)
    depth_u = rng.random()
    stabilizer = _pick(rng, space.stabilize_norms)
    init = _pick(rng, space.inits)  # drawn after the others: the draws above are those of a space without it
    imn = _pick(rng, space.imns)  # likewise, after init
    gmp_init = _pick(rng, space.gmp_inits)  # likewise, after imn
    random_bias = _pick(rng, space.random_bias_inits)  # likewise, after gmp_init

    has_skips = strength_kind != "none"
    # Depth: uniform over the space's depths that the shortcut length fits (depth - 1 divisible by it,
    # so the last skip ends at the output layer). The paper's odd depths fit its length 2 exactly.
    # A weights kind that replaces the width-to-width layers draws among the depths that have one
    # (``WeightsKind.least_depth``); where none fits, the net falls back to dense.
    depths = [d for d in space.depths if not has_skips or (d - 1) % skip_length == 0]
    least = WEIGHT_KINDS[weights].least_depth
    depths = [d for d in depths if d >= least] or depths
    if not depths:
        raise SpecError("Space", "depths", list(space.depths), f"has no depth that skip length {skip_length} fits")
    depth = depths[min(int(depth_u * len(depths)), len(depths) - 1)]
    if depth < least:
        weights = DENSE

    if space.stabilize and norm == "none" and (has_skips or activation in space.unstable_activations):
        norm = stabilizer
    if has_skips and skip_start == "after_norm" and norm == "none":
        skip_start = "after_linear"  # only reachable with stabilize=False

    param = param if d_in >= 2 else "sp"
    scalable = WEIGHT_KINDS[weights].scalable
    if init == "zero" and not (has_skips and scalable and param == "sp"):
        init = "orthogonal"  # zero applies to scalable (dense) SP residual branches only (ArchSpec)
    if param != "gmp":
        gmp_init = "from_sp"  # a GmP initialization applies to GmP specs only (ArchSpec)
    bias_init = random_bias if random_biases else "zero"
    spec = ArchSpec(
        depth=depth,
        width=2,
        d_in=d_in,
        d_out=d_out,
        activation=activation,
        dilation=dilation,
        shift=shift,
        debias=debias,
        norm=norm,
        skip=skip_start if has_skips else "none",
        skip_strength=(1.0 if strength_kind == "one" else strength_u) if has_skips else 1.0,
        skip_length=skip_length if has_skips else 2,
        weights=weights,
        param=param,
        imn=imn,
        init=init,
        gmp_init=gmp_init,
        bias_init=bias_init,
        init_scale=init_scale,
        branch_scale=branch_scale if has_skips and scalable and init != "zero" else 1.0,
        preset=space.name,
    )
    return solve_width(spec, param_budget)


def sample_specs(
    n: int,
    study_seed: int,
    d_in: int,
    d_out: int,
    preset: str | Space | Mapping[str, Any] = DEFAULT_PRESET,
    param_budget: int = DEFAULT_PARAM_BUDGET,
    start: int = 0,
) -> list[ArchSpec]:
    """Architectures ``start .. start + n - 1`` of the study (each one as ``sample_spec`` draws it)."""
    n = check("sample", "n", Integer(0), n)
    return [sample_spec(study_seed, i, d_in, d_out, preset, param_budget) for i in range(start, start + n)]


# The sibling axes and the levels a paired effect compares along each, in the order "A vs B" (``analysis`` takes
# B - A): the declared values of the spec's field, except for skips ("none" or "skips": where they start is one of
# the skip axis' fields, not a level) and IMN (the effective choice, ``ArchSpec.input_mean_norm``). New axes go
# last: a study's plan keeps its order.
SIBLING_LEVELS: dict[str, tuple[str, ...]] = {
    "weights": WEIGHTS,
    "param": PARAMS,
    "norm": NORMS,
    "skip": ("none", "skips"),
    "imn": ("off", "on"),
    "width": ("1x", "2x"),
}
SIBLING_AXES = tuple(SIBLING_LEVELS)
# The axes whose siblings keep the study's parameter budget (their width re-solved): what a study's ``siblings:
# all`` names. A width sibling changes the budget by construction (twice the width, about four times the
# parameters of the width-to-width layers), so a study names it explicitly.
BUDGET_AXES = tuple(a for a in SIBLING_AXES if a != "width")
WIDTH_FACTOR = 2  # a width sibling's hidden width, in multiples of its base's


def siblings(spec: ArchSpec, axis: str, param_budget: int | None = None) -> list[ArchSpec]:
    """The architectures that differ from ``spec`` in exactly one factor, ``axis``.

    * ``weights``: each other weights kind (``WEIGHTS``: dense <-> householder); ``param``: sp <-> gmp; ``norm``:
      each other norm kind;
      ``skip``: skips removed, or, for a spec without skips, added with strength 1 after the linear op
      (length 2 where the depth allows, else 1); ``imn``: input mean normalization switched (the spec's
      effective choice, ``ArchSpec.input_mean_norm``, flipped and written explicitly: ``"on"`` or ``"off"``);
      ``width``: every hidden layer ``WIDTH_FACTOR`` times as wide, the budget not kept (``param_budget`` is
      ignored: re-solving the width would undo the change), so the pair isolates width: whether the best rate
      moves with it (Chen and Ge, *Characteristic Activation Value Analysis*, section 4.3: GmP's initialization
      is independent of the layer's width).
    * ``param`` changes the parameterization only: the ``imn`` field is kept, so with an explicit ``"off"``
      (or ``"on"``) the twins differ in nothing else, while with ``"auto"`` (every spec from before the field,
      and both presets) IMN switches with it, as it always did (``analysis`` labels such pairs so). A GmP
      spec's SP twin has ``gmp_init = "from_sp"`` (the field has no meaning for SP).
    * Everything else (activation, init, depth, the seed the study builds it with) is shared. With
      ``param_budget`` the width is re-solved so every sibling has the study's parameter budget
      (a Householder sibling is then much wider); without it the width is kept.
    * Variants that would be invalid (e.g. no norm for skips that start after the norm), or the same network
      (an ``imn`` twin of a net without an intermediate dense layer), are left out.
    """
    axis = check("siblings", "axis", Choice(SIBLING_AXES), axis)
    changes: list[dict[str, Any]] = []
    if axis == "weights":
        # a dense twin has no dense ends to keep; a Householder twin of a dense net has none either
        changes.extend({"weights": w, "dense_ends": 0} for w in WEIGHTS if w != spec.weights)
    elif axis == "param":
        changes.append({"param": "gmp"} if spec.param == "sp" else {"param": "sp", "gmp_init": "from_sp"})
    elif axis == "imn":
        changes.append({"imn": "off" if spec.input_mean_norm else "on"})
    elif axis == "norm":
        changes.extend({"norm": n} for n in NORMS if n != spec.norm)
    elif axis == "width":
        changes.append({"width": WIDTH_FACTOR * spec.width})
    elif spec.skip != "none":
        changes.append({"skip": "none", "skip_strength": 1.0, "skip_length": 2, "branch_scale": 1.0})
    else:
        changes.append(
            {"skip": "after_linear", "skip_strength": 1.0, "skip_length": 2 if (spec.depth - 1) % 2 == 0 else 1}
        )
    out = []
    for change in changes:
        try:
            sib = spec.replace(**change)
        except SpecError:
            continue
        if axis == "imn" and [layer.imn for layer in sib.layers()] == [layer.imn for layer in spec.layers()]:
            continue  # no layer can subtract its input mean (no intermediate dense layer): the same network
        out.append(solve_width(sib, param_budget) if param_budget is not None and axis != "width" else sib)
    return out
