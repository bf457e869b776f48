"""The controller's supplier client against a hostile TLS server: what it refuses to use."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.controller import supplier_client
from app.controller.services.pki import generate_run_pki
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog, SupplierConnectionError, SupplierReplyError
from app.core.endpoints import SupplierEndpoint

pytestmark = pytest.mark.integration

SUPPLIERS = ["cedar", "harbor", "northstar"]
TRICKLE = b"<trickle>"


class Hostile(BaseHTTPRequestHandler):
    """Answers every GET with whatever the test put in ``server.reply``."""

    server: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers))
        body, declared = self.server.reply
        if body == TRICKLE:
            self._trickle()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(declared if declared is not None else len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        # The client may hang up once it has seen enough: that is the point of the test.
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _trickle(self) -> None:
        """A status line, then a header line every half second, for longer than any deadline."""
        with contextlib.suppress(OSError):
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for n in range(60):
                self.wfile.write(f"X-Trickle-{n}: 1\r\n".encode())
                self.wfile.flush()
                time.sleep(0.5)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, SupplierEndpoint]]:
    folder = tmp_path_factory.mktemp("pki")
    pki = generate_run_pki()
    for name, data in (
        ("ca.crt", pki.ca_cert_pem),
        ("s.crt", pki.server_cert_pem),
        ("s.key", pki.server_key_pem),
        ("key", b"real-key"),
    ):
        (folder / name).write_bytes(data)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "s.crt", folder / "s.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    endpoint = SupplierEndpoint(
        url=f"https://localhost:{port}",
        alias_url=f"https://supplier-api-alias.localhost:{port}",
        address="127.0.0.1",
        port=port,
        ca_file=folder / "ca.crt",
        key_file=folder / "key",
    )
    yield server, endpoint
    server.shutdown()
    server.server_close()


def serve(
    server: Any, payload: Any = None, *, body: bytes | None = None, declared: int | None = None
) -> None:
    server.reply = (json.dumps(payload).encode() if body is None else body, declared)


@pytest.fixture
def client(hostile: tuple[Any, SupplierEndpoint]) -> SupplierClient:
    return SupplierClient(hostile[1], b"real-key", CallLog(), "run42")


def availability(**values: Any) -> dict[str, Any]:
    return {"case_id": "rfp-001", "availability": values}


def test_extra_keys_are_dropped(
    hostile: tuple[Any, SupplierEndpoint], client: SupplierClient
) -> None:
    serve(hostile[0], availability(cedar=True, harbor=False, northstar=True, **{"evil": True}))
    result = client.availability("rfp-001", SUPPLIERS)
    assert result == {"cedar": True, "harbor": False, "northstar": True}
    assert list(result) == SUPPLIERS


@pytest.mark.parametrize(
    "payload",
    [
        availability(cedar="true", harbor=True, northstar=True),
        availability(cedar=1, harbor=True, northstar=True),
        availability(harbor=True, northstar=True),
        {"case_id": "rfp-001", "availability": ["cedar"]},
        ["not", "an", "object"],
    ],
    ids=["string-true", "integer", "missing-id", "list", "not-object"],
)
def test_anything_but_one_bool_per_id_is_refused(
    hostile: tuple[Any, SupplierEndpoint], client: SupplierClient, payload: Any
) -> None:
    serve(hostile[0], payload)
    with pytest.raises(SupplierReplyError):
        client.availability("rfp-001", SUPPLIERS)


def test_huge_reply_is_refused(
    hostile: tuple[Any, SupplierEndpoint], client: SupplierClient
) -> None:
    # Declared up front: refused from the header alone.
    serve(hostile[0], body=b"{" + b" " * 10, declared=50 * 1024 * 1024)
    with pytest.raises(SupplierReplyError, match="declares"):
        client.availability("rfp-001", SUPPLIERS)
    # Understated length is bounded by the read itself: at most cap + 1 bytes are read.
    serve(hostile[0], body=b" " * (200 * 1024))
    with pytest.raises(SupplierReplyError, match="cap"):
        client.availability("rfp-001", SUPPLIERS)


def test_non_json_is_refused(hostile: tuple[Any, SupplierEndpoint], client: SupplierClient) -> None:
    serve(hostile[0], body=b"<html>")
    with pytest.raises(SupplierReplyError, match="not JSON"):
        client.availability("rfp-001", SUPPLIERS)


def test_request_ids_headers_and_record(
    hostile: tuple[Any, SupplierEndpoint], client: SupplierClient
) -> None:
    server = hostile[0]
    serve(server, availability(cedar=True, harbor=True, northstar=True))
    server.seen.clear()
    first = client.request("GET", "/cases/rfp-001/suppliers")
    second = client.request("GET", "/cases/rfp-001/suppliers", url=client.endpoint.alias_url)
    assert (first.request_id, second.request_id) == ("run42-c1", "run42-c2")
    assert server.seen[0]["X-Api-Key"] == "real-key"
    assert server.seen[0]["X-Analyst-Request-ID"] == "run42-c1"
    records = client.calls.as_json()
    assert [r["host"] for r in records] == ["localhost", "supplier-api-alias.localhost"]
    assert all(r["by"] == "controller" and r["reaches_upstream"] for r in records)
    assert "real-key" not in json.dumps(records) and "real-key" not in repr(client)


def test_unreachable_server_is_recorded_as_not_reaching(tmp_path: Path) -> None:
    pki = generate_run_pki()
    (tmp_path / "ca.crt").write_bytes(pki.ca_cert_pem)
    # Port 1 on loopback: nothing listens there.
    endpoint = SupplierEndpoint(
        "https://localhost:1",
        "https://localhost:1",
        "127.0.0.1",
        1,
        tmp_path / "ca.crt",
        tmp_path / "key",
    )
    client = SupplierClient(endpoint, b"k", CallLog(), "run7")
    with pytest.raises(SupplierConnectionError, match="cannot connect"):
        client.request("GET", "/cases/rfp-001/suppliers")
    assert client.calls.records[0].reaches_upstream is False
    assert client.calls.records[0].status is None
    # A control that cannot connect stops the run naming the service; it is never a FAIL.
    with pytest.raises(SupplierConnectionError, match="it refused the connection"):
        client.tcp_reachable()


def test_a_reply_trickled_a_line_at_a_time_is_cut_at_the_requests_deadline(
    hostile: tuple[Any, SupplierEndpoint], client: SupplierClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read gets its bytes well within the per-read timeout; the whole request still ends
    at its deadline, naming the supplier API."""
    monkeypatch.setattr(supplier_client, "REQUEST_DEADLINE_SECONDS", 2.0)
    serve(hostile[0], body=TRICKLE)
    started = time.monotonic()
    with pytest.raises(SupplierConnectionError) as stopped:
        client.request("GET", "/cases/rfp-001/suppliers")
    took = time.monotonic() - started
    assert 1.9 < took < 4.0, took
    assert str(stopped.value).endswith("the supplier API did not answer within 2s: it is stalled")
