"""Nothing expensive starts by surprise: `archstudy run` says its plan (architectures, parameters,
protocol, memory, the estimate and what it rests on) before anything starts; ``--dry-run`` says it and exits 0
writing nothing; a study estimated above an hour asks on a terminal and needs ``--yes`` without one; on a terminal
the first line comes before the data is loaded."""

import io
import json
import re
import sys
from argparse import Namespace

import pytest

from archstudy.sampling import UserError
from archstudy.study.cli import main
from archstudy.study.cli import run as run_command
from archstudy.study.cli.run import CONFIRM_ABOVE_S, Preview, confirmed
from archstudy.study.execution import driver


def _ray_started() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def test_dry_run_says_the_plan_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the example goes into ./studies/example
    assert main(["run", "--dry-run"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    # what runs: the example's 8 architectures, their solved parameter counts, the protocol, the data
    plan = next(line for line in lines if line.startswith("archstudy: plan: "))
    assert "8 architectures to run: 3,000-parameter budget (" in plan and "protocol quick: 8 learning rates" in plan
    assert "waveform-noise (3,000 train / 1,000 val / 1,000 test" in plan
    assert any(line.startswith("archstudy: memory: the most an architecture needs is about ") for line in lines)
    # the estimate, and what it rests on
    estimate = next(line for line in lines if line.startswith("archstudy: estimated "))
    # the example's small nets: their metrics at initialization timed too (a large net's probe is its training alone)
    assert "for 8 architectures" in estimate and (
        "the metrics at initialization and the NLC after training included (timed on one: " in estimate
        or "training alone" in estimate
    )
    # small nets: probed one by one within PROBE_BUDGET_S (at least the three of _probe_order's first picks)
    probed = re.search(r"timed training steps of (\d) of them", estimate)
    assert probed is not None and 1 <= int(probed.group(1)) <= 8
    assert "on this machine" in estimate
    assert lines[-1] == "archstudy: --dry-run: nothing was run or written"
    assert not (tmp_path / "studies").exists()
    assert not _ray_started()


def test_dry_run_json_is_the_plan_it_says(tmp_path, capsys):
    """``--dry-run --json``: one JSON object on standard output, the same plan as the lines on standard error."""
    out = tmp_path / "s"
    args = ["run", "--dataset", "waveform-noise", "--architectures", "3", "--param-budget", "1500", "--out", str(out)]
    assert main([*args, "--protocol", "quick", "--init-seeds", "2", "--dry-run", "--json"]) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert (plan["architectures"], plan["to_run"], plan["finished"], plan["runs_per_architecture"]) == (3, 3, 0, 16)
    assert plan["estimated_seconds"] > 0 and plan["memory_bytes"] > 0 and plan["study"] == str(out)
    assert plan["plan"] == [line.removeprefix("archstudy: ") for line in captured.err.splitlines()[:2]]
    assert "each from 2 initializations" in plan["plan"][0] and "x 16 runs" in plan["plan"][1]
    assert not out.exists()
    assert main([*args, "--json"]) != 0  # the plan only: without --dry-run it is refused, nothing started
    assert "--json prints the plan only" in capsys.readouterr().err and not out.exists()


def _long(tmp_path, *extra) -> list[str]:
    """1,000 architectures of 20,000 parameters under the paper protocol (40 rates, E.2's schedule), one at a time:
    hours on any CPU (each architecture trains about 75 epochs of 12 steps of a 40-run stack)."""
    return [
        "run",
        "--dataset",
        "waveform-noise",
        "--architectures",
        "1000",
        "--param-budget",
        "20000",
        "--max-in-flight",
        "1",
        "--out",
        str(tmp_path / "long"),
        *extra,
    ]


def test_a_study_estimated_above_an_hour_needs_yes_without_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal to answer
    assert main(_long(tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("archstudy run: error: the study is estimated ")
    assert "above 1h00m: pass --yes to start it" in err[-1]
    assert not (tmp_path / "long").exists()
    assert not _ray_started()
    # the same study as a dry run: its plan, exit 0, nothing written
    assert main(_long(tmp_path, "--dry-run")) == 0
    estimate = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("archstudy: estimated "))
    assert "for 1,000 architectures (1 at a time" in estimate
    assert not (tmp_path / "long").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _plan(seconds: float | None) -> Preview:
    return Preview(["plan: ..."], config=None, data=None, todo=[], slots=1, estimate_s=seconds)


def _args(yes: bool = False) -> Namespace:
    return Namespace(yes=yes)


def test_the_confirmation_rule(monkeypatch, capsys):
    # At most an hour, or no estimate: no question, terminal or not.
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert confirmed(_plan(CONFIRM_ABOVE_S), _args())
    assert confirmed(_plan(None), _args())
    # Above an hour without a terminal: refused in one line naming the estimate and the flag; --yes starts it.
    with pytest.raises(UserError, match=r"estimated 2h00m, above 1h00m: pass --yes"):
        confirmed(_plan(2 * CONFIRM_ABOVE_S), _args())
    assert confirmed(_plan(2 * CONFIRM_ABOVE_S), _args(yes=True))
    # Above an hour on a terminal: asked; only y or yes starts it (an empty answer or end of input does not).
    for answer, starts in (("y\n", True), ("YES\n", True), ("\n", False), ("n\n", False), ("", False)):
        monkeypatch.setattr(sys, "stdin", _Terminal(answer))
        assert confirmed(_plan(CONFIRM_ABOVE_S + 1), _args()) is starts, answer
        err = capsys.readouterr().err
        assert "archstudy: the study is estimated 1h00m, above 1h00m; start it? [y/N] " in err
        assert ("not started" in err) is not starts


def test_on_a_terminal_the_first_line_comes_before_the_data(tmp_path, monkeypatch):
    """The start-up (torch, the data, sampling) takes seconds: on a terminal the command says what it does
    before it loads anything; the line is transient (erased before the plan's lines)."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    seen: list[str] = []
    load = driver._load_data

    def recording_load(config):
        seen.append(terminal.getvalue())
        return load(config)

    monkeypatch.setattr(driver, "_load_data", recording_load)
    monkeypatch.chdir(tmp_path)
    assert run_command.command(run_command_args(["--dry-run"])) == 0
    assert seen and seen[0].startswith("\r\x1b[Karchstudy: planning studies/example: loading waveform-noise")
    assert "...\r\x1b[Karchstudy: no study flags: the example" in terminal.getvalue()  # erased, then the plan


def run_command_args(argv: list[str]) -> Namespace:
    from archstudy.study.cli import build_parser

    return build_parser().parse_args(["run", *argv])


def test_the_plan_times_the_metrics_at_initialization_of_a_small_net_only():
    """``_time_measures``: the first probed architecture's metrics at initialization, timed and written into its probe
    (the ``Forecast`` adds them to every architecture's training), where its probe took under
    ``MORE_PROBES_BELOW_S``; a larger net's probe is left as it was (its training dominates)."""
    from types import SimpleNamespace

    from archstudy.sampling import ArchSpec
    from archstudy.study import load_dataset
    from archstudy.study.cli.run import MORE_PROBES_BELOW_S, _time_measures
    from archstudy.study.execution.costs import Forecast

    unit = SimpleNamespace(name="u", spec=ArchSpec(depth=3, width=8, d_in=40, d_out=3), seed=1)
    config = SimpleNamespace(metrics={})
    data = load_dataset("waveform-noise")
    slow = {"u": {"probe_s": 2 * MORE_PROBES_BELOW_S, "train_s": 10.0, "measure_s": None}}
    assert _time_measures(config, data, {"u": unit}, slow, "cpu") is None and slow["u"]["measure_s"] is None
    quick = {"u": {"probe_s": MORE_PROBES_BELOW_S / 2, "train_s": 10.0, "measure_s": None}}
    seconds = _time_measures(config, data, {"u": unit}, quick, "cpu")
    assert seconds is not None and seconds > 0 and quick["u"]["measure_s"] == seconds
    after = quick["u"]["after_s"]  # the NLC after training, timed on the same net
    assert after > 0
    forecast = Forecast(todo=1, slots=1, probes=quick, weights={"u": 1.0})
    assert forecast.eta(0, 0, 0)[0] == pytest.approx(10.0 + seconds + after)


def test_the_plan_probes_each_depth_once_before_any_twice():
    """``_probe_order``: the median, shallowest and deepest architectures first (each depth once: the example once
    probed depth 49 twice), then the other depths, then the depths already probed."""
    from types import SimpleNamespace

    from archstudy.study.cli.run import _probe_order

    depths = [49, 5, 49, 23, 37, 49, 5, 11]
    units = [SimpleNamespace(index=i, spec=SimpleNamespace(depth=d)) for i, d in enumerate(depths)]
    order = _probe_order(units)
    assert sorted(u.index for u in order) == list(range(8))  # every unit, once
    first = [u.spec.depth for u in order[:5]]
    assert len(set(first)) == 5 == len(set(depths))  # every depth before any again
    assert first[:3] == [37, 5, 49]  # median (of the sorted depths), shallowest, deepest
