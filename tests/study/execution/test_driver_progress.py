"""What a study shows while it runs (study.execution.progress): on a terminal a tqdm line redrawn at least every
TICK_S (never silent longer), with the messages above it and the Forecast's ETA; in a log plain lines, one when the
counts change; a phase that cannot be counted (starting Ray, fitting) ticks its elapsed time on a terminal and is
one line in a log. And the ETA follows the measured throughput as units finish, not only the first estimate."""

import io
import re
import time

from archstudy.study.execution.costs import Forecast
from archstudy.study.execution.engine import Tally
from archstudy.study.execution.progress import Progress
from archstudy.study.experiment.terminal import TICK_S, phase


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_a_bar_with_the_forecasts_eta_and_messages_print_above_it():
    term = Terminal()
    shown = Progress(term, 4, 1)
    shown.forecast = Forecast(todo=3, slots=1, durations=[60.0])  # one unit of this session took a minute
    shown.update(Tally(total=3, done=0, running=1, in_flight=["a"]))
    shown.say("a message")
    shown.update(Tally(total=3, done=1, running=1, in_flight=["b"]))
    out = term.getvalue()
    frames = [f for f in re.split(r"[\r\n]", out) if f.startswith("archstudy: ")]
    assert any(f.startswith("archstudy: 1/4 done |") and f.endswith(", 1 running, 0 failed, ETA 3m00s") for f in frames)
    assert any(f.startswith("archstudy: 2/4 done |") for f in frames)
    assert "\rarchstudy: a message\n" in out  # the line erased, the message, the line drawn again below it
    assert "done |" in out.split("archstudy: a message\n")[1]
    shown.update(Tally(total=3, done=3))
    assert shown.bar is None  # closed at the end: what follows prints below it
    shown.say("after")
    assert term.getvalue().endswith("archstudy: after\n")


def test_in_a_log_the_lines_are_plain_and_come_when_the_counts_change():
    log = io.StringIO()
    shown = Progress(log, 2, 0)
    shown.update(Tally(total=2, done=0, running=2))
    shown.update(Tally(total=2, done=0, running=2))  # nothing changed, within the minute: no line
    shown.update(Tally(total=2, done=2))  # the last one: at once
    assert log.getvalue().splitlines() == [
        "archstudy: 0/2 done, 2 running, 0 failed, ETA --",
        "archstudy: 2/2 done, 0 running, 0 failed, ETA 0s",
    ]
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()


def test_a_phase_ticks_its_elapsed_time_on_a_terminal_and_is_one_line_in_a_log():
    term = Terminal()
    with phase(term, "starting Ray here"):
        time.sleep(3 * TICK_S + 0.3)
    frames = [f for f in term.getvalue().split("\r") if "starting Ray here" in f]
    assert len(frames) >= 3  # redrawn while the block blocked: its time runs
    assert any("00:01" in f for f in frames)
    log = io.StringIO()
    with phase(log, "starting Ray here"):
        pass
    assert log.getvalue() == "archstudy: starting Ray here ...\n"
    with phase(log, "planning", in_log=False):  # checks that may refuse: a refused command stays one line
        pass
    assert log.getvalue() == "archstudy: starting Ray here ...\n"
    with phase(None, "nothing"):  # no stream: nothing, and no thread
        pass


def test_a_phase_in_a_log_says_its_elapsed_time_every_log_every_s_while_it_lasts(monkeypatch):
    """No silence longer than ``LOG_EVERY_S`` in a log (a job's, a CI runner's): a blocking phase (a Ray start, a
    fit) adds a line with its elapsed time that often, a phase whose first line is held back (``in_log`` off) too."""
    from archstudy.study.experiment import terminal

    assert terminal.LOG_EVERY_S == 8.0  # under the 10 s bar, with room for a loaded machine's late wake-ups
    monkeypatch.setattr(terminal, "LOG_EVERY_S", 0.1)
    for in_log, first in ((True, ["archstudy: fitting ..."]), (False, [])):
        log = io.StringIO()
        t0 = time.monotonic()
        with phase(log, "fitting", in_log=in_log):
            time.sleep(0.45)
        lines = log.getvalue().splitlines()
        beats = lines[len(first) :]
        assert lines[: len(first)] == first and 3 <= len(beats) <= int((time.monotonic() - t0) / 0.1)
        assert all(line == "archstudy: fitting: 0s so far" for line in beats)


def test_the_eta_follows_the_throughput_measured_as_units_finish():
    """Probed at 10 s a unit, the units take 40 s (a loaded machine): once one has finished the ETA is the
    measured pace, not the probe's."""
    f = Forecast(todo=5, slots=1, probes={"p": {"train_s": 10.0, "measure_s": 0.0}})
    assert f.eta(0, 0, 0, now=0.0)[0] == 50.0  # 5 units x 10 s: the probes' estimate
    f.seen(["a"], now=0.0)
    f.finished("a", now=40.0)
    f.seen(["b"], now=40.0)
    seconds, _ = f.eta(1, 0, 1, now=40.0)
    assert seconds == 4 * 40.0  # the running unit just started, 3 queued: 4 x the measured 40 s
