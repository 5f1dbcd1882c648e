"""Where a report may be written: never over a file that is not HTML, never inside a study."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from archstudy.sampling import SpecError
from archstudy.sampling.regular_files import check_target
from archstudy.study.experiment.config import REPORT_NAME
from archstudy.study.experiment.location import study_holding

from ..results import local_root

if TYPE_CHECKING:
    pass


def _is_html(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(512).lstrip().lower()
    return head.startswith(b"<!doctype html") or head.startswith(b"<html")


def check_out(out: object, study_dirs: Iterable[str | os.PathLike[str]]) -> Path:
    """The report's path, refused where writing it could lose something: a directory, no name, a file
    inside a study other than ``STUDY/report.html`` (the study's files are never overwritten, and a stray
    file in ``architectures/`` would break ``pandas.read_parquet`` of it), or an existing file that is not
    an HTML page."""
    text = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if not text or not Path(text).name or Path(text).name in (".", ".."):
        raise SpecError(
            "write_report", "out", text if text is not None else out, "must be a file path such as report.html"
        )
    path = Path(text)
    if path.is_dir():
        raise SpecError("write_report", "out", text, f"is a directory: give a file path such as {path / REPORT_NAME}")
    if not path.parent.is_dir():
        raise SpecError("write_report", "out", text, "must be in an existing directory")
    target = path.resolve()
    holder = study_holding(target.parent)  # one of study_dirs, or any other study
    if holder is not None and target != Path(holder) / REPORT_NAME:
        shown = next((d for d in study_dirs if local_root(d) == holder), holder)
        raise SpecError(
            "write_report",
            "out",
            text,
            f"is inside the study {shown}: there a report may only be "
            f"{Path(shown) / REPORT_NAME} (the study's own files are never overwritten)",
        )
    check_target(path, "a report")  # a FIFO's open for reading (or writing) would wait forever
    if path.exists() and not _is_html(path):
        raise SpecError("write_report", "out", text, "exists and is not an HTML file: it is not overwritten")
    return path
