"""The HTTPS server: key check, the five operations, and one log line per request."""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import ssl
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.supplier_api.catalog import SeededCase
from app.supplier_api.drafts import DraftStore
from app.supplier_api.log import RequestLog
from app.supplier_api.routes import match

MAX_BODY_BYTES = 64 * 1024
# A body over the limit but at most this large is read and dropped before the 413 goes out.
MAX_DRAINED_BYTES = 1024 * 1024
# A client that stalls mid-handshake or mid-request holds one thread for at most this long.
SOCKET_TIMEOUT_SECONDS = 10
REQUEST_ID_HEADER = "X-Analyst-Request-ID"
KEY_HEADER = "X-Api-Key"


def read_key_file(path: Path) -> bytes:
    """The key's bytes without a trailing newline, which Secret files and editors often add."""
    key = path.read_bytes().strip()
    if not key:
        raise ValueError(f"the key file {path} is empty; write the supplier API key into it")
    return key


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    return context


class SupplierServer(ThreadingHTTPServer):
    """Accepts plain TCP and does the TLS handshake in the request's own thread.

    Wrapping the listening socket instead would run each handshake in the accept loop, where
    one client that never finishes its handshake would stall every other client.
    """

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        tls: ssl.SSLContext,
        key: bytes,
        catalog: dict[str, SeededCase],
        log: RequestLog,
    ) -> None:
        self.tls = tls
        self.key = key
        self.catalog = catalog
        self.log = log
        self.drafts = DraftStore()
        super().__init__(address, SupplierHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(SOCKET_TIMEOUT_SECONDS)
        # Headers and body go out as separate writes; without this, Nagle holds the body back
        # until the client's delayed ACK, ~40 ms per request.
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            tls_socket = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            # A failed handshake is not a request: nothing was asked, so nothing is logged.
            request.close()
            return
        try:
            SupplierHandler(tls_socket, client_address, self)
        finally:
            tls_socket.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback that may quote request data; a broken client
        # connection is not the server's error to report.
        return


class SupplierHandler(BaseHTTPRequestHandler):
    server: SupplierServer
    protocol_version = "HTTP/1.1"
    server_version = "synthetic-supplier-api"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        # The request log is the one record; the default stderr line would be a second one.
        return

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # HEAD and OPTIONS are answered (405/404) and logged like any other request, so no probe
    # of the server escapes its log.
    def do_HEAD(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        self._dispatch()

    def _key_ok(self) -> bool:
        offered = self.headers.get(KEY_HEADER)
        if offered is None:
            return False
        try:
            offered_bytes = offered.encode("latin-1")
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(offered_bytes, self.server.key)

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        request_id = self.headers.get(REQUEST_ID_HEADER)
        status, payload = self._handle(path)
        if not (path == "/_log" and status == HTTPStatus.OK):
            # The controller's read of the log is an admin read, not traffic to correlate.
            self.server.log.append(self.command, path, status, request_id)
        self._reply(status, payload)

    def _handle(self, path: str) -> tuple[int, dict[str, Any]]:
        if not self._key_ok():
            return HTTPStatus.UNAUTHORIZED, {"error": f"missing or invalid {KEY_HEADER}"}
        body = self._read_body()
        if body is None:
            return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {
                "error": f"request body over {MAX_BODY_BYTES} bytes or not length-delimited"
            }
        found = match(self.command, path)
        if found.operation is None:
            return found.status, {"error": HTTPStatus(found.status).phrase.lower()}
        operations: dict[str, Callable[[str, bytes], tuple[int, dict[str, Any]]]] = {
            "availability": self._op_availability,
            "submit_draft": self._op_submit_draft,
            "update_supplier": self._op_update_supplier,
            "purchase_order": self._op_purchase_order,
            "read_log": self._op_read_log,
        }
        return operations[found.operation](found.argument or "", body)

    def _read_body(self) -> bytes | None:
        """The body, or None when it is too large or chunked (never read into memory)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            return None
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            # The unread body would be parsed as the next request: end the connection instead.
            self.close_connection = True
            if 0 < length <= MAX_DRAINED_BYTES:
                # A client that sends its whole body before it reads (http.client, urllib) must
                # see the 413, not a connection closed under its feet: read the rest and drop
                # it, a bounded amount at a time, within the socket's timeout.
                self._discard(length)
            return None
        return self.rfile.read(length) if length else b""

    def _discard(self, length: int) -> None:
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 64 * 1024))
            if not chunk:
                return
            remaining -= len(chunk)

    def _case(self, case_id: str) -> SeededCase | None:
        return self.server.catalog.get(case_id)

    def _op_availability(self, case_id: str, _body: bytes) -> tuple[int, dict[str, Any]]:
        case = self._case(case_id)
        if case is None:
            return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
        return HTTPStatus.OK, {"case_id": case.case_id, "availability": dict(case.availability)}

    def _op_submit_draft(self, case_id: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if self._case(case_id) is None:
            return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
        if not body:
            return HTTPStatus.BAD_REQUEST, {"error": "the draft is empty"}
        content_type = self.headers.get("Content-Type", "text/plain")
        if content_type.startswith("application/json"):
            try:
                json.loads(body)
            except (ValueError, RecursionError):  # nested too deep to parse is not valid either
                return HTTPStatus.BAD_REQUEST, {"error": "the draft is not valid JSON"}
        draft = self.server.drafts.add(case_id, content_type, body)
        return HTTPStatus.CREATED, {"recommendation_id": draft.recommendation_id}

    def _op_update_supplier(self, supplier_id: str, _body: bytes) -> tuple[int, dict[str, Any]]:
        # Synthetic: accepted and applied to nothing. It exists so a refusal elsewhere is
        # shown to be the caller's boundary and not this server's.
        return HTTPStatus.OK, {"supplier_id": supplier_id, "updated": True}

    def _op_purchase_order(self, _arg: str, _body: bytes) -> tuple[int, dict[str, Any]]:
        return HTTPStatus.CREATED, {"purchase_order_id": f"po-{secrets.token_hex(8)}"}

    def _op_read_log(self, _arg: str, _body: bytes) -> tuple[int, dict[str, Any]]:
        return HTTPStatus.OK, {"entries": self.server.log.entries()}

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def bind(
    host: str,
    port: int,
    *,
    tls: ssl.SSLContext,
    key: bytes,
    catalog: dict[str, SeededCase],
    log: RequestLog,
) -> SupplierServer:
    """A bound, listening server; ``server_address[1]`` is the real port when ``port`` is 0."""
    if ":" in host:
        SupplierServer.address_family = socket.AF_INET6
    return SupplierServer((host, port), tls=tls, key=key, catalog=catalog, log=log)
