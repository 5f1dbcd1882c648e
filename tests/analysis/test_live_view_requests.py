"""The live view's requests (``analysis.live_view.answer``), over a real socket: every malformed request is answered
400 in one line, never a traceback or a dropped connection; on every loopback address, IPv4 and IPv6, only a
loopback ``Host`` is answered (DNS rebinding refused); on ``::1`` the server binds. The server reads no study here
(``check=False``): its state is the empty one, version 0."""

from __future__ import annotations

import json
import re
import socket

import pytest

from archstudy.analysis import live_view as lv


def exchange(server: lv.LiveServer, request: bytes) -> bytes:
    """Send ``request`` as it is; the answer, whole."""
    family = socket.AF_INET6 if ":" in server.host else socket.AF_INET
    with socket.socket(family) as s:
        s.settimeout(10)
        s.connect((server.host, server.port))
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def raw(server: lv.LiveServer, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as it is; (status code, body) of the answer."""
    head, _, body = exchange(server, request).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def get(path: str, *hosts: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", *(f"Host: {h}" for h in hosts), "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


@pytest.fixture(scope="module", autouse=True)
def small_page():
    """The page itself is not under test here: a small one instead of Plotly.js inlined (4.8 MB, built per server)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(lv, "page_html", lambda title, poll_s=lv.POLL_S: "<p>live</p>")
        yield


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = lv.LiveServer(str(tmp_path_factory.mktemp("live")), port=0).start(watch=False, check=False)
    yield s
    s.stop()


@pytest.mark.parametrize(
    "path, hosts, code",
    [
        ("/data.json", ["["], 400),
        ("/data.json", ["[::1"], 400),
        ("/data.json", ["a:b:c"], 400),
        ("/data.json", ["localhost:99999"], 400),
        ("/data.json", ["localhost:"], 400),
        ("/data.json", ["local host"], 400),
        ("/data.json", [], 400),
        ("/data.json", ["localhost", "localhost"], 400),
        ("/data.json?since=--1", ["localhost"], 400),
        ("/data.json?since=" + "9" * 5000, ["localhost"], 400),
        ("/data.json?since=abc", ["localhost"], 400),
        ("/data.json?since=1&since=2", ["localhost"], 400),
        ("/data.json?since=%ff", ["localhost"], 400),
        ("/data.json?" + "&".join(f"x{i}=1" for i in range(20)), ["localhost"], 400),
        ("/data.json?since=1%00", ["localhost"], 400),
        ("/data.json?since=-1", ["localhost"], 200),
        ("/data.json?since=0", ["[::1]:8765"], 200),
        ("/data.json", ["127.0.0.1"], 200),
        ("/nothing", ["localhost"], 404),
        ("/data.json", ["attacker.example"], 403),
    ],
)
def test_each_malformed_request_is_400_in_one_line_and_never_a_traceback(server, path, hosts, code, capfd):
    status, body = raw(server, get(path, *hosts))
    assert status == code
    if code == 400:
        assert body.startswith(b"bad request: ") and body.count(b"\n") == 0
    if code == 200:
        assert json.loads(body)["version"] == 0
    assert "Traceback" not in capfd.readouterr().err
    assert raw(server, get("/data.json", "localhost"))[0] == 200  # the server still answers


@pytest.mark.parametrize("request_line", [b"GET\r\n\r\n", b"GARBAGE / HTTP/1.1\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n"])
def test_a_malformed_request_line_is_answered_not_dropped(server, request_line, capfd):
    """http.server's own error page (without a status line where the request reads as HTTP/0.9's)."""
    answer = exchange(server, request_line)
    assert re.search(rb"Error code: (400|501|505)", answer), answer[:300]
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1"])
def test_every_loopback_address_answers_loopback_names_only(address, tmp_path):
    try:
        server = lv.LiveServer(str(tmp_path), address, port=0).start(watch=False, check=False)
    except OSError as e:  # pragma: no cover - a machine without IPv6 (or 127.0.0.2) cannot test it
        pytest.skip(f"{address} cannot be bound here: {e}")
    try:
        assert server.host == address and server.url.startswith("http://[::1]:" if ":" in address else "http://1")
        for host in ("localhost", f"localhost:{server.port}", "127.0.0.1", "127.0.0.2:1", "[::1]", "[::1]:80"):
            assert raw(server, get("/data.json", host))[0] == 200, host
        for host in ("attacker.example", f"attacker.example:{server.port}", "10.0.0.1", "[fe80::1]", "127.0.0.1.xip"):
            assert raw(server, get("/data.json", host))[0] == 403, host
    finally:
        server.stop()


def test_another_address_answers_any_name(tmp_path):
    """An address given with ``--host`` that is not loopback is meant for other machines, by any of its names."""
    server = lv.LiveServer(str(tmp_path), "0.0.0.0", port=0)
    assert not lv.loopback(server.host) and server.host_allowed("attacker.example")
    server.stop()
