"""``archstudy serve STUDY``: a live page of a study that updates itself while the study runs.

Progress (finished, running, failed, remaining, the ETA at the recent rate), the leaderboard and the correlation
scatter plots of the metrics at initialization against test error, redrawn in place when a unit finishes, fails or
starts (``analysis.live_view``: the page polls a small JSON endpoint; the server lists the study every ``--every``
seconds and reloads its rows only when the listing changed). It never builds the full report (``archstudy report``
does) and never writes to the study, local or ``s3://``; the page links ``STUDY/report.html`` where there is one.

It listens on 127.0.0.1 (this machine only) unless ``--host`` names another address (IPv4 or IPv6: ``::1``); on a
loopback address it answers only requests naming a loopback address or ``localhost`` (no DNS rebinding); ``--port 0``
takes any free port. Ctrl-C (or SIGTERM) stops it: one line, exit code 0.
"""

from __future__ import annotations

import errno
import sys
import time

from .commands import subcommand

DEFAULT_PORT = 8765


@subcommand("serve", order=70, activity="serving the live view", reads=("study",))
def register(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="a live page of a study in the browser, updated while it runs",
        description="Serve a live page of the study in STUDY at http://127.0.0.1:PORT/: progress, the leaderboard "
        "and the scatter plots of each metric at initialization against test error, updated in place while the "
        "study runs (no reload). Read-only; the full report stays `archstudy report`'s. Ctrl-C stops it.",
    )
    p.add_argument("study", metavar="STUDY", help="the study directory or URI")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="the address to listen on (default %(default)s: this machine only; 0.0.0.0 shows the study, "
        "without a password, to anyone who can reach this machine)",
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, metavar="PORT", help="the port (default %(default)s; 0: any free one)"
    )
    p.add_argument(
        "--every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how often the study is checked for a change, and the page asks (default 3)",
    )
    p.set_defaults(func=command)


def _check(args) -> None:
    """The arguments, each refused in one line naming it (before the slow imports)."""
    from archstudy.sampling import SpecError

    if not 0 <= args.port <= 65535:
        raise SpecError("serve", "--port", args.port, "must be a port number from 0 (any free one) to 65535")
    if args.every is not None and not (0.1 <= args.every <= 3600):
        raise SpecError("serve", "--every", args.every, "must be seconds from 0.1 to 3600")


WAIT_POLL_S = 1.0  # how often a study not started yet is looked for


def _open_study(study: str, say=None, poll_s: float = WAIT_POLL_S) -> None:
    """The study must be one: a directory or URI holding study.yaml (object storage was asked once, in bounded time,
    before the command: the ``reads`` of its declaration). Where nothing is there yet (no such directory, or an
    empty one: a `run` about to create it), wait for its study.yaml, saying so once (``say``), then return; a file,
    or a directory holding other things and no study.yaml, is refused in one line."""
    import pyarrow.fs as pafs

    from archstudy.sampling import SpecError

    from ..experiment.location import open_location

    fs, root = open_location(study)
    said = False
    while fs.get_file_info(f"{root}/study.yaml").type != pafs.FileType.File:
        where = fs.get_file_info(root)
        empty = where.type == pafs.FileType.NotFound or (
            where.type == pafs.FileType.Directory and not fs.get_file_info(pafs.FileSelector(root))
        )
        if not empty:
            raise SpecError("serve", "STUDY", study, "must be a study directory or URI (one holding study.yaml)")
        if not said and say is not None:
            say(f"{study} holds no study yet: waiting for a study to start there (Ctrl-C to stop)")
            said = True
        time.sleep(poll_s)


def _bind(args):
    from archstudy.analysis.live_view import POLL_S, LiveServer
    from archstudy.sampling import SpecError

    every = POLL_S if args.every is None else args.every
    try:
        return LiveServer(args.study, args.host, args.port, poll_s=every, name=args.study), every
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise SpecError(
                "serve", "--port", args.port, f"is in use on {args.host}: choose another, or --port 0 for any free one"
            ) from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise SpecError(
                "serve", "--port", args.port, "is not allowed to this user (below 1024?): choose one from 1024"
            ) from None
        raise SpecError("serve", "--host", args.host, f"cannot be listened on ({e.strerror or e})") from None


def command(args) -> int:
    _check(args)
    say = lambda line: print(f"archstudy serve: {line}", file=sys.stderr, flush=True)  # noqa: E731
    say(f"reading {args.study} ...")
    try:
        _open_study(args.study, say)
    except KeyboardInterrupt:
        say("stopped before the study started")
        return 0
    server, every = _bind(args)
    from archstudy.analysis.live_view import loopback  # loaded by _bind

    try:
        server.watcher.check()  # the first read, whose error comes before any line saying where it is served
        # said before it serves (the socket already listens: a browser's first request waits for it), so that no
        # answer, and no Ctrl-C after one, can come before the line that gives the address
        print(f"archstudy serve: {args.study} at {server.url} (checked every {every:g} s; Ctrl-C to stop)", flush=True)
        if not loopback(server.host):
            say(f"listening on {args.host}: anyone who can reach this machine can read the study (no password)")
        server.start(check=False)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        say("stopped")
        return 0
    finally:
        server.stop()
