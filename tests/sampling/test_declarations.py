"""The declaration mechanism of ``sampling.constraints`` (``declare``, ``Declared``) and the docs' tables of
``sampling.doc_tables``, on a small class of their own (the real classes: tests/study/experiment/
test_declared_objects.py)."""

from dataclasses import dataclass, field

import pytest

from archstudy.sampling.constraints import (
    Boolean,
    Choice,
    Declared,
    Distribution,
    Flag,
    Integer,
    Maybe,
    SpecError,
    declare,
)
from archstudy.sampling.doc_tables import inline, markdown, update_blocks

made = []


def _count():
    made.append(1)
    return len(made)


@dataclass(frozen=True)
class Toy(Declared, where="toy", key="a toy key", keys="toy keys", whole="toy"):
    size: int = declare(Integer(1), doc="how big")
    colour: str = declare(Choice(("red", "blue")), "red", doc="its colour | a pipe")
    mix: tuple = declare(Distribution(Choice(("a", "b"))), (("b", 0.5), ("a", 0.5)), doc="a distribution")
    limit: int | None = declare(
        Maybe(Integer(0)), None, since=3, doc="added later", flag=Flag("the limit (default {default})", "N")
    )
    serial: int = declare(Integer(1), factory=_count, shown="a counter", doc="made by a factory")
    on: bool = declare(Boolean(), True, doc="a switch")

    def _validate(self):  # runs after every field is normalized
        if self.colour == "blue" and self.size > 9:
            raise SpecError(self._where, "size", self.size, "must be <= 9 when colour = 'blue'")


def test_fields_are_normalized_then_related():
    t = Toy(size=3, mix={"a": 0.25, "b": 0.75})
    assert t.mix == (("a", 0.25), ("b", 0.75)) and t.limit is None and t.on is True
    with pytest.raises(SpecError) as e:
        Toy(size=0)
    assert str(e.value) == "toy.size = 0: must be an integer >= 1"
    with pytest.raises(SpecError, match=r"^toy\.size = 10: must be <= 9 when colour = 'blue'$"):
        Toy(size=10, colour="blue")
    with pytest.raises(SpecError, match=r"^toy\.colour = 'green': must be one of 'red', 'blue'$"):
        Toy(size=10, colour="green")  # the field's own constraint first, then the relations


def test_the_dict_form_round_trips_and_refuses_unknown_missing_and_non_mappings():
    t = Toy(size=3, limit=2)
    d = t.to_dict()
    assert d == {"size": 3, "colour": "red", "mix": {"a": 0.5, "b": 0.5}, "limit": 2, "serial": t.serial, "on": True}
    assert Toy.from_dict(d) == t
    with pytest.raises(SpecError) as e:
        Toy.from_dict({**d, "weight": 5})
    assert str(e.value) == "toy.weight = 5: is not a toy key; allowed: size, colour, mix, limit, serial, on"
    with pytest.raises(SpecError, match=r"^toy\.size = None: is required$"):
        Toy.from_dict({"colour": "red"})
    with pytest.raises(SpecError, match=r"^toy\.toy = \[1, 2\]: must be a mapping of toy keys$"):
        Toy.from_dict([1, 2])


def test_the_canonical_form_leaves_out_a_field_added_later_at_its_default():
    t = Toy(size=3, serial=1)
    assert "limit" not in t.canonical() and t.canonical()["serial"] == 1
    assert t.replace(limit=0).canonical()["limit"] == 0


def test_defaults_and_normalize_read_the_declarations():
    assert Toy.default("colour") == "red" and Toy.default("limit") is None
    first = Toy.default("serial")
    assert Toy.default("serial") == first + 1  # a factory's default is made anew
    with pytest.raises(KeyError, match="'size' has no default: it is required"):
        Toy.default("size")
    with pytest.raises(KeyError, match="'weight' is not a toy key"):
        Toy.default("weight")
    assert Toy.normalize("mix", {"b": 1.0, "a": 0.0}) == (("a", 0.0), ("b", 1.0))
    with pytest.raises(SpecError, match=r"^toy\.limit = -1: must be an integer >= 0, or null$"):
        Toy.normalize("limit", -1)
    declared = Toy.declaration("limit")
    assert declared.added_later and declared.flag.option("limit") == "--limit" and not declared.execution
    assert [f for f in Toy.declarations()] == ["size", "colour", "mix", "limit", "serial", "on"]


def test_a_declaration_is_checked_when_it_is_made():
    with pytest.raises(ValueError, match="a default or a factory, not both"):
        declare(Integer(), 1, factory=int, doc="x")
    with pytest.raises(ValueError, match="schema version > 1"):
        declare(Integer(), 1, since=1, doc="x")

    @dataclass(frozen=True)
    class Loose(Declared):
        a: int = declare(Integer(), 1, doc="declared")
        b: int = field(default=2)

    with pytest.raises(TypeError, match=r"Loose\.b is not declared with declare\(\)"):
        Loose()


def test_the_markdown_table_is_one_row_per_field_in_the_constraints_words():
    assert markdown(Toy, {"extra": str.upper}) == "\n".join(
        [
            "| field | allowed | default | since | meaning | extra |",
            "|---|---|---|---|---|---|",
            "| `size` | an integer >= 1 | required |  | how big | SIZE |",
            "| `colour` | one of 'red', 'blue' | `red` |  | its colour \\| a pipe | COLOUR |",
            "| `mix` | map each choice to a probability in [0, 1], the probabilities summing to 1; choices one of 'a', "
            "'b' | `{a: 0.5, b: 0.5}` |  | a distribution | MIX |",
            "| `limit` | an integer >= 0, or null | `null` | 3 | added later | LIMIT |",
            "| `serial` | an integer >= 1 | a counter |  | made by a factory | SERIAL |",
            "| `on` | true or false | `true` |  | a switch | ON |",
        ]
    )
    assert inline({"a": [1, 2.5, None], "b": "", 0.8: True}) == "{a: [1, 2.5, null], b: '', 0.8: true}"


def test_update_blocks_rewrites_each_generated_table_and_refuses_a_doc_without_them():
    head = "<!-- fields of Toy: generated by `make toy` from the declarations -->\n"
    text = "# Toy\n\n" + head + "| stale |\n<!-- end -->\n\nprose\n"
    new = update_blocks(text, {"Toy": "| fresh |"}, "make toy", "toy.md")
    assert new == "# Toy\n\n" + head + "| fresh |\n<!-- end -->\n\nprose\n"
    assert update_blocks(new, {"Toy": "| fresh |"}, "make toy", "toy.md") == new
    with pytest.raises(ValueError, match="toy.md has the generated tables none; expected one of each of Toy"):
        update_blocks("# Toy\n", {"Toy": "| fresh |"}, "make toy", "toy.md")
    with pytest.raises(ValueError, match="toy.md: no table 'Toy'"):
        update_blocks(text, {"Other": "| x |"}, "make toy", "toy.md")
