"""The driver lock of a study on S3: one lock object, created only if absent, with an owner and a lease.

A local study's lock is ``flock`` on ``<study>/.lock``, which the kernel releases however the process ends.
Object storage has no ``flock``, but S3 has conditional writes (since August 2024): ``PutObject`` with
``If-None-Match: *`` creates an object only where none exists, and ``If-Match: <etag>`` replaces one only if it
is still the version read. pyarrow's S3 filesystem does not send them; boto3 does. So on ``s3://`` the driver:

1. creates ``<study>/.lock`` with ``If-None-Match: *``; its body names the owner (host, pid, the process's start
   time, a random token) and when the lease was last renewed;
2. where the object exists, reads it: if its owner is gone (a process of this host that no longer runs, or a
   lease not renewed for ``LEASE_S`` seconds) it takes the lock over with ``If-Match: <the etag read>``, so of
   two drivers taking over at once one wins; else it is refused in one line naming the owner;
3. renews the lease every ``RENEW_S`` from a thread (``If-Match``: the etag of its own last write). A renewal
   refused with 412 means another driver took the lock over (this one's lease had run out): the lock is lost,
   and the store refuses every later write of this driver (``Store.write_bytes``), which stops it;
4. deletes the lock on the way out (``If-Match``: its own etag, so never another driver's).

A driver killed by SIGKILL leaves its lock object: a driver on the same host sees that the owner's process is
gone and takes over at once; a driver on another host after the lease. Without boto3 (``pip install boto3``;
the cluster's nodes have it) there is no lock on object storage, as before: the driver says so once.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

import pyarrow.fs as pafs

from archstudy.sampling import UserError

from ..experiment import location

LEASE_S = 60.0  # a lock not renewed for this long belongs to nobody (a driver's heartbeat is 10 s)
RENEW_S = LEASE_S / 6


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux: clock ticks since boot, ``/proc/<pid>/stat`` field 22), so a
    recycled pid is not taken for the process that owned a lock; None where it cannot be read (no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return None if fields[0] == b"Z" else fields[19].decode()
    except (OSError, IndexError):
        return None


def _client(fs: pafs.S3FileSystem):
    """A boto3 S3 client for the endpoint, region and credentials of ``fs`` (as its URI set them; else boto3's own
    chain, the environment and ~/.aws, as pyarrow's), with the location's bounded waits."""
    import boto3
    from botocore.config import Config

    _, (o,) = fs.__reduce__()
    endpoint = o.get("endpoint_override") or None
    scheme = o.get("scheme") or "https"
    config = Config(
        connect_timeout=location.CONNECT_S,
        read_timeout=location.STALL_S,
        retries={"max_attempts": location.ATTEMPTS, "mode": "standard"},
    )
    kwargs: dict[str, Any] = {
        "endpoint_url": f"{scheme}://{endpoint}" if endpoint else None,
        "region_name": o.get("region") or None,
        "config": config,
    }
    if o.get("access_key"):
        kwargs.update(
            aws_access_key_id=o["access_key"],
            aws_secret_access_key=o.get("secret_key"),
            aws_session_token=o.get("session_token") or None,
        )
    if o.get("anonymous"):
        from botocore import UNSIGNED

        kwargs["config"] = config.merge(Config(signature_version=UNSIGNED))
    return boto3.session.Session().client("s3", **kwargs)


def _code(error) -> str:
    return str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))


class ObjectLock:
    """The lock of the study at ``root`` (``bucket/prefix``) on the S3 filesystem ``fs``; see the module docstring."""

    def __init__(self, fs: pafs.S3FileSystem, root: str, shown: str, name: str = ".lock"):
        bucket, _, prefix = root.partition("/")
        self.bucket, self.key, self.shown = bucket, f"{prefix}/{name}" if prefix else name, shown
        self.client = _client(fs)
        pid = os.getpid()
        self.owner = {
            "host": socket.gethostname(),
            "pid": pid,
            "pid_start": process_start(pid),
            "token": uuid.uuid4().hex,
        }
        self.etag: str | None = None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()  # the renewing thread and the release never write at once

    # -- the object ------------------------------------------------------------------------------------
    def _body(self) -> bytes:
        return (json.dumps({**self.owner, "renewed_unix": time.time(), "lease_s": LEASE_S}) + "\n").encode()

    def _put(self, **condition) -> str:
        return self.client.put_object(
            Bucket=self.bucket, Key=self.key, Body=self._body(), ContentType="application/json", **condition
        )["ETag"]

    def _read(self) -> tuple[dict | None, str | None]:
        """(the lock's content, its etag); (None, None) when there is none."""
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except Exception as e:  # noqa: BLE001 - botocore's ClientError, read by its code
            if _code(e) in ("NoSuchKey", "404"):
                return None, None
            raise
        try:
            content = json.loads(got["Body"].read())
        except ValueError:
            content = None
        return (content if isinstance(content, dict) else {}), got["ETag"]

    @staticmethod
    def owner_gone(content: dict, now: float | None = None) -> str | None:
        """Why the owner of a lock with ``content`` no longer holds it, or None while it does."""
        now = time.time() if now is None else now
        try:
            renewed, lease = float(content.get("renewed_unix", 0)), float(content.get("lease_s", LEASE_S))
        except (TypeError, ValueError):
            return "its lock object is not one archstudy wrote"
        if content.get("host") == socket.gethostname():
            pid = content.get("pid")
            if not isinstance(pid, int) or process_start(pid) != content.get("pid_start"):
                return f"its process {pid} on this host has ended"
        if now - renewed > lease:
            return f"its lease was last renewed {now - renewed:.0f} s ago"
        return None

    # -- taking, keeping and giving back -----------------------------------------------------------------
    def acquire(self) -> str | None:
        """Take the lock (``UserError`` when another driver holds it); returns what was taken over, if anything."""
        for _ in range(5):  # a lock taken over or released between our requests: look again
            try:
                self.etag = self._put(IfNoneMatch="*")
                self._start()
                return None
            except Exception as e:  # noqa: BLE001
                if _code(e) not in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                    raise
            content, etag = self._read()
            if etag is None:
                continue  # released meanwhile: try to create it again
            assert content is not None  # ``_read``: a lock with an etag has content
            why = self.owner_gone(content)
            if why is None:
                since = time.time() - float(content.get("renewed_unix", 0) or 0)
                raise UserError(
                    f"{self.shown}: another archstudy driver is running on this study (pid "
                    f"{content.get('pid')} on {content.get('host')}, its lock renewed {since:.0f} s ago; "
                    "see `archstudy status`)"
                )
            try:
                self.etag = self._put(IfMatch=etag)
            except Exception as e:  # noqa: BLE001
                if _code(e) not in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409", "NoSuchKey"):
                    raise
                continue  # another driver took it over first, or it was released: look again
            self._start()
            return f"took over the lock of pid {content.get('pid')} on {content.get('host')} ({why})"
        raise UserError(f"{self.shown}: could not take the study's lock: other drivers kept taking it; try again")

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._renew, name="archstudy-lock", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(RENEW_S):
            with self._guard:
                if self._stop.is_set():
                    return
                try:
                    self.etag = self._put(IfMatch=self.etag)
                    last_ok = time.monotonic()
                except Exception as e:  # noqa: BLE001
                    code = _code(e)
                    if (
                        code in ("PreconditionFailed", "412", "NoSuchKey", "404")
                        or time.monotonic() - last_ok > LEASE_S
                    ):
                        self.lost.set()  # taken over (or removed), or not renewed within the lease
                        return
                    # the store did not answer: try again at the next renewal, within the lease

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            with self._guard:
                pass
            self._thread.join(timeout=location.wait_bound_s())
        if self.etag is not None and not self.lost.is_set():
            try:
                self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=self.etag)
            except Exception as e:  # noqa: BLE001
                if _code(e) not in ("PreconditionFailed", "412"):  # a store without conditional deletes
                    self._delete_if_mine()
        self.etag = None

    def _delete_if_mine(self) -> None:
        try:
            content, _ = self._read()
            if content and content.get("token") == self.owner["token"]:
                self.client.delete_object(Bucket=self.bucket, Key=self.key)
        except Exception:  # noqa: BLE001 - unreachable: the lease ends the lock
            pass


def object_lock(fs: pafs.FileSystem, root: str, shown: str) -> ObjectLock | None:
    """The lock of an ``s3://`` study, or None where there is none (another object store, or no boto3)."""
    if not isinstance(fs, pafs.S3FileSystem):
        return None
    try:
        import boto3  # noqa: F401
    except ImportError:
        return None
    lock = ObjectLock(fs, root, shown)
    members = lock.client.meta.service_model.operation_model("PutObject").input_shape.members
    return lock if "IfNoneMatch" in members and "IfMatch" in members else None  # botocore >= 1.35
