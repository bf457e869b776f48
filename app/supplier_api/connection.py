"""One client's connection: strict HTTP/1.1 framing of its requests, the key check, and one
log entry for every request that reaches it.

NOTE: framing is h11's (python-hyper's HTTP/1.1 state machine, pure Python, no I/O of its
own), not the standard library's http.server, and not parsing written here. http.server takes
the first of two Content-Length headers, leaves the body of a request it refuses in the stream
to be read as the next request, and answers what it cannot parse (a garbage request line, an
unknown method, a long URI or header) before any code of ours runs, so those requests were in
no log. h11 implements RFC 9112's grammar and framing: the request line and field syntax
(whitespace before a colon, obs-fold, bad characters refused), Content-Length as digits only,
conflicting lengths refused, chunked coding, HTTP/1.0's and Connection: close's end of the
connection, and no next request before this one's body is through. The server owns the socket
loop around it, so each request, parsed or refused, is logged exactly once. What RFC 9112
leaves to the server, it decides here, stricter than h11: two Content-Length headers even when
equal, or one beside Transfer-Encoding, are refused (400) and the connection closed; the
request line, the header count and the head's size are bounded; only HTTP/1.0 and 1.1 are
spoken.
"""

from __future__ import annotations

import hmac
import json
import ssl
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import h11

from app.supplier_api.deadline import REQUEST_DEADLINE_SECONDS, Deadline, send_within
from app.supplier_api.log import Logged, RequestLog
from app.supplier_api.operations import Backing, operate, phrase

MAX_BODY_BYTES: Final = 64 * 1024
# A body over the limit but at most this large is read and dropped before the 413 goes out.
MAX_DRAINED_BYTES: Final = 1024 * 1024
# The head (request line and fields) and the request target, and how many fields it may have.
MAX_HEAD_BYTES: Final = 16 * 1024
MAX_TARGET_BYTES: Final = 4 * 1024
MAX_HEADERS: Final = 64
RECEIVE_BYTES: Final = 64 * 1024
REQUEST_ID_HEADER: Final = "X-Analyst-Request-ID"
KEY_HEADER: Final = "X-Api-Key"
# The methods it implements; any other is 501, and logged like the rest.
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Served(Backing, Protocol):
    """What a connection needs of its server: the key, the log, and its one warning that the
    log cannot be written."""

    @property
    def key(self) -> bytes: ...

    @property
    def log(self) -> RequestLog: ...

    def log_failed(self, error: OSError) -> None: ...


@dataclass(frozen=True)
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[bytes, bytes]]

    def header(self, name: str) -> list[str]:
        lowered = name.lower().encode("ascii")
        return [value.decode("latin-1") for key, value in self.headers if key == lowered]

    @property
    def path(self) -> str:
        return urlsplit(self.target).path if self.target.startswith("/") else self.target


class _Refused(Exception):
    """The request cannot be served as framed: answered with ``status``, then the connection
    closes (what follows on it could be the refused request's own body)."""

    def __init__(self, status: int, request: _Request | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.request = request


class _Closed(Exception):
    """The client closed or stalled before a request was complete."""


class Connection:
    """One client's connection: its requests in turn, each in a fresh h11 cycle fed with what
    the last one left (a pipelined request is read only once the one before it is through)."""

    def __init__(self, sock: ssl.SSLSocket, server: Served, deadline: Deadline) -> None:
        self.sock = sock
        self.server = server
        self.deadline = deadline

    def serve(self) -> None:
        pending = b""
        while True:
            leftover = self._exchange(pending)
            if leftover is None:
                return
            pending = leftover
            self.deadline = Deadline(REQUEST_DEADLINE_SECONDS)

    def _receive(self) -> bytes:
        try:
            self.deadline.arm(self.sock)
            return self.sock.recv(RECEIVE_BYTES)
        except (TimeoutError, OSError):
            return b""

    def _exchange(self, pending: bytes) -> bytes | None:
        """One request and its answer; what the connection holds after it, or None to close."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        received = bytearray(pending)
        if pending:  # NOTE: h11 reads empty data as the peer's end of the connection
            conn.receive_data(pending)
        request = None
        try:
            request = self._head(conn, received)
            if request is None:
                return None
            body = self._body(conn, request)
        except _Refused as refused:
            if refused.request is None and not received.strip():
                return None  # blank lines between requests, then nothing: no request came
            request = refused.request or _raw_request(received)
            self._answer(conn, request, refused.status, {"error": phrase(refused.status)}, False)
            return None
        except _Closed:
            if received.strip():
                # Part of a request reached the server: it is logged, though nobody hears back.
                logged = request or _raw_request(received)
                self._log(logged, HTTPStatus.BAD_REQUEST, authenticated=False)
            return None
        authenticated = self._key_ok(request)
        status, payload = self._handle(request, body, authenticated)
        close = conn.their_state is not h11.DONE
        self._answer(
            conn, request, status, payload, authenticated, close=close, body_bytes=len(body)
        )
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            return bytes(conn.trailing_data[0])
        return None

    def _next(self, conn: h11.Connection, received: bytearray | None = None) -> Any:
        """h11's next event, receiving as it needs; a refusal when the framing is bad."""
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as error:
                raise _Refused(_refusal_status(error, received)) from None
            if event is not h11.NEED_DATA:
                return event
            data = self._receive()
            if not data:
                raise _Closed
            if received is not None:
                received += data
            conn.receive_data(data)

    def _head(self, conn: h11.Connection, received: bytearray) -> _Request | None:
        event = self._next(conn, received)
        if isinstance(event, h11.ConnectionClosed):
            if received.strip():
                raise _Closed
            return None
        assert isinstance(event, h11.Request)
        head = bytes(received[: len(received) - len(conn.trailing_data[0])])
        request = _Request(
            event.method.decode("latin-1"),
            event.target.decode("latin-1"),
            f"HTTP/{event.http_version.decode('latin-1')}",
            list(event.headers),
        )
        if event.http_version not in (b"1.0", b"1.1"):
            raise _Refused(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, request)
        if len(event.target) > MAX_TARGET_BYTES:
            raise _Refused(HTTPStatus.REQUEST_URI_TOO_LONG, request)
        names = [line.split(b":", 1)[0].strip().lower() for line in head.splitlines()[1:]]
        names = [name for name in names if name]
        if len(names) > MAX_HEADERS:
            raise _Refused(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, request)
        lengths = names.count(b"content-length")
        if lengths > 1 or (lengths and b"transfer-encoding" in names):
            raise _Refused(HTTPStatus.BAD_REQUEST, request)
        if request.method not in METHODS:
            raise _Refused(HTTPStatus.NOT_IMPLEMENTED, request)
        return request

    def _body(self, conn: h11.Connection, request: _Request) -> bytes:
        """The body, whole: one Content-Length or chunked, at most MAX_BODY_BYTES; a larger
        one is read and dropped up to MAX_DRAINED_BYTES (a client that sends its whole body
        before it reads must see the 413), and beyond that refused unread."""
        declared = request.header("Content-Length")
        if declared and int(declared[0]) > MAX_DRAINED_BYTES:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, request)
        if conn.they_are_waiting_for_100_continue:
            continuing = conn.send(h11.InformationalResponse(status_code=100, headers=[]))
            send_within(self.sock, continuing or b"", self.deadline)
        chunks, size = [], 0
        while True:
            event = self._next(conn)
            if isinstance(event, h11.EndOfMessage):
                break
            if isinstance(event, h11.ConnectionClosed):
                raise _Closed
            assert isinstance(event, h11.Data)
            size += len(event.data)
            if size > MAX_DRAINED_BYTES:
                raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, request)
            if size <= MAX_BODY_BYTES:
                chunks.append(bytes(event.data))
        if size > MAX_BODY_BYTES:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, request)
        return b"".join(chunks)

    def _key_ok(self, request: _Request) -> bool:
        offered = request.header(KEY_HEADER)
        if len(offered) != 1:
            return False
        return hmac.compare_digest(offered[0].encode("latin-1"), self.server.key)

    def _handle(
        self, request: _Request, body: bytes, authenticated: bool
    ) -> tuple[int, dict[str, Any]]:
        if not authenticated:
            return HTTPStatus.UNAUTHORIZED, {"error": f"missing or invalid {KEY_HEADER}"}
        content_type = (request.header("Content-Type") or ["text/plain"])[0]
        return operate(self.server, request.method, request.path, content_type, body)

    def _log(
        self, request: _Request, status: int, *, authenticated: bool, body_bytes: int = 0
    ) -> bool:
        """Logs the request and the body it carried; False when the log could not be written
        (nothing of the entry is left in it)."""
        ids = request.header(REQUEST_ID_HEADER)
        try:
            self._append(request, status, authenticated, ids[0] if ids else None, body_bytes)
        except OSError as error:
            self.server.log_failed(error)
            return False
        return True

    def _append(
        self,
        request: _Request,
        status: int,
        authenticated: bool,
        request_id: str | None,
        body_bytes: int,
    ) -> None:
        self.server.log.append(
            Logged(
                request.method,
                request.path,
                request.version,
                int(status),
                request_id,
                authenticated,
                body_bytes,
            )
        )

    def _answer(
        self,
        conn: h11.Connection,
        request: _Request,
        status: int,
        payload: dict[str, Any],
        authenticated: bool,
        *,
        close: bool = True,
        body_bytes: int = 0,
    ) -> None:
        """Logs the request with its status and the body it carried, then sends the answer
        (when the connection can still carry one). A request the log cannot take is answered
        500, never as if served, and the 500 is logged if the log takes that; the connection
        then closes."""
        if not self._log(request, status, authenticated=authenticated, body_bytes=body_bytes):
            status, payload, close = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "log failed"}, True
            self._log(request, status, authenticated=authenticated, body_bytes=body_bytes)
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(data))),
            ("Server", "synthetic-supplier-api"),
        ]
        if close:
            headers.append(("Connection", "close"))
        try:
            reply = h11.Response(
                status_code=int(status), headers=headers, reason=HTTPStatus(status).phrase
            )
            out = conn.send(reply) or b""
            if request.method != "HEAD":
                out += conn.send(h11.Data(data=data)) or b""
            out += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            return
        send_within(self.sock, out, self.deadline)


def _refusal_status(error: h11.RemoteProtocolError, received: bytearray | None) -> int:
    """h11's own status for what it refused; a head too long is 414 when the request line
    alone is past its bound."""
    status = int(error.error_status_hint)
    too_large = status == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
    if too_large and received is not None and b"\n" not in received[:MAX_TARGET_BYTES]:
        return HTTPStatus.REQUEST_URI_TOO_LONG
    return status


def _raw_request(received: bytearray) -> _Request:
    """What a request h11 could not parse said, from its first line: the method, the target and
    the version as they came (capped when logged), and no fields."""
    first = bytes(received[:MAX_HEAD_BYTES]).split(b"\n", 1)[0].rstrip(b"\r")
    parts = first.decode("latin-1").split(" ")
    method = parts[0] if parts else ""
    target = parts[1] if len(parts) > 1 else ""
    version = parts[2] if len(parts) > 2 else ""
    return _Request(method, target, version, [])
