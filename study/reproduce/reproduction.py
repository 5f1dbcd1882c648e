"""A reproduction: one experiment of a paper, run by the pipeline, its numbers beside the paper's.

Each reproduction is one module of this package defining ``REPRODUCTION = Reproduction(...)`` and offering it
(``offer(REPRODUCTION, order=...)``, its place in ``reproduce --list`` and ``reproduce all``): its name,
the paper and the table or figure, its settings at each scale (``tiny``: seconds, for the test suite;
``quick``: minutes on 2 cores; ``paper``: the paper's own settings), what each scale costs here, and a
``reproduce(context) -> Measured`` function. ``run_reproduction`` does the rest for all of them: checks the
arguments, times the run, writes ``OUT/NAME.json`` and ``OUT/NAME.html``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from archstudy.sampling import SpecError
from archstudy.sampling.constraints import Choice, Integer, check
from archstudy.sampling.registry import Registry

from .result import Result, Row

SCALES = ("tiny", "quick", "paper")
WHERE = "reproduce"


LIST_WIDTH = 100  # ``archstudy reproduce --list`` fits this many columns


@dataclass(frozen=True)
class RunOptions:
    """How reproductions run, declared once for ``reproduce``, ``reproduce_all``, ``run_reproduction`` and
    ``summary.run_all`` (never what they compute, which the reproduction and its scale's settings fix).

    ``scale``: one of ``SCALES``. ``seed``: the seed of every draw. ``device``: the torch device. ``root``: the
    directory of the paper's data files (``Reproduction.reads_root``), or None. ``threads``: torch's CPU threads
    during each run (1: the nets here are small, and one thread is faster and steadier than two: nlc-table2 at
    the tiny scale took 10 s with one and 41 s with two, best of 3 interleaved repeats on a busy 2-core machine,
    as thread wake-ups dominate small operations; a study, nlc-figure2, gives each architecture its own
    one-thread worker whatever this says). ``jobs``: reproductions side by side in ``reproduce all`` (None:
    ``summary.default_jobs``; one reproduction runs in one process). ``progress``: where the progress lines go
    (``study.execution.progress.Ticker``), or None. ``echo``: where ``reproduce all`` says its estimate and each
    table, or None."""

    scale: str = "quick"
    seed: int = 0
    device: Any = "cpu"
    root: Any = None
    threads: int = 1
    jobs: int | None = None
    progress: TextIO | None = sys.stderr
    echo: TextIO | None = sys.stdout


def listing(head: str, parts: list[str], width: int = LIST_WIDTH) -> str:
    """``head`` wrapped to ``width`` columns, then each of ``parts`` on lines of its own, indented by two."""
    import textwrap

    lines = textwrap.wrap(head, width, subsequent_indent="  ")
    for part in parts:
        lines += textwrap.wrap(part, width, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(lines)


@dataclass(frozen=True)
class Context:
    """What a reproduction's ``reproduce`` gets: the settings of the chosen scale and where to work."""

    scale: str
    settings: Any  # the reproduction's own frozen dataclass for this scale
    seed: int
    device: Any  # torch.device
    root: Path | None  # the user's data directory (``Reproduction.reads_root``), or None
    out: Path  # the output directory (a reproduction may keep work there, e.g. a study)
    progress: TextIO | None = None
    line: Any = None  # the progress line (``study.execution.progress.Ticker``) that ``say`` and ``count`` go through

    def say(self, message: str) -> None:
        if self.line is not None:
            self.line.say(message)
        elif self.progress is not None:
            print(message, file=self.progress, flush=True)

    def count(self, done: int, total: int, what: str = "") -> None:
        """``done`` of ``total`` (``what``: e.g. ``nets trained``) for the progress line and its ETA."""
        if self.line is not None:
            self.line.count(done, total, what)


@dataclass
class Measured:
    """What ``reproduce`` returns: the rows, the figures of the page (caption, matplotlib Figure), and facts for
    the JSON (``data``: which data was used; ``note``: findings and choices in words; anything else)."""

    rows: list[Row]
    figures: list[tuple[str, Any]] = field(default_factory=list)
    data: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    name: str
    paper: str  # authors, *short title*
    source: str  # which table or figure (and section)
    summary: str  # one line: what is compared
    scales: Mapping[str, Any]  # SCALES -> a frozen dataclass of settings
    cost: Mapping[str, str]  # SCALES -> what it costs on the 2-core machine it was built on (measured or estimated)
    reproduce: Callable[[Context], Measured] = field(repr=False)
    reads_root: str | None = None  # the image set --root supplies ("cifar10", "mnist"); None: --root is refused
    whole_machine: bool = False  # it keeps every core busy itself (a study's workers): ``reproduce all`` runs it alone

    def __post_init__(self):
        if set(self.scales) != set(SCALES) or set(self.cost) != set(SCALES):
            raise ValueError(f"reproduction {self.name}: settings and cost for exactly the scales {SCALES}")

    def line(self, width: int = LIST_WIDTH) -> str:
        """Its entry in ``archstudy reproduce --list``: "NAME: paper, source", what it measures, then its cost at
        each scale, wrapped to ``width`` columns (the lines after the first indented)."""
        return listing(
            f"{self.name}: {self.paper}, {self.source}",
            [self.summary, *(f"{s}: {self.cost[s]}" for s in SCALES)],
            width,
        )


# Every reproduction offered (``archstudy reproduce NAME``), in the order of ``reproduce --list`` and ``reproduce all``.
REPRODUCTIONS: Registry[Reproduction] = Registry("reproduction", __package__)


def offer(reproduction: Reproduction, *, order: int) -> Reproduction:
    """Offers ``reproduction`` (``REPRODUCTIONS``) at the place ``order`` of ``reproduce --list`` and ``reproduce
    all`` (gaps of 10, so a new one can go between two); its module calls it beside its ``REPRODUCTION``."""
    return REPRODUCTIONS.register(
        reproduction.name, reproduction, module=reproduction.reproduce.__module__, order=order
    )


UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
_COST = re.compile(r"^\s*~?(\d+(?:\.\d+)?)\s*(s|min|h)\b")


def cost_seconds(text: str) -> float | None:
    """The seconds a declared cost states ("3 min", "42 s measured", "2 h (estimated)" -> 180, 42, 7200), or None
    when it states no time (e.g. "hours (estimated): a GPU job"): what the summary plans with, and what the
    progress line counts down from until the work counts its own units."""
    m = _COST.match(text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def sub_seed(seed: int, *keys: int) -> int:
    """A 32-bit seed for draw ``keys`` of a reproduction run with ``seed`` (initialization k, run r, ...):
    ``SeedSequence([seed, *keys])``, so every draw is the same on every machine and in any order."""
    import numpy as np

    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0])


def check_device(device: Any):
    """The device checked for ``archstudy reproduce`` (``study.training.device.available_device``, named
    ``WHERE``); torch is imported here, not with the catalogue."""
    from ..training.device import available_device

    return available_device(device, WHERE)


def check_out(out) -> Path:
    """The output directory, created when missing; a file there is refused (nothing stored is replaced by a
    directory)."""
    text = str(out) if out is not None else ""
    if not text.strip():
        raise SpecError(WHERE, "out", out, "must be a directory")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise SpecError(WHERE, "out", text, "is a file: give a directory (NAME.json and NAME.html go there)")
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def torch_threads(n: int):
    """torch's intra-op threads set to ``n`` for the block, then restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_reproduction(
    reproduction: Reproduction, out, options: RunOptions, *, tty: bool | None = None
) -> tuple[Result, Path, Path]:
    """Run ``reproduction`` as ``options`` say (``RunOptions``; ``jobs`` and ``echo`` are ``reproduce all``'s) and
    write ``out/NAME.json`` and ``out/NAME.html``; returns the result and both paths. Bad arguments and missing
    data files raise ``UserError`` before any work.

    The progress line (``study.execution.progress.Ticker``: the reproduction, the counts of its loops, the elapsed
    time and an ETA, from the counts or else from the catalogue's cost at this scale) is redrawn on a terminal,
    plain lines in a log; ``tty`` False: plain lines whatever it is (several reproductions side by side on one
    terminal)."""
    from .page import write_page

    name = reproduction.name
    scale = check(WHERE, "scale", Choice(SCALES), options.scale)
    seed = check(WHERE, "seed", Integer(0), options.seed)
    threads = check(WHERE, "threads", Integer(1), options.threads)
    root = options.root
    if root is not None:
        if reproduction.reads_root is None:
            raise SpecError(WHERE, "root", str(root), f"must not be given: {name} reads no data files")
        from ..datasets.images import IMAGE_SETS

        root = Path(root).expanduser()
        IMAGE_SETS[reproduction.reads_root].locate(root)  # the files are there, or one line naming them
    device = check_device(options.device)
    out = check_out(out)
    settings = reproduction.scales[scale]
    from ..execution.progress import Ticker

    # A reproduction that runs a study (whole_machine) shows the study's own line: its ticker only says messages.
    tty = False if reproduction.whole_machine else tty
    t0 = time.perf_counter()
    label, expected = f"reproduce {name} ({scale})", cost_seconds(reproduction.cost[scale])
    progress = options.progress
    with Ticker(progress, label, expected, tty=tty, heartbeat=not reproduction.whole_machine) as line:
        context = Context(scale, settings, seed, device, root, out, progress, line)
        with torch_threads(threads):
            measured = reproduction.reproduce(context)
    seconds = time.perf_counter() - t0
    extra = {
        "source": reproduction.source,
        "seed": seed,
        "device": str(device),
        "threads": threads,
        "data": measured.data,
        "settings": dataclasses.asdict(settings),
        "note": measured.note,
        **measured.extra,
    }
    result = Result(name, reproduction.paper, scale, seconds, measured.rows, extra)
    json_path = result.write_json(out)
    html_path = write_page(result, measured.figures, out / f"{name}.html")
    return result, json_path, html_path
