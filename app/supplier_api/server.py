"""The supplier API's HTTPS server: the key file, the TLS context, and the accept loop that
hands each connection to a bounded pool (app/supplier_api/connection.py serves it).

Bounded under any client: a fixed pool of MAX_WORKERS threads serves connections, one each,
and a connection past them is answered 503 by a refuser of its own (at most MAX_REFUSING at
once, past that closed unanswered); each request, from its connection's accept or the end of
the previous answer to the last byte of its answer, has REQUEST_DEADLINE_SECONDS in all (the
TLS handshake, every read and every write take from it), so a client that trickles its head
holds a worker no longer than that.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import ssl
import stat
import sys
import threading
from pathlib import Path
from typing import Any, Final

from app.supplier_api.catalog import SeededCase
from app.supplier_api.connection import Connection
from app.supplier_api.deadline import REQUEST_DEADLINE_SECONDS, Deadline, send_within
from app.supplier_api.draft_store import DraftStore
from app.supplier_api.log import RequestLog
from app.supplier_api.pool import ThreadPool

# Connections served at once, one worker thread each; the bench's 50 slow clients leave room.
MAX_WORKERS: Final = 64
# Connections past MAX_WORKERS answered 503 at once; past these they are closed unanswered.
MAX_REFUSING: Final = 16
# A refusal's handshake and 503, all of it.
REFUSAL_DEADLINE_SECONDS: Final = 2.0
# Each worker's stack: the handler's frames need little, and the default 8 MiB is address space.
THREAD_STACK_BYTES: Final = 512 * 1024
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
        self._workers = ThreadPool(MAX_WORKERS, "supplier")
        self._refusers = ThreadPool(2, "refuser")
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
        deadline = Deadline(REQUEST_DEADLINE_SECONDS)
        tls_socket = self._handshake(request, deadline)
        if tls_socket is None:
            return
        try:
            Connection(tls_socket, self, deadline).serve()
        except OSError:
            pass  # the client went away or ran out of time mid-answer: its entry is logged
        finally:
            tls_socket.close()

    def _handshake(self, request: socket.socket, deadline: Deadline) -> ssl.SSLSocket | None:
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
            deadline = Deadline(REFUSAL_DEADLINE_SECONDS)
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
