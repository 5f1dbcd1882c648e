"""study.execution.progress.Ticker: the line of work that is not a study's units (a reproduction): its counts and an
ETA from their rate, else the time left of an expected duration; redrawn on a terminal so it is never silent for
long, plain lines in a log."""

import io
import time

import pytest

from archstudy.study.execution import progress
from archstudy.study.execution.progress import TICK_S, Ticker


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    return now


def test_the_eta_is_the_counted_rate_over_what_is_left(clock):
    t = Ticker(None, "reproduce x (quick)", expected_s=100.0)
    assert t.text() == "reproduce x (quick): 0s, about 1m40s left"
    clock[0] += 30.0
    assert t.eta() == 70.0 and t.text().endswith("about 1m10s left")  # the expected duration, counted down
    t.count(0, 10, "nets trained")  # the counting starts: its rate from here
    clock[0] += 20.0
    t.count(4, 10, "nets trained")
    assert t.eta() == pytest.approx(20.0 * 6 / 4)  # 4 in 20 s: 6 more in 30 s
    assert t.text() == "reproduce x (quick): 4/10 nets trained, 50s, ETA 30s"
    clock[0] += 200.0  # longer than expected, and the rate says so
    assert t.text() == "reproduce x (quick): 4/10 nets trained, 4m10s, ETA 5m30s"


def test_past_the_expected_time_it_says_so_rather_than_zero_left(clock):
    t = Ticker(None, "reproduce y (tiny)", expected_s=60.0)
    clock[0] += 90.0
    assert t.text() == "reproduce y (tiny): 1m30s, past the 1m00s it was expected to take"
    assert Ticker(None, "z").text() == "z: 0s"  # nothing known: the elapsed time alone


def test_a_log_gets_a_first_line_the_messages_and_the_counts_when_they_change():
    log = io.StringIO()
    with Ticker(log, "reproduce x (tiny)", expected_s=5.0) as t:
        t.say("x: the first net")
        t.count(1, 2, "nets")
        t.count(2, 2, "nets")  # the last count: always a line
    lines = log.getvalue().splitlines()
    assert lines[0] == "archstudy: reproduce x (tiny): 0s, about 5s left"
    assert lines[1] == "x: the first net"
    assert lines[-1].startswith("archstudy: reproduce x (tiny): 2/2 nets, ")
    assert len(lines) == 3  # 1/2 came within LOG_COUNTS_S of the first line: no line for it


def test_on_a_terminal_the_line_runs_while_the_work_blocks():
    term = Terminal()
    with Ticker(term, "reproduce x (tiny)") as t:
        time.sleep(4 * TICK_S)  # blocked: no count, no message
        t.say("a message")
    out = term.getvalue()
    assert out.count("archstudy: reproduce x (tiny): ") >= 3  # redrawn while it blocked
    assert "a message\n" in out


def test_a_log_gets_a_line_at_least_every_log_every_s_unless_the_work_draws_its_own(monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.1)
    for heartbeat, least, most in ((True, 3, 100), (False, 1, 1)):
        log = io.StringIO()
        with Ticker(log, "reproduce x (tiny)", heartbeat=heartbeat):
            time.sleep(0.5)  # blocked: no count, no message
        lines = log.getvalue().splitlines()
        assert least <= len(lines) <= most and all(line.startswith("archstudy: reproduce x (tiny): ") for line in lines)
