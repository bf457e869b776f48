"""The HTTPS server: strict HTTP/1.1 framing, the key check, the five operations, and one log
entry for every request that reaches it.

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

Bounded under any client: a fixed pool of MAX_WORKERS threads serves connections, one each,
and a connection past them is answered 503 by a refuser of its own (at most MAX_REFUSING at
once, past that closed unanswered); each request, from its connection's accept or the end of
the previous answer to the last byte of its answer, has REQUEST_DEADLINE_SECONDS in all (the
TLS handshake, every read and every write take from it), so a client that trickles its head
holds a worker no longer than that.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import queue
import secrets
import socket
import socketserver
import ssl
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import h11

from app.supplier_api.catalog import SeededCase
from app.supplier_api.drafts import DraftStore
from app.supplier_api.log import Logged, RequestLog
from app.supplier_api.routes import match

MAX_BODY_BYTES: Final = 64 * 1024
# A body over the limit but at most this large is read and dropped before the 413 goes out.
MAX_DRAINED_BYTES: Final = 1024 * 1024
# The head (request line and fields) and the request target, and how many fields it may have.
MAX_HEAD_BYTES: Final = 16 * 1024
MAX_TARGET_BYTES: Final = 4 * 1024
MAX_HEADERS: Final = 64
# A whole request (handshake, head, body and answer) ends within this, however its client
# trickles; a keep-alive connection's wait for its next request counts toward that request.
REQUEST_DEADLINE_SECONDS: Final = 10.0
# Connections served at once, one worker thread each; the bench's 50 slow clients leave room.
MAX_WORKERS: Final = 64
# Connections past MAX_WORKERS answered 503 at once; past these they are closed unanswered.
MAX_REFUSING: Final = 16
# A refusal's handshake and 503, all of it.
REFUSAL_DEADLINE_SECONDS: Final = 2.0
# Each worker's stack: the handler's frames need little, and the default 8 MiB is address space.
THREAD_STACK_BYTES: Final = 512 * 1024
SEND_SLICE_BYTES: Final = 64 * 1024
RECEIVE_BYTES: Final = 64 * 1024
REQUEST_ID_HEADER: Final = "X-Analyst-Request-ID"
KEY_HEADER: Final = "X-Api-Key"
# The methods it implements; any other is 501, and logged like the rest.
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
MAX_KEY_BYTES: Final = 4096


def read_key_file(path: Path) -> bytes:
    """The key's bytes without a trailing newline, which Secret files and editors often add:
    a regular file (links followed) of at most MAX_KEY_BYTES; /dev/zero or a FIFO is refused
    before a byte is read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"the key file {path} is not a regular file")
        data = os.read(fd, MAX_KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_BYTES:
        raise ValueError(f"the key file {path} is over {MAX_KEY_BYTES} bytes")
    key = data.strip()
    if not key:
        raise ValueError(f"the key file {path} is empty; write the supplier API key into it")
    return key


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    return context


class _Deadline:
    """The time a request has left; every socket operation is given only that."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def arm(self, sock: socket.socket) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline has passed")
        sock.settimeout(left)


def send_within(sock: socket.socket, data: bytes, deadline: _Deadline) -> None:
    """sendall in slices, each given what is left of the deadline (SSLSocket.sendall would
    give every one of its sends the whole timeout again)."""
    view = memoryview(data)
    while view:
        deadline.arm(sock)
        sent = sock.send(view[:SEND_SLICE_BYTES])
        view = view[sent:]


class _Pool:
    """At most ``size`` daemon threads, started as work needs them and kept: daemons, so that a
    stop (SIGTERM) never waits on a client, whose request has its own deadline anyway."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            grow = self._idle == 0 and self._started < self.size
            if grow:
                self._started += 1
            else:
                self._idle -= 1
        self._jobs.put(job)
        if grow:
            threading.Thread(target=self._work, name=self.name, daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job()
            with self._lock:
                self._idle += 1

    def stop(self) -> None:
        with self._lock:
            started, self._started = self._started, self.size  # nothing starts after this
        for _ in range(started):
            self._jobs.put(None)


class SupplierServer(socketserver.TCPServer):
    """Accepts plain TCP in one thread and hands each connection to a bounded pool, which does
    the TLS handshake: wrapping the listening socket instead would run each handshake in the
    accept loop, where one client that never finishes its handshake would stall every other.
    """

    allow_reuse_address = True
    # The listen backlog: a burst of connections waits there for the accept loop, which takes
    # each at once (to a worker, a refuser, or closed), rather than having its SYN dropped.
    request_queue_size = 256

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
        self._free = threading.BoundedSemaphore(MAX_WORKERS)
        self._refusing = threading.BoundedSemaphore(MAX_REFUSING)
        threading.stack_size(THREAD_STACK_BYTES)
        self._workers = _Pool(MAX_WORKERS, "supplier")
        self._refusers = _Pool(2, "refuser")
        self._log_failed = False
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, socketserver.BaseRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if self._free.acquire(blocking=False):
            self._workers.submit(lambda: self._serve(request, self._free))
        elif self._refusing.acquire(blocking=False):
            self._refusers.submit(lambda: self._refuse(request))
        else:
            request.close()  # a flood past both bounds: the kernel's backlog is the client's

    def _serve(self, request: socket.socket, slot: threading.BoundedSemaphore) -> None:
        try:
            self.finish_request(request, None)
        except BaseException:  # nothing of a client's may end a worker loudly
            request.close()
        finally:
            slot.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        deadline = _Deadline(REQUEST_DEADLINE_SECONDS)
        tls_socket = self._handshake(request, deadline)
        if tls_socket is None:
            return
        try:
            _Connection(tls_socket, self, deadline).serve()
        except OSError:
            pass  # the client went away or ran out of time mid-answer: its entry is logged
        finally:
            tls_socket.close()

    def _handshake(self, request: socket.socket, deadline: _Deadline) -> ssl.SSLSocket | None:
        # Headers and body go out as separate writes; without this, Nagle holds the body back
        # until the client's delayed ACK, ~40 ms per request.
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            deadline.arm(request)
            tls_socket = self.tls.wrap_socket(
                request, server_side=True, do_handshake_on_connect=False
            )
            deadline.arm(tls_socket)
            tls_socket.do_handshake()  # one call: CPython gives its retries one deadline
        except (ssl.SSLError, OSError):
            # A failed handshake is not a request: nothing was asked, so nothing is logged.
            request.close()
            return None
        return tls_socket

    def _refuse(self, request: socket.socket) -> None:
        """A connection past the pool: 503 and closed, its request unread and not logged
        (nothing of it is served)."""
        try:
            deadline = _Deadline(REFUSAL_DEADLINE_SECONDS)
            tls_socket = self._handshake(request, deadline)
            if tls_socket is None:
                return
            with tls_socket:
                body = b'{"error":"service unavailable"}'
                head = (
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nRetry-After: 1\r\n"
                    "Server: synthetic-supplier-api\r\nConnection: close\r\n\r\n"
                )
                send_within(tls_socket, head.encode("ascii") + body, deadline)
        except OSError:
            request.close()
        finally:
            self._refusing.release()

    def log_failed(self, error: OSError) -> None:
        """Says once on stderr that the request log cannot be written (its requests are being
        answered 500)."""
        if not self._log_failed:
            self._log_failed = True
            with contextlib.suppress(OSError, ValueError):
                print(
                    f"supplier API: the request log cannot be written "
                    f"({error.strerror or error}); requests are answered 500 until it can",
                    file=sys.stderr,
                    flush=True,
                )

    def server_close(self) -> None:
        super().server_close()
        self._workers.stop()
        self._refusers.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback that may quote request data; a broken client
        # connection is not the server's error to report.
        return


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


class _Connection:
    """One client's connection: its requests in turn, each in a fresh h11 cycle fed with what
    the last one left (a pipelined request is read only once the one before it is through)."""

    def __init__(self, sock: ssl.SSLSocket, server: SupplierServer, deadline: _Deadline) -> None:
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
            self.deadline = _Deadline(REQUEST_DEADLINE_SECONDS)

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
            self._answer(conn, request, refused.status, {"error": _phrase(refused.status)}, False)
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
        found = match(request.method, request.path)
        if found.operation is None:
            return found.status, {"error": _phrase(found.status)}
        operations: dict[str, Callable[[_Request, str, bytes], tuple[int, dict[str, Any]]]] = {
            "availability": self._op_availability,
            "submit_draft": self._op_submit_draft,
            "update_supplier": self._op_update_supplier,
            "purchase_order": self._op_purchase_order,
            "read_log": self._op_read_log,
        }
        return operations[found.operation](request, found.argument or "", body)

    def _case(self, case_id: str) -> SeededCase | None:
        return self.server.catalog.get(case_id)

    def _op_availability(
        self, _request: _Request, case_id: str, _body: bytes
    ) -> tuple[int, dict[str, Any]]:
        case = self._case(case_id)
        if case is None:
            return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
        return HTTPStatus.OK, {"case_id": case.case_id, "availability": dict(case.availability)}

    def _op_submit_draft(
        self, request: _Request, case_id: str, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        if self._case(case_id) is None:
            return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
        if not body:
            return HTTPStatus.BAD_REQUEST, {"error": "the draft is empty"}
        content_type = (request.header("Content-Type") or ["text/plain"])[0]
        if content_type.startswith("application/json"):
            try:
                json.loads(body)
            except (ValueError, RecursionError):  # nested too deep to parse is not valid either
                return HTTPStatus.BAD_REQUEST, {"error": "the draft is not valid JSON"}
        draft = self.server.drafts.add(case_id, content_type, body)
        return HTTPStatus.CREATED, {"recommendation_id": draft.recommendation_id}

    def _op_update_supplier(
        self, _request: _Request, supplier_id: str, _body: bytes
    ) -> tuple[int, dict[str, Any]]:
        # Synthetic: accepted and applied to nothing. It exists so a refusal elsewhere is
        # shown to be the caller's boundary and not this server's.
        return HTTPStatus.OK, {"supplier_id": supplier_id, "updated": True}

    def _op_purchase_order(
        self, _request: _Request, _arg: str, _body: bytes
    ) -> tuple[int, dict[str, Any]]:
        return HTTPStatus.CREATED, {"purchase_order_id": f"po-{secrets.token_hex(8)}"}

    def _op_read_log(
        self, _request: _Request, _arg: str, _body: bytes
    ) -> tuple[int, dict[str, Any]]:
        return HTTPStatus.OK, {"entries": self.server.log.entries()}

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


def _phrase(status: int) -> str:
    return HTTPStatus(status).phrase.lower()


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
    return SupplierServer((host, port), tls=tls, key=key, catalog=catalog, log=log)
