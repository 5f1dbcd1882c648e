"""Every remote filesystem a study location may name is bounded or refused, and no credential of one is printed.

s3:// and gs:// (``gcs://`` too) get the same bound on their network waits (``study.experiment.location``): a
refusing endpoint, or Google's (absent) credentials and servers, end in one line within it; a scheme pyarrow opens
without such a bound (hdfs, viewfs, abfs, abfss, and any other) is refused in one line before anything is asked.
The bound is made small here (1 attempt, 1 s to connect, 2 s of silence) so that each case costs seconds."""

from __future__ import annotations

import socket
import time

import pytest

from archstudy.study.cli import main
from archstudy.study.experiment import location

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "archstudy-test",
    "AWS_SECRET_ACCESS_KEY": "archstudy-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
LIMIT_S = 60  # far above the bound: a machine under load starts the store's client slowly


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = _closed_port()
CANNOT_REACH = "cannot reach the study's storage"
NO_BOUND = "takes no bound on its network waits here"
CASES = [
    (f"gs://bkt/base?endpoint_override=127.0.0.1:{PORT}&scheme=http", CANNOT_REACH),
    ("gs://bkt/base", CANNOT_REACH),  # Google's servers and credentials, none reachable here
    ("gcs://bkt/base", CANNOT_REACH),
    (f"s3://bkt/base?endpoint_override=127.0.0.1:{PORT}&scheme=http", CANNOT_REACH),
    ("hdfs://namenode/base", NO_BOUND),
    ("viewfs://cluster/base", NO_BOUND),
    ("abfs://container@account.dfs.core.windows.net/base", NO_BOUND),
    ("abfss://container@account.dfs.core.windows.net/base", NO_BOUND),
    ("mock://bkt/base", NO_BOUND),
]


@pytest.fixture
def small_bound(monkeypatch):
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(location, "ATTEMPTS", 1)
    monkeypatch.setattr(location, "CONNECT_S", 1.0)
    monkeypatch.setattr(location, "STALL_S", 2.0)


@pytest.mark.parametrize("uri, expected", CASES, ids=[c[0].split("?")[0] for c in CASES])
def test_each_remote_scheme_is_bounded_or_refused_in_one_line(uri, expected, small_bound, capsys):
    t0 = time.monotonic()
    code = main(["status", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert time.monotonic() - t0 < LIMIT_S


@pytest.mark.parametrize(
    "uri",
    [
        f"s3://AKIDEXAMPLE:wJalrXUtnFEMI@bkt/base?endpoint_override=127.0.0.1:{PORT}&scheme=http",
        f"s3://bkt/base?endpoint_override=127.0.0.1:{PORT}&scheme=http&secret_key=wJalrXUtnFEMI&access_key=AKIDEXAMPLE",
        "abfs://AKIDEXAMPLE:wJalrXUtnFEMI@account.dfs.core.windows.net/base",
    ],
)
@pytest.mark.parametrize("command", ["status", "top", "report"])
def test_credentials_in_a_location_are_never_printed(uri, command, small_bound, capsys, tmp_path):
    """``s3://KEY:SECRET@...`` was echoed in full; every line the command line prints has them starred."""
    argv = [command, uri] + (["--out", str(tmp_path / "r.html")] if command == "report" else [])
    assert main(argv) == 2
    printed = "".join(capsys.readouterr())
    assert printed and "wJalrXUtnFEMI" not in printed and "AKIDEXAMPLE" not in printed, printed
