"""Where a study lives: a local directory, or an object-storage URI opened with bounded network waits.

``open_location(text)`` gives the ``pyarrow.fs`` filesystem and the root path of a study location. A URI
that names no bucket (``s3://``, ``s3://?endpoint_override=...``) is refused in one line: pyarrow would
take it as the root of the whole store and every file of the study as ``/study.yaml``.

An ``s3://`` filesystem is made with bounded waits, so an endpoint that refuses, or accepts and never
answers, fails instead of hanging:

* ``CONNECT_S``: seconds to open a connection (the AWS SDK's default is 1 s; a remote endpoint over a slow
  link may need more);
* ``STALL_S``: seconds a request may go without transferring a byte (curl's low-speed limit, which
  ``request_timeout`` sets on Linux: a long upload that keeps moving is never cut);
* ``ATTEMPTS``: attempts per request (the SDK's standard retry strategy, with its short backoff).

So one request gives up after at most about ``ATTEMPTS * (CONNECT_S + STALL_S)`` seconds (``WAIT_BOUND_S``):
a refused connection (a closed port) in well under a second per attempt, an endpoint that accepts and never
answers after ``ATTEMPTS * STALL_S``. ``reach`` asks once, up front, and turns what the store answered into
one line naming the address (``unreachable``). Every process that opens the location (the driver, each worker,
``archstudy status``) makes its filesystem the same way, from the URI.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs

from archstudy.sampling import UserError

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


def open_location(location: str | os.PathLike) -> tuple[pafs.FileSystem, str]:
    """(filesystem, root path) of a study location: a local path (absolute, ``~`` expanded) or a URI
    (``s3://BUCKET/PREFIX``, ``gs://...``, ``file:///abs/path``); a bad URI is one ``UserError`` line."""
    text = os.fspath(location)
    if "://" not in text:
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(text)).rstrip("/") or "/"
    try:
        fs, root = pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, OSError) as e:
        raise UserError(f"study location {text!r}: {first_line(e)}") from None
    if fs.type_name != "local":
        if not root.strip("/") or root.startswith("/"):
            scheme = text.split("://", 1)[0]
            raise UserError(
                f"study location {text!r}: names no bucket; an object-storage study is {scheme}://BUCKET/PREFIX"
            )
        if isinstance(fs, pafs.S3FileSystem):
            fs = bounded_s3(fs)
    return fs, root.rstrip("/") or "/"


def unreachable(location: str, error: BaseException) -> UserError:
    """The one line for a location whose store did not answer (or refused) a request."""
    return UserError(
        f"{location}: cannot reach the study's storage ({first_line(error)}); nothing was changed "
        f"(a request gives up after at most {wait_bound_s():g} s)"
    )


def reach(fs: pafs.FileSystem, root: str, location: str) -> None:
    """Ask the store once for the study's root (object storage; a local path answers at once): an endpoint
    that refuses or does not answer is one ``UserError`` line within ``wait_bound_s()``."""
    if fs.type_name == "local":
        return
    try:
        fs.get_file_info(f"{root}/study.yaml")
    except (OSError, pa.ArrowException) as e:
        raise unreachable(location, e) from None
