"""Change walks of docs/layout.md, as tests: a new option on `run` and a new CLI command.

* A new option on `run` is one ``declare(..., flag=Flag(...))`` line in its config class: the flag is generated from
  the declaration (``study.cli.flags.add_flag``: the option, metavar, type and help with the declared default), and
  its value reaches the config. Before, a ``Flag`` on a science key was silently ignored (only the execution
  settings' flags were generated) and each science flag was a hand-written ``add_argument``.
* A new CLI command is a module of ``study.cli`` with ``register(subparsers)`` and its name in ``COMMANDS`` (the
  order of ``archstudy --help``); the user's docs name it.
"""

import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from archstudy.sampling.constraints import Flag, Integer, UserError, declare
from archstudy.study import cli
from archstudy.study.cli import COMMANDS, build_parser
from archstudy.study.cli import run as run_command
from archstudy.study.experiment.config import StudyConfig

ROOT = Path(__file__).resolve().parents[1]
STUDY = ["run", "--dataset", "digits", "--architectures", "2", "--out", "x"]


@dataclass(frozen=True)
class WithWarmup(StudyConfig, where="study", key="a study key", keys="study keys", whole="config"):
    """A study config with one science key more, declared as a new key is: one line with its flag."""

    warmup_epochs: int = declare(
        Integer(0),
        0,
        doc="epochs of warm-up before the first run",
        flag=Flag("epochs of warm-up (default {default})", "N"),
    )


@pytest.fixture
def warmup(monkeypatch):
    """`run` building its flags and config from ``WithWarmup``."""
    monkeypatch.setattr(run_command, "StudyConfig", WithWarmup)
    return build_parser()


def _help(parser, command: str, option: str) -> str:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    return sub._get_formatter()._expand_help(action)


def test_a_declared_science_key_with_a_flag_is_a_flag_of_run_whose_value_reaches_the_config(warmup):
    args = warmup.parse_args(STUDY + ["--warmup-epochs", "3"])
    assert args.warmup_epochs == 3  # typed by its constraint (an Integer: int)
    keys, out, example = run_command.config_of(args)
    assert not example and out == "x" and keys["warmup_epochs"] == 3
    assert WithWarmup.from_dict(keys).warmup_epochs == 3
    assert _help(warmup, "run", "--warmup-epochs") == "epochs of warm-up (default 0)"
    # Absent, the key is left to the config's declared default; alone, it makes `run` a study, not the example.
    assert "warmup_epochs" not in run_command.config_of(warmup.parse_args(STUDY))[0]
    with pytest.raises(UserError, match="--out is required"):
        run_command.config_of(warmup.parse_args(["run", "--warmup-epochs", "3"]))


def test_the_new_keys_constraint_refuses_a_bad_flag_value_in_one_line(warmup, capsys):
    with pytest.raises(SystemExit):
        warmup.parse_args(STUDY + ["--warmup-epochs", "x"])
    assert "argument --warmup-epochs: invalid int value: 'x'" in capsys.readouterr().err
    keys = run_command.config_of(warmup.parse_args(STUDY + ["--warmup-epochs", "-1"]))[0]
    with pytest.raises(ValueError, match=r"^study\.warmup_epochs = -1: must be an integer >= 0$"):
        WithWarmup.from_dict(keys)


def test_every_science_key_that_declares_a_flag_is_a_flag_of_run():
    """The real config: each declared flag is there, under its declared option, setting its key."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["run"]
    options = {a.dest: a.option_strings for a in sub._actions}
    declared = {n: d.flag for n, d in StudyConfig.declarations().items() if d.flag is not None and not d.execution}
    assert set(declared) >= {
        "dataset",
        "architectures",
        "seed",
        "preset",
        "param_budget",
        "protocol",
        "siblings",
        "nlc_window",
        "nlc_pilot",
    }
    for name, flag in declared.items():
        assert options[name] == [flag.option(name)], name


def _command_modules() -> set[str]:
    """The modules of ``study.cli`` that define a command (``register``)."""
    import importlib

    names = {m.name for m in pkgutil.iter_modules(cli.__path__) if not m.name.startswith("_")}
    return {n for n in names if hasattr(importlib.import_module(f"{cli.__name__}.{n}"), "register")}


def test_every_command_module_is_a_command_and_every_command_is_documented():
    assert set(COMMANDS) == _command_modules() and len(set(COMMANDS)) == len(COMMANDS)
    parser = build_parser()
    assert list(next(a for a in parser._actions if a.dest == "command").choices) == list(COMMANDS)
    docs = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    assert [c for c in COMMANDS if not re.search(rf"\barchstudy {c}\b", docs)] == []
