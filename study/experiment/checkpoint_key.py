"""The secret key of a study's checkpoints: a local file only its owner may read, made once, never followed as a link.

A checkpoint is authenticated by an HMAC under this key (``study.training.checkpoint``). The key is ``SECRET_BYTES``
random bytes (``secrets.token_bytes``) in a file of mode 0600: a study's own is ``SECRET_NAME`` at its root, made by
its driver before any unit runs (``study.execution.store.Store.checkpoint_secret``); a caller of
``train_architecture`` without a study gets one beside its checkpoint. A file that is not a key of this user's alone
(a symbolic link, not a regular file, another owner, readable or writable by others, another size) is never read
as one: whoever could write or read it could forge a checkpoint. Torch-free, so that the store of ``archstudy
status`` reads it without loading torch.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

SECRET_NAME = ".checkpoint-key"  # the file of a secret key: a study's, or one beside a caller's checkpoint
SECRET_BYTES = 32  # 256 random bits: HMAC-SHA256's block is 64 bytes, its output 32


class SecretError(ValueError):
    """A key file that is not a secret of this user's alone (one line: the path and why)."""


def _secret_problem(fd: int) -> str | None:
    """Why the open file ``fd`` is not a secret key of this user's alone, or None."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.getuid():
        return f"owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"readable or writable by others (mode {stat.S_IMODE(st.st_mode):04o}; a key is 0600)"
    if st.st_size != SECRET_BYTES:
        return f"{st.st_size} bytes, not {SECRET_BYTES}"
    return None


def _read_secret(path: str) -> bytes | str | None:
    """The key in ``path``; or why the file there is none (a str); or None where there is no file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        return "a symbolic link" if e.errno == errno.ELOOP else (e.strerror or str(e))
    with os.fdopen(fd, "rb") as f:
        problem = _secret_problem(fd)
        return problem if problem is not None else f.read(SECRET_BYTES + 1)


def write_secret(path: str, *, replace: bool = False) -> bytes:
    """A new key in ``path`` (mode 0600), written whole before it appears: where a file is there already, only with
    ``replace`` (else ``FileExistsError``: another process made one first)."""
    secret = secrets.token_bytes(SECRET_BYTES)
    tmp = f"{path}.tmp-{secrets.token_hex(4)}"  # at a study's root, what its temp_files finds
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(secret)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)  # a link planted at ``path`` is replaced, never followed
        else:
            _link(tmp, path)  # fails where a file (or a link) is there: the first key made stays
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return secret


def secret_at(path: str | os.PathLike[str], *, create: bool = False) -> tuple[bytes, str]:
    """``(key, note)``: the key in the local file ``path``, read without following a link. A file that is not a key
    of this user's alone (a link, not a regular file, another owner, readable or writable by others, another size)
    raises ``SecretError``; with ``create`` a missing key is made and such a file replaced by a new key, ``note``
    saying why in one line (the checkpoints the old one signed are then discarded as they are read)."""
    path = os.fspath(path)
    for _ in range(3):  # a key made by another process between our two looks is read again
        found = _read_secret(path)
        if isinstance(found, bytes):
            return found, ""
        if not create:
            raise SecretError(f"{path}: " + ("no checkpoint key" if found is None else f"not a key: {found}"))
        try:
            return write_secret(path, replace=found is not None), (
                "" if found is None else f"{path}: not a key ({found}): replaced by a new one"
            )
        except FileExistsError:
            continue
    raise SecretError(f"{path}: the checkpoint key keeps changing under this process")


def _link(tmp: str, path: str) -> None:
    """``tmp`` also as ``path``, only where nothing is there (``FileExistsError`` else); on a file system without hard
    links, renamed there once nothing is (a key another process makes at that moment is then replaced: the checkpoints
    it signed, none yet, would be discarded)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path) from None
        os.replace(tmp, path)
