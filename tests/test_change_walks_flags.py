"""Change walks of docs/layout.md, as tests: a new study key (with its flag on `run`), a new option of a command
that is no study key, and a new CLI command.

* A new study key is one ``declare(..., since=N, flag=Flag(...))`` line in its config class: the flag is generated
  from the declaration (``study.cli.flags.add_flag``: the option, metavar, type and help with the declared default),
  its value reaches the config, and ``since`` keeps the science record of a study stored before the key existed.
* A new option of a command (no study key: how it prints, what it writes) is one ``add_argument`` in its command's
  ``register``: the command line's own rules (one value per option, one-line errors) come from the parser.
* A new CLI command is a module of ``study.cli`` declaring itself above its ``register(subparsers)``
  (``@subcommand(name, order=...)``: its place in ``archstudy --help``), found by the package's scan; the user's
  docs name it.
"""

import ast
import dataclasses
import errno
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from archstudy.sampling.constraints import Flag, Integer, UserError, declare
from archstudy.study import cli
from archstudy.study.cli import COMMANDS, build_parser, main, system_error_line
from archstudy.study.cli import run as run_command
from archstudy.study.cli.commands import subcommand
from archstudy.study.experiment import config
from archstudy.study.experiment.config import ROW_SCIENCE_KEYS, StudyConfig

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


# -- a new study key -------------------------------------------------------------------------------------------
# The science keys of the config's first schema: every key added later declares ``since=``.
FIRST_SCIENCE_KEYS = (
    "dataset",
    "dataset_options",
    "dataset_seed",
    "seed",
    "preset",
    "space",
    "param_budget",
    "protocol",
    "metrics",
    "siblings",
    "nlc_window",
    "nlc_pilot",
    "d_in",
    "d_out",
    "data_fingerprint",
)


@dataclass(frozen=True)
class WithWarmupSince(StudyConfig, where="study", key="a study key", keys="study keys", whole="config"):
    """``WithWarmup``'s key declared as a key added after the first schema is."""

    warmup_epochs: int = declare(Integer(0), 0, since=3, doc="epochs of warm-up before the first run")


def test_a_new_study_key_declares_since_so_a_study_stored_before_it_reads_as_before(monkeypatch):
    """The science record (and fingerprint) of a study that leaves a later key at its default is the one it had
    before the key existed: a stored study resumes. Without ``since`` the same key changes every record."""
    declared = StudyConfig.declarations()
    assert tuple(k for k in ROW_SCIENCE_KEYS if not declared[k].added_later) == FIRST_SCIENCE_KEYS
    monkeypatch.setattr(config, "ROW_SCIENCE_KEYS", (*ROW_SCIENCE_KEYS, "warmup_epochs"))  # a science key of the row
    stored = StudyConfig(dataset="digits", architectures=2)
    assert WithWarmupSince(dataset="digits", architectures=2).science_json == stored.science_json
    assert WithWarmupSince(dataset="digits", architectures=2, warmup_epochs=1).science_json != stored.science_json
    assert WithWarmup(dataset="digits", architectures=2).science_json != stored.science_json


# -- a new option of a command -------------------------------------------------------------------------------------
@pytest.fixture
def with_limit(monkeypatch):
    """`compact` with one option more, added as a new option is: one ``add_argument`` in its ``register``."""
    compact = COMMANDS["compact"]

    def add_parser(sub):
        compact.add_parser(sub)
        sub.choices["compact"].add_argument("--limit", type=int, default=3, help="at most N (default %(default)s)")
        sub.choices["compact"].add_argument("--label", help="a name for the packs")

    monkeypatch.setitem(COMMANDS, "compact", dataclasses.replace(compact, add_parser=add_parser))
    return build_parser()


def test_a_new_option_of_a_command_is_its_add_argument_under_the_command_line_s_rules(with_limit, capsys):
    args = with_limit.parse_args(["compact", "s", "--limit", "5", "--label", "x"])
    assert (args.limit, args.label, args.study) == (5, "x", "s")
    assert with_limit.parse_args(["compact", "s"]).limit == 3
    assert _help(with_limit, "compact", "--limit") == "at most N (default 3)"
    for argv, error in (
        (["--limit", "5", "--limit", "6"], "argument --limit: given twice (5, then 6); give it once"),
        (["--limit", "x"], "argument --limit: invalid int value: 'x'"),
        (["--label", "a\nb"], "argument --label: 'a\\nb' holds a newline"),
    ):
        with pytest.raises(SystemExit):
            with_limit.parse_args(["compact", "s", *argv])
        err = capsys.readouterr().err
        assert error in err and err.count("\n") == 1, err  # one line, no usage
    assert with_limit.parse_args(["compact", "s", "--limit", "5", "--debug"]).debug


# -- a new command ---------------------------------------------------------------------------------------------
def _command_modules() -> set[str]:
    """The modules of ``study.cli`` whose source holds a command: a top-level ``register`` function or one declared
    with ``@subcommand``, read from the files (not from the registry, which is what this checks: a command module
    that does not declare itself fails)."""
    found = set()
    for m in pkgutil.iter_modules(cli.__path__):
        tree = ast.parse((Path(cli.__path__[0]) / f"{m.name}.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and (
                node.name == "register"
                or any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "subcommand" for d in node.decorator_list
                )
            ):
                found.add(f"{cli.__name__}.{m.name}")
    return found


def test_every_command_module_is_a_command_and_every_command_is_documented():
    assert {c.add_parser.__module__ for c in COMMANDS.values()} == _command_modules()
    assert all(c.name == n for n, c in COMMANDS.items())
    parser = build_parser()
    assert list(next(a for a in parser._actions if a.dest == "command").choices) == list(COMMANDS)
    docs = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    assert [c for c in COMMANDS if not re.search(rf"\barchstudy {c}\b", docs)] == []


def test_a_new_command_is_its_module_s_declaration_in_its_declared_place(tmp_path, capsys):
    """A command declared as a new module declares it (here beside the test): its place in --help, the activity
    its system errors name, and the study locations opened before it starts; ``main`` runs it."""

    def register(sub) -> None:
        p = sub.add_parser("hello", help="say hello to a study")
        p.add_argument("study")
        p.set_defaults(func=lambda args: print(f"hello {args.study}"))

    subcommand("hello", order=105, activity="greeting the study", reads=("study",))(register)
    try:
        parser = build_parser()
        names = list(next(a for a in parser._actions if a.dest == "command").choices)
        assert names[names.index("hello") - 1 : names.index("hello") + 2] == ["datasets", "hello", "bench"]
        assert main(["hello", str(tmp_path)]) == 0 and capsys.readouterr().out == f"hello {tmp_path}\n"
        full = OSError(errno.ENOSPC, "No space left on device", "/s/x")
        assert system_error_line(full, "hello").endswith("(while greeting the study)")
        assert main(["hello", "s3:bucket"]) == 2  # a malformed URI, refused before the command starts
        assert "s3:bucket" in capsys.readouterr().err
        with pytest.raises(ValueError, match="command 'hello' is declared twice"):
            subcommand("hello", order=106)(register)
    finally:
        del COMMANDS["hello"]
    subcommand("hallo", order=105)(register)  # adds the parser of another name
    try:
        with pytest.raises(LookupError, match="declares the command 'hallo' but adds no parser of it"):
            build_parser()
    finally:
        del COMMANDS["hallo"]
