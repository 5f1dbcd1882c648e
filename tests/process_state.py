"""Whether a process is alive, and which processes a session holds: for the tests that kill a command and look
for what it left running.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (its state in /proc/PID/stat, after the command name)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def session(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live (not zombie) processes of session ``sid``: every process a command started
    as the leader of a new session started, Ray's included, and nobody else's."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_bytes().rsplit(b")", 1)[1].split()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            out.append((int(d), cmd.strip()))
    return out
