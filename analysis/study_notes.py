"""A study's notes as the analysis reads them (``study.experiment.notes``: ``notes.jsonl``, added by ``archstudy
note``), for the report, ``archstudy serve`` and the exports; and their HTML."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from archstudy.study.experiment.notes import NOTES_NAME, Note, parse_notes

from .html import esc
from .results import study_filesystem


def read_notes(study_dir: str | os.PathLike[str]) -> list[Note]:
    """The study's notes, oldest first; none where it has no notes file (a garbled line is left out)."""
    fs, root, _ = study_filesystem(study_dir)
    if fs.get_file_info(f"{root}/{NOTES_NAME}").type != pafs.FileType.File:
        return []
    with fs.open_input_stream(f"{root}/{NOTES_NAME}") as f:
        return parse_notes(f.read().decode("utf-8", errors="replace"))[0]


def notes_html(notes: list[Note]) -> str:
    """The notes as a list, oldest first: date, text and tags; nothing where there are none."""
    if not notes:
        return ""
    items = "".join(
        f'<li><span class="muted">{esc(n.at)}</span> {esc(n.text)}'
        + "".join(f' <span class="tag">{esc(t)}</span>' for t in n.tags)
        + "</li>"
        for n in notes
    )
    return f'<div class="notes"><b>Notes</b> (<code>archstudy note</code>)<ul>{items}</ul></div>'
