"""study.Protocol's options beyond E.2 (loss, momentum, schedule, iterations, step_at, selection): declared,
checked in one line, round-tripped, absent from the presets' checkpoint keys."""

from dataclasses import fields

import pytest
import yaml

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import added_later
from archstudy.study import PROTOCOLS, Protocol
from archstudy.study.experiment.protocol import SCHEDULE_FIELDS

# The Householder paper's checkerboard protocol (Yu and Zhang, section 3.1 and Table 2).
HOUSEHOLDER = Protocol(
    loss="mse",
    momentum=0.9,
    batch_size=100,
    schedule="steps",
    iterations=40_000,
    step_at=(0.5, 0.7, 0.9),
    division_factor=5.0,
    selection="test",
    lrs=(0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1),
)
# The fields of the first schema: a protocol that uses none of the options keys its checkpoints with these.
FIRST = [
    "preset",
    "optimizer",
    "lrs",
    "num_lrs",
    "lr_factor",
    "lr_min_scale",
    "batch_size",
    "max_epochs",
    "patience_first",
    "patience",
    "divisions",
    "division_factor",
    "monitor",
    "warmup_epochs",
    "adam_beta1",
    "adam_beta2",
    "adam_eps",
    "edge_runs",
]


def test_the_presets_use_none_of_the_options_and_key_as_before():
    for p in PROTOCOLS.values():
        assert (p.loss, p.momentum, p.schedule, p.iterations, p.step_at, p.selection) == (
            "cross_entropy",
            0.0,
            "plateau",
            None,
            (),
            "monitor",
        )
        assert list(p.canonical()) == FIRST
    assert PROTOCOLS["paper"].selected_by == "val" and PROTOCOLS["long"].selected_by == "train"
    assert sorted(f for f, v in HOUSEHOLDER.canonical().items() if f not in FIRST) == sorted(
        ["loss", "momentum", "schedule", "iterations", "step_at", "selection"]
    )


def test_the_householder_protocol_round_trips_and_divides_where_the_paper_says():
    assert Protocol.of(yaml.safe_load(yaml.safe_dump(HOUSEHOLDER.to_dict()))) == HOUSEHOLDER
    assert HOUSEHOLDER.step_boundaries() == [20_000, 28_000, 36_000]  # the variability paper, B.1
    assert HOUSEHOLDER.selected_by == "test" and HOUSEHOLDER.num_lrs == 10 and HOUSEHOLDER.lrs[-1] == 1.0
    assert HOUSEHOLDER.classes(1) == 2 and HOUSEHOLDER.classes(3) == 3 and Protocol().classes(1) == 1


@pytest.mark.parametrize(
    "kwargs, field, allowed",
    [
        ({"momentum": 0.9, "optimizer": "adam"}, "momentum", "must be 0 unless optimizer = 'sgd'"),
        ({"momentum": 1.0}, "momentum", "[0.0, 1.0)"),
        ({"schedule": "steps"}, "iterations", "must be set"),
        ({"iterations": 100}, "iterations", "unless schedule = 'steps'"),
        ({"step_at": [0.5]}, "step_at", "unless schedule = 'steps'"),
        ({"schedule": "steps", "iterations": 10, "max_epochs": 5}, "max_epochs", "unless schedule = 'plateau'"),
        ({"schedule": "steps", "iterations": 10, "patience": 2}, "patience", "unless schedule = 'plateau'"),
        ({"schedule": "steps", "iterations": 10, "step_at": [0.7, 0.5]}, "step_at", "strictly increasing"),
        ({"loss": "hinge"}, "loss", "'cross_entropy', 'mse'"),
        ({"selection": "val"}, "selection", "'monitor', 'test'"),
    ],
)
def test_bad_options_are_one_line_errors(kwargs, field, allowed):
    with pytest.raises(SpecError) as e:
        Protocol(**kwargs)
    assert e.value.field == field and allowed in str(e.value) and "\n" not in str(e.value)


def test_each_schedule_declares_the_fields_it_reads_and_the_options_are_declared_as_added():
    names = {f for group in SCHEDULE_FIELDS.values() for f in group}
    assert names <= set(Protocol().to_dict())
    assert {f.name for f in fields(Protocol) if added_later(f)} >= {
        "loss",
        "momentum",
        "schedule",
        "iterations",
        "step_at",
        "selection",
    }


def test_steps_without_iterations_names_iterations_not_a_field_the_preset_filled_in():
    """`{preset: quick, schedule: steps}` blamed Protocol.max_epochs = 60 (the quick preset's, not the user's)."""
    with pytest.raises(SpecError) as e:
        Protocol.from_dict({"preset": "quick", "schedule": "steps"})
    assert "Protocol.iterations = None: must be set (an integer >= 1) when schedule = 'steps'" in str(e.value)
