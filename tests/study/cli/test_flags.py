"""The command line from the declarations: the execution flags of run and resume are the declared execution settings
(``execution=True``, with a ``Flag``), and every default a help text shows is the declared one (or argparse's own),
never written by hand."""

import argparse

import pytest

from archstudy.sampling.constraints import Declared
from archstudy.study.cli import build_parser, main
from archstudy.study.cli.flags import shown
from archstudy.study.cli.run import EXECUTION_FLAGS, execution_of
from archstudy.study.experiment.config import (
    EXECUTION_KEYS,
    EXECUTION_SETTINGS,
    SCIENCE_KEYS,
    StudyConfig,
    execution_settings,
)

KEYS = {"dataset": "waveform-noise", "architectures": 3}
# Each execution setting with a value other than its default, and the flag of those a session may override
# (the README and the tests use these names).
OTHER = {
    "root": "/data/elsewhere",
    "cpus_per_arch": 2.5,
    "gpus_per_arch": 0.5,
    "max_retries": 5,
    "checkpoint_every_s": 10.0,
}
FLAGS = {
    "cpus_per_arch": "--cpus-per-arch",
    "gpus_per_arch": "--gpus-per-arch",
    "max_retries": "--max-retries",
    "checkpoint_every_s": "--checkpoint-every",
}


def _parsers(parser, prog="archstudy"):
    """Every parser of the command line, by its command (``archstudy cluster rehearse``)."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


def _help(parser, option: str) -> str:
    """The help text of ``option`` as --help shows it (defaults filled in), unwrapped."""
    action = next(a for a in parser._actions if option in a.option_strings)
    return parser._get_formatter()._expand_help(action)


def test_the_execution_keys_and_their_settings_are_the_declared_ones():
    assert (
        EXECUTION_KEYS
        == tuple(n for n, d in StudyConfig.declarations().items() if d.execution)
        == ("root", "resources", "max_retries", "checkpoint_every_s")
    )
    assert not set(EXECUTION_KEYS) & set(SCIENCE_KEYS) and list(EXECUTION_SETTINGS) == list(OTHER)
    base = StudyConfig(**KEYS)
    changed = base.with_execution(**OTHER)
    assert execution_settings(changed) == OTHER
    assert changed.differences(base) == [] and changed.science_fingerprint == base.science_fingerprint
    for name, value in OTHER.items():  # each setting alone, the others kept
        assert execution_settings(base.with_execution(**{name: value})) == {**execution_settings(base), name: value}
    assert base.with_execution(**dict.fromkeys(OTHER)) == base  # None keeps the stored value
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        base.with_execution(seed=3)
    assert execution_settings({**KEYS, "resources": {"gpus_per_arch": 0.5}, "max_retries": 4}) == {
        "gpus_per_arch": 0.5,
        "max_retries": 4,
    }


@pytest.mark.parametrize("argv", [["run"], ["resume", "s"]], ids=["run", "resume"])
def test_run_and_resume_have_a_flag_for_every_execution_setting_that_declares_one(argv):
    assert {n: FLAGS[n] for n in EXECUTION_FLAGS} == FLAGS
    parser = build_parser()
    args = parser.parse_args(argv + [f"{FLAGS[n]}={OTHER[n]}" for n in EXECUTION_FLAGS])
    assert execution_of(args) == {n: OTHER[n] for n in EXECUTION_FLAGS}
    assert execution_of(parser.parse_args(argv)) == dict.fromkeys(EXECUTION_FLAGS)  # absent: the study's own
    sub = dict(_parsers(parser))[f"archstudy {argv[0]}"]
    for name in EXECUTION_FLAGS:
        owner = StudyConfig if EXECUTION_SETTINGS[name] is None else type(StudyConfig.default("resources"))
        assert f"default {shown(owner.default(name))}, or the study's own" in _help(sub, FLAGS[name])


def test_the_help_texts_follow_the_declared_defaults(monkeypatch):
    """With other declared defaults, --help says the other defaults: none is written by hand."""
    fake = {
        "seed": 4242,
        "preset": "mine",
        "param_budget": 123456,
        "protocol": "myproto",
        "nlc_pilot": 77,
        "max_retries": 9,
        "checkpoint_every_s": 12.5,
        "cpus_per_arch": 3.5,
        "gpus_per_arch": 0.75,
    }
    real = Declared.__dict__["default"].__func__
    monkeypatch.setattr(Declared, "default", classmethod(lambda cls, name: fake.get(name, real(cls, name))))
    parsers = dict(_parsers(build_parser()))
    shows = {
        ("run", "--seed"): "default 4,242",
        ("run", "--preset"): "default mine",
        ("run", "--param-budget"): "default 123,456",
        ("run", "--protocol"): "default myproto",
        ("run", "--nlc-pilot"): "default 77",
        ("sample", "--seed"): "default 4242",
        ("sample", "--preset"): "default mine",
        ("sample", "--param-budget"): "default 123,456",
    }
    for command in ("run", "resume"):
        shows.update(
            {
                (command, "--max-retries"): "default 9,",
                (command, "--checkpoint-every"): "default 12.5,",
                (command, "--cpus-per-arch"): "default 3.5,",
                (command, "--gpus-per-arch"): "default 0.75,",
            }
        )
    for (command, option), text in shows.items():
        assert text in _help(parsers[f"archstudy {command}"], option), (command, option)


def test_no_help_text_writes_a_flags_own_default_by_hand():
    """A flag that sets no declared field shows argparse's default (``%(default)s``), never a copy of it."""
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.default in (None, argparse.SUPPRESS) or isinstance(action.default, bool) or not action.help:
                continue
            assert f"default {action.default}" not in action.help, (prog, action.option_strings, action.help)


@pytest.mark.parametrize("words", [["-1,3"], ["-1", "3"], ["0.5,-3"], ["-.5,2"]])
def test_a_negative_window_bound_is_refused_by_the_windows_own_check(words, tmp_path, capsys):
    """argparse reads "-1,3" as an option ("expected one argument"); the window's own check names the value."""
    out = tmp_path / "s"
    argv = ["run", "--dataset", "waveform-noise", "--architectures", "2", "--out", str(out), "--nlc-window", *words]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"study.nlc_window = '{' '.join(words)}': must be null, 'auto'" in err
    assert not out.exists()
