"""Files archstudy opens by name: regular files only, checked before a byte is read or written.

Opening a FIFO for reading waits for a writer, and for writing waits for a reader, without end and deaf to Ctrl-C
while the wait is in C (pyarrow's open, numpy's loadtxt); reading a device (``/dev/zero``) never ends. So every file
the tool opens by name, given on the command line or found inside a study, is opened here: without waiting
(``O_NONBLOCK``: a FIFO's open returns at once), then checked to be a regular file (``fstat``) before anything is
read; anything else (a FIFO, a socket, a device, a directory) is ``NotRegular``, one line naming the path, what it is
and what was expected. A file about to be written is checked the same way (``check_target``): an existing path that
is not a regular file is refused, nothing written. Torch-free and dependency-free: every layer uses it.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from .constraints import UserError


class NotRegular(UserError, OSError):
    """A path that is not a regular file where one is read or written: one line (the path, what it is, what was
    expected); an ``OSError`` too, so that code that handles a file it cannot read handles this one."""

    def __init__(self, path: str | os.PathLike[str], kind: str, what: str = "a file"):
        self.path, self.kind, self.what = os.fspath(path), kind, what
        super().__init__(
            f"{self.path}: {kind}, not a regular file; {what} is read and written only as one (a FIFO, a socket or a "
            "device could wait forever): nothing was read or changed"
        )

    def __reduce__(self) -> tuple[type[NotRegular], tuple[str, str, str]]:
        # picklable with its arguments (it may cross from a worker to the driver)
        return type(self), (self.path, self.kind, self.what)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words."""
    for test, words in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return "not a file"


def open_regular(path: str | os.PathLike[str], what: str = "a file") -> BinaryIO:
    """``path`` opened for reading in binary, refused (``NotRegular``) unless it is a regular file; a missing path
    is ``FileNotFoundError`` as ``open`` raises it. ``what``: what the file is, for the refusal."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(path, kind(mode), what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int | None = None, what: str = "a file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``), as ``open_regular`` opens it."""
    with open_regular(path, what) as f:
        return f.read() if limit is None else f.read(limit)


def check_target(path: str | os.PathLike[str], what: str = "a file") -> None:
    """Refuse (``NotRegular``) to write ``path`` where something that is not a regular file stands there: a FIFO
    (opened for writing it waits for a reader), a socket, a device, a directory. A missing path passes; so does a
    link to a regular file (``open`` follows it, as a user's own link is meant)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # the write itself says why (a loop of links, a component that is a file)
    if not stat.S_ISREG(mode):
        raise NotRegular(path, kind(mode), what)


def write_whole(path: str | os.PathLike[str], data: bytes | str, what: str = "a file") -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: refused where something that is not a regular
    file stands there (``check_target``), written to a new hidden temporary file beside it (created exclusively under
    a random name: nothing planted there is opened) and renamed over it. A failure (a full disk, a read-only
    directory) is the ``OSError`` naming ``path`` itself, whatever call failed (a failed write carries no path of its
    own), and leaves nothing behind."""
    path = os.fspath(path)
    check_target(path, what)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except OSError as e:
        if e.errno is None or e.filename == path:
            raise
        raise OSError(e.errno, e.strerror, path) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
