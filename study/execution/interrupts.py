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
