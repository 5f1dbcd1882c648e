"""Ray for one study: joining a cluster or starting an embedded one, and leaving nothing running.

``check_address`` refuses an address where no Ray cluster answers before ``ray.init`` would retry for minutes;
``ray_session`` starts or joins Ray and, for an embedded Ray, shuts down every process it started on every way
out (an interrupt during the start included): Ray's own shutdown, then any Ray process below this one that
appeared during the session (read from /proc; the driver adopts orphans while Ray runs so a raylet killed
mid-start cannot leave its agents behind). A driver killed outright (SIGKILL, the out-of-memory killer) runs none of
that: its raylet and GCS die with it (Ray starts them with a parent-death signal), and a small reaper process
(``_reap``) ends the rest, the raylet's agents and workers, which Ray's own watch of the raylet let live up to a
minute.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from archstudy.sampling import UserError

from ..experiment.config import CONNECT_TIMEOUT_S
from . import interrupts


def own_cluster(address: str | None) -> str | None:
    """``auto`` as the user's own cluster, every other address as it is: ``RAY_ADDRESS``, else the address the last
    ``ray start --head`` on this node recorded (``/tmp/ray/ray_current_cluster``) if this user wrote it. Never what
    Ray's own ``auto`` falls back to, any Ray process found on the machine (another job's session, another user's:
    a study joined it and ran there); none found is one ``UserError`` line."""
    if address != "auto":
        return address
    env = os.environ.get("RAY_ADDRESS")
    if env and env != "auto":
        return env
    from ray._private.utils import get_ray_address_file, read_ray_address

    record = get_ray_address_file(None)
    found = read_ray_address(None) if os.path.isfile(record) else None
    owner = os.stat(record).st_uid if found else None
    if not found or owner != os.getuid():
        why = (
            f"the one recorded in {record} was started by another user (uid {owner})"
            if found
            else f"RAY_ADDRESS is {env or 'unset'} and no `ray start --head` recorded one in {record}"
        )
        given = "RAY_ADDRESS=auto" if env == "auto" else "--address auto"
        raise UserError(
            f"{given}: no Ray cluster of yours was found on this node ({why}); start one with `ray start "
            "--head`, or give --address HOST:PORT (without --address the study runs on an embedded Ray)"
        )
    return found


def check_address(address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse, within about ``timeout_s``, a Ray address where no Ray cluster answers (``ray.init`` would retry
    for minutes, printing only Ray's log lines): a TCP connection to the head (host:port, ``ray://host:port``,
    or what ``auto`` finds on this node) must open, and there (but for ``ray://``, Ray Client's own protocol)
    a Ray GCS must give its cluster id (asked from a separate process, killed at the deadline)."""
    if not address:
        return
    address = own_cluster(address) or address  # a str stays a str: None only for None
    from ray._private.services import canonicalize_bootstrap_address

    deadline = time.monotonic() + timeout_s
    client = address.startswith("ray://")
    try:
        target = address[len("ray://") :] if client else canonicalize_bootstrap_address(address)
    except ConnectionError as e:  # auto: no cluster on this node
        raise UserError(f"--address {address}: {_first_line(e)}") from None
    except ValueError:
        target = None
    host, _, port = (target or "").rpartition(":")
    host = host.strip("[]")  # an IPv6 literal, [::1]:6379
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--address {address!r}: must be 'auto', host:port or ray://host:port")

    def unreachable(why: str) -> UserError:
        resolved = "" if target == address else f" ({host}:{port})"
        return UserError(
            f"cannot reach Ray at {address}{resolved} within {timeout_s:g} s: {why}; is the cluster "
            "up (`ray up`, `ray start --head`) and is this its head's address? (--connect-timeout waits "
            "longer)"
        )

    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise unreachable("no answer" if isinstance(e, TimeoutError) else (e.strerror or _first_line(e))) from None
    if client:
        return
    probe = "import sys, ray._raylet as r; r.GcsClient(address=sys.argv[1])"
    try:
        p = subprocess.run(
            [sys.executable, "-c", probe, f"{host}:{port}"],
            capture_output=True,
            text=True,
            timeout=max(1.0, deadline - time.monotonic()),
        )
    except subprocess.TimeoutExpired:
        raise unreachable("no Ray cluster answered") from None
    if p.returncode != 0:
        last = [line for line in p.stderr.strip().splitlines() if "Error" in line][-1:] or ["no Ray cluster there"]
        raise unreachable(f"not a Ray cluster ({last[0].strip()[:200]})")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def _ray_processes_below(root: int) -> set[tuple[int, str]]:
    """(pid, start time) of the Ray processes descending from process ``root`` (its raylet, GCS, agents and
    workers), read from /proc; empty where there is none (not Linux)."""
    parent: dict[int, int] = {}
    start: dict[int, str] = {}
    try:
        entries = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return set()
    for d in entries:
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent[int(d)], start[int(d)] = int(fields[1]), fields[19].decode()
        except (OSError, IndexError, ValueError):
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith(b"ray::") or b"/ray/" in cmd:
            found.add((pid, start[pid]))
    return found


def _alive(pid: int, started: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[19].decode() == started and fields[0] != b"Z"
    except (OSError, IndexError):
        return False


def _end_processes(procs: set[tuple[int, str]], grace_s: float = 5.0) -> None:
    """SIGTERM, then after ``grace_s`` SIGKILL, those of ``procs`` still alive (the same process: pid and start
    time), and reap those that became this process's children (``_adopting_orphans``)."""
    live = {p for p in procs if _alive(*p)}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, _ in live:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while live and time.monotonic() < deadline:
            time.sleep(0.05)
            live = {p for p in live if _alive(*p)}
        if not live:
            break
    for pid, _ in procs:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _shut_down(ray, before: set[tuple[int, str]]) -> None:
    """Shut down the Ray this driver started, whatever state its start reached: ``ray.shutdown`` for what Ray
    knows of, then every Ray process below this one that was not there before (a raylet killed mid-start
    leaves its agents running; ``_adopting_orphans`` keeps them below this process)."""
    try:
        ray.shutdown()
    finally:
        ended: set[tuple[int, str]] = set()
        for _ in range(10):  # a raylet may start an agent until it dies: look again until nothing is new
            new = {p for p in _ray_processes_below(os.getpid()) - before - ended if _alive(*p)}
            if not new:
                break
            _end_processes(new)
            ended |= new


# The environment variable every process of an embedded Ray starts with (set while the session runs, inherited by the
# raylet and GCS and by the agents and workers they start), naming the session: how ``_reap`` finds a worker started
# after its last look (an agent's is not to be trusted: Ray's process titles overwrite the start of that memory).
SESSION_VARIABLE = "ARCHSTUDY_RAY_SESSION"
REAP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this long
REAP_TICK_S = 0.25  # how often the reaper looks for the driver's new Ray processes
REAP_ENDED = "ended\n"  # what a driver writes to its reaper after its own shutdown, before it closes the pipe


def _reap() -> None:
    """The reaper's program (run by ``python -c``, standard library only; argv: marker, driver pid, grace, tick, the end
    word). While the driver lives, every ``tick`` seconds (every 8 ticks after the first 20 s) it records the processes
    below the driver that were not there when it started (pid and start time, from /proc): the embedded Ray's (the
    driver adopts orphans, so all of its Ray stays below it), and any other the driver started meanwhile (the command's
    too). When its standard input ends (the driver's end of the pipe closes however the driver ends, SIGKILL included)
    without the driver having said ``ENDED`` first, it ends the recorded processes still alive (the same start time) and
    every process whose environment holds the marker (``SESSION_VARIABLE=token``): SIGTERM, then SIGKILL to those alive
    ``grace`` seconds later. A driver that said ``ENDED`` closed the pipe itself after its own shutdown: nothing is
    touched. (Whether the driver is alive cannot tell the two apart: a killed process closes its files before it becomes
    a zombie, and a reaper woken in between would see it running.)"""
    import os
    import select
    import signal
    import sys
    import time

    marker, driver, grace, tick = sys.argv[1].encode(), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    ENDED = sys.argv[5].encode()

    def table() -> dict[int, tuple[int, bytes, bytes]]:
        """pid -> (parent, start time, state) of every process."""
        out = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    out[int(d)] = (int(fields[1]), fields[19], fields[0])
                except (OSError, IndexError, ValueError):
                    continue
        return out

    def below(root: int, procs: dict[int, tuple[int, bytes, bytes]]) -> set[tuple[int, bytes]]:
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        found, todo = set(), list(children.get(root, []))
        while todo:
            pid = todo.pop()
            todo.extend(children.get(pid, []))
            found.add((pid, procs[pid][1]))
        return found

    def alive(procs: dict[int, tuple[int, bytes, bytes]], pid: int, start: bytes) -> bool:
        return pid in procs and procs[pid][1] == start and procs[pid][2] != b"Z"

    def marked() -> set[tuple[int, bytes]]:
        procs, out = table(), set()
        for pid in procs:
            if pid in (os.getpid(), driver) or procs[pid][2] == b"Z":
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        out.add((pid, procs[pid][1]))
            except OSError:
                continue
        return out

    procs = table()
    if driver not in procs:
        return
    before, seen = below(driver, procs), set()
    os.write(1, b"ready\n")  # the driver starts Ray only now: nothing of it is among ``before``
    started = time.monotonic()
    said = b""
    # every tick while Ray starts (its raylet, GCS and agents), then every 8 ticks (a scan of /proc costs about 3 ms)
    while True:
        if select.select([0], [], [], tick if time.monotonic() - started < 20 else 8 * tick)[0]:
            data = os.read(0, 4096)
            if not data:
                break
            said += data
        else:
            seen |= below(driver, table()) - before
    if said == ENDED:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        procs = table()
        left = {p for p in seen if alive(procs, *p)} | marked()
        for pid, _ in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            procs = table()
            left = {p for p in left if alive(procs, *p)}
        if not left:
            return


@contextlib.contextmanager
def _reaped_on_exit():
    """Start a reaper (``_reap``) that ends the embedded Ray started in this block once this process has ended,
    however it ends, and give every process started meanwhile ``SESSION_VARIABLE`` (a new token). A normal end
    writes ``REAP_ENDED`` and closes the pipe after the session's own shutdown (``_shut_down``): the reaper touches
    nothing and exits; it is waited for. Linux only (/proc); elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        yield
        return
    marker = f"{SESSION_VARIABLE}={os.getpid()}-{secrets.token_hex(8)}"
    env = {k: v for k, v in os.environ.items() if k != SESSION_VARIABLE}
    program = inspect.getsource(_reap) + "\n_reap()\n"
    reaper = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", program, marker, str(os.getpid()), f"{REAP_GRACE_S:g}", f"{REAP_TICK_S:g}"]
        + [REAP_ENDED],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # not in the terminal's process group: a Ctrl-C there does not end it early
    )
    reaper.stdout.readline()  # type: ignore[union-attr]  # it has seen what is below this process before Ray
    reaper.stdout.close()  # type: ignore[union-attr]
    previous = os.environ.get(SESSION_VARIABLE)
    os.environ[SESSION_VARIABLE] = marker.split("=", 1)[1]
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(SESSION_VARIABLE, None)
        else:
            os.environ[SESSION_VARIABLE] = previous
        with contextlib.suppress(OSError):
            reaper.stdin.write(REAP_ENDED.encode())  # type: ignore[union-attr]
        with contextlib.suppress(OSError):
            reaper.stdin.close()  # type: ignore[union-attr]
        try:
            reaper.wait(timeout=10 + 2 * REAP_GRACE_S)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait()


@contextlib.contextmanager
def _adopting_orphans():
    """Make this process the reaper of its orphaned descendants while the embedded Ray runs (Linux
    ``PR_SET_CHILD_SUBREAPER``): an agent whose raylet died is re-parented here, not to init, so the shutdown
    still finds it. Elsewhere, or where prctl is refused, nothing changes."""
    prctl = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
    set_subreaper = 36  # PR_SET_CHILD_SUBREAPER, <linux/prctl.h>
    if prctl is not None and prctl(set_subreaper, 1, 0, 0, 0) != 0:
        prctl = None
    try:
        yield
    finally:
        if prctl is not None:
            prctl(set_subreaper, 0, 0, 0, 0)


@contextlib.contextmanager
def _caller_keeps_sigterm(handler):
    """During ``ray.init``, keep the caller's SIGTERM handler (the CLI's ``sigterm_as_interrupt``): Ray's own
    exits the process at once (``sys.exit(15)``), leaving the half-started Ray running and saying nothing."""
    import ray._private.utils as ray_utils

    if not callable(handler) or threading.current_thread() is not threading.main_thread():
        yield
        return
    installer = ray_utils.set_sigterm_handler
    ray_utils.set_sigterm_handler = lambda _handler: None
    try:
        yield
    finally:
        ray_utils.set_sigterm_handler = installer


@contextlib.contextmanager
def ray_session(address: str | None = None):
    """Ray for one study: the caller's session if one is up (tests, notebooks), else the cluster at
    ``address`` (``"auto"`` on a cluster node), else the cluster a Ray job's driver is given in
    ``RAY_ADDRESS``, else a new embedded local Ray; quiet: no dashboard, no worker logs on the console, only
    Ray's errors. Shut down on the way out if started here, on every way out (an interrupt during the start
    included). Yields whether it is an embedded Ray started here (a machine whose resources are all there
    will ever be).

    The embedded Ray is always a new one (``address="local"``): a plain ``ray.init()`` would attach to the
    latest cluster any ``ray start`` on this machine recorded (``/tmp/ray/ray_current_cluster``), so a study
    meant to run here would silently run on, and share, someone else's Ray.

    ``ray.init`` replaces the process's SIGTERM handler with its own (which exits at once, leaving a
    half-started Ray running): a Python handler the caller had (the CLI's, ``study.cli.main``: SIGTERM as
    Ctrl-C, so `kill` or `ray job stop` shuts the study down cleanly) is kept during the start, and whatever
    the caller had is put back when the session ends. (Ray itself turns usage statistics off for a local
    Ray it starts; nothing else here touches the process.)"""
    import ray

    if ray.is_initialized():
        yield False
        return
    kwargs: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.ERROR, configure_logging=True)
    main_thread = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM)
    address = own_cluster(address or os.environ.get("RAY_ADDRESS") or None)
    before = _ray_processes_below(os.getpid())  # never touched: not this session's
    try:
        with contextlib.ExitStack() as stack:
            if not address:
                stack.enter_context(_reaped_on_exit())
                stack.enter_context(_adopting_orphans())
            try:
                with _caller_keeps_sigterm(sigterm):
                    if address:
                        ray.init(address=address, **kwargs)
                    else:
                        ray.init(address="local", include_dashboard=False, **kwargs)
            except BaseException as e:  # an interrupt (SIGINT, or SIGTERM as the CLI's KeyboardInterrupt) included
                _shut_down(ray, before)
                if isinstance(e, Exception) and not isinstance(e, UserError):
                    # every failure of Ray's start is one line (a file-size limit raises an OSError, a refused
                    # cluster a ConnectionError, a Ray that died a RuntimeError), its type named for the reader
                    where = f"at {address!r}" if address else "locally"
                    why = f"{type(e).__name__}: {_first_line(e)}"
                    raise UserError(f"cannot start or reach Ray {where}: {why}") from None
                raise
            if callable(sigterm) and main_thread:
                signal.signal(signal.SIGTERM, sigterm)  # Ray may set its own on later calls too
            try:
                interrupts.raise_if_interrupted()  # one that Ray's start swallowed (study.execution.interrupts)
                yield not address
            finally:
                _shut_down(ray, before)
    finally:
        if sigterm is not None and main_thread:
            signal.signal(signal.SIGTERM, sigterm)
