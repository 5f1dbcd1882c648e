"""``archstudy reproduce``: run one of the papers' experiments and print its numbers beside the paper's
(``study.reproduce``); ``reproduce all`` runs every one (a summary table, ``summary.json`` and an index page);
``--list`` names them all with what each costs, then the papers' experiments not offered with the reason."""

from __future__ import annotations

import os
import re
import sys
import textwrap

from archstudy.sampling import UserError

from .commands import subcommand

DEFAULT_OUT = "reproductions"


@subcommand("reproduce", order=120, activity="reproducing")
def register(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run a paper's experiment and compare with its published numbers",
        description="Run one of the papers' experiments with this pipeline, print a table (the verdict: agrees, "
        "differs, or cannot tell where this scale cannot test the claim; quantity, the paper's value, ours, the "
        "tolerance), and write OUT/NAME.json and a self-contained OUT/NAME.html "
        "(its figure beside the table). A row that differs is a finding: tolerances come from the papers' "
        "precision or spread. Exit status 0 when every row agrees, 1 when some differ or cannot tell. `all` runs every "
        "reproduction and adds OUT/summary.json and OUT/index.html. `--list` names them, and the papers' "
        "experiments not offered with the reason.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the reproduction (see --list), or all")
    p.add_argument(
        "--list",
        action="store_true",
        help="list the reproductions, each with its paper and cost here, then the experiments not offered",
    )
    p.add_argument(
        "--out", default=DEFAULT_OUT, metavar="DIR", help="directory for NAME.json and NAME.html (default %(default)s/)"
    )
    p.add_argument(
        "--scale",
        default="quick",
        help="tiny (seconds: a smoke test), quick (minutes on 2 cores) or paper (the paper's own "
        "settings); default %(default)s",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="print the table whole (by default it fits 100 columns, long quantities and tolerances cut with …)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default %(default)s)")
    p.add_argument("--device", default="cpu", help="torch device (default %(default)s; e.g. cuda)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default %(default)s: the nets are small, one thread is faster than several)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="all: how many reproductions run side by side, each in its own process (default: the cores "
        "over --threads on the CPU, one on a GPU)",
    )
    p.add_argument(
        "--root",
        metavar="DIR",
        help="directory of the paper's data where a reproduction reads it "
        "(nlc-table1 and nlc-table2: CIFAR10; resnet-hessian: MNIST); without it they run on built-in data "
        "and say so",
    )
    p.set_defaults(func=command)


_TIME = re.compile(r"~?\d+(?:\.\d+)?\s*(?:s|min|h)\b|\w+")
_TITLE = re.compile(r"\*([^*]+)\*")


def short_cost(text: str) -> str:
    """A declared cost in a table's cell: its time ("3.7 min measured" -> "3.7 min", "days on 2 cores
    (estimated): a GPU job" -> "days est."), "est." where it is estimated, not measured; a cost not measured or
    not run says so."""
    t = text.strip()
    estimated = "estimated" in t
    t = t.removeprefix("(estimated)").strip()
    for unknown in ("not measured", "not run"):
        if t.startswith(unknown):
            return unknown
    m = _TIME.match(t)
    head = m.group(0) if m else t
    return f"{head} est." if estimated else head


def listing_table(reproductions) -> str:
    """The table ``reproduce --list`` opens with: each reproduction's name, its paper's short title and its cost
    at each scale (``--scale``) on the 2-core machine its cost was declared on; the entries in prose follow."""
    from ..reproduce.reproduction import SCALES

    rows = [("NAME", "PAPER", *(f"{s.upper()}-SCALE" if s == "paper" else s.upper() for s in SCALES))]
    for r in reproductions:
        m = _TITLE.search(r.paper)
        title = m.group(1) if m else r.paper
        title = title if len(title) <= 30 else title[:29] + "…"
        rows.append((r.name, title, *(short_cost(r.cost[s]) for s in SCALES)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def command(args) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")  # the page only ever renders to PNG
    from ..experiment.terminal import phase

    # The reproductions' modules import torch (seconds, more on a busy machine): said first on a terminal; in a log
    # the reproduction's own line comes once its arguments are checked, so that a refused command is one line.
    with phase(sys.stderr, "loading the reproductions (torch)", in_log=False):
        from ..reproduce import ALL, NOT_OFFERED, REPRODUCTIONS, format_table, reproduce, reproduce_all
        from ..reproduce.reproduction import LIST_WIDTH

        REPRODUCTIONS.scan()  # imports their modules, each offering its own

    if args.list:
        print(listing_table(REPRODUCTIONS.values()))
        print()
        for r in REPRODUCTIONS.values():
            print(r.line())
        print(
            textwrap.fill(
                "(costs: wall time on a 2-core machine without a GPU; quick measured in one `reproduce all`, two "
                "reproductions side by side; paper scale estimated where not run)",
                LIST_WIDTH,
            )
        )
        for n in NOT_OFFERED:
            print(n.line())
        return 0
    if args.name is None:
        raise UserError("reproduce: name a reproduction (" + ", ".join(REPRODUCTIONS) + f"), {ALL}, or --list")
    options = {
        "scale": args.scale,
        "seed": args.seed,
        "device": args.device,
        "root": args.root,
        "threads": args.threads,
        "jobs": args.jobs,
        "progress": sys.stderr,
        "echo": sys.stdout,
    }  # ``study.reproduce.reproduction.RunOptions``
    if args.name == ALL:
        entries, json_path, html_path = reproduce_all(args.out, **options)
        print(f"wrote {json_path}, {html_path} and each reproduction's NAME.json and NAME.html")
        return 0 if all(e.result.passed == len(e.result.rows) for e in entries) else 1
    result, json_path, html_path = reproduce(args.name, args.out, **options)
    print(format_table(result, wide=args.wide))
    print(f"wrote {json_path} and {html_path}")
    return 0 if result.passed == len(result.rows) else 1
