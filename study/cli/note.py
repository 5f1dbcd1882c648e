"""``archstudy note STUDY "text" [--tag TAG ...]``: add a dated note to a study; without text, list its notes.

A note is one line of ``notes.jsonl`` at the study's root (``study.experiment.notes``), written whole
(``study.execution.study_notes``); the driver never writes it, so a note may be added while the study runs. The
report and ``archstudy serve`` show the notes, and the exports carry them. ``--json`` lists them as JSON.
"""

from __future__ import annotations

import json

from ..experiment.notes import MAX_TEXT, TAG_RULE
from .commands import subcommand


@subcommand("note", order=54, activity="adding a note to the study")
def register(sub) -> None:
    p = sub.add_parser(
        "note",
        help="add a dated note (and tags) to a study, or list its notes",
        description="Append a dated note to the study in STUDY (shown by the report and `archstudy serve`, carried "
        "by the exports); without TEXT, list the study's notes. The study's results are not touched.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("text", metavar="TEXT", nargs="?", help=f"the note: one line of up to {MAX_TEXT:,} characters")
    p.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help=f"a tag of the note ({TAG_RULE}); repeatable"
    )
    p.add_argument("--json", action="store_true", help="list the notes as JSON")
    p.set_defaults(func=command)


def command(args) -> int:
    from archstudy.sampling import UserError

    from ..execution.store import Store
    from ..execution.study_notes import add_note, read_notes

    if args.text is None:
        if args.tag:
            raise UserError('note: --tag needs the note\'s TEXT (`archstudy note STUDY "text" --tag TAG`)')
        store = Store(args.study)
        store.reach()
        store.read_config()
        notes = read_notes(store)
        if args.json:
            print(json.dumps([n.to_dict() for n in notes], indent=1, ensure_ascii=False))
        elif not notes:
            print(f'{store.location}: no notes (add one: archstudy note {args.study} "text")')
        for n in [] if args.json else notes:
            print(f"{n.at}  {n.text}" + (f"  [{', '.join(n.tags)}]" if n.tags else ""))
        return 0
    note = add_note(args.study, args.text, args.tag)
    if args.json:
        print(json.dumps(note.to_dict(), ensure_ascii=False))
    else:
        print(f"{args.study}: noted at {note.at}" + (f" [{', '.join(note.tags)}]" if note.tags else ""))
    return 0
