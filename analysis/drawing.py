"""Drawing the report's figures: each figure drawn once, rendered as an inline PNG for the page and, where asked
(``archstudy report --figures DIR --format svg``), written as a file of its own, ``DIR/<id>.<format>``.

A figure's caption ends with how its scatters were drawn where that is not plain opaque points
(``plotting.density_notes``: semi-transparent points, hexagonal bins). A figure with nothing to draw
(``figures.NothingToDraw``, or its declaration's ``skip``) gives the one line the page shows in its place; one
that fails shows its error instead of sinking the report (and says so on stderr). The figures are independent of
each other, so ``Drawer.draw_all`` draws them on two processes where the platform forks (matplotlib spends most of
a report's time in Python, on one core); the page is the same either way.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from archstudy.sampling import SpecError
from archstudy.sampling.regular_files import write_whole
from archstudy.study.experiment.config import REPORT_NAME
from archstudy.study.experiment.location import study_holding

from .figures.base import NothingToDraw, omissions
from .html import esc
from .plotting import Image, density_notes, render
from .processes import workers
from .results import local_root

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class FigureJob:
    """One figure of the page: ``fid`` (its id in the page and its file name), ``key`` (its declaration's),
    ``caption``, ``where`` (the study, for an error message), ``draw`` (-> ``Figure``), and ``skip`` (the line
    shown instead, when its declaration skips it for these data; shown only where ``note_skip``)."""

    fid: str
    key: str
    caption: str
    where: str
    draw: Callable[[], Figure]
    skip: str | None = None
    note_skip: bool = True


@dataclass(frozen=True)
class Drawn:
    """What drawing a job gave: the page's PNG (``image``) and the lines of the panels it left out
    (``omitted``), or the line that replaces it (``missing``), or the error that kept it from being drawn;
    ``file``: the figure in the format of the files, when one is asked for and differs from the PNG; ``notes``:
    how its scatters were drawn (``plotting.density_notes``: semi-transparent points, hexagonal bins), which the
    caption says."""

    image: Image | None = None
    omitted: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    missing: str | None = None
    error: str | None = None
    file: Image | None = None


def draw(job: FigureJob, file_format: str | None = None) -> Drawn:
    """Draws one job (in whichever process runs it): the figure, its PNG, its file's format where that is not
    PNG."""
    if job.skip is not None:
        return Drawn(missing=job.skip)
    try:
        fig = job.draw()
        image = render(fig, "png")
        other = render(fig, file_format) if file_format not in (None, "png") else None
    except NothingToDraw as e:
        return Drawn(missing=str(e))
    except Exception as e:  # noqa: BLE001 - shown in the report, with the figure named
        return Drawn(error=repr(e))
    return Drawn(image, tuple(omissions(fig)), file=other, notes=tuple(density_notes(fig)))


# The jobs of ``Drawer.draw_all`` as the forked workers see them (set before the pool forks).
_JOBS: list[FigureJob] = []
_FORMAT: str | None = None


def _draw_one(k: int) -> Drawn:
    return draw(_JOBS[k], _FORMAT)


@dataclass
class Drawer:
    """Draws the page's figures (``html``) and writes each to ``directory`` as ``<id>.<fmt>`` when given one;
    ``written``: the files written, in page order."""

    directory: Path | None = None
    fmt: str = "png"
    processes: int | None = None  # None: ``workers()``
    written: list[Path] = field(default_factory=list)
    _done: dict[str, Drawn] = field(default_factory=dict)

    def draw_all(self, jobs: list[FigureJob]) -> None:
        """Draws ``jobs`` ahead of the page, in parallel where ``workers`` allows; ``html`` then takes each from
        here."""
        global _JOBS, _FORMAT
        todo = [j for j in jobs if j.fid not in self._done and j.skip is None]
        n = self.processes if self.processes is not None else workers()
        file_format = self.fmt if self.directory is not None else None
        if n <= 1 or len(todo) < 2:
            for j in todo:
                self._done[j.fid] = draw(j, file_format)
            return
        _JOBS, _FORMAT = todo, file_format
        try:
            # the longest first, so that the two processes finish together: more panels, more time
            order = sorted(range(len(todo)), key=lambda k: -_weight(todo[k]))
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                for k, result in zip(order, pool.map(_draw_one, order)):
                    self._done[todo[k].fid] = result
        finally:
            _JOBS, _FORMAT = [], None

    def html(self, job: FigureJob) -> str:
        """The figure's HTML: the image with its caption (and the panels it left out), or the line that replaces
        it, or the error; the file written where asked."""
        if job.skip is not None:
            return f'<p class="missing" data-missing="{esc(job.key)}">{esc(job.skip)}</p>' if job.note_skip else ""
        d = self._done.pop(job.fid, None) or draw(job, self.fmt if self.directory is not None else None)
        if d.missing is not None:
            return f'<p class="missing" data-missing="{esc(job.key)}">{esc(d.missing)}</p>'
        if d.error is not None:
            print(f"archstudy report: figure {job.key} of {job.where} failed: {d.error}", file=sys.stderr)
            return (
                f'<figure id="{job.fid}" data-figure="{esc(job.key)}"><div class="box error">Figure '
                f"{esc(job.key)} could not be drawn: {esc(d.error)}</div><figcaption>{esc(job.caption)}"
                "</figcaption></figure>"
            )
        img = d.image
        assert img is not None  # ``draw`` gives an image wherever it gives no missing line and no error
        if self.directory is not None:
            self._write(job.fid, d.file or img)
        left_out = "".join(f' <span class="missing">{esc(line)}</span>' for line in d.omitted)
        drawn_as = "".join(f' <span class="drawn-as">{esc(line)}</span>' for line in d.notes)
        return (
            f'<figure id="{job.fid}" data-figure="{esc(job.key)}"><img alt="{esc(job.caption)}" width="{img.width}" '
            f'height="{img.height}" src="data:image/png;base64,{img.base64}">'
            f"<figcaption>{esc(job.caption)}{drawn_as}{left_out}</figcaption></figure>"
        )

    def _write(self, fid: str, image: Image) -> None:
        assert self.directory is not None  # called only where the figures are written to files
        path = self.directory / f"{fid}.{image.fmt}"
        write_whole(path, image.data, what="a figure")
        self.written.append(path)


def _weight(job: FigureJob) -> int:
    """A rough cost of a job, to start the costliest first: figures of many panels (the design space's, the
    sibling axes', the grids) before single panels."""
    return {
        "edf": 12,
        "compare-edf": 12,
        "good-ranges": 9,
        "metrics": 6,
        "curves": 6,
        "proxies": 5,
        "norm": 4,
        "fig3": 3,
        "fig9": 3,
        "baselines": 3,
    }.get(job.key, 2)


def check_figures_dir(figures: object, study_dirs: Iterable[str | os.PathLike[str]]) -> Path:
    """The directory ``--figures`` writes every figure to: made if missing (its parent must exist), never inside
    a study (whose files are never touched) and not an existing file."""
    text = os.fspath(figures) if isinstance(figures, (str, os.PathLike)) else None
    if not text:
        raise SpecError("write_report", "figures", figures, "must be a directory path")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise SpecError("write_report", "figures", text, "exists and is not a directory")
    if not path.exists() and not path.parent.is_dir():
        raise SpecError("write_report", "figures", text, "must be in an existing directory (it is made if missing)")
    holder = study_holding(path.resolve())  # one of study_dirs, or any other study
    if holder is not None:
        shown = next((d for d in study_dirs if local_root(d) == holder), holder)
        raise SpecError(
            "write_report",
            "figures",
            text,
            f"is inside the study {shown}: a study's files are never "
            f"touched (only {Path(shown) / REPORT_NAME} may be written there)",
        )
    path.mkdir(exist_ok=True)
    return path
