"""An interrupt is never lost (study.execution.interrupts): Python drops the KeyboardInterrupt of a signal that arrives
inside a function whose exceptions it ignores (a ``__del__`` here; logging's fork handlers during Ray's start
in the real case), and the command's handler records it so that the driver still stops."""

import gc
import os
import signal
import sys

import pytest

from archstudy.study.execution import interrupts
from archstudy.study.cli import sigterm_as_interrupt


class _InterruptedWhileCollected:
    """Sends the signal to this process from ``__del__``: its handler runs there, where exceptions are dropped."""

    def __init__(self, signum):
        self.signum = signum

    def __del__(self):
        os.kill(os.getpid(), self.signum)
        for _ in range(1000):  # bytecodes, so the handler runs here, inside __del__
            pass


@pytest.fixture
def dropped(monkeypatch):
    """The exceptions Python drops (``sys.unraisablehook``), instead of printing them."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    return seen


def _swallowed(signum) -> None:
    _InterruptedWhileCollected(signum)  # collected at once (reference count 0)
    gc.collect()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_dropped_by_python_is_still_seen_by_the_check(signum, dropped):
    with sigterm_as_interrupt():
        _swallowed(signum)  # returns normally: the exception was dropped
        assert dropped == [KeyboardInterrupt]  # "Exception ignored in ... __del__"
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_interrupted()
    interrupts.raise_if_interrupted()  # cleared when the command ends: nothing left for the next one
    assert signal.getsignal(signal.SIGTERM) is not interrupts.handler


def test_without_the_record_the_dropped_interrupt_is_lost(dropped):
    """What the record is for: under Python's own SIGINT handler the same interrupt leaves no trace."""
    # Python's own handler, also where the suite was started with SIGINT ignored (a background job, nohup), which
    # Python then keeps ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _swallowed(signal.SIGINT)
        assert dropped == [KeyboardInterrupt]
        interrupts.raise_if_interrupted()  # nothing recorded: a library caller's process is untouched
    finally:
        signal.signal(signal.SIGINT, previous)
