"""ArchSpec: validation from the declarations, exact serialization, structure, parameter counts."""

import json
import math
from dataclasses import fields

import pytest

from archstudy.sampling import ArchSpec, SpecError, sample_specs
from archstudy.sampling.constraints import Choice, Distribution, Integer, Real

BASE = dict(depth=9, width=100, d_in=40, d_out=3)


def _invalid_cases():
    """Every field's declared invalid examples (scikit-learn style: negatives generated from declarations)."""
    for f in fields(ArchSpec):
        for bad in f.metadata["constraint"].invalid_examples():
            yield pytest.param(f.name, bad, id=f"{f.name}={bad!r}")


@pytest.mark.parametrize("name,bad", list(_invalid_cases()))
def test_every_declared_constraint_rejects_its_invalid_examples(name, bad):
    with pytest.raises(SpecError) as e:
        ArchSpec(**{**BASE, name: bad})
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"ArchSpec.{name} = {bad!r}: ")


@pytest.mark.parametrize(
    "change,field,allowed",
    [
        (dict(depth=1), "depth", "integer >= 2"),
        (dict(width=0), "width", "integer >= 1"),
        (dict(activation="swish"), "activation", "one of 'relu'"),
        (dict(skip="after_norm"), "skip", "needs norm"),
        (dict(skip="after_linear", depth=8), "skip_length", "must divide depth - 1 = 7"),
        (dict(skip_strength=0.5), "skip_strength", "when skip = 'none'"),
        (dict(weights="householder", depth=2), "weights", "depth >= 3"),
        (dict(param="gmp", d_in=1), "d_in", ">= 2"),
        (dict(weights="householder", skip="after_linear", branch_scale=0.01), "branch_scale", "householder"),
        (dict(dilation=0.0), "dilation", "(0.0, inf)"),
    ],
)
def test_named_mistakes_give_one_line_errors(change, field, allowed):
    with pytest.raises(SpecError) as e:
        ArchSpec(**{**BASE, **change})
    assert e.value.field == field
    assert allowed in str(e.value) and "\n" not in str(e.value)


def test_defaults_are_the_plain_choice():
    s = ArchSpec(**BASE, activation="relu", norm="batch")
    assert (s.dilation, s.shift, s.debias, s.skip, s.weights, s.param, s.bias_init, s.init_scale) == (
        1.0,
        0.0,
        False,
        "none",
        "dense",
        "sp",
        "zero",
        1.0,
    )


def test_json_round_trip_is_exact_for_sampled_specs():
    for spec in sample_specs(300, 5, 40, 3, "extended") + sample_specs(100, 5, 334, 10, "paper"):
        again = ArchSpec.from_dict(json.loads(spec.to_json()))
        assert again == spec and again.content_id == spec.content_id
        assert ArchSpec.from_dict(spec.to_dict()) == spec


def test_from_dict_rejects_unknown_and_missing_fields():
    d = ArchSpec(**BASE).to_dict()
    with pytest.raises(SpecError, match="is not a field"):
        ArchSpec.from_dict({**d, "colour": "red"})
    d.pop("width")
    with pytest.raises(SpecError, match="width = None: is required"):
        ArchSpec.from_dict(d)


def test_content_id_is_stable_and_sensitive():
    s = ArchSpec(depth=9, width=100, d_in=40, d_out=3, activation="relu", norm="batch")
    # Golden value: the id is a file name in every stored study; it must never change silently.
    assert s.content_id == "303a461cbcab1481"
    assert s.replace(shift=0.2).content_id != s.content_id
    assert len({sp.content_id for sp in sample_specs(500, 0, 40, 3)}) == 500


def test_numpy_scalars_are_accepted_as_their_python_values():
    np = pytest.importorskip("numpy")
    s = ArchSpec(depth=np.int64(9), width=np.int64(100), d_in=40, d_out=3, debias=np.bool_(True), shift=np.float64(0.2))
    assert type(s.depth) is int and type(s.debias) is bool and type(s.shift) is float


def _count_by_hand(depth, width, d_in, d_out, householder=False):
    hidden = (depth - 2) * (2 * width if householder else width * (width + 1))
    return width * (d_in + 1) + hidden + d_out * (width + 1)


@pytest.mark.parametrize("weights", ["dense", "householder"])
@pytest.mark.parametrize("depth", [3, 4, 9, 49])
def test_num_params_formula(weights, depth):
    s = ArchSpec(depth=depth, width=37, d_in=40, d_out=3, weights=weights)
    assert s.num_params == _count_by_hand(depth, 37, 40, 3, weights == "householder")
    assert s.replace(param="gmp").num_params == s.num_params  # n - 1 angles + lambda + r = n + 1 per neuron


def test_layers_and_skips_follow_appendix_c():
    s = ArchSpec(
        depth=7,
        width=10,
        d_in=4,
        d_out=2,
        norm="layer",
        skip="after_norm",
        skip_length=3,
        weights="householder",
        param="gmp",
    )
    kinds = [layer.kind for layer in s.layers()]
    assert kinds == ["gmp"] + ["householder"] * 5 + ["dense"]  # input dense (GmP), output plain linear
    assert [layer.activation for layer in s.layers()] == [True] * 6 + [False]
    assert s.layers()[-1].norm == "none" and s.layers()[0].norm == "layer"
    assert [(k.start, k.end, k.project) for k in s.skips()] == [(1, 4, False), (4, 7, True)]
    assert [layer.in_branch for layer in s.layers()] == [False] + [True] * 6
    assert not any(layer.imn for layer in s.layers())  # Householder layers are not GmP neurons
    g = s.replace(weights="dense")
    assert [layer.imn for layer in g.layers()] == [False] + [True] * 5 + [False]
    assert s.activation_units == 6 * 10


def test_constraint_messages_are_uniform():
    assert Integer(2).describe() == "must be an integer >= 2"
    assert Real(0.0, 1.0).describe() == "must be a finite number in [0.0, 1.0]"
    assert "probability" in Distribution(Choice(("a", "b"))).describe()
    assert math.isclose(sum(p for _, p in Distribution(Choice(("a", "b"))).normalize({"a": 0.25, "b": 0.75})), 1.0)
