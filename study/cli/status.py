"""``archstudy status STUDY``: finished (trained, and pruned at launch) / in progress / failed / remaining, and each
failure's reason; for each architecture in progress, how far it is (stage, epoch, live runs: its progress record,
``study.execution.live``), and who computed the finished ones: archstudy's version and commit, Python, the
libraries and the device (``study.experiment.provenance``: what each result file records).

On a terminal, lines keep within ``flags.WIDTH`` columns (``--wide``, a pipe or a file: as long as they are); a
long note or reason continues on the next line, indented.

Read-only: it reads the study's files (validating every result file, as a resume would), the
driver's heartbeat (what is in flight, and on which node where the driver knows it) and the progress records of
the architectures in flight, and changes nothing. It samples only the architectures it must
(``study.execution.state.survey_files``: the units the files name are the plan's, spot-checked), so the status of
a large study does not wait for its whole plan to be sampled; with sibling axes it is, saying how far.
"""

from __future__ import annotations

import json
import sys
import time

from .flags import KEEP, add_wide, fit, output_width
from .commands import subcommand


@subcommand("status", order=30, activity="reading the study")
def register(sub) -> None:
    p = sub.add_parser(
        "status",
        help="how far a study is: finished, in progress, failed, remaining",
        description="Show how far the study in STUDY is: architectures finished, in progress (in a "
        "running driver), failed (with the one-line reason of each), remaining, and result files "
        "that are corrupt (a resume redoes them). Changes nothing.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument("--json", action="store_true", help="print the counts and lists as one JSON object")
    add_wide(p)
    p.set_defaults(func=command)


def _ago(unix: float | None) -> str:
    if not unix:
        return "never"
    return f"{max(0, int(time.time() - float(unix)))}s ago"


def _computed_with(state) -> list[str]:
    """Who computed the finished architectures: a line per distinct provenance record, with its count."""
    from ..experiment import provenance

    lines = [
        f"computed with: {provenance.describe(record)} ({n:,} architecture{'s' * (n != 1)})"
        for record, n in state.provenance
    ]
    unrecorded = len(state.finished) - sum(n for _, n in state.provenance)
    if unrecorded > 0:
        lines.append(f"computed with: not recorded for {unrecorded:,} (written before archstudy recorded provenance)")
    return lines


def command(args) -> int:
    from ..experiment.config import science_differences
    from ..execution.costs import count_text
    from ..execution.live import describe, read_live
    from ..execution.state import survey_files
    from ..execution.store import Store
    from ..experiment.schema import printable

    store = Store(args.study)
    store.reach()  # object storage that refuses or never answers: one line, in bounded time
    config = store.read_config()
    say = lambda line: print(f"archstudy: {line}", file=sys.stderr, flush=True)  # noqa: E731
    state = survey_files(store, config, say=say)  # samples only the architectures it must (with siblings: all)
    live = read_live(store, state.in_progress)
    if args.json:
        print(json.dumps({"study": store.location, **state.to_dict(), "in_progress_live": live}, indent=1))
        return 0
    width = output_width(args.wide)
    out: list[tuple[str, int | None]] = []  # each line, and the indent of its continuation lines (None: 4 more)

    def show(line: str, hang: int | None = None) -> None:
        out.append((printable(line), hang))  # a stored reason, host or note may hold a terminal escape

    c = state.config
    show(
        f"{store.location}: {c.dataset}, seed {c.seed}, {count_text(c, state.total)}; preset {c.preset}, budget "
        f"{c.param_budget:,} parameters; archstudy{KEEP}{c.package_version}"
    )
    for line in _computed_with(state):
        show(line, hang=4)
    d = state.driver or {}
    if state.driver_running:
        driver = f"driver pid {d.get('pid')} on {d.get('host')}, heartbeat {_ago(d.get('heartbeat_unix'))}"
    elif d:
        how = f"stopped ({d['stopped']})" if d.get("stopped") else "was killed or lost"
        driver = f"no driver running; the last one {how}, last heartbeat {_ago(d.get('heartbeat_unix'))}"
    else:
        driver = "no driver has run"
    window, pruning = c.nlc_window, "an NLC window the config no longer holds"
    if window == "auto":
        pruning = f"NLC window auto, from a pilot of the first {c.nlc_pilot} architectures"
    elif window is not None:
        pruning = f"NLC window [{window[0]:g}, {window[1]:g}]"
    untrained: list[tuple[str, int, str]] = []
    if window is not None or state.pruned or c.measure_only:
        # imported only here: importing archstudy.analysis loads scipy, most of the time of a large study's status
        from archstudy.analysis.leaderboard import untrained_row

        label, words = untrained_row(c.measure_only, pruning)
        untrained = [("  trained", len(state.finished) - len(state.pruned), ""), (label, len(state.pruned), words)]
    rows = [
        ("finished", len(state.finished), ""),
        *untrained,
        ("in progress", len(state.in_progress), driver),
        ("failed", len(state.failed), "tried again by `archstudy resume`" if state.failed else ""),
        ("remaining", state.remaining_count, f"{len(state.checkpoints)} with a checkpoint" * bool(state.checkpoints)),
    ]
    if state.packed:
        rows.append(
            (
                "  in packs",
                len(state.packed),
                f"of the finished: read from {len(state.packs)} pack(s), `archstudy compact`",
            )
        )
    if state.corrupt:
        rows.append(("corrupt", len(state.corrupt), "removed and redone by `archstudy resume` (counted in remaining)"))
    if state.foreign:
        rows.append(("other schema", len(state.foreign), "written by another archstudy version; left alone"))
    if state.other_config:
        rows.append(
            (
                "other config",
                len(state.other_config),
                "computed under another science config: never counted as finished (counted in remaining)",
            )
        )
    if state.extra:
        rows.append(
            ("not in plan", len(state.extra), "architecture files that are no unit of this config; not counted")
        )
    label_width = max(len(label) for label, _, _ in rows)
    for label, n, note in rows:
        show(f"  {label:<{label_width}} {n:>6}" + (f"   ({note})" if note else ""), hang=2 + label_width + 11)
    if state.nodes:
        show("in progress on:")
        for name in state.in_progress:
            node = state.nodes.get(name)
            if node:
                kind = f"{node['type']}, " if node.get("type") else ""
                show(f"  {name}  node {node.get('ip') or '?'} ({kind}{node['node_id']})")
    if live:
        show("in progress:")
        for name in state.in_progress:
            if name in live:
                show(f"  {name}  {describe(live[name])}")
    if state.failed:
        show("failed:")
        for name, rec in state.failed.items():
            show(f"  {name}  {rec.get('reason', '')}  ({rec.get('attempts', '?')} attempts)")
    if state.corrupt:
        show("corrupt:")
        for name, problem in state.corrupt.items():
            show(f"  {name}  {problem}")
    if state.bad_packs:
        show("packs that are not whole (their architectures are redone unless their own files are there):")
        for stem, problem in state.bad_packs.items():
            show(f"  {stem}  {problem}")
    if state.other_config or state.extra:
        recorded = next(iter(state.recorded.values()), None)
        if state.other_config or recorded != json.loads(c.science_json):  # as the driver's refusal reads it
            why = science_differences(recorded, c.science())
        else:
            why = "no architecture of this config's plan"
        show(f"not this study's (a resume refuses to run beside them): {why}")
        for name in list(state.other_config)[:20] + state.extra[:20]:
            show(f"  {name}")
    for line, hang in out:
        for part in fit(line, width, hang):
            sys.stdout.write(part + "\n")
    return 0
