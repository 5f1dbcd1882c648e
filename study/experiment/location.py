"""Where a study lives: a local directory, or an object-storage URI opened with bounded network waits.

``open_location(text)`` gives the ``pyarrow.fs`` filesystem and the root path of a study location. A URI
that names no bucket (``s3://``, ``s3://?endpoint_override=...``) is refused in one line: pyarrow would
take it as the root of the whole store and every file of the study as ``/study.yaml``. So is an
object-storage URI whose path is not in its one normal form (a ``..``, ``.`` or empty segment: the store
resolves ``x/../ab1`` when it reads or writes one object, never when it lists a prefix, so the study's files
would be written where its listing never finds them), an ``endpoint_override`` whose port is not one
(``127.0.0.1:99999``), and a known scheme without its ``//`` (``s3:bucket/x`` would be the local directory
``./s3:bucket/x``). A ``file://`` URI's path is normalized as a local path is. Every command opens a study
location here (``study.execution.store.Store``).

``study_above(fs, root)`` names the study a location lies inside, if any: a study's directory and everything
under it belong to that study, never to another study or to ``archstudy rank``'s output.

An ``s3://`` filesystem is made with bounded waits, so an endpoint that refuses, or accepts and never
answers, fails instead of hanging:

* ``CONNECT_S``: seconds to open a connection (the AWS SDK's default is 1 s; a remote endpoint over a slow
  link may need more);
* ``STALL_S``: seconds a request may go without transferring a byte (curl's low-speed limit, which
  ``request_timeout`` sets on Linux: a long upload that keeps moving is never cut);
* ``ATTEMPTS``: attempts per request (the SDK's standard retry strategy, with its short backoff).

So one request gives up after at most about ``ATTEMPTS * (CONNECT_S + STALL_S)`` seconds (``wait_bound_s``):
a refused connection (a closed port) in well under a second per attempt, an endpoint that accepts and never
answers after ``ATTEMPTS * STALL_S``. A ``gs://`` filesystem retries for at most ``wait_bound_s`` in all
(``retry_time_limit``: a refusing endpoint, or Google's credentials looked for where there are none, fail within
it); one attempt that the endpoint accepts and never answers waits for the GCS client's own transfer-stall limit
(120 s), which pyarrow does not expose. ``reach`` asks once, up front, in a thread it waits for at most
``wait_bound_s`` (and that Ctrl-C interrupts), and turns what the store answered, or its silence, into one line
naming the address (``unreachable``). The other schemes pyarrow opens (``hdfs``, ``viewfs``, ``abfs``, ``abfss``)
take no bound on their waits, so they are refused in one line (``UNBOUNDED``), as is every scheme pyarrow does not
open. Every process that opens the location (the driver, each worker, ``archstudy status``, the analysis) makes its
filesystem the same way, from the URI.

A location may carry credentials (``s3://KEY:SECRET@bucket/x``, ``?secret_key=...``): ``redact`` shows it with
them starred, and every message that names a location shows it so (``Store.location``; the command line's last guard
redacts whatever it prints).
"""

from __future__ import annotations

import datetime
import os
import posixpath
import re
import threading
import urllib.parse

import pyarrow as pa
import pyarrow.fs as pafs

from archstudy.sampling import UserError
from archstudy.sampling.constraints import redact

CONNECT_S = 5.0
STALL_S = 10.0
ATTEMPTS = 3


def wait_bound_s() -> float:
    """The longest one request to object storage waits before it fails (module docstring), in seconds."""
    return ATTEMPTS * (CONNECT_S + STALL_S)


def first_line(error: BaseException, limit: int = 300) -> str:
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bounded_s3(fs: pafs.S3FileSystem) -> pafs.S3FileSystem:
    """``fs`` with the bounded waits of the module docstring (its other options, as the URI set them, kept:
    ``S3FileSystem.__reduce__`` is how pyarrow pickles them)."""
    _, (options,) = fs.__reduce__()
    options = {**options, "connect_timeout": CONNECT_S, "request_timeout": STALL_S}
    return pafs.S3FileSystem(**options, retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=ATTEMPTS))


def bounded_gcs(fs: pafs.FileSystem) -> pafs.FileSystem:
    """``fs`` (a ``GcsFileSystem``) retrying for at most ``wait_bound_s`` in all (module docstring), its other
    options as the URI set them."""
    _, (options,) = fs.__reduce__()
    options = {**options, "retry_time_limit": datetime.timedelta(seconds=wait_bound_s())}
    return pafs.GcsFileSystem(**{k: v for k, v in options.items() if v not in (None, "")})


# The schemes pyarrow.fs opens: ``s3:bucket/x`` (no ``//``) is a mistake for one of them, not a local directory.
SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "file", "abfs", "abfss")
# Of those, the filesystems whose waits take no bound here: refused (module docstring).
UNBOUNDED = ("hdfs", "viewfs", "abfs", "abfss")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def names_a_uri(text: str) -> bool:
    """Whether ``text`` is meant as a URI: it has ``://``, or starts with a scheme of ``SCHEMES`` and a colon (a
    mistyped URI, never a local directory)."""
    m = _SCHEME.match(text)
    return "://" in text or bool(m and m[1].lower() in SCHEMES)


def _refuse_malformed(text: str) -> None:
    """One ``UserError`` line for a location that would open somewhere else than it says (module docstring)."""
    m = _SCHEME.match(text)
    if "://" not in text:
        if m and m[1].lower() in SCHEMES:
            form = "file:///ABSOLUTE/PATH" if m[1].lower() == "file" else f"{m[1]}://BUCKET/PREFIX"
            raise UserError(
                f"study location {redact(text)!r}: a {m[1]}: URI without '//'; write {form} "
                f"(or ./{redact(text)} for a local directory of that name)"
            )
        return
    parts = urllib.parse.urlsplit(text)
    if parts.scheme.lower() == "file":
        return
    for value in urllib.parse.parse_qs(parts.query).get("endpoint_override", []):
        try:
            port = urllib.parse.urlsplit(value if "://" in value else f"//{value}").port
            if port == 0:
                raise ValueError("port 0")
        except ValueError:
            raise UserError(
                f"study location {redact(text)!r}: endpoint_override={value!r}: not HOST or HOST:PORT with a port "
                "from 1 to 65535"
            ) from None
    path = urllib.parse.unquote(parts.path)
    segments = path.split("/")[1:]
    if segments and segments[-1] == "":
        segments.pop()  # one trailing slash: the same prefix
    if any(s in ("", ".", "..") for s in segments):
        bucket = parts.netloc.rsplit("@", 1)[-1]
        normal = posixpath.normpath(f"/{bucket}{path}").lstrip("/")
        if normal.split("/", 1)[0] == bucket:
            query = f"?{parts.query}" if parts.query else ""
            hint = f": write {parts.scheme}://{normal}{query}"
        else:
            hint = f": it leaves the bucket {bucket!r}"
        raise UserError(
            f"study location {redact(text)!r}: its path holds a '..', '.' or empty segment, which the object store "
            f"resolves for one object but not for a listing{hint}"
        )


def open_location(location: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """(filesystem, root path) of a study location: a local path (absolute, ``~`` expanded) or a URI
    (``s3://BUCKET/PREFIX``, ``gs://...``, ``file:///abs/path``); a bad URI is one ``UserError`` line."""
    text = os.fspath(location)
    _refuse_malformed(text)
    if "://" not in text:
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(text)).rstrip("/") or "/"
    shown, scheme = redact(text), text.split("://", 1)[0].lower()
    if scheme in UNBOUNDED:
        raise UserError(
            f"study location {shown!r}: {scheme}:// takes no bound on its network waits here, so a store that never "
            "answers would hang every command: a study lives in a local directory, file://, s3:// or gs://"
        )
    try:
        fs, root = pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, OSError) as e:
        raise UserError(f"study location {shown!r}: {redact(first_line(e))}") from None
    if fs.type_name != "local":
        if not root.strip("/") or root.startswith("/"):
            raise UserError(
                f"study location {shown!r}: names no bucket; an object-storage study is {scheme}://BUCKET/PREFIX"
            )
        if isinstance(fs, pafs.S3FileSystem):
            fs = bounded_s3(fs)
        elif fs.type_name == "gcs":
            fs = bounded_gcs(fs)
        else:  # a scheme pyarrow opens that no bound is set for here
            raise UserError(f"study location {shown!r}: {scheme}:// takes no bound on its network waits here")
    else:
        root = os.path.normpath(root) if root else root
    return fs, root.rstrip("/") or "/"


# Beside the study.yaml it writes (the top K as a study's config), `archstudy rank`'s output holds its predictor:
# a directory with both is rank's output, not a study, and the studies rank runs live inside it (measured, check).
RANK_MARK = "predictor.json"


def study_above(fs: pafs.FileSystem, root: str) -> str | None:
    """The nearest directory strictly above ``root`` that holds a study (its ``study.yaml``; rank's output, which
    holds ``RANK_MARK`` beside it, is none), or None."""
    from .config import CONFIG_NAME

    parents = []
    path = root.rstrip("/")
    while "/" in path.strip("/"):
        path = path.rsplit("/", 1)[0] or "/"
        parents.append(path)
    if fs.type_name == "local" and root.startswith("/") and root != "/" and "/" not in parents:
        parents.append("/")
    if not parents:
        return None
    infos = fs.get_file_info([_join(p, CONFIG_NAME) for p in parents])
    for parent, info in zip(parents, infos):
        if info.type == pafs.FileType.File and not _is_file(fs, _join(parent, RANK_MARK)):
            return parent
    return None


def holds_study(fs: pafs.FileSystem, root: str) -> bool:
    """Whether ``root`` itself is a study: it holds ``study.yaml`` and is not rank's output (``RANK_MARK``)."""
    from .config import CONFIG_NAME

    return _is_file(fs, _join(root, CONFIG_NAME)) and not _is_file(fs, _join(root, RANK_MARK))


def study_holding(path: str | os.PathLike[str]) -> str | None:
    """The study that the local path ``path`` is or lies inside (the nearest directory at or above it holding a
    study's ``study.yaml``; rank's output, ``RANK_MARK`` beside it, is none), or None: the one test of where a
    command may write its output (``report --out``, ``rank --out``, ``reproduce --out``), since a stray file in a
    study's folder breaks the reading of its tables and a study's own files are never overwritten."""
    fs, root = open_location(path)
    return root if holds_study(fs, root) else study_above(fs, root)


def _join(parent: str, name: str) -> str:
    return f"{parent.rstrip('/')}/{name}"


def _is_file(fs: pafs.FileSystem, path: str) -> bool:
    return bool(fs.get_file_info(path).type == pafs.FileType.File)


_asked: list[threading.Thread] = []  # the threads ``reach`` asked in


def still_waiting() -> bool:
    """Whether a thread ``reach`` gave up on (no answer in time, or Ctrl-C) still waits in the store's client: the
    process must then end without finishing the interpreter, which would end that thread inside C++ when its call
    returns (SIGABRT; ``study.execution.interrupts.must_leave``)."""
    return any(t.is_alive() for t in _asked)


def unreachable(location: str, error: BaseException) -> UserError:
    """The one line for a location whose store did not answer (or refused) a request."""
    return UserError(
        f"{redact(location)}: cannot reach the study's storage ({redact(first_line(error))}); nothing was changed "
        f"(a request gives up after at most {wait_bound_s():g} s)"
    )


def reach(fs: pafs.FileSystem, root: str, location: str) -> None:
    """Ask the store once for the study's root (object storage; a local path answers at once): an endpoint
    that refuses or does not answer is one ``UserError`` line within ``wait_bound_s()``. The request runs in a
    daemon thread waited for at most that long: a store whose client waits longer (gs's stall limit) is refused
    in time, and Ctrl-C ends the wait at once (a wait in C would not see it)."""
    if fs.type_name == "local":
        return
    answer: list[BaseException | None] = []

    def ask() -> None:
        try:
            fs.get_file_info(f"{root}/study.yaml")
            answer.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            answer.append(e)

    asking = threading.Thread(target=ask, name="reach-storage", daemon=True)
    asking.start()
    _asked.append(asking)
    asking.join(wait_bound_s())
    if not answer:
        raise unreachable(location, TimeoutError(f"no answer within {wait_bound_s():g} s"))
    error = answer[0]
    if isinstance(error, (OSError, pa.ArrowException)):
        raise unreachable(location, error) from None
    if error is not None:
        raise error
