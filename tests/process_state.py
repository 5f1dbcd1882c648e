"""Whether a process is alive, for the tests that kill a command and look for what it left running.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (its state in /proc/PID/stat, after the command name)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
