"""Nothing is silently dropped: every option of every command is read by the command when it runs, and an
option given on the command line is read by the run it was given to.

Each command of the real parser (``build_parser``) is run in-process through ``main`` on a small synthetic study
(``synthetic_study``, written once for the module), its parsed namespace replaced by ``Recorded``, which notes every
attribute the command reads (``args.x``, ``getattr(args, "x")``) while the command's own function runs (not the
reads of ``main`` around it, such as ``open_locations``). Two things are held:

- every option's ``dest`` of a walked command is read in at least one of its walks (``WALKS``), except the few named
  in ``NOT_WALKED`` with the reason;
- in each walk that runs (exit 0 or 1), every option given on its command line is read: an option given to a mode
  that ignores it (like ``report --predict-from`` once, which exited 0 and drew no transfer) fails here; a walk that
  is refused (exit 2) says why in exactly one line.

What this proves, and what it does not: a read is not an action. A command that reads an option and then does nothing
with it passes; so the test checks the command line's layer (that each option reaches the code that uses it, or a
refusal), not the analysis behind it. ``report --predict-from`` is followed further, to its section of the page and
to its one-line refusal. A command that read its options through ``vars(args)`` could not be told apart, so such a
read fails the test instead of passing it (``Recorded``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import types

import pytest

import synthetic_study as synth
from archstudy.study.cli import build_parser, main

# Reads of the namespace through ``vars(args)`` / ``args.__dict__``: all of it at once, which no per-option record
# can tell apart from reading none of it.
WHOLE = "<vars(args)>"

# Not options of a command: what ``main`` puts on the namespace to run it.
SET_BY_MAIN = {"command", "func"}

# ``--debug`` is added by ``build_parser`` to the top parser and to every command's in the same way, and read by
# ``main``'s error boundary (``_command``), never by a command: it is tested there (tests/study/cli/test_faults.py),
# not per command.
GLOBAL = {"debug"}

# Commands not walked, and why: each needs what a test here cannot have in seconds.
SKIPPED = {
    # ``cluster up``/``stop``/``lose-node`` start and stop a local autoscaling Ray cluster (tens of seconds, slow-marked
    # in tests/study/cli/test_cluster_docs.py and tests/study/execution).
    "cluster": "starts a local Ray cluster",
}

# Options of a walked command that no walk here reads, and why (each one a mode or path too slow for this file).
NOT_WALKED = {
    # read only by a real run, after --dry-run has returned, and only where the estimate is over CONFIRM_ABOVE_S
    # (study/cli/run.py ``confirmed``): a real run starts Ray.
    ("run", "yes"): "read by a real run only when the estimate asks for a confirmation",
    # The speed measurements of ``bench`` (its default mode) time torch for minutes; only ``--store`` is walked here.
    **{
        ("bench", dest): "read by bench's speed measurements (minutes of torch timing)"
        for dest in (
            "quick",
            "cases",
            "runs",
            "repeats",
            "steps",
            "device",
            "threads",
            "no_compile",
            "compile_mode",
            "no_plain",
            "chunk",
            "concurrent",
            "gpus_per_arch",
            "project",
            "lr_window",
            "kernels",
            "devices",
            "gain",
        )
    },
    # ``bench --driver N`` measures the driver's overhead on an embedded Ray (tens of seconds).
    ("bench", "driver"): "bench --driver starts Ray",
    ("bench", "max_in_flight"): "read by bench --driver only, which starts Ray",
}


class Recorded(argparse.Namespace):
    """A parsed namespace that notes the names read from it into ``reads`` while ``reads`` is a set (while the
    command's function runs); a read of its ``__dict__`` (``vars(args)``) is noted as ``WHOLE``."""

    reads: set[str] | None = None

    def __getattribute__(self, name: str):
        reads = type(self).reads
        if reads is not None and (name == "__dict__" or not name.startswith("__")):
            reads.add(WHOLE if name == "__dict__" else name)
        return super().__getattribute__(name)


def _given(parser: argparse.ArgumentParser, argv: list[str], namespace: argparse.Namespace) -> set[str]:
    """The dests of the options (and positionals) given on ``argv`` of the command's ``parser``."""
    out = set()
    for action in parser._actions:
        if action.dest in GLOBAL or isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            if any(word == o or word.startswith(o + "=") for word in argv for o in action.option_strings):
                out.add(action.dest)
        elif getattr(namespace, action.dest, None) is not None:
            out.add(action.dest)
    return out


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    """The dests a command accepts (options and positionals), but help and the global ones."""
    return {
        a.dest
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction) and a.dest not in GLOBAL and a.dest != argparse.SUPPRESS
    }


def walk(argv: list[str], monkeypatch, capsys) -> tuple[int, set[str], set[str], str, str]:
    """Run ``archstudy ARGV`` in-process: its exit code, the dests given on the command line, the names the command
    read while its function ran, and its standard output and error."""
    parsers = command_parsers()
    seen: dict[str, set[str]] = {}
    original = argparse.ArgumentParser.parse_args

    def parse_args(self, args=None, namespace=None):
        parsed = original(self, args, namespace)
        if seen or not hasattr(parsed, "func"):  # the command line's only: not a parse the command makes itself
            return parsed
        recorded = Recorded()
        recorded.__dict__.update(parsed.__dict__)
        seen["given"] = _given(parsers[parsed.command], list(args or [])[1:], parsed)
        seen["read"] = reads = set()
        func = parsed.func

        def recording(namespace):
            Recorded.reads = reads
            try:
                return func(namespace)
            finally:
                Recorded.reads = None

        recorded.func = recording
        return recorded

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", parse_args)
        code = main(argv)
    out, err = capsys.readouterr()
    return code, seen["given"], seen["read"] - SET_BY_MAIN, out, err


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    """A small finished study (8 architectures, synthetic values, no Ray), and the paths the walks name."""
    tmp = tmp_path_factory.mktemp("every_option")
    # d_in and d_out: what `run` records in study.yaml when it creates a study (status and resume refuse one without)
    study = synth.write_study(tmp / "study", n=8, dataset="waveform-noise", extra={"d_in": 40, "d_out": 3})
    packed = shutil.copytree(study, tmp / "to_pack")  # compact changes its study: a copy of its own
    (tmp / "empty").mkdir()
    return {"study": str(study), "packed": str(packed), "tmp": str(tmp), "empty": str(tmp / "empty")}


# Each command's walks: (argv with {study}, {tmp}, ... to fill, the exit code expected). Between them, every option of
# the command but those of NOT_WALKED; each given where it acts, or where the command refuses it in one line.
WALKS: dict[str, list[tuple[list[str], int]]] = {
    "run": [
        (
            # the science flags and the execution settings, a new study planned, nothing run
            [
                "run", "--dataset", "waveform-noise", "--architectures", "3", "--seed", "3", "--preset", "extended",
                "--param-budget", "2000", "--protocol", "quick", "--siblings", "weights", "--nlc-window", "auto",
                "--nlc-pilot", "1", "--init-seeds", "1", "--out", "{tmp}/planned",
                "--cpus-per-arch", "1", "--gpus-per-arch", "0", "--max-retries", "1", "--checkpoint-every", "60",
                "--max-in-flight", "1", "--connect-timeout", "5", "--force-config", "--report", "--dry-run", "--json",
            ],
            0,
        ),
        # a config file and a rate window read from another study: refused (that study's rates are another series)
        # once both are read; --address, its cluster never reached
        (
            [
                "run", "--config", "{study}/study.yaml", "--out", "{tmp}/windowed", "--lr-window", "3",
                "--lr-window-from", "{study}", "--lr-window-predictor", "median", "--address", "127.0.0.1:1", "--root",
                "{empty}",
                "--dry-run",
            ],
            2,
        ),
    ],
    # the driver stubbed (``resume_stub``): a resume starts Ray even on a finished study
    "resume": [
        (
            [
                "resume", "{study}", "--skip-failed", "--root", "{empty}", "--address", "auto", "--connect-timeout",
                "7", "--cpus-per-arch", "2", "--gpus-per-arch", "0", "--max-retries", "4", "--checkpoint-every", "90",
                "--max-in-flight", "3", "--report",
            ],
            1,  # not complete (the stub's answer): exit 1, and --report says why there is no report
        ),
    ],
    "status": [(["status", "{study}", "--wide"], 0), (["status", "{study}", "--json"], 0)],
    "compact": [(["compact", "{packed}", "--per-pack", "4", "--json"], 0)],
    "top": [
        (["top", "{study}", "-k", "3", "--by", "nlc", "--predictors", "2", "--wide"], 0),
        (["top", "{study}", "--json"], 0),
    ],
    "lookup": [
        (["lookup", "{study}", "--where", "depth > 0", "-k", "2", "--wide"], 0),
        (["lookup", "{study}", "--id", "0000000000000000", "--json"], 0),  # none found, and said
        (["lookup", "{study}", "--spec", '{{"depth": 3}}', "--json"], 0),
    ],
    "note": [(["note", "{study}", "a note", "--tag", "walked", "--json"], 0)],
    "export": [
        (["export", "{study}", "--to", "optuna", "--out", "{tmp}/optuna"], 0),
        # --no-rate-runs applies to mlflow only: refused in one line for another tool
        (["export", "{study}", "--to", "optuna", "--out", "{tmp}/optuna2", "--no-rate-runs"], 2),
    ],
    "report": [
        (
            [
                "report", "{study}", "--out", "{tmp}/report.html", "--n-boot", "5", "--seed", "1", "--nlc-window",
                "0.5", "4", "--figures", "{tmp}/figures", "--format", "svg", "--predict-from", "{study}",
            ],
            0,
        ),
        # an empty folder holds no reproduction: refused in one line, before the analysis
        (["report", "{study}", "--out", "{tmp}/r2.html", "--reproductions", "{empty}"], 2),
    ],
    # the live page served, then Ctrl-C (``serve_stops``): it blocks until then
    "serve": [(["serve", "{study}", "--host", "127.0.0.1", "--port", "0", "--every", "0.5"], 0)],
    "sample": [
        (
            [
                "sample", "--n", "2", "--start", "1", "--seed", "3", "--preset", "extended", "--d-in", "10", "--d-out",
                "2", "--param-budget", "5000", "--siblings",
            ],
            0,
        ),
    ],
    "datasets": [(["datasets", "--root", "{empty}"], 0)],
    # the driver and Ray stubbed (``rank_stub``): the held-out evaluation and the fit run on the study, the fresh
    # architectures' measurement and the check's training are synthetic studies the stub writes
    "rank": [
        (
            [
                "rank", "--from", "{study}", "--architectures", "4", "--top", "2", "--check", "2", "--learner", "auto",
                "--allow-weak-predictor", "--seed", "9", "--root", "{empty}", "--out", "{tmp}/ranked", "--address",
                "auto", "--connect-timeout", "7", "--cpus-per-arch", "2", "--gpus-per-arch", "0", "--max-retries",
                "4", "--checkpoint-every", "90", "--max-in-flight", "3",
            ],
            0,
        ),
    ],
    # --store writes a synthetic study; --time then times the readers on it (`status` and `top` parsed by bench
    # itself: not the command line's parse, not recorded)
    "bench": [(["bench", "--store", "2", "--out", "{tmp}/bench", "--packed", "--time", "--json"], 0)],
    "calibrate": [
        (["calibrate", "intervals", "--replicates", "1", "--sizes", "8", "--json"], 0),
        # --predict: the joint predictor's comparisons in `findings` only; refused in one line elsewhere
        (["calibrate", "verdicts", "--replicates", "1", "--sizes", "8", "--predict"], 2),
    ],
    "reproduce": [
        (["reproduce", "--list"], 0),
        (
            [
                "reproduce", "variability-collapse", "--scale", "tiny", "--out", "{tmp}/reproduced", "--seed", "1",
                "--device", "cpu", "--threads", "1", "--wide",
            ],
            None,  # 0 when every row agrees, 1 when some differ: either is the reproduction's verdict
        ),
        # --jobs: reproductions side by side, for `reproduce all` (minutes); refused in one line for one
        (["reproduce", "variability-collapse", "--jobs", "2"], 2),
        # --root: the data files of the reproductions that read some; refused in one line for one that reads none
        (["reproduce", "variability-collapse", "--root", "{empty}"], 2),
    ],
}  # fmt: skip


@pytest.fixture
def resume_stub(monkeypatch):
    """``resume`` with the driver's ``resume_study`` replaced by one that keeps what it is given and finds the study
    finished: what the command passes on is the command line's part."""
    from archstudy.study.execution import driver

    given: dict = {}

    def resume_study(study, **kwargs):
        given.update(kwargs, study=study)
        return types.SimpleNamespace(complete=False, total=8, finished_before=7, finished=0)  # --report: "no report"

    monkeypatch.setattr(driver, "resume_study", resume_study)
    return given


@pytest.fixture
def rank_stub(monkeypatch, tmp_path):
    """``rank`` with Ray and the driver's ``run_study`` replaced: each study rank runs (the fresh architectures
    measured, then the check's trained) is a synthetic finished study of the config's seed holding its indices;
    what the command passes on is kept, to be checked against the command line."""
    import contextlib

    from archstudy.study.execution import driver, ray_session

    given: list[dict] = []

    def run_study(config, out, **kwargs):
        given.append({**kwargs, "out": str(out), "root": config.root})
        synth.write_study(
            out, n=max(config.indices) + 1, dataset="waveform-noise", study_seed=config.seed,
            extra={"d_in": 40, "d_out": 3},
        )  # fmt: skip
        return types.SimpleNamespace(complete=True)

    monkeypatch.setattr(driver, "run_study", run_study)
    monkeypatch.setattr(ray_session, "ray_session", lambda address=None: contextlib.nullcontext())
    return given


@pytest.fixture
def serve_stops(monkeypatch):
    """``serve`` stopped by Ctrl-C as soon as it serves (its wait of an hour is the Ctrl-C)."""
    from archstudy.study.cli import serve

    def sleep(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve, "time", types.SimpleNamespace(sleep=sleep, time=serve.time.time))


def test_every_command_is_walked_or_skipped_with_its_reason():
    """A new command is walked here (or skipped, saying why) before this passes."""
    assert set(command_parsers()) == set(WALKS) | set(SKIPPED)
    assert not set(WALKS) & set(SKIPPED)


@pytest.mark.parametrize("command", sorted(WALKS))
def test_every_option_is_read_and_every_given_option_is_read_by_its_run(
    command, places, monkeypatch, capsys, resume_stub, serve_stops, rank_stub
):
    """Every option of ``command`` (but ``NOT_WALKED``'s) is read in one of its walks; in each walk that runs, every
    option given on its command line is read; a walk refused says why in one line."""
    read: set[str] = set()
    for argv, expected in WALKS[command]:
        argv = [word.format(**places) for word in argv]
        code, given, reads, out, err = walk(argv, monkeypatch, capsys)
        assert WHOLE not in reads, f"`{' '.join(argv)}` reads its options through vars(args): read each by its name"
        if expected is None:
            assert code in (0, 1), (argv, code, err)
        else:
            assert code == expected, (argv, code, err)
        if code == 2:
            lines = [line for line in err.splitlines() if line.startswith(f"archstudy {command}: error: ")]
            assert len(lines) == 1, err
        if code != 2:  # a refused walk said why in its one line; one that ran read every option it was given
            dropped = sorted(given - reads)
            assert not dropped, f"`{' '.join(argv)}` never reads {dropped}: it drops them silently"
        read |= reads
        if argv[:1] == ["run"] and "--json" in argv and code == 0:  # the plan, as JSON, of a study not written
            assert json.loads(out)["architectures"] >= 3 and not os.path.exists(places["tmp"] + "/planned")
    accepted = options_of(command_parsers()[command])
    unwalked = {dest for (name, dest) in NOT_WALKED if name == command}
    assert unwalked <= accepted, f"NOT_WALKED names options {command} has not: {sorted(unwalked - accepted)}"
    never = sorted(accepted - unwalked - read)
    assert not never, f"`archstudy {command}` never reads {never} in its walks: each option acts or is refused"
    assert not (unwalked & read), f"walked now, out of NOT_WALKED: {sorted(unwalked & read)}"
    if command == "resume":  # what the command passed on is what was given, and --report said why it drew nothing
        assert "archstudy: no report: 1 architectures are not finished" in err, err
        assert resume_stub["retry_failed"] is False and resume_stub["max_in_flight"] == 3
        assert (resume_stub["address"], resume_stub["connect_timeout_s"]) == ("auto", 7.0)
        settings = ("cpus_per_arch", "max_retries", "checkpoint_every_s")
        assert tuple(resume_stub[name] for name in settings) == (2, 4, 90)
    if command == "rank":  # both studies it ran (measured, checked) got what was given; the top printed, the lift
        assert [g["out"].rsplit("/", 1)[1] for g in rank_stub] == ["measured", "check"], rank_stub
        for g in rank_stub:
            assert (g["address"], g["connect_timeout_s"], g["max_in_flight"]) == ("auto", 7.0, 3)
            settings = ("cpus_per_arch", "gpus_per_arch", "max_retries", "checkpoint_every_s")
            assert tuple(g[name] for name in settings) == (2, 0, 4, 90)
        assert rank_stub[0]["root"] == places["empty"] and "check: the top 2 by prediction" in out, out
    if command == "report":  # --predict-from drew its section (it once exited 0 and drew none), --figures its files
        with open(places["tmp"] + "/report.html", encoding="utf-8") as page:
            html = page.read()
        assert "Transfer: a predictor fitted on another study" in html
        assert sorted(os.listdir(places["tmp"] + "/figures")) and all(
            name.endswith(".svg") for name in os.listdir(places["tmp"] + "/figures")
        )


def test_report_predict_from_no_study_is_refused_in_one_line(places, capsys, tmp_path):
    """``report S --predict-from OTHER`` where OTHER is neither a study nor a saved predictor: one line naming it, exit
    2, no page written (the walk of ``report`` holds that a study as OTHER draws its section)."""
    out, missing = tmp_path / "r.html", tmp_path / "no-such-study"
    assert main(["report", places["study"], "--out", str(out), "--n-boot", "5", "--predict-from", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("archstudy report: error: ") and str(missing) in err, err
    assert not out.exists()
