"""The supplier API as strict as its log claims, black-box: its own process on loopback, raw
requests over TLS, and what its two log files hold after.

Every request that reaches it is logged once, whatever its method, version or size, with its
fields capped and marked when cut; framing follows RFC 9112 (one valid Content-Length, or
chunked; a refused request's connection closes, and nothing after it is read as a request);
the log is bounded however much noise it takes, and the controller's correlation still finds
its run's requests in it; its command line refuses what it cannot use with exit 2.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.call_correlation import correlate
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog
from app.core.endpoints import SupplierEndpoint
from app.core.repo import REPO_ROOT
from app.supplier_api.log import MAX_FILE_BYTES
from tests.support.supplier_wire import (
    KEY,
    Served,
    request,
    serve_command,
    statuses,
    supplier_api,
    write_files,
)

pytestmark = pytest.mark.integration

READ = "/cases/rfp-001/suppliers"


@pytest.fixture
def served(work_base: Path) -> Iterator[Served]:
    with supplier_api(work_base) as running:
        yield running


def _client(served: Served, run_id: str) -> SupplierClient:
    endpoint = SupplierEndpoint(
        url=f"https://localhost:{served.port}",
        alias_url=f"https://localhost:{served.port}",
        address="127.0.0.1",
        port=served.port,
        ca_file=served.ca_file,
        key_file=served.log.parent / "api-key",
    )
    return SupplierClient(endpoint, KEY, CallLog(), run_id)


# --- 9: every request that reaches the socket is logged once ------------------------------------

LONG = 70_000
ODD_REQUESTS = [
    ("TRACE", request("TRACE", "/"), 501, {"method": "TRACE", "path": "/"}),
    ("CONNECT", request("CONNECT", "supplier:443"), 501, {"method": "CONNECT"}),
    ("an unknown method", request("BREW", "/pot"), 501, {"method": "BREW", "path": "/pot"}),
    ("a garbage request line", b"\x01garbage\r\n\r\n", 400, {"method": "\x01garbage"}),
    ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, {"version": "HTTP/2.0"}),
    (
        "121 headers",
        request("GET", READ, *[f"X-Filler-{n}: x" for n in range(121)]),
        431,
        {"path": READ},
    ),
    ("a 70 KB header", request("GET", READ, "X-Big: " + "b" * LONG), 431, {"path": READ}),
    (
        "a 70 KB URI",
        request("GET", "/" + "u" * LONG),
        414,
        {"path": "/" + "u" * 255},
    ),
    ("a 70 KB method", b"M" * LONG + b" / HTTP/1.1\r\n\r\n", 414, {"method": "M" * 32}),
]


@pytest.mark.parametrize(
    ("raw", "status", "fields"),
    [(raw, status, fields) for _, raw, status, fields in ODD_REQUESTS],
    ids=[name for name, *_ in ODD_REQUESTS],
)
def test_a_request_it_refuses_is_answered_and_logged_once(
    raw: bytes, status: int, fields: dict[str, object], served: Served
) -> None:
    reply = served.exchange(raw)
    assert statuses(reply) in ([status], []), reply[:200]  # [] when a reset beat the answer
    (entry,) = served.lines(served.other_log)
    assert entry["status"] == status
    for name, value in fields.items():
        assert entry[name] == value, entry
    # A field that was cut says so, with the length it had when the server refused it.
    cut = entry.get("cut", {})
    assert all(length > 4096 for length in cut.values()), entry
    assert bool(cut) == (status == 414), entry
    assert len(str(entry)) < 1024
    assert served.lines(served.log) == []


# --- 10: framing by RFC 9112 --------------------------------------------------------------------


def test_a_body_holding_a_request_is_a_body(served: Served) -> None:
    """An unauthenticated POST whose body is a second request: one request, answered 401;
    the 'smuggled' PATCH was once logged as a second."""
    inner = request("PATCH", "/suppliers/smuggled", "X-Analyst-Request-ID: smuggled-1")
    raw = request("POST", "/cases/rfp-001/recommendations", f"Content-Length: {len(inner)}")
    assert statuses(served.exchange(raw + inner)) == [401]
    entries = served.lines(served.other_log)
    assert [(e["method"], e["status"]) for e in entries] == [("POST", 401)]
    assert not any(e["request_id"] == "smuggled-1" for e in served.lines(served.log) + entries)


@pytest.mark.parametrize(
    "lengths",
    [
        ("Content-Length: 5", "Content-Length: 500000"),
        ("Content-Length: 5", "Content-Length: 5"),
        ("Content-Length: 5", "Transfer-Encoding: chunked"),
        ("Content-Length: 5, 7",),
    ],
    ids=["conflicting", "duplicate", "beside chunked", "a list"],
)
def test_an_ambiguous_length_is_refused_and_nothing_after_it_is_read(
    lengths: tuple[str, ...], served: Served
) -> None:
    """400, the connection closed, and the request written after it in the same stream (with
    the key: it would be served) never read."""
    refused = request("POST", "/purchase-orders", *lengths, body=b"hello")
    follower = request("GET", READ, "X-Analyst-Request-ID: piped-1", key=True)
    assert statuses(served.exchange(refused + follower)) == [400]
    assert [(e["path"], e["status"]) for e in served.lines(served.other_log)] == [
        ("/purchase-orders", 400)
    ]
    assert served.lines(served.log) == []


def test_pipelined_requests_are_served_in_turn_and_a_chunked_body_is_read(served: Served) -> None:
    """The controls: well-framed requests on one connection, each answered and logged."""
    chunked = request(
        "POST", "/cases/rfp-001/recommendations", "Transfer-Encoding: chunked",
        "Content-Type: text/plain", "X-Analyst-Request-ID: run-3", key=True,
        body=b"5\r\ndraft\r\n0\r\n\r\n",
    )  # fmt: skip
    raw = (
        request("GET", READ, "X-Analyst-Request-ID: run-1", key=True)
        + request("GET", READ, "X-Analyst-Request-ID: run-2", key=True)
        + chunked
        + request("GET", READ, "Connection: close", key=True)
    )
    assert statuses(served.exchange(raw)) == [200, 200, 201, 200]
    assert [e["request_id"] for e in served.lines(served.log)] == ["run-1", "run-2", "run-3", None]


# --- 5: a bounded log, and correlation through anyone's noise ----------------------------------


def _noise(served: Served, count: int, path: str) -> None:
    """``count`` unauthenticated requests, pipelined on connections of 500."""
    for start in range(0, count, 500):
        batch = b"".join(request("GET", path) for _ in range(min(500, count - start)))
        served.exchange(batch + request("GET", path, "Connection: close"))


def test_noise_without_the_key_neither_grows_the_log_past_its_bound_nor_hides_a_run(
    served: Served,
) -> None:
    """135 requests for 65,400-character paths once pushed the log past the controller's 8 MiB
    read; 20,000 more now rotate the other log within its two files, while the run's requests,
    its 401 control among them, stay where the controller reads them."""
    client = _client(served, "a" * 32)
    assert client.request("GET", READ).status == 200
    _noise(served, 135, "/" + "p" * 65_400)
    assert client.request("GET", READ, key=b"wrong-key").status == 401
    _noise(served, 20_000, "/noise")
    other = [served.other_log, served.other_log.with_name(served.other_log.name + ".1")]
    assert other[1].exists(), "the noise should have rotated the other log"
    assert sum(path.stat().st_size for path in other) <= 2 * MAX_FILE_BYTES + 1024
    result = correlate(client.calls.as_json(), client.read_log(), "a" * 32)
    assert result.problems == [] and result.matched == 2
    assert served.log.stat().st_size < 64 * 1024


# --- 16: the command line -----------------------------------------------------------------------


def test_its_command_line_refuses_what_it_cannot_use(work_base: Path) -> None:
    files = write_files(work_base)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        cases = [
            (["--port", port], f"cannot listen on 127.0.0.1 port {port} (Address already in use)"),
            (["--host", "256.1.1.1"], "cannot listen on 256.1.1.1 port 0 ("),
            (["--port", "-1"], "argument --port: '-1' is not a port number from 0 to 65535"),
            (["--port", "http"], "argument --port: 'http' is not a port number from 0 to 65535"),
            (["--log", "/nonexistent/x"], "--log /nonexistent/x: No such file or directory"),
            (["--key-file", "/dev/zero"], "the key file /dev/zero is not a regular file"),
            (["--ready-file", "/nonexistent/r"], "--ready-file /nonexistent/r: No such file"),
        ]
        for options, message in cases:
            started = time.monotonic()
            done = subprocess.run(
                serve_command(work_base, files, *options), cwd=REPO_ROOT, capture_output=True,
                text=True, timeout=60, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert done.returncode == 2, (options, done.stderr)
            assert message in done.stderr, (options, done.stderr)
            assert "Traceback" not in done.stderr
            assert time.monotonic() - started < 30
    assert not os.path.exists("/nonexistent")
