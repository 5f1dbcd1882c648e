"""``archstudy reproduce all``: every offered reproduction, one summary table (reproduction, claims agreeing /
claims, rows agreeing / rows, rows that cannot tell, time here), ``OUT/summary.json`` and an index page
``OUT/index.html`` linking each reproduction's page; its
estimated time is printed before any work, from the reproductions' declared costs at the scale
(``Reproduction.cost``, read by ``cost_seconds``) and the number of processes (``planned_seconds``).

``jobs`` processes run the reproductions side by side (default: the usable cores over ``threads`` on the CPU,
one on a GPU), each with its own torch threads (``threads``, default 1: the nets are small), longest declared
cost first, so that two cores finish the whole in about half the time of one. With more than one job, a
reproduction that keeps every core busy itself (``Reproduction.whole_machine``: nlc-figure2's study, whose
workers take every core) runs alone first, in the calling process; with one, every reproduction runs there, in
catalogue order. Each draw of a reproduction comes from its own seeds (``reproduction.sub_seed``), so its
numbers are the same in any process and in any order; the summary lists the reproductions in catalogue order.

Two counts, both printed: rows, and claims (a table cell or a figure's stated claim, ``Row.checks``), each claim
with the rows that check it (resnet-hessian's rows check a handful of claims). A claim's verdict
(``claim_verdict``): it differs when one of its rows differs, cannot tell when none differs and one cannot tell,
agrees when every row agrees.

The not offered experiments of the five papers (``catalogue.NOT_OFFERED``) close the index page and the JSON, so a
reader sees the whole map of the papers in one place.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO, cast

from archstudy.sampling import SpecError, UserError
from archstudy.sampling.constraints import Choice, Integer, check

from ..execution.lifetime import die_with_parent

from .catalogue import NOT_OFFERED
from .reproduction import (
    SCALES,
    WHERE,
    Reproduction,
    RunOptions,
    check_device,
    check_out,
    cost_seconds,
    run_reproduction,
)
from .result import AGREES, CANNOT_TELL, DIFFERS, Result, Row, write_text


def estimated_seconds(reproductions: Mapping[str, Reproduction], scale: str) -> tuple[float, list[str]]:
    """The sum of the declared costs at ``scale`` and the names whose cost states no time."""
    total, unknown = 0.0, []
    for name, r in reproductions.items():
        seconds = cost_seconds(r.cost[scale])
        if seconds is None:
            unknown.append(name)
        else:
            total += seconds
    return total, unknown


def planned_seconds(reproductions: Mapping[str, Reproduction], scale: str, jobs: int) -> float:
    """The wall time the declared costs at ``scale`` give with ``jobs`` processes: the whole-machine ones one
    after another, then the others in ``order``, each on the process that is free first (a cost that states no
    time counts 0)."""
    seconds = {n: cost_seconds(r.cost[scale]) or 0.0 for n, r in reproductions.items()}
    alone, side_by_side = order(reproductions, scale, jobs)
    free = [0.0] * max(1, min(jobs, len(side_by_side)))
    for name in side_by_side:
        free[free.index(min(free))] += seconds[name]
    return sum(seconds[n] for n in alone) + max(free)


def order(reproductions: Mapping[str, Reproduction], scale: str, jobs: int) -> tuple[list[str], list[str]]:
    """(the names run alone in the calling process, in catalogue order; the names run side by side in ``jobs``
    processes, longest declared cost at ``scale`` first, so that no long one starts last). With one job every
    reproduction runs alone, in catalogue order."""
    if jobs == 1:
        return list(reproductions), []
    alone = [n for n, r in reproductions.items() if r.whole_machine]
    rest = [n for n, r in reproductions.items() if not r.whole_machine]
    return alone, sorted(rest, key=lambda n: -(cost_seconds(reproductions[n].cost[scale]) or 0.0))


def default_jobs(device: Any, threads: int = 1) -> int:
    """On the CPU, as many processes of ``threads`` torch threads as the cores this process may use hold (at
    least one); one on a GPU (the processes would share it)."""
    if str(device).split(":")[0] != "cpu":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // threads)


def duration(seconds: float) -> str:
    """ "42 s", "3.5 min", "1.2 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def claim_verdict(rows: list[Row]) -> str:
    """The verdict of one claim from those of its rows: "differs" when any row differs, else "cannot tell" when
    any row cannot tell, else "agrees"."""
    verdicts = {r.verdict for r in rows}
    return DIFFERS if DIFFERS in verdicts else CANNOT_TELL if CANNOT_TELL in verdicts else AGREES


@dataclass
class Entry:
    """One reproduction's line of the summary."""

    name: str
    result: Result

    @property
    def claims(self) -> dict[str, str]:
        """Each claim checked (in the order first met) -> its verdict (``claim_verdict``)."""
        return {claim: claim_verdict(rows) for claim, rows in self.result.claims.items()}

    def claims_with(self, verdict: str) -> int:
        return sum(v == verdict for v in self.claims.values())

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "name": self.name,
            "paper": r.paper,
            "source": r.extra.get("source", ""),
            "agreeing": r.passed,
            "rows": len(r.rows),
            "seconds": round(r.seconds, 3),
            "json": f"{self.name}.json",
            "html": f"{self.name}.html",
            "differing": [row.quantity for row in r.rows if row.verdict == DIFFERS],
            "cannot_tell": [row.quantity for row in r.rows if row.verdict == CANNOT_TELL],
            "claims_agreeing": self.claims_with(AGREES),
            "claims": [
                {"claim": claim, "verdict": claim_verdict(rows), "rows": [row.to_dict() for row in rows]}
                for claim, rows in r.claims.items()
            ],
        }


def roots_for(reproductions: Mapping[str, Reproduction], root) -> dict[str, Path | None]:
    """``--root`` for ``all``: each reproduction that reads an image set gets the directory when its files are
    there, the others run on their built-in data (and say so in their JSON); a root holding none is refused."""
    if root is None:
        return {name: None for name in reproductions}
    from ..datasets.images import IMAGE_SETS

    root = Path(root).expanduser()
    found: dict[str, Path | None] = {}
    for name, r in reproductions.items():
        found[name] = None
        if r.reads_root is not None:
            try:
                IMAGE_SETS[r.reads_root].locate(root)
                found[name] = root
            except UserError:
                pass
    if not any(found.values()):
        sets = sorted({r.reads_root for r in reproductions.values() if r.reads_root})
        raise SpecError(WHERE, "root", str(root), f"holds none of the data sets read ({', '.join(sets)})")
    return found


def run_all(reproductions: Mapping[str, Reproduction], out, options: RunOptions) -> tuple[list[Entry], Path, Path]:
    """Run every reproduction as ``options`` say (``RunOptions``) into ``out`` (each writes NAME.json and
    NAME.html), ``jobs`` at a time (default ``default_jobs(device, threads)``), then write ``summary.json`` and
    ``index.html``; returns the entries (in catalogue order) and both paths. ``echo`` gets the up-front estimate,
    each reproduction's table as it finishes and the summary table; ``progress`` each reproduction's progress
    lines (from a side-by-side process: as they come where ``progress`` has a file descriptor, else when that
    reproduction ends)."""
    from .result import format_table

    scale = check(WHERE, "scale", Choice(SCALES), options.scale)  # every argument checked before any work
    check(WHERE, "seed", Integer(0), options.seed)
    threads = check(WHERE, "threads", Integer(1), options.threads)
    device = check_device(options.device)
    jobs = default_jobs(device, threads) if options.jobs is None else check(WHERE, "jobs", Integer(1), options.jobs)
    options = replace(options, scale=scale, device=device, jobs=jobs)
    roots = roots_for(reproductions, options.root)
    out = check_out(out)
    total, unknown = estimated_seconds(reproductions, scale)
    estimate = planned_seconds(reproductions, scale, jobs)
    echo = options.echo
    say = (lambda text: print(text, file=echo, flush=True)) if echo is not None else (lambda text: None)
    alone, side_by_side = order(reproductions, scale, jobs)
    at_once = min(jobs, len(side_by_side))
    side = (
        f"{at_once} at a time, longest first; {duration(total)} one after another" if at_once > 1 else "one at a time"
    )
    say(
        f"reproduce all ({scale}): {len(reproductions)} reproductions, about {duration(estimate)} ({side}) on the "
        "2-core machine they were built on, from their declared costs"
        + (f"; no time declared for {', '.join(unknown)}" if unknown else "")
    )
    results: dict[str, Result] = {}
    t0 = time.perf_counter()

    def done(name: str, result: Result) -> None:
        results[name] = result
        say(
            f"[{len(results)}/{len(reproductions)}] {name} done in {duration(result.seconds)} (declared "
            f"{reproductions[name].cost[scale]})"
        )
        say(format_table(result))

    for name in alone:
        say(f"{name} ({reproductions[name].cost[scale]})" + (": alone, it keeps every core busy" if jobs > 1 else ""))
        result, _, _ = run_reproduction(reproductions[name], out, replace(options, root=roots[name]))
        done(name, result)
    if side_by_side:
        say(f"side by side in {at_once} processes: {', '.join(side_by_side)}")
        run_side_by_side({n: reproductions[n] for n in side_by_side}, done, out=out, options=options, roots=roots)
    seconds = time.perf_counter() - t0
    entries = [Entry(name, results[name]) for name in reproductions]
    summary = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "scale": scale,
        "seed": options.seed,
        "device": str(device),
        "jobs": jobs,
        "threads": threads,
        "seconds": round(seconds, 3),
        "estimated_seconds": estimate,
        **totals(entries),
        "reproductions": [e.to_dict() for e in entries],
        "not_offered": [n.to_dict() for n in NOT_OFFERED],
    }
    import json

    json_path = out / "summary.json"
    write_text(json_path, json.dumps(summary, indent=1, allow_nan=False) + "\n")
    html_path = out / "index.html"
    write_text(html_path, index_page(entries, summary))
    say(summary_table(entries, seconds))
    return entries, json_path, html_path


# A side-by-side reproduction runs in a fresh interpreter (``subprocess``), not a forked one (a fork of a process
# that has run torch's thread pools or Ray can hang) nor multiprocessing's spawn (it re-runs the caller's main
# script, which fails for ``python -`` and notebooks): its arguments and result travel as pickle files, a user's
# mistake found only during the run (a data file's contents) as its one-line message.
WORKER = "import sys; from archstudy.study.reproduce.summary import work; sys.exit(work(sys.argv[1]))"
USER_ERROR = 2  # a worker's exit status after a ``UserError``, whose message it wrote to JOB.error
INTERRUPTED = 130  # a worker's exit status after Ctrl-C (the shell's 128 + SIGINT)


def worker_env() -> dict[str, str]:
    """The caller's environment, with the folder holding ``archstudy`` first on PYTHONPATH: a source tree run
    with ``PYTHONPATH=.`` or pytest's ``pythonpath`` is importable from the worker too."""
    package = sys.modules["archstudy"]  # loaded: this module is inside it
    here = os.path.dirname(os.path.dirname(os.path.abspath(cast(str, package.__file__))))  # a package of files
    paths = [here, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def progress_fd(progress: TextIO | None) -> int | None:
    """The file descriptor a worker writes its progress lines to as they come (``progress``'s own, e.g. the
    terminal's stderr), or None: then they are kept and written to ``progress`` when it ends (a stream without
    one, such as a StringIO or pytest's capture) or dropped (``progress`` None)."""
    if progress is None:
        return None
    try:
        fd = progress.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None
    progress.flush()  # what the caller has buffered comes before what the worker writes
    return fd


def run_side_by_side(
    reproductions: Mapping[str, Reproduction],
    done: Callable[[str, Result], None],
    *,
    out: Path,
    options: RunOptions,
    roots: Mapping[str, Path | None],
) -> None:
    """Each of ``reproductions`` (in the order given) in its own process, at most ``options.jobs`` at once, each
    with its root of ``roots``; ``done(name, result)`` as each ends; their progress lines to ``options.progress``
    (``progress_fd``). A worker that fails ends the
    others, then raises: its ``UserError`` as the same one-line ``UserError``, anything else as a RuntimeError
    with its last lines."""
    progress, jobs = options.progress, int(options.jobs or 1)
    # what a worker gets: the options it can unpickle (its device by name, no streams) and whether it speaks
    shipped = replace(options, device=str(options.device), progress=None, echo=None)
    fd, env = progress_fd(progress), worker_env()
    running: dict[str, tuple[subprocess.Popen[bytes], Path]]  # name -> (its worker, its job's path stem)
    waiting, running = list(reproductions), {}
    with tempfile.TemporaryDirectory(prefix="archstudy-reproduce-") as tmp:
        try:
            while waiting or running:
                while waiting and len(running) < jobs:
                    name = waiting.pop(0)
                    job = Path(tmp) / name
                    job.with_suffix(".in").write_bytes(
                        pickle.dumps(
                            (reproductions[name], out, replace(shipped, root=roots[name]), progress is not None)
                        )
                    )
                    with job.with_suffix(".err").open("wb") as kept:  # the child holds its own copy
                        running[name] = (
                            subprocess.Popen(
                                [sys.executable, "-c", WORKER, str(job)],
                                env=env,
                                preexec_fn=die_with_parent,  # a killed `reproduce all` leaves no worker running
                                stdout=subprocess.DEVNULL,
                                stderr=kept if fd is None else fd,
                            ),
                            job,
                        )
                for name, (proc, job) in list(running.items()):
                    if proc.poll() is None:
                        continue
                    del running[name]
                    said = job.with_suffix(".err").read_text(errors="replace")
                    if proc.returncode == USER_ERROR and job.with_suffix(".error").exists():
                        raise UserError(job.with_suffix(".error").read_text())
                    if proc.returncode == INTERRUPTED:
                        raise KeyboardInterrupt
                    if proc.returncode != 0 or not job.with_suffix(".out").exists():
                        tail = said.strip().splitlines()[-5:]
                        raise RuntimeError(
                            f"reproduce all: {name} failed in its process (exit status "
                            f"{proc.returncode})"
                            + ("; its last lines:\n" + "\n".join(tail) if tail else "; its error is above")
                        )
                    if fd is None and progress is not None and said:
                        progress.write(said)
                        progress.flush()
                    done(name, pickle.loads(job.with_suffix(".out").read_bytes()))
                time.sleep(0.1)
        finally:  # an interrupt or a failure ends the workers still running: all told first, then each waited for
            for proc, _ in running.values():
                proc.terminate()
            for proc, _ in running.values():
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def work(job: str) -> int:
    """A side-by-side process (``WORKER``): runs the reproduction pickled in ``JOB.in``, pickles its result to
    ``JOB.out`` and returns 0; its progress lines go to stderr. A ``UserError`` is written to ``JOB.error``
    (``USER_ERROR``); Ctrl-C ends it quietly (``INTERRUPTED``): the caller says what happened."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # the page only ever renders to PNG
    path = Path(job)
    reproduction, out, options, say = pickle.loads(path.with_suffix(".in").read_bytes())
    try:
        result, _, _ = run_reproduction(
            reproduction,
            out,
            replace(options, progress=sys.stderr if say else None),
            tty=False,  # side by side on one terminal: plain lines, not lines redrawn over each other
        )
    except UserError as e:
        path.with_suffix(".error").write_text(str(e))
        return USER_ERROR
    except KeyboardInterrupt:
        return INTERRUPTED
    part = path.with_suffix(".part")
    part.write_bytes(pickle.dumps(result))
    part.replace(path.with_suffix(".out"))
    return 0


def totals(entries: list[Entry]) -> dict[str, int]:
    """The counts of ``summary.json``: rows agreeing, differing, cannot tell, all; claims the same."""
    rows = [r for e in entries for r in e.result.rows]
    claims = [v for e in entries for v in e.claims.values()]
    return {
        "agreeing": sum(r.verdict == AGREES for r in rows),
        "differing_rows": sum(r.verdict == DIFFERS for r in rows),
        "cannot_tell_rows": sum(r.verdict == CANNOT_TELL for r in rows),
        "rows": len(rows),
        "claims_agreeing": claims.count(AGREES),
        "claims_differing": claims.count(DIFFERS),
        "claims_cannot_tell": claims.count(CANNOT_TELL),
        "claims": len(claims),
    }


def summary_table(entries: list[Entry], seconds: float) -> str:
    """Reproduction, claims agreeing / claims, rows agreeing / rows, rows that cannot tell, time here; then the
    totals (within 100 columns)."""
    header = ("reproduction", "claims agree", "rows agree", "cannot tell", "time here")
    lines = [
        (
            e.name,
            f"{e.claims_with(AGREES)} / {len(e.claims)}",
            f"{e.result.passed} / {len(e.result.rows)}",
            str(e.result.count(CANNOT_TELL)),
            duration(e.result.seconds),
        )
        for e in entries
    ]
    t = totals(entries)
    lines.append(
        (
            "all",
            f"{t['claims_agreeing']} / {t['claims']}",
            f"{t['agreeing']} / {t['rows']}",
            str(t["cannot_tell_rows"]),
            duration(seconds),
        )
    )
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(5)]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
        for line in [header, *lines]
    )


def index_page(entries: list[Entry], summary: dict) -> str:
    """The index: one line per reproduction linking its page, the differing rows named, then the not offered."""
    from archstudy.analysis.html import esc, table

    from .page import PAGE_CSS

    rows = [
        [
            f'<a href="{esc(e.name)}.html">{esc(e.name)}</a>',
            esc(e.result.paper),
            esc(e.result.extra.get("source", "")),
            f"{e.claims_with(AGREES)} / {len(e.claims)}",
            f"{e.result.passed} / {len(e.result.rows)}",
            duration(e.result.seconds),
            esc(", ".join(r.quantity for r in e.result.rows if r.verdict == DIFFERS)) or "–",
            esc(", ".join(r.quantity for r in e.result.rows if r.verdict == CANNOT_TELL)) or "–",
        ]
        for e in entries
    ]
    missing = [[esc(n.paper), esc(n.source), esc(n.what), esc(n.reason)] for n in NOT_OFFERED]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            "<title>archstudy reproduce all</title>",
            f"<style>{PAGE_CSS}</style></head><body>",
            f"<h1>The papers' experiments, reproduced ({esc(summary['scale'])} scale)</h1>",
            f"<p><b>{summary['claims_agreeing']} of {summary['claims']} claims and {summary['agreeing']} of "
            f"{summary['rows']} rows agree with the papers</b> ({summary['claims_differing']} claims differ, "
            f"{summary['claims_cannot_tell']} cannot tell at this scale), "
            f"{duration(summary['seconds'])} here (estimated {duration(summary['estimated_seconds'])}), seed "
            f"{summary['seed']}, device {esc(summary['device'])}. A row that differs is a finding: its tolerance comes "
            "from the paper's precision or spread; a claim is a table cell or a figure's stated claim, checked by one "
            "row or several; a row that cannot tell is one this scale cannot test (e.g. no net trained).</p>",
            table(
                [
                    "reproduction",
                    "paper",
                    "source",
                    "claims agreeing",
                    "rows agreeing",
                    "time here",
                    "differing rows",
                    "rows that cannot tell",
                ],
                rows,
                left=3,
            ),
            "<h2>Not offered</h2><p>The papers' other experiments, each with why it is not run here.</p>",
            table(["paper", "source", "experiment", "why not here"], missing, left=4),
            "</body></html>",
        ]
    )
