"""The progress line of a study's units (``Progress``) and of other long work (``Ticker``), on stderr.

Built on the lines every command shares (``study.experiment.terminal``: tqdm on a terminal, redrawn at least every
``TICK_S`` seconds, with the messages printed above the line; plain lines in a log, a study's when something finished,
at most every ``LOG_COUNTS_S`` and at least every ``LOG_EVERY_S``; ``phase`` for a step that cannot be counted).

Work that is not a study's units (a reproduction: ``archstudy reproduce``) shows a ``Ticker``: its label, the
latest thing it said, the counts of its own loops where it counts them (``12/40 architectures``), the elapsed
time and an ETA, from the counted rate (elapsed x (total - done) / done, over the counting so far), else from an
expected duration given at the start (about ``expected - elapsed`` left, never shown as done before it is).

The ETA of a study's units is ``study.execution.costs.Forecast``'s: from timed steps at first, then from the
measured wall time of the units finished in this session (their throughput) and the epochs the running ones
have done, so it follows the machine's load as it changes.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, TextIO

from tqdm import tqdm

from ..experiment.terminal import LOG_COUNTS_S, LOG_EVERY_S, TICK_S, is_terminal
from .costs import Forecast, duration

if TYPE_CHECKING:  # the engine imports Ray: a command that only shows a line (reproduce) need not
    from .engine import Tally


class Progress:
    """The one progress line of a study's units on stderr: architectures done / total, running (and what the running
    ones are doing: the epoch and the live runs of each, from their progress records), failed, ETA
    (``study.execution.costs.Forecast``). A tqdm bar on a terminal; plain lines in a log (module docstring)."""

    def __init__(self, stream: TextIO | None, total: int, done_before: int):
        self.stream, self.total, self.done_before = stream, total, done_before
        self.tty = is_terminal(stream)
        self.t0 = time.monotonic()
        self.last_counts: tuple[int, int] | None  # (done, failed) when the last line was printed
        self.last_print, self.last_counts, self.dirty = 0.0, None, False
        self.forecast: Forecast | None = None  # set by the driver for a session's units
        self.indices: dict[str, str] = {}  # unit name -> its label (index, and variant for a sibling)
        self.bar: tqdm | None = None  # the terminal's line, once the units run

    duration = staticmethod(duration)

    def status(self, t: Tally) -> str:
        """Running (and what the running ones do), failed, and the ETA."""
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
        return f"{running}, {t.failed} failed, ETA {eta}"

    def line(self, t: Tally) -> str:
        return f"archstudy: {self.done_before + t.done}/{self.total} done, {self.status(t)}"

    def update(self, t: Tally) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        counts = (t.done, t.failed)
        final = t.done + t.failed == t.total
        if self.tty:
            if self.bar is None:
                self.bar = tqdm(
                    total=self.total,
                    initial=self.done_before + t.done,
                    file=self.stream,
                    bar_format="archstudy: {n_fmt}/{total_fmt} done |{bar:12}| {elapsed}{postfix}",
                    postfix=self.status(t),
                    mininterval=0.0,
                    dynamic_ncols=True,
                )
                self.last_print, self.last_counts = now, counts
            elif counts != self.last_counts or now - self.last_print >= TICK_S or final:
                self.bar.n = self.done_before + t.done
                self.bar.set_postfix_str(self.status(t), refresh=False)
                self.bar.refresh()
                self.last_print, self.last_counts = now, counts
            self.dirty = True
            if final:
                self.close()
            return
        if (counts != self.last_counts and (final or now - self.last_print >= LOG_COUNTS_S)) or (
            now - self.last_print >= LOG_EVERY_S
        ):
            self.stream.write(self.line(t) + "\n")
            self.last_print, self.last_counts = now, counts
        self.stream.flush()

    def close(self) -> None:
        """End the terminal's line (it stays on screen, the messages after it print below)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self.dirty = False

    def say(self, message: str) -> None:
        if self.stream is None:
            return
        if self.bar is not None:
            self.bar.write(f"archstudy: {message}", file=self.stream)  # above the line, which is redrawn below
            return
        if self.dirty:
            self.stream.write("\n")
            self.dirty = False
        self.stream.write(f"archstudy: {message}\n")
        self.stream.flush()


class Ticker:
    """The line of a long piece of work that is not a study's units (module docstring): ``say`` prints a message
    (above the line on a terminal), ``count(done, total, what)`` sets its counts. A terminal's line is redrawn
    every ``TICK_S`` by a thread, so the elapsed time runs while the work blocks; in a log the messages are lines,
    and the counts a line when they change (at most every ``LOG_COUNTS_S``) and at least every ``LOG_EVERY_S``.
    ``tty`` forces either (None: whether ``stream`` is a terminal); ``heartbeat`` off: no line of its own in a log
    but the first and the counts (work that draws a line of its own, a study's); ``stream`` None: nothing."""

    def __init__(
        self,
        stream: TextIO | None,
        label: str,
        expected_s: float | None = None,
        *,
        tty: bool | None = None,
        heartbeat: bool = True,
    ):
        self.stream, self.label, self.expected_s, self.heartbeat = stream, label, expected_s, heartbeat
        self.tty = is_terminal(stream) if tty is None else tty
        self.t0 = time.monotonic()
        self.counted: tuple[int, int, str] | None = None  # (done, total, what) of the latest count
        self.count_t0: float | None = None  # when the counting began (the rate's start)
        self.count_base = 0  # done when the counting began
        self.last_print = self.t0
        self._lock = threading.Lock()
        self.bar: tqdm | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Ticker":
        if self.stream is not None:
            if self.tty:
                self.bar = tqdm(
                    file=self.stream, bar_format="archstudy: {desc}", desc=self.text(), leave=False, mininterval=0.0
                )
            else:
                self._line()  # a log: what runs, at once
            self._thread = threading.Thread(target=self._tick, name="archstudy-ticker", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            if self.tty:
                self._redraw()
            elif self.heartbeat and time.monotonic() - self.last_print >= LOG_EVERY_S:  # a log: a line this often
                self._line()

    def _line(self) -> None:
        with self._lock:
            assert self.stream is not None
            self.stream.write(f"archstudy: {self.text()}\n")
            self.stream.flush()
            self.last_print = time.monotonic()

    def _redraw(self) -> None:
        with self._lock:
            if self.bar is not None:
                self.bar.set_description_str(self.text(), refresh=True)

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left: from the counted rate once something was counted, else from ``expected_s``; None when
        neither is known."""
        now = time.monotonic() if now is None else now
        if self.counted is not None and self.count_t0 is not None:
            done, total, _ = self.counted
            rate_done = done - self.count_base
            if rate_done > 0 and total >= done:
                return (now - self.count_t0) * (total - done) / rate_done
        if self.expected_s is not None:
            return max(0.0, self.expected_s - (now - self.t0))
        return None

    def text(self, now: float | None = None) -> str:
        """``LABEL: 12/40 architectures, 1m02s, ETA 2m30s``."""
        now = time.monotonic() if now is None else now
        parts = [duration(now - self.t0)]
        if self.counted is not None:
            done, total, what = self.counted
            parts.insert(0, f"{done}/{total}" + (f" {what}" if what else ""))
        left = self.eta(now)
        counted = self.counted is not None and self.counted[0] > self.count_base
        if left is not None and counted:
            parts.append(f"ETA {duration(left)}")
        elif self.expected_s is not None and now - self.t0 >= self.expected_s:
            parts.append(f"past the {duration(self.expected_s)} it was expected to take")
        elif left is not None:
            parts.append(f"about {duration(left)} left")
        return f"{self.label}: " + ", ".join(parts)

    def say(self, message: str) -> None:
        if self.stream is None:
            return
        with self._lock:
            if self.bar is not None:
                self.bar.write(message, file=self.stream)
                return
            self.stream.write(message + "\n")
            self.stream.flush()
            self.last_print = time.monotonic()

    def count(self, done: int, total: int, what: str = "") -> None:
        """``done`` of ``total`` (``what``: their name, e.g. ``architectures``); a new ``what`` or ``total``
        starts a new rate."""
        now = time.monotonic()
        if self.counted is None or self.counted[1:] != (total, what) or self.count_t0 is None:
            self.count_t0, self.count_base = now, done
        changed = self.counted is None or self.counted[0] != done
        self.counted = (done, total, what)
        if self.stream is None:
            return
        if self.bar is not None:
            self._redraw()
            return
        if (changed and (done >= total or now - self.last_print >= LOG_COUNTS_S)) or (
            now - self.last_print >= LOG_EVERY_S
        ):
            self._line()
