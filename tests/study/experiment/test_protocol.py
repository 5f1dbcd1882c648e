"""study.Protocol: the presets say what E.2 says, validation gives one-line errors, serialization round-trips."""

import json
import math
from dataclasses import fields

import pytest
import yaml

from archstudy.sampling import SpecError
from archstudy.study import PROTOCOLS, Protocol


def test_paper_preset_is_appendix_e2():
    p = PROTOCOLS["paper"]
    assert (p.optimizer, p.batch_size, p.num_lrs, p.lr_factor, p.lr_min_scale) == ("sgd", 250, 40, 3.0, 1e-8)
    assert (p.patience_first, p.patience, p.divisions, p.division_factor) == (10, 5, 10, 3.0)
    assert p.monitor == "val" and p.max_epochs is None and p.lrs is None and p.warmup_epochs == 0
    assert p.edge_runs == 5
    rates = p.rates(2e-9)
    assert len(rates) == 40 and rates[0] == 2e-9
    assert all(b / a == pytest.approx(3.0, rel=1e-14) for a, b in zip(rates, rates[1:]))
    assert Protocol() == p.replace(preset="custom")


def test_variants_change_only_what_the_paper_changes():
    paper = PROTOCOLS["paper"].to_dict()
    diff = {
        name: {k: v for k, v in PROTOCOLS[name].to_dict().items() if paper[k] != v}
        for name in ("adam", "long", "quick")
    }
    assert diff["adam"] == {"preset": "adam", "optimizer": "adam", "warmup_epochs": 4}
    assert diff["long"] == {"preset": "long", "num_lrs": 60, "lr_min_scale": 1e-16, "monitor": "train"}
    q = PROTOCOLS["quick"]
    assert q.max_epochs is not None and q.num_lrs < 40
    assert set(diff["quick"]) <= {"preset", "num_lrs", "lr_factor", "lr_min_scale", "max_epochs", "edge_runs"}


def test_quick_rates_are_members_of_the_paper_series():
    lr_min = 3.7e-7
    paper = PROTOCOLS["paper"].rates(lr_min)
    for r in PROTOCOLS["quick"].rates(lr_min):
        k = math.log(r / lr_min, 3)
        assert abs(k - round(k)) < 1e-9 and 0 <= round(k) < 40
        assert r == pytest.approx(paper[round(k)], rel=1e-12)


def test_long_preset_starts_eight_orders_lower_and_spans_60_rates():
    rates = PROTOCOLS["long"].rates(5e-17)  # lr_min measured at scale 1e-16
    assert len(rates) == 60 and rates[-1] / rates[0] == pytest.approx(3.0**59)


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_round_trip_through_dict_json_and_yaml(name):
    p = PROTOCOLS[name]
    assert Protocol.from_dict(p.to_dict()) == p
    assert Protocol.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert Protocol.of(yaml.safe_load(yaml.safe_dump(p.to_dict()))) == p
    assert Protocol.of(name) is p and Protocol.of(p) is p


def test_explicit_rates_override_the_series_and_set_the_count():
    p = Protocol(lrs=[1e-3, 1e-2, 0.1], max_epochs=5)
    assert p.num_lrs == 3 and p.lrs == (1e-3, 1e-2, 0.1)
    assert p.rates(123.0) == [1e-3, 1e-2, 0.1]
    assert Protocol.from_dict(yaml.safe_load(yaml.safe_dump(p.to_dict()))) == p
    assert all(p.is_edge(k) for k in range(3))  # three rates: each is among the five lowest


def test_a_partial_mapping_starts_from_its_preset():
    p = Protocol.of({"preset": "quick", "max_epochs": 7})
    assert p == PROTOCOLS["quick"].replace(max_epochs=7)
    assert Protocol.of({"max_epochs": 7}) == Protocol(max_epochs=7)


def test_edge_flags_the_five_lowest_and_highest_indices():
    p = PROTOCOLS["paper"]
    assert [k for k in range(40) if p.is_edge(k)] == [0, 1, 2, 3, 4, 35, 36, 37, 38, 39]


@pytest.mark.parametrize("f", [f for f in fields(Protocol)], ids=lambda f: f.name)
def test_every_field_rejects_its_invalid_values_in_one_line(f):
    for bad in f.metadata["constraint"].invalid_examples():
        with pytest.raises(SpecError) as e:
            Protocol(**{f.name: bad})
        msg = str(e.value)
        assert msg.startswith(f"Protocol.{f.name} = ") and "\n" not in msg and "must" in msg


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"warmup_epochs": 4}, "warmup_epochs"),  # SGD has no running averages to warm up
        ({"lrs": [0.1, 0.01]}, "lrs"),
        ({"lrs": [0.1, float("inf")]}, "lrs"),
        ({"monitor": "test"}, "monitor"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"max_epochs": 0}, "max_epochs"),
    ],
)
def test_relations_and_values_are_checked(kwargs, field):
    with pytest.raises(SpecError, match=rf"^Protocol\.{field} = "):
        Protocol(**kwargs)


def test_unknown_names_are_one_line_errors():
    with pytest.raises(SpecError, match=r"^Protocol\.preset = 'fast': must be one of 'paper', 'adam', 'long', 'quick'"):
        Protocol.of("fast")
    with pytest.raises(SpecError, match=r"^Protocol\.epochs = 3: is not a field of Protocol"):
        Protocol.of({"epochs": 3})
    with pytest.raises(SpecError, match=r"^Protocol\.protocol = 3"):
        Protocol.of(3)


def test_a_num_lrs_that_contradicts_lrs_is_refused():
    """`{num_lrs: 2, lrs: [0.1, 0.2, 0.3]}` ran 3 rates without a word: num_lrs is len(lrs) when lrs is given."""
    with pytest.raises(SpecError, match=r"^Protocol\.num_lrs = 2: must be len\(lrs\) = 3 when lrs is given"):
        Protocol.of({"num_lrs": 2, "lrs": [0.1, 0.2, 0.3]})
    with pytest.raises(SpecError, match=r"^Protocol\.num_lrs = 2: "):
        Protocol.of({"preset": "quick", "num_lrs": 2, "lrs": [0.1]})
    assert Protocol.of({"num_lrs": 3, "lrs": [0.1, 0.2, 0.3]}).num_lrs == 3  # agreeing (a stored protocol)
    assert Protocol.of({"preset": "quick", "lrs": [0.1, 0.2]}).num_lrs == 2  # the preset's 8 is no contradiction


def test_an_unknown_preset_inside_a_mapping_is_refused_as_at_the_top_level():
    """`{preset: nosuch, num_lrs: 2}` took the paper's values for every other field; a stored protocol (every
    field named) keeps its label, as a reproduction's ``han-checkerboard`` is."""
    top = r"^Protocol\.preset = '{}': must be one of 'paper', 'adam', 'long', 'quick'"
    with pytest.raises(SpecError, match=top.format("nosuch")):
        Protocol.of({"preset": "nosuch", "num_lrs": 2})
    with pytest.raises(SpecError, match=top.format("nosuch")):
        Protocol.of("nosuch")
    assert Protocol.of({"preset": "custom", "num_lrs": 2}).num_lrs == 2
    labelled = Protocol(preset="han-checkerboard", schedule="steps", iterations=5)
    assert Protocol.of(labelled.to_dict()) == Protocol.of(labelled.canonical()) == labelled
