"""A study's notes: dated lines of text a researcher adds to a study (``archstudy note STUDY "text"``), with tags.

They live in ``notes.jsonl`` at the study's root, one JSON object per line (``{"at": ISO 8601 UTC, "text": ...,
"tags": [...]}``), oldest first; the driver never writes it, so a note may be added while a study runs. The report
and ``archstudy serve`` show them, and the exports carry them (``analysis.exports``). Torch-free: the command line
writes them (``study.execution.study_notes``), the analysis reads them (``analysis.study_notes``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from archstudy.sampling import SpecError

from .config import utc_now

NOTES_NAME = "notes.jsonl"
MAX_TEXT = 10_000  # characters of one note: a paragraph, not a file
MAX_TAGS = 20
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,63}$")
TAG_RULE = "1 to 64 letters, digits or _ . : / + - (starting with a letter or digit)"
WHERE = "note"


@dataclass(frozen=True)
class Note:
    """One note: when it was added (``at``, ISO 8601 UTC to the second), its text and its tags."""

    at: str
    text: str
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "text": self.text, "tags": list(self.tags)}

    def line(self) -> str:
        """The note as its line of ``notes.jsonl``."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"


def make_note(text: str, tags: Iterable[str] = (), at: str | None = None) -> Note:
    """A note of ``text`` (stripped; 1 to ``MAX_TEXT`` characters, no NUL) and ``tags`` (each ``TAG``, at most
    ``MAX_TAGS``, duplicates kept once), dated ``at`` (default now); a bad one is a one-line ``SpecError``."""
    text = str(text).strip()
    if not text or len(text) > MAX_TEXT or "\0" in text:
        raise SpecError(WHERE, "text", text, f"must be 1 to {MAX_TEXT:,} characters of text (no NUL)")
    tags = tuple(dict.fromkeys(str(t) for t in tags))
    for tag in tags:
        if not TAG.match(tag):
            raise SpecError(WHERE, "tag", tag, f"must be {TAG_RULE}")
    if len(tags) > MAX_TAGS:
        raise SpecError(WHERE, "tags", len(tags), f"must be at most {MAX_TAGS} tags")
    return Note(at or utc_now(), text, tags)


def parse_notes(text: str) -> tuple[list[Note], int]:
    """The notes of a ``notes.jsonl`` and how many of its lines are not a note (garbled: left out, counted)."""
    notes, bad = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            tags = d.get("tags") or []
            if not isinstance(d["at"], str) or not isinstance(d["text"], str) or not isinstance(tags, list):
                raise TypeError
            notes.append(Note(d["at"], d["text"], tuple(str(t) for t in tags)))
        except (ValueError, TypeError, KeyError, AttributeError):
            bad += 1
    return notes, bad
