"""Interrupts that are never lost: Ctrl-C (SIGINT) and SIGTERM (``kill``, ``ray job stop``) end a command.

Python runs a signal handler in the main thread between two bytecodes, wherever it is, and raises the
handler's exception there. Where that is inside a function whose exceptions Python ignores (a ``__del__``,
a weakref callback, the fork handlers of ``logging`` that Ray's start runs), the KeyboardInterrupt is
printed as "Exception ignored in ..." and dropped, and the command would carry on as if nothing happened.
So the command's handler (``handler``, installed by the CLI) also records the request, and the driver
checks the record (``check``) where it can stop cleanly: when Ray has started, and at every tick of the
engine. Library callers that install no handler are untouched (the record stays empty).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time

_requested: list[int] = []  # the signals received since the last ``clear``


def handler(signum, frame) -> None:
    """A signal handler: record the interrupt, then raise KeyboardInterrupt where the main thread is."""
    _requested.append(signum)
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if an interrupt arrived (whether or not its exception got through)."""
    if _requested:
        raise KeyboardInterrupt


def clear() -> None:
    _requested.clear()


GRACE_S = 4.0  # from the first interrupt to the end of the command, whatever it was doing (the promise: 5 s)
INTERRUPT_EXIT = 130  # 128 + SIGINT: the exit status of an interrupted command (SIGTERM arrives as Ctrl-C)


class _Deadline:
    """The last resort behind ``handler``: a signal's handler runs only when the main thread returns to Python, and a
    main thread stuck in C (pyarrow's open of a FIFO, a network wait, a long native call) would never return.
    Python's C-level handler also writes the signal's number to the wakeup descriptor (``signal.set_wakeup_fd``)
    whatever the main thread is doing; a watcher thread reads it, and ``GRACE_S`` after the first SIGINT or SIGTERM
    (at once after a second) ends the process: one line "archstudy COMMAND: interrupted" and exit status
    ``INTERRUPT_EXIT``, the line the command itself prints when it stops in time."""

    def __init__(self, command: str):
        self.command = command
        self.signalled = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the C handler never blocks on a full pipe
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._watcher = threading.Thread(target=self._watch, name="interrupt-deadline", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        wanted = {int(signal.SIGINT), int(signal.SIGTERM)}
        until = None
        while True:
            timeout = None if until is None else max(0.0, until - time.monotonic())
            ready, _, _ = select.select([self._read], [], [], timeout)
            if not ready:  # the grace ran out
                break
            try:
                got = os.read(self._read, 64)
            except OSError:
                return
            if not got:  # the command ended: the descriptor was closed
                return
            if wanted & set(got):
                if until is not None:  # a second interrupt: at once
                    break
                until = time.monotonic() + GRACE_S
                self.signalled.set()
        with contextlib.suppress(OSError):
            os.write(2, f"\narchstudy {self.command}: interrupted\n".encode())
        os._exit(INTERRUPT_EXIT)

    def lift(self) -> None:
        """The command ended: the wakeup descriptor put back, the watcher ended."""
        with contextlib.suppress(ValueError):  # not the main thread: nothing was set
            signal.set_wakeup_fd(self._previous)
        os.close(self._write)
        self._watcher.join(timeout=1.0)
        if not self._watcher.is_alive():
            os.close(self._read)


@contextlib.contextmanager
def deadline(command: str, *, until_exit: bool = False):
    """While the command runs, an interrupt ends it within ``GRACE_S`` whatever it is doing (``_Deadline``). Called in
    the main thread (elsewhere: nothing). ``until_exit`` (the process's entry point): after an interrupt the deadline
    also holds while the interpreter finishes (a thread it would wait for may be stuck in C), and the command leaves
    without finishing it (``leave``); without (a caller in Python: a test, a notebook) it is lifted when the command
    returns."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    watch = _Deadline(command)
    try:
        yield watch
    finally:
        if not (until_exit and watch.signalled.is_set()):
            watch.lift()


def must_leave(watch: "_Deadline | None") -> bool:
    """Whether the process should end without finishing the interpreter: it was interrupted (its deadline holds until
    it is gone), or a thread it gave up on still waits in a call that takes no interrupt (finishing the interpreter
    would end that thread inside C++ when it returns: SIGABRT)."""
    from ..experiment.location import still_waiting

    return bool(watch is not None and watch.signalled.is_set()) or still_waiting()


def leave(code: int) -> None:
    """End the process now with ``code``, its output flushed (``must_leave``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
