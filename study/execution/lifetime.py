"""Process lifetimes: a process the command starts dies with it, however the command dies.

A command's workers (the report's forked processes, ``reproduce all``'s subprocesses) must not outlive a SIGKILL of the
command: Linux delivers a chosen signal to a process when the thread that started it ends (prctl(2),
``PR_SET_PDEATHSIG``), which survives ``exec``. Here, below the applications, so that the command line and the
reproductions both use it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

# Linux prctl(2) option: the signal a process gets when the thread that forked it ends.
PR_SET_PDEATHSIG = 1
_FORK = {"registered": False, "main": False, "parent": 0}


def _before_fork() -> None:
    _FORK["main"] = threading.current_thread() is threading.main_thread()
    _FORK["parent"] = os.getpid()


def die_with_parent() -> None:
    """The calling process gets SIGKILL when the thread that started it ends (prctl PR_SET_PDEATHSIG; Linux only,
    elsewhere nothing). It survives ``exec``: ``subprocess.Popen(..., preexec_fn=die_with_parent)`` from the main
    thread gives a worker process that dies with its parent however the parent dies."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def _die_with_parent() -> None:
    """In a process forked from the command's main thread: ``die_with_parent``. A report's forked workers outlived a
    SIGKILL of ``archstudy report`` and ignored SIGTERM. Not for a fork from another thread: the signal comes when
    the forking *thread* ends."""
    if not _FORK["main"]:
        return
    die_with_parent()
    if os.getppid() != _FORK["parent"]:  # the parent died before the line above: nobody waits for this process
        os._exit(1)


def children_die_with_the_command() -> None:
    """Every process the command forks from its main thread (the report's workers) dies with it (``_die_with_parent``);
    registered once per process. (A subprocess started with exec, such as Ray's or ``reproduce all``'s workers,
    runs no fork hook: those end through their own parent-death checks.)"""
    if not _FORK["registered"]:
        os.register_at_fork(before=_before_fork, after_in_child=_die_with_parent)
        _FORK["registered"] = True
