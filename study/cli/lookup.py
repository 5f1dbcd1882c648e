"""``archstudy lookup STUDY --id ID | --spec JSON | --where EXPR``: a study's architectures by content id, by spec or
by a filter over the columns, each with its row, its runs by learning rate and where its training curves are
(``analysis.lookup``). Read-only; works on a study that is still running. ``--json`` prints the same as one JSON
object.
"""

from __future__ import annotations

import json

from .flags import add_wide, fit, output_width
from .commands import subcommand


@subcommand("lookup", order=52, activity="looking up architectures", reads=("study",))
def register(sub) -> None:
    from archstudy.analysis.lookup import LIMIT, MIN_PREFIX
    from archstudy.analysis.row_filter import FUNCTIONS

    p = sub.add_parser(
        "lookup",
        help="an architecture by id, by spec or by a filter: its row, its runs by rate, where its curves are",
        description="Find the study's architectures with an arch_id, with a spec, or for which a condition over the "
        "columns holds, and print each one's row, its runs by learning rate and where its training curves are. "
        "Read-only.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--id", metavar="ID", help=f"an arch_id (16 hex digits), its first {MIN_PREFIX} or more, or <index>-<arch_id>"
    )
    which.add_argument(
        "--spec",
        metavar="JSON",
        help='an ArchSpec as JSON, e.g. \'{"depth": 9, "activation": "relu", "norm": "batch"}\': d_in, d_out '
        "and preset default to the study's, a missing width is solved from its budget, as the sampler does",
    )
    which.add_argument(
        "--where",
        metavar="EXPR",
        help="a condition over the columns, e.g. 'depth > 20 and activation == \"relu\"' (comparisons, in, and/or/"
        f"not, + - * / **, {', '.join(FUNCTIONS)})",
    )
    p.add_argument("-k", type=int, default=LIMIT, metavar="K", help="architectures shown (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print what was found as one JSON object")
    add_wide(p)
    p.set_defaults(func=command)


def command(args) -> int:
    from archstudy.analysis.lookup import lookup

    found = lookup(args.study, id=args.id, spec=args.spec, where=args.where, limit=args.k)
    if args.json:
        print(json.dumps(found.to_dict(), indent=1))
        return 0
    width = output_width(args.wide)
    for line in found.text().splitlines():
        for part in fit(line, width):
            print(part)
    return 0
