"""What the command line prints (``study.cli.Redacting``, around every command): credentials of a URI starred, and
into a log (a file or a pipe) no colour codes, which Ray writes into its warnings whatever the stream."""

from __future__ import annotations

import io

import pytest

from archstudy.study.cli import Redacting

COLOURED = "\x1b[33m(raylet)\x1b[0m \x1b[1;31mWARNING\x1b[0m s3://KEY:SECRET@bkt/x?secret_key=abc&region=eu\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "stream, expected",
    [
        (io.StringIO(), "(raylet) WARNING s3://***@bkt/x?secret_key=***&region=eu\n"),
        (Terminal(), "\x1b[33m(raylet)\x1b[0m \x1b[1;31mWARNING\x1b[0m s3://***@bkt/x?secret_key=***&region=eu\n"),
    ],
    ids=["log", "terminal"],
)
def test_a_log_gets_no_colour_codes_and_no_stream_gets_credentials(stream, expected):
    out = Redacting(stream)
    assert out.write(COLOURED) == len(COLOURED)
    assert stream.getvalue() == expected
