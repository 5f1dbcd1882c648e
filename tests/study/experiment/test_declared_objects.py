"""Every declared object (``ArchSpec``, ``Space``, ``StudyConfig``, ``Resources``, ``Protocol``, ``MetricOptions``) from
its declarations alone: one bad value per constraint example, per field, each refused in one line that names
where.field, the value and what is allowed; unknown and missing keys; the dict and YAML round trip; the
defaults. Negative cases are generated (``Constraint.invalid_examples``), as scikit-learn does."""

import pytest
import yaml

from archstudy.sampling import ArchSpec, Space, SpecError
from archstudy.sampling.constraints import Declared, bounded_repr
from archstudy.study.experiment.config import Resources, StudyConfig
from archstudy.study.experiment.metric_options import MetricOptions
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.execution.cluster import WHERE as CLUSTER, Scale

# A valid object of each declared class: its required keys (every other field at its default).
VALID = {
    ArchSpec: {"depth": 9, "width": 100, "d_in": 40, "d_out": 3},
    Space: {},
    StudyConfig: {"dataset": "digits", "architectures": 2},
    Resources: {},
    Protocol: {},
    MetricOptions: {},
    Scale: {},
}
WHERE = {
    ArchSpec: "ArchSpec",
    Space: "Space",
    StudyConfig: "study",
    Resources: "study.resources",
    Protocol: "Protocol",
    MetricOptions: "MetricOptions",
    Scale: CLUSTER,
}


def _declared_classes(base=Declared):
    for cls in base.__subclasses__():
        if cls.__module__.startswith("archstudy."):
            yield cls
        yield from _declared_classes(cls)


def test_every_declared_class_is_covered_here():
    assert set(_declared_classes()) == set(VALID)


def _invalid_cases():
    for cls in VALID:
        for name, declared in cls.declarations().items():
            for bad in () if declared.constraint is None else declared.constraint.invalid_examples():
                yield pytest.param(cls, name, bad, id=f"{cls.__name__}.{name}={bad!r}")


@pytest.mark.parametrize("cls, name, bad", list(_invalid_cases()))
def test_every_invalid_example_of_every_field_is_one_line_naming_field_value_and_what_is_allowed(cls, name, bad):
    with pytest.raises(SpecError) as e:
        cls(**{**VALID[cls], name: bad})
    allowed = cls.declaration(name).constraint.describe()
    assert str(e.value) == f"{WHERE[cls]}.{name} = {bounded_repr(bad)}: {allowed}"
    assert (e.value.where, e.value.field, e.value.value, e.value.allowed) == (WHERE[cls], name, bad, allowed)


@pytest.mark.parametrize("cls", list(VALID), ids=lambda c: c.__name__)
def test_the_dict_form_round_trips_and_refuses_unknown_keys_missing_keys_and_non_mappings(cls):
    obj = cls(**VALID[cls])
    assert cls.from_dict(obj.to_dict()) == obj == cls.from_dict(yaml.safe_load(yaml.safe_dump(obj.to_dict())))
    assert list(obj.to_dict()) == list(cls.declarations())
    with pytest.raises(SpecError) as e:
        cls.from_dict({**VALID[cls], "colour": "red"})
    assert str(e.value).startswith(f"{WHERE[cls]}.colour = 'red': is not ")
    assert str(e.value).endswith("; allowed: " + ", ".join(cls.declarations()))
    for name in VALID[cls]:
        assert cls.declaration(name).required
        with pytest.raises(SpecError) as e:
            cls.from_dict({k: v for k, v in VALID[cls].items() if k != name})
        assert str(e.value) == f"{WHERE[cls]}.{name} = None: is required"
    with pytest.raises(SpecError) as e:
        cls.from_dict([1, 2])
    assert str(e.value).startswith(f"{WHERE[cls].partition('.')[0]}.") and "must be" in str(e.value)


@pytest.mark.parametrize("cls", list(VALID), ids=lambda c: c.__name__)
def test_a_missing_key_means_its_declared_default(cls):
    obj = cls(**VALID[cls])
    for name, declared in cls.declarations().items():
        if name in VALID[cls] or declared.shown is not None:  # required, or made when the object is (a time)
            continue
        default = cls(**VALID[cls], **{name: cls.default(name)})
        assert getattr(default, name) == getattr(obj, name), name
