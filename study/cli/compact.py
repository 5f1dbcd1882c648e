"""``archstudy compact STUDY``: copy the finished architectures' own result files into a few packs and remove them
(``study.execution.compaction``), so the study reads in seconds at 100,000 architectures; under the study's driver
lock (refused while a driver runs), safe to interrupt at any moment, and run again to finish."""

from __future__ import annotations

import json
import sys

from archstudy.sampling.constraints import Integer, check

from .commands import subcommand


@subcommand("compact", order=40, activity="compacting the study")
def register(sub) -> None:
    from ..execution.compaction import PACK_UNITS

    p = sub.add_parser(
        "compact",
        help="pack a study's finished results into few files (fast to read at scale)",
        description="Copy the finished architectures' result files (architectures, runs, curves: three files "
        "each) into packs of up to --per-pack architectures, each written whole and committed before the files "
        "it holds are removed, so every reader sees every row exactly once, during the compaction and after "
        "an interruption at any moment (run it again to finish). Refused while a driver runs on the study.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("--per-pack", type=int, default=PACK_UNITS, help="architectures per pack (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print what was done as one JSON object")
    p.set_defaults(func=command)


def command(args) -> int:
    from ..execution.compaction import compact_study

    per_pack = check("compact", "per_pack", Integer(1), args.per_pack)
    say = lambda line: print(f"archstudy: {line}", file=sys.stderr, flush=True)  # noqa: E731
    done = compact_study(args.study, per_pack=per_pack, say=say)
    if args.json:
        print(
            json.dumps(
                {
                    "study": args.study,
                    "packed": done.packed,
                    "packs": done.packs,
                    "leftovers": done.leftovers,
                    "orphans": done.orphans,
                },
                indent=1,
            )
        )
    else:
        print(done.line(args.study))
    return 0
