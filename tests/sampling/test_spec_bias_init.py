"""The bias initializations added to appendix C's two (``normal``, ``uniform_fan_in``) and ``householder_bias``:
every existing spec keeps its id, a space draws them only when asked, and asking changes nothing else."""

import hashlib
from collections import Counter

import pytest

from archstudy.sampling import EXTENDED, PAPER, ArchSpec, SpecError, sample_specs

# Ids computed before ``normal``, ``uniform_fan_in`` and ``householder_bias`` existed.
PINNED = [
    (
        ArchSpec(
            depth=4,
            width=10,
            d_in=2,
            d_out=1,
            activation="abs",
            weights="householder",
            bias_init="gaussian",
            init_scale=1.1,
        ),
        "978698821b88917d",
    ),
    (
        ArchSpec(
            depth=7, width=100, d_in=2, d_out=1, init="kaiming", scale_activation=False, preset="han-checkerboard"
        ),
        "467f2212d50b9ac2",
    ),
    (
        ArchSpec(
            depth=21,
            width=30,
            d_in=2,
            d_out=1,
            activation="abs",
            weights="householder",
            dense_ends=1,
            scale_activation=False,
            preset="han-checkerboard",
        ),
        "a58125c4e06e2f9e",
    ),
    (ArchSpec(depth=3, width=16, d_in=40, d_out=3, bias_init="gaussian", param="gmp"), "7886960172de0174"),
]
# sha256 (16 hex digits) of the comma-joined ids of architectures 0..199 of study seed 5 (d_in 21, d_out 3,
# 20,000 parameters), drawn before the fields existed.
DRAWN = {"paper": "6d11a299ce5a9357", "extended": "4a1899d620b6d5e1"}


def _digest(specs):
    return hashlib.sha256(",".join(s.content_id for s in specs).encode()).hexdigest()[:16]


@pytest.mark.parametrize("spec, arch_id", PINNED, ids=[i for _, i in PINNED])
def test_existing_ids_are_unchanged(spec, arch_id):
    assert spec.content_id == arch_id and "householder_bias" not in spec.to_json()
    assert spec.to_dict()["householder_bias"] == "bias_init"  # a row holds every field


@pytest.mark.parametrize("preset", ["paper", "extended"])
def test_the_presets_draw_what_they_drew(preset):
    specs = sample_specs(200, 5, 21, 3, preset, 20_000)
    assert _digest(specs) == DRAWN[preset]
    assert set(Counter(s.bias_init for s in specs)) == {"zero", "gaussian"}


def test_a_space_that_asks_draws_the_new_inits_and_nothing_else_changes():
    for base in (PAPER, EXTENDED):
        space = base.replace(name="biases", random_bias_inits={"normal": 0.5, "uniform_fan_in": 0.5})
        before = sample_specs(300, 1, 21, 3, base, 20_000)
        after = sample_specs(300, 1, 21, 3, space, 20_000)
        drawn = Counter(s.bias_init for s in after)
        assert set(drawn) == {"zero", "normal", "uniform_fan_in"}
        assert abs(drawn["normal"] - drawn["uniform_fan_in"]) < 4 * (300 * 0.25) ** 0.5  # about half each
        for b, a in zip(before, after):  # the coin for random biases and every other field as before
            assert (b.bias_init == "zero") == (a.bias_init == "zero")
            assert b.replace(bias_init="zero", preset="x") == a.replace(bias_init="zero", preset="x")


def test_new_values_are_in_the_id_and_bad_ones_are_one_line():
    base = ArchSpec(depth=5, width=8, d_in=2, d_out=1, weights="householder")
    ids = {
        base.replace(**c).content_id
        for c in (dict(), dict(bias_init="normal"), dict(bias_init="uniform_fan_in"), dict(householder_bias="zero"))
    }
    assert len(ids) == 4
    with pytest.raises(
        SpecError,
        match=r"^ArchSpec\.bias_init = 'kaiming': must be one of 'zero', 'gaussian', "
        r"'normal', 'uniform_fan_in'$",
    ):
        base.replace(bias_init="kaiming")
    with pytest.raises(
        SpecError,
        match=r"^ArchSpec\.householder_bias = 'zero': must stay 'bias_init' unless "
        r"weights = 'householder'$",
    ):
        base.replace(weights="dense", householder_bias="zero")
