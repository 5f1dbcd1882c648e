"""sampling.registry: a registry holds what the modules of its package register, each name once, in the declared
order whatever the order of the registrations, and it imports every module of its package (but a private one) when
first read."""

from __future__ import annotations

import itertools
import sys
import textwrap

import pytest

from archstudy.sampling.registry import Registry, as_defined

PACKAGE = "archstudy.sampling"  # a package whose modules register nothing here: the scan finds none
# (name, module, order) as three modules of a package would register them
REGISTRATIONS = [("b", "p.one", 20), ("a", "p.two", 20), ("c", "p.one", 10), ("d", "p.three", 30)]


def _filled(registrations, order=None) -> Registry[str]:
    registry: Registry[str] = Registry("thing", PACKAGE) if order is None else Registry("thing", PACKAGE, order=order)
    for name, module, place in registrations:
        registry.register(name, name.upper(), module=module, order=place)
    return registry


def test_the_order_is_the_declared_one_whatever_the_order_of_the_registrations():
    for registrations in itertools.permutations(REGISTRATIONS):
        assert list(_filled(registrations).items()) == [("c", "C"), ("a", "A"), ("b", "B"), ("d", "D")]


def test_as_defined_is_each_module_s_registrations_in_the_order_it_made_them():
    for modules in itertools.permutations(["p.one", "p.two", "p.three"]):
        registrations = [(n, m, o) for m in modules for (n, mm, o) in REGISTRATIONS if mm == m]
        assert list(_filled(registrations, order=as_defined)) == ["b", "c", "d", "a"]  # p.one's b before its c


def test_a_name_is_registered_once_and_a_stand_in_takes_the_place_of_what_it_replaces():
    registry = _filled(REGISTRATIONS)
    with pytest.raises(ValueError, match=r"^thing 'a' is declared twice: in p.two and in p.four$"):
        registry.register("a", "again", module="p.four", order=0)
    assert registry["a"] == "A" and len(registry) == 4
    registry["a"] = "stand-in"
    assert list(registry.items())[1] == ("a", "stand-in")
    del registry["a"]
    assert "a" not in registry and list(registry) == ["c", "b", "d"]
    registry["a"] = "back"  # as monkeypatch puts a deleted entry back: in its own place
    assert list(registry) == ["c", "a", "b", "d"]
    with pytest.raises(KeyError):
        registry["e"]
    with pytest.raises(TypeError, match="the thing registry needs the package"):
        Registry("thing", None)


def test_the_first_read_imports_every_module_of_the_package_but_the_private_ones(tmp_path, monkeypatch):
    package = tmp_path / "registry_test_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kinds.py").write_text(
        "from archstudy.sampling.registry import Registry\n\nKINDS = Registry('kind', __package__)\n"
    )
    for name in ("first", "second"):
        (package / f"{name}.py").write_text(
            textwrap.dedent(f"""
                from .kinds import KINDS

                KINDS.register("{name}", len("{name}"), module=__name__, order={len(name)})
                """)
        )
    (package / "__main__.py").write_text("raise SystemExit('a private module is never imported')\n")
    (package / "_private.py").write_text("raise SystemExit('a private module is never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        from registry_test_package.kinds import KINDS

        assert "registry_test_package.first" not in sys.modules
        assert dict(KINDS) == {"first": 5, "second": 6}
        assert {"registry_test_package.first", "registry_test_package.second"} <= set(sys.modules)
    finally:
        for name in [n for n in sys.modules if n.startswith("registry_test_package")]:
            del sys.modules[name]
