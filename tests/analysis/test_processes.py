"""analysis.processes: a piece of work in a forked process gives what the caller would have computed; a failure
there is computed again, and raised, in the caller; a child can be ended."""

from __future__ import annotations

import os

import pytest

from archstudy.analysis import processes
from archstudy.analysis.processes import Background


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def test_the_answer_is_computed_in_another_process_where_two_are_allowed():
    pid, value = Background(_pid_and_square, 12).result()
    assert value == 144
    assert (pid != os.getpid()) == (processes.workers() >= 2)


def test_with_one_process_it_is_computed_in_the_caller(monkeypatch):
    monkeypatch.setattr(processes, "workers", lambda: 1)
    assert Background(_pid_and_square, 3).result() == (os.getpid(), 9)


def _fails(where: list) -> None:
    where.append(os.getpid())  # in the caller's list only when the caller runs it
    raise ValueError("bad value 7")


def test_an_error_there_is_raised_here_with_its_message():
    where: list[int] = []
    with pytest.raises(ValueError, match="bad value 7"):
        Background(_fails, where).result()
    assert where == [os.getpid()]  # computed again in the caller, whose traceback the error has


def test_an_answer_that_does_not_pickle_is_computed_in_the_caller():
    value = Background(lambda: lambda: os.getpid()).result()  # a function made there cannot cross the pipe
    assert value() == os.getpid()


def test_a_cancelled_child_is_ended():
    import time

    b = Background(time.sleep, 30)
    process = b._process
    b.cancel()
    assert process is None or not process.is_alive()
