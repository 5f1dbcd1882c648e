"""Adding a note to a study (``archstudy note``, ``archstudy.add_note``): its line appended to ``notes.jsonl``
(``study.experiment.notes``).

A study on object storage has no append: the file is read, the line added and the whole file written back (whole or
not at all, ``Store.write_bytes``), locally too. Two notes added at the same moment could each write the file
without the other's line, so the file is read again after the write and the note added once more where it is
missing (``TRIES`` times at most). The driver never writes the file, so a note may be added while a study runs.
"""

from __future__ import annotations

import os
from typing import Iterable

from ..experiment.notes import NOTES_NAME, Note, make_note, parse_notes
from .store import Store

TRIES = 5


def read_notes(store: Store) -> list[Note]:
    """The study's notes, oldest first (none where it has no ``notes.jsonl``)."""
    try:
        return parse_notes(store.read_bytes(NOTES_NAME).decode("utf-8", errors="replace"))[0]
    except FileNotFoundError:
        return []


def add_note(location: str | os.PathLike, text: str, tags: Iterable[str] = ()) -> Note:
    """Append a dated note of ``text`` with ``tags`` to the study at ``location`` (module docstring) and return it;
    a location that holds no study, or a bad note, is a one-line ``UserError``."""
    store = Store(location)
    store.reach()
    store.read_config()  # not a study: one line, before anything is written
    note = make_note(text, tags)
    line = note.line().encode("utf-8")
    for _ in range(TRIES):
        try:
            old = store.read_bytes(NOTES_NAME)
        except FileNotFoundError:
            old = b""
        if old and not old.endswith(b"\n"):
            old += b"\n"
        store.write_bytes([NOTES_NAME], old + line)
        if note in read_notes(store):
            break
    return note
