"""The change walks of docs/layout.md for a new layer family, a new dataset and a new activation: every table that
dispatches on a declared value is complete for every value, because it is derived from the one declaration (the
same object, or computed from it) or takes the value from a registration beside the code it names; and every
registry (``sampling.registry``: commands, figures, metric functions, dataset loaders, layer families,
reproductions) holds the same entries in the same order whatever the order its modules are imported in.

* layer family (``ArchSpec.weights``): the families, the GPU compile thresholds, the sampler's choices and
  depth rule, the siblings and their levels, the initialization; no module outside the family's own files
  (``sampling/spec.py``, its module in ``study/nn/``, the registry ``study/nn/families.py``) names a weights value
  to dispatch on; a family's options are spec fields of a later version, refused where the spec has no layer of it;
  a space draws exactly the values it gives a probability (a sampled family or activation is one in
  ``sampling/space.py``);
* dataset: every declared dataset has exactly one loader, registered by its loader module, and a new declaration
  with a registered loader loads and reports its status with no other file touched;
* activation: every declared activation has its ``Base``, and NWOT's codes come from its declared kinks.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from archstudy.analysis import columns
from archstudy.sampling import EXTENDED, PAPER, ArchSpec, Layer, Space, SpecError, sample_specs, siblings, space
from archstudy.sampling.spec import ACTIVATIONS, DENSE, PARAMS, SPEC_VERSION, WEIGHT_KINDS, WEIGHTS
from archstudy.study import build_network
from archstudy.study.datasets import DATASETS, Dataset, load_dataset, loaders, status
from archstudy.study.datasets.dataset import make_split
from archstudy.study.experiment import datasets as declared
from archstudy.study.metrics.proxies import activation_codes
from archstudy.study.nn import activations, families
from archstudy.study.nn.family import Family
from archstudy.study.nn.layers import Dense
from archstudy.study.training import compiled

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parents[1]


def _net_of(weights: str, param: str = "sp") -> ArchSpec:
    """A net whose width-to-width layers are of the kind ``weights`` (depth 7: 5 of them)."""
    return ArchSpec(depth=7, width=8, d_in=5, d_out=3, weights=weights, param=param, bias_init="gaussian")


# -- a new layer family ------------------------------------------------------------------------------------------
def test_every_weights_value_reaches_the_families_the_compile_rule_and_the_initialization():
    for weights in WEIGHTS:
        for param in PARAMS:
            spec = _net_of(weights, param)
            kinds = {layer.kind for layer in spec.layers()}
            assert kinds <= set(families.FAMILIES), (weights, param)
            least = compiled.cuda_compile_min_layer_steps(spec)
            assert least == min(families.family(k).cuda_compile_min_layer_steps for k in kinds) > 0
            net = build_network(spec, seed=1)  # every family initializes its own tensors
            assert all(torch.isfinite(p).all() for p in net.parameters())
        if WEIGHT_KINDS[weights].replaces:
            assert weights in kinds  # its layers are of its own family


def test_a_new_family_gets_the_declared_default_compile_threshold(monkeypatch):
    """A family that declares no threshold of its own trains under the default on a GPU (the table keyed by
    ``spec.weights`` raised KeyError for any value but dense and householder)."""

    class Butterfly(Dense):
        kind = "butterfly"
        cuda_graph = Family.cuda_graph  # as a family that declares no step of its own

    monkeypatch.setitem(families.FAMILIES, "butterfly", Butterfly)
    layers = (
        Layer(1, "dense", 5, 8, "none", True, False, False),
        Layer(2, "butterfly", 8, 8, "none", True, False, True),
        Layer(3, "dense", 8, 3, "none", False, False, True),
    )
    spec = SimpleNamespace(weights="butterfly", depth=3, layers=lambda: layers)
    assert compiled.cuda_compile_min_layer_steps(spec) == Family.cuda_compile_min_layer_steps
    least = Family.cuda_compile_min_layer_steps
    assert compiled.choose(spec, torch.device("cuda"), least * 100, 100).kind == "compiled"  # 3 x 100 layer-steps
    assert compiled.choose(spec, torch.device("cuda"), least * 10, 100).kind == "eager"


def test_the_sampler_and_the_analysis_take_the_weights_values_from_their_declaration():
    assert ArchSpec.declarations()["weights"].constraint.values is WEIGHTS
    assert Space.declarations()["weights"].constraint.choices.values is WEIGHTS
    assert space.SIBLING_LEVELS["weights"] is WEIGHTS and columns.SIBLING_LEVELS is space.SIBLING_LEVELS
    assert space.SIBLING_AXES == tuple(space.SIBLING_LEVELS)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_the_sampler_draws_each_weights_value_where_its_layers_fit(weights):
    """A space that draws only ``weights`` over depths 2..4 (no skips): the value where the depth has its layers
    (``least_depth``), the plain kind where no depth does; its siblings along ``weights`` are every other value
    whose layers the depth has."""
    only = Space(
        name="only", depths=(2, 3, 4), weights=((weights, 1.0),), params=(("sp", 1.0),), skip_strengths=(("none", 1.0),)
    )
    least = WEIGHT_KINDS[weights].least_depth
    for spec in sample_specs(40, 3, 6, 3, only, 2000):
        assert spec.weights == weights and spec.depth >= least
        others = {w for w in WEIGHTS if w != weights and WEIGHT_KINDS[w].least_depth <= spec.depth}
        assert {s.weights for s in siblings(spec, "weights")} == others
    nowhere = only.replace(depths=(2,))
    assert {s.weights for s in sample_specs(10, 3, 6, 3, nowhere, 2000)} == ({weights} if least <= 2 else {DENSE})


def _dispatches(path: Path, values: tuple[str, ...], plain: str) -> list[str]:
    """Where the code of ``path`` names weights values to dispatch on: a comparison with or a dict keyed by a
    value other than the plain one, or a hand-written enumeration of two values or more (docstrings and
    comments are not code)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            named = [o.value for o in (node.left, *node.comparators) if isinstance(o, ast.Constant)]
            out += [f"line {node.lineno}: compares with {v!r}" for v in named if v in values and v != plain]
        elif isinstance(node, ast.Dict):
            out += [
                f"line {node.lineno}: keyed by {k.value!r}"
                for k in node.keys
                if isinstance(k, ast.Constant) and k.value in values and k.value != plain
            ]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            named = {e.value for e in node.elts if isinstance(e, ast.Constant)} & set(values)
            if len(named) >= 2:
                out.append(f"line {node.lineno}: enumerates {sorted(named)}")
    return out


def test_a_new_layer_family_touches_only_the_spec_its_module_and_the_registry():
    """The walk of docs/layout.md, read from the code: outside ``sampling/spec.py``, the families' registry and
    each family's own module, no module of the library or the analysis dispatches on a weights value."""
    own = {"sampling/spec.py", "study/nn/families.py"}
    own |= {f.__module__.removeprefix("archstudy.").replace(".", "/") + ".py" for f in families.FAMILIES.values()}
    found = {}
    for package in ("sampling", "study", "analysis"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if where not in own and (hits := _dispatches(path, WEIGHTS, DENSE)):
                found[where] = hits
    assert not found


# The fields of the spec's first schema: every field added later (a family's option) declares ``since=``, the latest
# ``SPEC_VERSION``; a spec written before the field existed keeps its id (``Declared.canonical``).
FIRST_SPEC_FIELDS = (
    "depth",
    "width",
    "d_in",
    "d_out",
    "activation",
    "dilation",
    "shift",
    "debias",
    "norm",
    "skip",
    "skip_strength",
    "skip_length",
    "weights",
    "param",
    "bias_init",
    "init_scale",
    "branch_scale",
    "preset",
)


def test_a_spec_field_added_later_declares_its_version_and_the_spec_version_is_the_latest():
    declared = ArchSpec.declarations()
    assert tuple(n for n, d in declared.items() if not d.added_later) == FIRST_SPEC_FIELDS
    assert max(d.since for d in declared.values()) == SPEC_VERSION


FAMILY_OPTIONS = [
    (n, k) for n in ArchSpec.declarations() for k in families.FAMILIES if k != DENSE and n.startswith(f"{k}_")
]


@pytest.mark.parametrize("option, kind", FAMILY_OPTIONS)
def test_a_family_s_option_away_from_its_default_needs_a_layer_of_the_family(option, kind):
    """An option of a family (a spec field named after its kind) is refused, naming the field, on a spec without a
    layer of it (``ArchSpec._validate``'s cross-rules), and accepted on one with."""
    declared = ArchSpec.declarations()[option]
    assert declared.added_later  # a field of a later schema: specs written before keep their ids
    other = next(v for v in declared.constraint.values if v != declared.default)
    plain = _net_of(DENSE)
    with pytest.raises(SpecError, match=f"{option} = {other!r}: must stay {declared.default!r} unless"):
        plain.replace(**{option: other})
    having = next(_net_of(w, p) for w in WEIGHTS for p in PARAMS if kind in {x.kind for x in _net_of(w, p).layers()})
    assert getattr(having.replace(**{option: other}), option) == other


@pytest.mark.parametrize("field, declared", [("activation", "activations"), ("weights", "weights")])
def test_a_space_draws_exactly_the_values_it_gives_a_probability(field, declared):
    """A sampled activation or layer family is one with a probability in a space of ``sampling/space.py``; a
    declared value that no space gives one (the linear activation) is never drawn."""
    for space_ in (PAPER, EXTENDED):
        given = {value for value, p in getattr(space_, declared) if p > 0}
        assert {getattr(s, field) for s in sample_specs(200, 0, 40, 3, space_, 20_000)} == given, space_.name
    assert "linear" in ACTIVATIONS and all("linear" not in dict(s.activations) for s in (PAPER, EXTENDED))


# -- a new dataset -------------------------------------------------------------------------------------------------
def test_every_declared_dataset_has_exactly_one_loader_and_nothing_copies_its_declaration():
    assert set(loaders.LOADERS) == set(declared.DATASET_NAMES) and len(loaders.LOADERS) == len(declared.DECLARED)
    assert DATASETS is declared.DECLARED  # the declarations themselves, no mirror of their fields
    assert all(isinstance(v, loaders.Loader) and callable(v.load) for v in loaders.LOADERS.values())
    assert "loader" not in {f.name for f in fields(declared.DatasetDeclaration)}  # no "module:function" string


def test_a_new_dataset_is_its_declaration_and_its_registered_loader(monkeypatch, tmp_path):
    """A declaration and a loader registered against its name (what its loader module does at import): the
    dataset loads, with its declared option checked, and ``archstudy datasets`` reports where its file is."""
    toy = declared.DatasetDeclaration(
        "toy", "files", "two points per class", 2, 1, "4/2/2", 0.45, "ours", reads_root=True
    )
    monkeypatch.setitem(declared.DECLARED, "toy", toy)

    def load(seed: int, root: Path | None) -> Dataset:
        x = np.arange(8, dtype=np.float64)[:, None] + seed
        y = np.array([0, 1] * 4)
        return Dataset(
            "toy",
            make_split(x[:4], y[:4]),
            make_split(x[4:6], y[4:6]),
            make_split(x[6:], y[6:]),
            d_in=1,
            n_classes=2,
            meta={"root": str(root)},
        )

    def find(root: Path | None) -> tuple[bool, str]:
        return (root is not None and (root / "toy.txt").is_file(), f"toy.txt in {root}")

    with pytest.raises(LookupError, match=r"registers a loader for \['toy'\]"):
        loaders.check_complete()
    loaders.register("toy", load, find)
    try:
        loaders.check_complete()
        data = load_dataset("toy", seed=2, root=tmp_path)
        assert data.train.x[0, 0].item() == 2.0 and data.meta["root"] == str(tmp_path)
        assert status("toy", tmp_path) == (False, f"toy.txt in {tmp_path}")
        (tmp_path / "toy.txt").write_text("")
        assert status("toy", tmp_path) == (True, f"toy.txt in {tmp_path}")
    finally:
        del loaders.LOADERS["toy"]


# -- a new activation ----------------------------------------------------------------------------------------------
def test_every_activation_has_its_declaration_and_its_kinks_reach_nwot(monkeypatch):
    assert set(activations.BASES) == set(ACTIVATIONS)
    spec = ArchSpec(depth=2, width=12, d_in=4, d_out=2, activation="abs", shift=0.2, bias_init="gaussian")
    net = build_network(spec, seed=0)
    x = torch.randn(10, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    u = 1.0 * (x @ net.linears[0].weight[0].T + net.linears[0].bias[0]).detach() + 0.2  # d s + t
    assert torch.equal(activation_codes(net, x), (u > 0).long())
    moved = activations.Base("abs", torch.abs, kinks=(0.5,), homogeneous=True)  # the declaration, moved
    monkeypatch.setitem(activations.BASES, "abs", moved)
    assert torch.equal(activation_codes(net, x), (u > 0.5).long())


# -- every registry, whatever the import order -------------------------------------------------------------------
REGISTRIES = {  # kind -> (module, name) of its registry
    "commands": ("archstudy.study.cli.commands", "COMMANDS"),
    "figures": ("archstudy.analysis.figures.base", "DECLARED"),
    "comparison figures": ("archstudy.analysis.figures.base", "DECLARED_COMPARISONS"),
    "metric functions": ("archstudy.study.metrics.registry", "MEASURES"),
    "dataset loaders": ("archstudy.study.datasets.loaders", "LOADERS"),
    "layer families": ("archstudy.study.nn.families", "FAMILIES"),
    "reproductions": ("archstudy.study.reproduce.reproduction", "REPRODUCTIONS"),
}
# Imports the modules named on its command line in that order, then prints every registry's names in order.
_READ_REGISTRIES = """
import importlib, json, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
registries = json.loads(sys.argv[1])
print(json.dumps({k: list(getattr(importlib.import_module(m), a)) for k, (m, a) in registries.items()}))
"""


def _registering_modules() -> list[str]:
    """Every module of the registries' packages (their private ones aside, which no registry imports)."""
    packages = {importlib.import_module(m).__package__ for m, _ in REGISTRIES.values()}
    return sorted(
        f"{p}.{m.name}"
        for p in packages
        for m in pkgutil.iter_modules(importlib.import_module(p).__path__)
        if not m.name.startswith("_")
    )


def test_every_registry_is_the_same_in_any_import_order():
    """In a fresh process, every registering module imported first, in the reverse order (each package's leaf
    modules before its registry, the last package first): the same names in the same order as here."""
    modules = _registering_modules()[::-1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    found = subprocess.run(
        [sys.executable, "-c", _READ_REGISTRIES, json.dumps(REGISTRIES), *modules],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr[-2000:]
    here = {k: list(getattr(importlib.import_module(m), a)) for k, (m, a) in REGISTRIES.items()}
    assert json.loads(found.stdout) == here
    assert here["commands"][:3] == ["run", "resume", "status"] and here["reproductions"][0] == "nlc-table1"
