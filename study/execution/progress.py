"""The one progress line a study's driver shows on stderr, and its messages."""

from __future__ import annotations

import time
from typing import TextIO

from .costs import Forecast, duration
from .engine import Tally


class Progress:
    """The one progress line on stderr: architectures done / total, running (and what the running ones are doing:
    the epoch and the live runs of each, from their progress records), failed, ETA (``study.execution.costs.Forecast``).

    On a terminal it is rewritten in place; in a log (not a terminal) a line is printed when something
    finished (at most every 2 s) and at least once a minute."""

    def __init__(self, stream: TextIO | None, total: int, done_before: int):
        self.stream, self.total, self.done_before = stream, total, done_before
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.last_counts: tuple[int, int] | None  # (done, failed) when the last line was printed
        self.last_print, self.last_counts, self.dirty = 0.0, None, False
        self.forecast: Forecast | None = None  # set by the driver for a session's units
        self.indices: dict[str, str] = {}  # unit name -> its label (index, and variant for a sibling)

    duration = staticmethod(duration)

    def line(self, t: Tally) -> str:
        left = t.total - t.done - t.failed
        f = self.forecast
        running = f"{t.running} running"
        if f is not None and t.running:
            detail = f.detail(self.indices)
            running += f" ({detail})" if detail else ""
        if not left:
            eta = "0s"
        elif f is None:
            elapsed = time.monotonic() - self.t0
            eta = self.duration(left * elapsed / t.done) if t.done else "--"
        else:
            seconds, past = f.eta(t.done, t.failed, t.running)
            eta = "--" if seconds is None else self.duration(seconds) + (" (running past the estimate)" if past else "")
        return f"archstudy: {self.done_before + t.done}/{self.total} done, {running}, {t.failed} failed, ETA {eta}"

    def update(self, t: Tally) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        counts = (t.done, t.failed)
        final = t.done + t.failed == t.total
        if self.tty:
            self.stream.write("\r" + self.line(t) + "\x1b[K")
            self.dirty = True
        elif (counts != self.last_counts and (final or now - self.last_print >= 2.0)) or now - self.last_print >= 60.0:
            self.stream.write(self.line(t) + "\n")
            self.last_print, self.last_counts = now, counts
        self.stream.flush()

    def say(self, message: str) -> None:
        if self.stream is None:
            return
        if self.dirty:
            self.stream.write("\n")
            self.dirty = False
        self.stream.write(f"archstudy: {message}\n")
        self.stream.flush()
