"""What a long command shows on stderr while it works, on a terminal or in a log: the lines every command shares.

On a terminal a tqdm line (tqdm: a maintained progress library with no dependencies, docs/running.md), redrawn at
least every ``TICK_S`` seconds by a thread, so that the elapsed time runs and nothing is silent while the command
blocks; erased when it ends. In a log (the stream not a terminal) plain lines: at most every ``LOG_COUNTS_S`` when
counts change, at least every ``LOG_EVERY_S``.

``phase``: a step that cannot be counted (loading data, starting Ray, fitting a predictor). ``StepLine``: a command's
named steps, each counted where it can be (the report, ``predict_study``). The study's own line, its units and ETA,
is ``study.execution.progress``'s, built on these. Torch-free and Ray-free, below both the study library and the
analysis, which both show them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Any, Callable, Iterator, TextIO

from tqdm import tqdm

# What a progress callback of named steps (``StepLine``, the report's ``progress``, ``predict_study``'s) is called
# with: a step's label, and where the step's work can be counted, how much of it is done of how much.
ProgressFn = Callable[[str, int | None, int | None], None]

TICK_S = 0.5  # a terminal's line is redrawn at least this often
LOG_COUNTS_S = 2.0  # in a log: a study's line when its counts change, at most this often ...
# ... and at least this often: a log (a job's, a CI runner's) is never silent for 10 s, a loaded machine's late
# wake-ups included (the whole commands' silences: tests/study/cli/test_no_silence.py)
LOG_EVERY_S = 8.0


def is_terminal(stream: TextIO | None) -> bool:
    """A terminal that a redrawn line can be drawn on: a tty that reports columns. A tty of 0 columns (a plain
    ``script``, some CI runners) gets the plain lines of a log: tqdm draws nothing there, for as long as it runs."""
    if stream is None or not getattr(stream, "isatty", lambda: False)():
        return False
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, OSError, ValueError):  # no descriptor (a wrapped stream): the tty's word stands
        return True


@contextlib.contextmanager
def phase(stream: TextIO | None, label: str, expected_s: float | None = None, *, in_log: bool = True) -> Iterator[None]:
    """Show ``label`` while the block runs: on a terminal a tqdm line with the elapsed time (and the time left of
    ``expected_s``, an estimate, when given), redrawn every ``TICK_S`` by a thread while the block blocks (a Ray
    start, a fit), erased when it ends; in a log one line at the start, unless ``in_log`` is off (a phase whose
    checks may refuse the command: a refused command is one line in a log), then one with the elapsed time every
    ``LOG_EVERY_S`` while it lasts. ``stream`` None: nothing."""
    if stream is None:
        yield
        return
    t0 = time.monotonic()
    if not is_terminal(stream):
        if in_log:
            stream.write(f"archstudy: {label} ...\n")
            stream.flush()

        def beat() -> None:
            stream.write(f"archstudy: {label}: {_elapsed(time.monotonic() - t0)} so far\n")
            stream.flush()

        with _every(LOG_EVERY_S, beat, "archstudy-phase-log"):
            yield
        return
    total = None if expected_s is None else max(float(expected_s), 1e-3)
    fmt = "archstudy: {desc} {elapsed}" + (" (about {remaining} left)" if total else "")
    bar = tqdm(total=total, desc=label, file=stream, bar_format=fmt, leave=False, mininterval=0.0)

    def tick() -> None:
        if total is not None:
            bar.n = min(time.monotonic() - t0, total * 0.99)  # an estimate: never shown as done before it is
        bar.refresh()

    try:
        with _every(TICK_S, tick, "archstudy-phase"):
            yield
    finally:
        bar.close()


@contextlib.contextmanager
def _every(period_s: float, fn: Callable[[], None], name: str) -> Iterator[None]:
    """Call ``fn`` every ``period_s`` from a thread of its own while the block runs (a phase's line, which must go on
    while the block blocks); stopped and joined when the block ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(period_s):
            fn()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class StepLine:
    """The progress of a command's named steps (the report's, ``predict_study``'s) on ``stream`` (stderr by default):
    on a terminal one tqdm line, the step's label, its count and the time left (tqdm's estimate from
    the rate so far) where the step can be counted, and the elapsed time, redrawn every ``TICK_S`` by a thread so that
    nothing is silent while a step blocks (reading a study, waiting for the held-out evaluation); erased at the end. In
    a log (stream not a terminal) a plain line with the step and its count whenever ``LOG_COUNTS_S`` passed without one
    and the step or its count changed; a command refused within that time (a missing study) prints its one error line
    only. Called as ``progress(label, done, total)``."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.state: tuple[str, int | None, int | None] | None = None  # the step now
        self.shown: tuple[str, int | None, int | None] | None = None  # the step the log's last line said
        self.last = time.monotonic()
        self.bar: Any = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="archstudy-steps", daemon=True)
        self.ticker.start()

    def _tick(self) -> None:
        while not self.stop.wait(TICK_S):
            with self.lock:
                if self.tty:
                    if self.bar is not None:
                        self.bar.refresh()
                elif self.state not in (None, self.shown) and time.monotonic() - self.last >= LOG_COUNTS_S:
                    self._line()

    def _line(self) -> None:
        assert self.state is not None
        label, done, total = self.state
        counted = f" {done:,}/{total:,}" if total and done is not None else ""
        self.stream.write(f"archstudy: {label}{counted} ...\n")
        self.stream.flush()
        self.shown, self.last = self.state, time.monotonic()

    def __call__(self, label: str, done: int | None = None, total: int | None = None) -> None:
        with self.lock:
            same = self.state is not None and self.state[0] == label
            self.state = (label, done, total)
            if not self.tty:
                return
            from tqdm import tqdm

            if same and self.bar is not None:
                self.bar.n = done or 0
                self.bar.refresh()
                return
            if self.bar is not None:
                self.bar.close()
            counted = "{n_fmt}/{total_fmt} {elapsed} (about {remaining} left)"
            self.bar = tqdm(
                total=total,
                initial=done or 0,
                desc=label,
                file=self.stream,
                bar_format="archstudy: {desc} " + (counted if total else "{elapsed}"),
                leave=False,
                mininterval=0.0,
                dynamic_ncols=True,
            )

    def close(self) -> None:
        """Ends the ticker and erases the line."""
        self.stop.set()
        self.ticker.join()
        with self.lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


def _elapsed(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m``: a phase's time in a log line."""
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
