"""The report's two processes: ``workers`` (how many to use) and ``Background`` (a piece of work in a forked
process while the caller goes on).

A report is drawn on the 2-core machines the project runs on, mostly in Python (pandas, scikit-learn, matplotlib),
so a second process halves the longest pieces: the figures (``drawing.Drawer``) and the held-out prediction beside
the other statistics (``study_analysis.analyse``). Where the platform does not fork, everything runs in the caller; the
numbers and the page are the same either way.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Callable


def workers() -> int:
    """Processes to work on: two where the platform forks (each of the report's figures is a small job; more
    processes than two win little on the 2-core machines a report is drawn on, and cost their memory), else one
    (spawning a process would import everything again)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class Background:
    """``fn(*args, **kw)`` computed in a forked process while the caller goes on (the report's held-out
    prediction, seconds of scikit-learn, beside the other statistics); ``result()`` waits for it and returns it.
    Where ``workers`` allows one process only, or it failed there (raised, died, or gave an answer that does not
    pickle), it is computed in the caller, which raises any error with its whole traceback: the value is the
    same either way."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> None:
        self._call = (fn, args, kw)
        self._process: BaseProcess | None = None
        self._pipe: Connection[Any, Any] | None = None
        if workers() < 2:
            return
        for stream in (sys.stdout, sys.stderr):  # else the child would write what the parent had buffered again
            stream.flush()
        ctx = multiprocessing.get_context("fork")
        self._pipe, send = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_background, args=(send, fn, args, kw), daemon=True)
        self._process.start()
        send.close()

    def result(self) -> Any:
        fn, args, kw = self._call
        process, self._process = self._process, None
        if process is None or self._pipe is None:
            return fn(*args, **kw)
        try:
            ok, value = self._pipe.recv()
        except Exception:  # noqa: BLE001 - the child died, or its answer does not unpickle
            ok, value = False, None
            process.terminate()
        finally:
            self._pipe.close()
            process.join()
        # it failed there: computed here, so that an error is raised with its whole traceback
        return value if ok else fn(*args, **kw)

    def cancel(self) -> None:
        """Ends the child (the caller failed and will not ask for the result)."""
        if self._process is not None and self._pipe is not None:
            self._process.terminate()
            self._pipe.close()
            self._process.join()
            self._process = None


def _background(send: Connection[Any, Any], fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    try:
        answer = (True, fn(*args, **kw))
    except BaseException:  # noqa: BLE001 - the parent computes it again, and raises there
        answer = (False, None)
    try:
        send.send(answer)
    except Exception:  # noqa: BLE001 - an answer that does not pickle: the parent computes it itself
        pass
    finally:
        send.close()
