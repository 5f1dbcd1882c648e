"""docs/layout.md's "Where a change goes", held by tests: each row of its table names the files a change touches,
and ``WALKS`` names, for each row, those files and the tests that fail when a change would need another file.

The rows' own tests live beside the code they walk through (``tests/test_change_walks_*.py``, the figure
declarations' test); the optimizer, schedule and reproduction walks are tested here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs" / "layout.md"
OWN_MODULE = "its module"  # a file the change adds (the new metric, loader, family, reproduction, command)
# Every registry finds what registers in it by importing its package's modules, whatever their import order.
REGISTRIES_WALK = "tests/test_change_walks_registries.py::test_every_registry_is_the_same_in_any_import_order"

# row of the table -> (the files the change touches now, besides tests and generated docs; the tests that hold it)
WALKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "a new activation": (
        ("sampling/spec.py", "study/nn/activations.py", "sampling/space.py"),
        (
            "tests/test_change_walks_registries.py::test_every_activation_has_its_declaration_and_its_kinks_reach_nwot",
            "tests/test_change_walks_registries.py::test_a_space_draws_exactly_the_values_it_gives_a_probability",
        ),
    ),
    "a new metric column at initialization": (
        (OWN_MODULE, "study/experiment/schema.py"),
        (
            "tests/test_change_walks_references.py::test_a_new_metric_column_is_its_metric_module_and_the_schema",
            "tests/test_change_walks_references.py::test_no_declaration_names_a_function_of_ours_by_a_string",
            "tests/study/metrics/test_registry.py::"
            "test_every_column_of_the_row_is_computed_by_exactly_one_function_and_no_function_computes_another",
            REGISTRIES_WALK,
        ),
    ),
    "a new dataset": (
        (OWN_MODULE, "study/experiment/datasets.py"),
        (
            "tests/test_change_walks_registries.py::test_a_new_dataset_is_its_declaration_and_its_registered_loader",
            "tests/test_change_walks_registries.py::"
            "test_every_declared_dataset_has_exactly_one_loader_and_nothing_copies_its_declaration",
            REGISTRIES_WALK,
        ),
    ),
    "a new optimizer": (
        ("study/training/optim.py", "study/experiment/protocol.py"),
        (
            "tests/test_change_walks.py::test_every_declared_optimizer_and_schedule_has_its_implementation",
            "tests/test_change_walks.py::test_no_module_but_its_own_dispatches_on_an_optimizer_or_schedule_name",
        ),
    ),
    "a new schedule": (
        ("study/training/schedule.py", "study/experiment/protocol.py"),
        (
            "tests/test_change_walks.py::test_every_declared_optimizer_and_schedule_has_its_implementation",
            "tests/test_change_walks.py::test_no_module_but_its_own_dispatches_on_an_optimizer_or_schedule_name",
            "tests/test_change_walks.py::test_the_driver_costs_a_new_schedule_by_what_it_declares",
        ),
    ),
    "a new report figure": (
        ("analysis/figures/",),
        (
            "tests/analysis/test_figures.py::test_a_new_declaration_is_drawn_in_its_section_and_a_lost_one_is_refused",
            REGISTRIES_WALK,
        ),
    ),
    "a new layer family": (
        ("sampling/spec.py", OWN_MODULE, "sampling/space.py"),
        (
            "tests/test_change_walks_registries.py::test_a_new_layer_family_touches_only_the_spec_its_module_and_the_registry",
            "tests/test_change_walks_registries.py::test_a_new_family_gets_the_declared_default_compile_threshold",
            "tests/test_change_walks_registries.py::"
            "test_the_sampler_and_the_analysis_take_the_weights_values_from_their_declaration",
            "tests/test_change_walks_registries.py::"
            "test_a_spec_field_added_later_declares_its_version_and_the_spec_version_is_the_latest",
            "tests/test_change_walks_registries.py::test_a_family_s_option_away_from_its_default_needs_a_layer_of_the_family",
            "tests/test_change_walks_registries.py::test_a_space_draws_exactly_the_values_it_gives_a_probability",
            REGISTRIES_WALK,
        ),
    ),
    "a new study key": (
        ("study/experiment/config.py",),
        (
            "tests/test_change_walks_flags.py::"
            "test_a_declared_science_key_with_a_flag_is_a_flag_of_run_whose_value_reaches_the_config",
            "tests/test_change_walks_flags.py::test_every_science_key_that_declares_a_flag_is_a_flag_of_run",
            "tests/test_change_walks_flags.py::test_a_new_study_key_declares_since_so_a_study_stored_before_it_reads_as_before",
        ),
    ),
    "a new protocol field or metric option": (
        ("study/experiment/protocol.py", "study/experiment/metric_options.py"),
        ("tests/study/experiment/test_declared_objects.py",),
    ),
    "a new option of a command (not a study key)": (
        ("study/cli/",),
        (
            "tests/test_change_walks_flags.py::test_a_new_option_of_a_command_is_its_add_argument_under_the_command_line_s_rules",
        ),
    ),
    "a new reproduction": (
        (OWN_MODULE, "docs/reproductions.md"),
        ("tests/test_change_walks.py::test_every_reproduction_module_is_offered_once_and_documented", REGISTRIES_WALK),
    ),
    "a new command": (
        (OWN_MODULE, "docs/"),
        (
            "tests/test_change_walks_flags.py::test_every_command_module_is_a_command_and_every_command_is_documented",
            "tests/test_change_walks_flags.py::test_a_new_command_is_its_module_s_declaration_in_its_declared_place",
            REGISTRIES_WALK,
        ),
    ),
}
# the files a sampled value also touches: its probability in a space (sampling/space.py); every other row: 2 at most
MOST_FILES = {"a new activation": 3, "a new layer family": 3}


def _table() -> dict[str, tuple[str, str]]:
    text = LAYOUT.read_text()
    section = text[text.index("## Where a change goes") :]
    section = section[: section.index("\n## ", 4)] if "\n## " in section[4:] else section
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("change", "---"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def _test_names(path: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


def test_the_table_and_the_walks_name_the_same_rows():
    assert set(_table()) == set(WALKS)


@pytest.mark.parametrize("row", sorted(WALKS))
def test_each_row_names_its_files_which_exist_and_the_tests_that_hold_it(row):
    files, tests = WALKS[row]
    now = _table()[row][1]
    bound = MOST_FILES.get(row, 2)
    assert len(files) <= bound or row == "a new protocol field or metric option", (row, files)
    for f in files:
        if f == OWN_MODULE:
            continue
        assert f"`{f}`" in now, f"{row}: the table's 'now' does not name {f}"
        assert (ROOT / f).exists(), f
    named = set(re.findall(r"`((?:sampling|study|analysis|archstudy)/[\w/.]*)`", now))
    if OWN_MODULE in files:  # the folder the new module goes in
        named = {n for n in named if not n.endswith("/")}
    assert named <= set(files), f"{row}: the table names {sorted(named - set(files))}, which WALKS does not"
    assert tests, row
    for t in tests:
        path, _, name = t.partition("::")
        assert (ROOT / path).exists(), t
        if name:
            assert name in _test_names(ROOT / path), t


# -- the walks tested here -------------------------------------------------------------------------------


def test_every_declared_optimizer_and_schedule_has_its_implementation():
    """The names ``Protocol`` accepts are exactly those the trainer implements, and each implementation says
    what the driver's costs need of it (``Scheduler.planned_epochs``, ``describe``, ``monitors``)."""
    from archstudy.study.experiment import protocol
    from archstudy.study.training import optim, schedule

    assert set(optim.OPTIMIZERS) == set(protocol.OPTIMIZERS)
    assert set(schedule.SCHEDULERS) == set(protocol.SCHEDULES)
    for name, cls in schedule.SCHEDULERS.items():
        assert cls.name == name
        for method in ("epoch_steps", "divisions_at", "end_epoch", "tracked", "planned_epochs", "describe"):
            assert getattr(cls, method) is not getattr(schedule.Scheduler, method), (name, method)
        assert isinstance(cls.monitors, bool)


def _string_constants_compared(tree: ast.AST, names: set[str]) -> list[str]:
    """The string constants among ``names`` that a comparison, a ``match`` case or a subscript uses."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            parts = [node.value]
        elif isinstance(node, ast.Subscript):
            parts = [node.slice]
        else:
            continue
        for part in parts:
            for c in ast.walk(part):
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in names:
                    found.append(c.value)
    return found


def test_no_module_but_its_own_dispatches_on_an_optimizer_or_schedule_name():
    """A comparison with an optimizer's or a schedule's name outside its declaration and its implementation would
    be a file a new one must touch (the driver's costs compared with "steps" until November 2026)."""
    from archstudy.study.experiment import protocol

    names = set(protocol.OPTIMIZERS) | set(protocol.SCHEDULES)
    own = {"study/training/optim.py", "study/training/schedule.py", "study/experiment/protocol.py"}
    offenders = {}
    for folder in ("sampling", "study", "analysis"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in own or rel.startswith("study/reproduce/"):  # a reproduction names the paper's protocol
                continue
            found = _string_constants_compared(ast.parse(path.read_text()), names)
            if found:
                offenders[rel] = found
    assert not offenders


def test_the_driver_costs_a_new_schedule_by_what_it_declares(monkeypatch):
    """A schedule declared with fixed epochs is costed with them, and described in its own words: nothing in
    ``study.execution.costs`` knows it by name."""
    from archstudy.study.execution import costs
    from archstudy.study.experiment.protocol import Protocol
    from archstudy.study.training import schedule

    class Fixed(schedule.Steps):
        name = "fixed-test"

        def planned_epochs(self, steps_per_epoch):
            return 7.0

        def describe(self):
            return "seven epochs, a test's schedule"

    monkeypatch.setitem(schedule.SCHEDULERS, "steps", Fixed)  # the declared name "steps", another implementation
    protocol = Protocol(schedule="steps", iterations=100)
    assert costs.expected_epochs(protocol, steps_per_epoch=13) == 7.0
    assert "seven epochs, a test's schedule" in costs.describe_protocol(protocol)


def test_every_reproduction_module_is_offered_once_and_documented():
    """A module of ``study/reproduce`` that declares a ``REPRODUCTION`` offers it (``REPRODUCTIONS``, which finds it
    by importing every module of the package) under a name of its own, and docs/reproductions.md names it."""
    import importlib

    from archstudy.study.reproduce import REPRODUCTIONS

    declared = {}
    for path in sorted((ROOT / "study" / "reproduce").glob("*.py")):
        module = importlib.import_module(f"archstudy.study.reproduce.{path.stem}")
        r = getattr(module, "REPRODUCTION", None)
        if r is not None:
            declared[r.name] = r
    assert declared and set(declared) == set(REPRODUCTIONS)
    assert all(REPRODUCTIONS[n] is r for n, r in declared.items())
    docs = (ROOT / "docs" / "reproductions.md").read_text()
    assert [n for n in declared if f"`{n}`" not in docs] == []
