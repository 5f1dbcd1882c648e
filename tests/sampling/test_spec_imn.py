"""Input mean normalization as its own spec field and sibling axis (``ArchSpec.imn``) and the GmP initialization
of Chen and Ge's section 4.3 (``ArchSpec.gmp_init``): every spec from before keeps its id and its meaning, the
new values are in the id, the sampler draws them last and only when a space asks, siblings change one factor."""

import json
from collections import Counter
from dataclasses import fields

import pytest

from archstudy.sampling import EXTENDED, PAPER, SIBLING_AXES, ArchSpec, SpecError, plan_study, sample_spec, siblings

# Ids computed before ``imn`` and ``gmp_init`` existed (by the code of the previous commit): a study's unit names
# hold them. GmP specs had IMN on their intermediate layers and SP specs none: "auto" keeps exactly that.
PINNED = [
    (
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="relu", param="gmp", bias_init="gaussian"),
        "c5388f2232792f16",
    ),
    (
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="tanh", param="gmp", norm="batch", skip="after_linear"),
        "fbf1d4de45fafadd",
    ),
    (ArchSpec(depth=5, width=8, d_in=4, d_out=3, activation="selu", param="sp", norm="layer"), "5ac4a18674ab86c7"),
]


@pytest.mark.parametrize("spec, arch_id", PINNED, ids=[i for _, i in PINNED])
def test_specs_from_before_the_fields_keep_their_ids_and_their_imn(spec, arch_id):
    assert spec.content_id == arch_id and (spec.imn, spec.gmp_init) == ("auto", "from_sp")
    assert not {"imn", "gmp_init"} & set(json.loads(spec.to_json()))
    # auto: IMN on the intermediate layers of a GmP net (layers 2 .. L-1), never in an SP net
    assert [layer.imn for layer in spec.layers()] == (
        [False, True, True, True, False] if spec.param == "gmp" else [False] * 5
    )


def test_explicit_values_are_in_the_canonical_json_and_the_id():
    sp = PINNED[2][0]
    gmp = PINNED[0][0]
    for spec, change in (
        (sp, {"imn": "on"}),
        (sp, {"imn": "off"}),
        (gmp, {"imn": "off"}),
        (gmp, {"imn": "on"}),
        (gmp, {"gmp_init": "uniform"}),
    ):
        new = spec.replace(**change)
        written = json.loads(new.to_json())
        assert all(written[k] == v for k, v in change.items()) and new.content_id != spec.content_id
        assert ArchSpec.from_dict(written) == new
    # "off" on SP and "on" on GmP are the same network as auto, but a different spec (the id says what was asked)
    assert sp.replace(imn="off").layers() == sp.layers() and gmp.replace(imn="on").layers() == gmp.layers()
    assert [layer.imn for layer in sp.replace(imn="on").layers()] == [False, True, True, True, False]
    assert not any(layer.imn for layer in gmp.replace(imn="off").layers())
    hh = ArchSpec(depth=7, width=8, d_in=4, d_out=3, weights="householder", dense_ends=1, imn="on")
    assert [layer.imn for layer in hh.layers()] == [False, True, False, False, False, True, False]  # dense ends only


@pytest.mark.parametrize(
    "change, allowed",
    [
        (dict(gmp_init="uniform"), "must stay 'from_sp' unless param = 'gmp'"),
        (dict(gmp_init="paper"), "one of 'from_sp', 'uniform'"),
        (dict(imn=True), "one of 'auto', 'off', 'on'"),
    ],
)
def test_bad_values_are_one_line_errors(change, allowed):
    with pytest.raises(SpecError) as e:
        ArchSpec(depth=5, width=8, d_in=4, d_out=3, **change)
    assert allowed in str(e.value) and "\n" not in str(e.value)


def test_siblings_change_exactly_one_factor():
    assert SIBLING_AXES == ("weights", "param", "norm", "skip", "imn", "width")  # new axes go last
    off = ArchSpec(depth=5, width=8, d_in=4, d_out=3, imn="off")
    (gmp,) = siblings(off, "param")
    assert (gmp.param, gmp.imn) == ("gmp", "off") and not any(layer.imn for layer in gmp.layers())
    (back,) = siblings(gmp.replace(gmp_init="uniform"), "param")
    assert back == off  # the SP twin of a GmP spec has no GmP initialization
    auto = ArchSpec(depth=5, width=8, d_in=4, d_out=3)
    (twin,) = siblings(auto, "param")
    assert twin.imn == "auto" and twin.input_mean_norm  # as it always was: IMN switches with GmP under auto
    (on,) = siblings(auto, "imn")
    assert on == auto.replace(imn="on")
    assert siblings(twin, "imn") == [twin.replace(imn="off")]
    assert siblings(ArchSpec(depth=2, width=8, d_in=4, d_out=3), "imn") == []  # no intermediate layer
    assert siblings(ArchSpec(depth=5, width=8, d_in=4, d_out=3, weights="householder"), "imn") == []


def test_the_presets_draw_auto_and_from_sp_and_a_space_that_asks_changes_only_those_fields():
    for spec in [sample_spec(1, i, 40, 3, p, 20_000) for i in range(150) for p in ("paper", "extended")]:
        assert (spec.imn, spec.gmp_init) == ("auto", "from_sp")
    assert PAPER.imns == EXTENDED.imns == (("auto", 1.0),) and PAPER.gmp_inits == (("from_sp", 1.0),)
    space = EXTENDED.replace(name="imn", imns={"off": 0.5, "on": 0.5}, gmp_inits={"uniform": 1.0})
    n = 400
    drawn = [sample_spec(2, i, 40, 3, space, 20_000) for i in range(n)]
    plain = [sample_spec(2, i, 40, 3, "extended", 20_000) for i in range(n)]
    counts = Counter(s.imn for s in drawn)
    assert set(counts) == {"off", "on"} and abs(counts["on"] - n / 2) < 4 * (n / 4) ** 0.5
    assert all(s.gmp_init == ("uniform" if s.param == "gmp" else "from_sp") for s in drawn)
    same = {f.name for f in fields(ArchSpec)} - {"imn", "gmp_init", "preset"}
    for a, b in zip(drawn, plain):
        assert all(getattr(a, k) == getattr(b, k) for k in same)


def test_a_plan_with_the_imn_axis_keeps_the_other_siblings_and_adds_the_imn_twins():
    old_axes = SIBLING_AXES[:4]
    before = list(plan_study(4, 5, 40, 3, "extended", 20_000, old_axes))
    after = list(plan_study(4, 5, 40, 3, "extended", 20_000, SIBLING_AXES))
    assert [p for p in after if p.variant not in ("imn", "width")] == before
    for p in after:
        if p.variant == "imn":
            base = next(b for b in before if b.index == p.index and b.variant == "base")
            assert p.spec.input_mean_norm != base.spec.input_mean_norm and p.seed == base.seed
