"""SQLite without a disk sync per transaction, for the exports whose target writes through SQLAlchemy (Optuna's
RDB storage, MLflow's tracking store).

Both libraries commit a transaction per trial attribute or run call, and SQLite syncs the file to disk at every
commit: on this project's 2-core machine that was about half of an MLflow run's 160 ms (docs/performance.md). An
export is removed when it fails (``analysis.exports.export_study``), so a sync per transaction protects nothing: while
``unsynced(path)`` holds, every new SQLAlchemy connection to the SQLite file ``path`` runs with ``PRAGMA synchronous =
OFF`` and the rollback journal in memory (``journal_mode = MEMORY``), through SQLAlchemy's public ``connect`` event;
other connections are untouched, and the listener is removed afterwards. The file the export leaves is an ordinary
SQLite database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def unsynced(path: str | os.PathLike[str]) -> Iterator[None]:
    """New SQLAlchemy connections to the SQLite file ``path`` without a sync per transaction (module docstring)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    target = os.path.realpath(Path(path))

    def on_connect(connection: Any, record: Any) -> None:
        if not isinstance(connection, sqlite3.Connection):
            return
        cursor = connection.cursor()
        try:
            files = [row[2] for row in cursor.execute("PRAGMA database_list").fetchall() if row[1] == "main"]
            if files and files[0] and os.path.realpath(files[0]) == target:
                cursor.execute("PRAGMA synchronous = OFF")
                cursor.execute("PRAGMA journal_mode = MEMORY")
        finally:
            cursor.close()

    event.listen(Engine, "connect", on_connect)
    try:
        yield
    finally:
        event.remove(Engine, "connect", on_connect)
