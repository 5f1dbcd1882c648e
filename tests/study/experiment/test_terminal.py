"""Which streams get the redrawn line and which the plain lines of a log (``study.experiment.terminal``)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pty
import struct
import termios
from typing import Iterator, TextIO

import pytest

from archstudy.study.experiment.terminal import is_terminal, phase


@contextlib.contextmanager
def _tty(columns: int) -> Iterator[TextIO]:
    """The writing end of a pseudo-terminal whose window reports ``columns`` columns."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        with os.fdopen(follower, "w") as stream:
            yield stream
    finally:
        os.close(leader)


@pytest.mark.parametrize(("columns", "drawn"), [(80, True), (0, False)])
def test_a_tty_draws_a_line_only_when_it_reports_columns(columns, drawn):
    with _tty(columns) as stream:
        assert os.get_terminal_size(stream.fileno()).columns == columns
        assert is_terminal(stream) is drawn


def test_a_stream_that_is_not_a_tty_gets_the_logs_lines():
    log = io.StringIO()
    assert not is_terminal(log) and not is_terminal(None)
    with phase(log, "loading the data"):
        pass
    assert log.getvalue() == "archstudy: loading the data ...\n"


def test_a_tty_without_a_descriptor_is_taken_at_its_word():
    class Wrapped(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert is_terminal(Wrapped())
