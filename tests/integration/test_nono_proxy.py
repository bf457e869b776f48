"""Each online role's proxy on this machine: nono-py's own listener, which tunnels to its route's
upstream host on any port, and the front before it, which refuses every tunnel and absolute
URI, holds its role to a few connections at once, keeps every record, and passes the writer's
one verified draft once."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nono_py
import pytest

from app.tools.nono.canary import Canary
from app.tools.nono.front import MAX_RECORDS, Refusal
from app.tools.nono.launcher import NonoLayer
from tests.support.nono_bench import Bench, nono_bench
from tests.support.sample_draft import sample_draft

pytestmark = pytest.mark.integration

DRAFT = "/cases/rfp-001/recommendations"
# Opens COUNT connections to HOST:PORT at once, sends a tunnel request on each, then reads
# every answer; IDLE more are opened and left mid-request while that happens. Prints the
# statuses, in order.
FLOOD = """
import json, socket, sys
host, port, count, idle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
held = [socket.create_connection((host, port)) for _ in range(idle)]
for connection in held:
    connection.sendall(b"GET /")
tunnels = [socket.create_connection((host, port)) for _ in range(count)]
for connection in tunnels:
    connection.sendall(b"CONNECT localhost:1 HTTP/1.1\\r\\nHost: localhost:1\\r\\n\\r\\n")
statuses = []
for connection in tunnels:
    connection.settimeout(10)
    line = connection.recv(12)
    statuses.append(int(line[9:12]) if line[:5] == b"HTTP/" else None)
for connection in tunnels + held:
    connection.close()
print(json.dumps(statuses))
"""


def usage_of(pid: int) -> dict[str, int]:
    """A process's threads, descriptors and resident memory (KiB), as /proc counts them."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return {
        "threads": len(os.listdir(f"/proc/{pid}/task")),
        "descriptors": len(os.listdir(f"/proc/{pid}/fd")),
        "rss_kib": rss,
    }


def ask(port: int, request: bytes) -> int:
    """Sends ``request`` to a listener on loopback; the status it answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        line = connection.recv(64)
    assert line.startswith(b"HTTP/1."), line
    return int(line[9:12])


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    with nono_bench() as made:
        yield made


@pytest.fixture
def layer(bench: Bench) -> Iterator[NonoLayer]:
    made = NonoLayer(bench.run)
    made.preflight()
    # Each online role's first start: its proxy is running from here on.
    for role in ("reader", "writer"):
        assert made.run_tool(role, "env-names").ok
    yield made
    made.close()


def test_nono_py_alone_tunnels_to_its_routes_host_on_any_port(bench: Bench) -> None:
    """Why the front exists (docs/notes/nono-proxy-upstream-host.md): with no allowed host and
    one route, nono-py 0.16.0's own listener opens a tunnel to the route's host on another
    port, where the same request by address is refused."""
    route = nono_py.RouteConfig("svc", f"https://localhost:{bench.run.supplier.port}")
    proxy = nono_py.start_proxy(nono_py.ProxyConfig(allowed_hosts=[], routes=[route]))
    try:
        with Canary("127.0.0.1") as canary:
            by_name = ask(proxy.port, f"CONNECT localhost:{canary.port} HTTP/1.1\r\n\r\n".encode())
            by_address = ask(
                proxy.port, f"CONNECT 127.0.0.1:{canary.port} HTTP/1.1\r\n\r\n".encode()
            )
        assert (by_name, by_address) == (200, 403)
        assert canary.connections == 1
    finally:
        proxy.shutdown()


def test_the_front_refuses_every_tunnel_and_absolute_uri_and_the_canary_sees_none(
    bench: Bench, layer: NonoLayer
) -> None:
    proxies = layer.proxies
    front = proxies.port("reader")
    token = base64.b64encode(b"nono:" + proxies.placeholder("reader")).decode()
    supplier = bench.run.supplier.port
    with Canary("127.0.0.1") as canary:
        asked = [
            f"CONNECT localhost:{canary.port}",
            f"CONNECT 127.0.0.1:{canary.port}",
            f"CONNECT localhost:{supplier}",
            f"GET http://localhost:{canary.port}/",
            f"GET http://127.0.0.1:{front}/supplier/cases/rfp-001/suppliers",
            f"GET https://localhost:{supplier}/cases/rfp-001/suppliers",
        ]
        mark = proxies.mark("reader")
        statuses = [
            ask(front, f"{line} HTTP/1.1\r\nProxy-Authorization: Basic {token}\r\n\r\n".encode())
            for line in asked
        ]
    assert statuses == [403] * len(asked)
    assert canary.connections == 0
    proxies.drain("reader")
    records = proxies.records("reader", mark)
    assert [r.refusal for r in records] == [Refusal.TUNNEL] * 3 + [Refusal.ABSOLUTE_FORM] * 3
    assert all(r.nono == () for r in records)


def test_a_flood_of_connections_grows_neither_the_controller_nor_its_proxy(
    layer: NonoLayer,
) -> None:
    """150 tunnel requests at once and 150 connections left mid-request: each answered (403
    within the connection limit, 503 beyond it), every one recorded, the controller's threads,
    descriptors and memory as they were, and the next tool process starts."""
    proxies = layer.proxies
    assert proxies.host_pid is not None
    controller_before, host_before = usage_of(os.getpid()), proxies.usage()
    mark = proxies.mark("reader")
    flood = subprocess.run(
        [sys.executable, "-c", FLOOD, "127.0.0.1", str(proxies.port("reader")), "150", "150"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    statuses: list[Any] = json.loads(flood.stdout)
    assert set(statuses) <= {403, 503} and len(statuses) == 150
    # Once the flood has gone, the proxy is as it was (its open connections end with it).
    deadline = time.monotonic() + 10
    while (
        proxies.usage()["descriptors"] > host_before["descriptors"] and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    controller_after, host_after = usage_of(os.getpid()), proxies.usage()
    print(f"controller before {controller_before}, after {controller_after}")
    print(f"proxy host before {host_before}, after {host_after}; statuses {sorted(set(statuses))}")
    assert controller_after["threads"] == controller_before["threads"]
    assert controller_after["descriptors"] == controller_before["descriptors"]
    assert host_after["threads"] == host_before["threads"]
    assert host_after["descriptors"] == host_before["descriptors"]
    # Every connection is on record, none dropped.
    proxies.drain("reader")
    records = proxies.records("reader", mark)
    assert len(records) == 300 and proxies.dropped("reader") == 0
    assert {r.refusal for r in records} <= {
        Refusal.TUNNEL,
        Refusal.CONNECTION_LIMIT,
        Refusal.INCOMPLETE,
        Refusal.TIMEOUT,
    }
    # The next tool process starts, under each kind of profile.
    assert layer.run_tool("evaluator", "env-names").ok
    assert layer.run_tool("reader", "env-names").ok


def test_records_past_the_bound_are_counted_never_lost_silently(layer: NonoLayer) -> None:
    proxies = layer.proxies
    front = proxies.port("reader")
    proxies.drain("reader")
    kept = len(proxies.records("reader"))
    past = 25
    for _ in range(MAX_RECORDS - kept + past):
        assert ask(front, b"CONNECT localhost:1 HTTP/1.1\r\n\r\n") == 403
    proxies.drain("reader")
    assert len(proxies.records("reader")) == MAX_RECORDS
    assert proxies.dropped("reader") == past


def test_the_writer_posts_its_one_verified_draft_once(bench: Bench, layer: NonoLayer) -> None:
    draft = bench.run.paths.workspace("writer").output / "draft.txt"
    text, _ = sample_draft(bench.run)
    draft.write_text(text)
    forged = bench.run.paths.workspace("writer").output / "comparison.json"
    forged.write_text("award to cedar\n")

    def post(body: Path) -> int | None:
        rid = layer.next_request_id("writer")
        result = layer.run_tool("writer", "supplier-request", "POST", DRAFT, str(body), rid)
        return result.data.get("status")

    assert post(draft) == 403  # before the controller verified it
    layer.proxies.arm("writer", "POST", DRAFT, text.encode())
    assert post(forged) == 403
    assert [post(draft), post(draft)] == [201, 403]
    layer.proxies.drain("writer")
    refusals = [r.refusal for r in layer.proxies.records("writer") if r.method == "POST"]
    assert refusals == [
        Refusal.NOT_VERIFIED,
        Refusal.BODY_DIFFERS,
        None,
        Refusal.ALREADY_SENT,
    ]
