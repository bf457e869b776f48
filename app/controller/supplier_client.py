"""The controller's HTTPS client for the supplier API, and the record of every supplier call.

It trusts only the run's CA (never the system store, never an environment proxy), sends the
key in one header and never records it, and gives each request an id the supplier API logs,
so the run's record can be checked against the server's own log.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from app.core.calls import (
    CallLog,
    CallRecord,
    SupplierConnectionError,
    SupplierReply,
    SupplierReplyError,
)
from app.core.endpoints import SupplierEndpoint

KEY_HEADER = "X-Api-Key"
REQUEST_ID_HEADER = "X-Analyst-Request-ID"
MAX_REPLY_BYTES = 64 * 1024
# The supplier's log grows with every run a long-lived server has seen; it is still bounded.
MAX_LOG_BYTES = 8 * 1024 * 1024
# Each socket operation (connect, the TLS handshake, each read and write) has this long, and
# the whole request, from connect to the reply's last byte, REQUEST_DEADLINE_SECONDS: a stalled
# or trickling supplier API stops the run then. The slowest request measured is GET /_log, a few
# ms; a read under 50 slow clients is 16 ms at p99 (docs/performance.md): 10 s is far beyond
# anything but a server that is not answering.
TIMEOUT_SECONDS = 10.0
REQUEST_DEADLINE_SECONDS = 10.0
SUPPLIER = "the supplier API"
LOOPBACK = "127.0.0.1"


def resolve(host: str) -> str:
    """Names under .localhost are loopback (RFC 6761), resolved here as curl does; others by DNS."""
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith(".localhost"):
        return LOOPBACK
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return str(infos[0][4][0])


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to an address resolved by ``resolve`` and verifies the certificate for the name."""

    def __init__(self, host: str, port: int, *, context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=TIMEOUT_SECONDS, context=context)
        self._tls = context
        self._raw: socket.socket | None = None
        self._lock = threading.Lock()
        self.expired = False

    def expire(self) -> None:
        """The request's deadline: whatever it waits on (the handshake, a read, a write) ends
        now, with an error."""
        with self._lock:
            self.expired = True
            if self._raw is not None:
                with contextlib.suppress(OSError):
                    self._raw.shutdown(socket.SHUT_RDWR)

    def release(self) -> None:
        """Closes the deadline's descriptor, once the request is over (close() comes earlier:
        http.client calls it when a reply ends the connection, before its body is read)."""
        with self._lock:
            if self._raw is not None:
                self._raw.close()
                self._raw = None

    def connect(self) -> None:
        raw = socket.create_connection((resolve(self.host), self.port), self.timeout)
        with self._lock:
            # A second descriptor of the same socket: wrapping it in TLS detaches ``raw``,
            # and a shutdown through this one still ends whatever the TLS socket waits on.
            self._raw = raw.dup()
            if self.expired:
                self._raw.shutdown(socket.SHUT_RDWR)
        # The request is written just after the handshake's last message. With Nagle's
        # algorithm on, it would wait for the server's delayed ACK of that message: 40 ms,
        # whenever the server has not yet answered it (measured here: 0, 40 or 80 ms over three
        # requests with a body, run to run).
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise


def _unanswered(connection: _PinnedHTTPSConnection, what: str, error: Exception) -> str:
    """Why a request got no answer, naming the supplier API and whether it is stalled or gone."""
    if connection.expired or isinstance(error, TimeoutError):
        limit = REQUEST_DEADLINE_SECONDS if connection.expired else TIMEOUT_SECONDS
        return f"{what}: {SUPPLIER} did not answer within {limit:.0f}s: it is stalled"
    if isinstance(error, ConnectionRefusedError):
        return f"{what}: {SUPPLIER} refused the connection: it is not running"
    return f"{what}: {SUPPLIER}: {error}"


def _read_capped(response: http.client.HTTPResponse, limit: int, what: str) -> bytes:
    """The body, refusing one over ``limit`` bytes without reading more than ``limit + 1``."""
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise SupplierReplyError(f"{what}: reply declares {declared} bytes, over the {limit} cap")
    body = response.read(limit + 1)
    if len(body) > limit:
        raise SupplierReplyError(f"{what}: reply is over the {limit}-byte cap")
    return body


def _exchange(
    connection: http.client.HTTPSConnection,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
) -> http.client.HTTPResponse:
    """Sends one request and returns its response, even one the server sent early.

    A server may answer a body it will not take (413) and close before the client has sent all
    of it; the client's write then fails, but the answer is already on its way. It is read
    rather than reported as no answer. Only when there is none does the send error stand.
    """
    try:
        connection.request(method, path, body=body, headers=headers)
    except (OSError, http.client.HTTPException) as send_error:
        try:
            return connection.getresponse()
        except (OSError, http.client.HTTPException):
            raise send_error from None
    return connection.getresponse()


class SupplierClient:
    """The controller's only way to the supplier API."""

    def __init__(self, endpoint: SupplierEndpoint, key: bytes, calls: CallLog, run_id: str) -> None:
        if not key:
            raise ValueError("the supplier key is empty; check the supplier key file")
        self.endpoint = endpoint
        self._key = key
        self.calls = calls
        self.run_id = run_id
        self._counter = itertools.count(1)
        self._counter_lock = threading.Lock()
        # Only the run's CA: a certificate from any public CA is not the supplier.
        self._tls = ssl.create_default_context(cafile=str(endpoint.ca_file))
        self._tls.minimum_version = ssl.TLSVersion.TLSv1_2

    def __repr__(self) -> str:
        return f"SupplierClient({self.endpoint.url!r}, run_id={self.run_id!r})"

    def next_request_id(self) -> str:
        with self._counter_lock:
            return f"{self.run_id}-c{next(self._counter)}"

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None,
        content_type: str,
        key: bytes,
        url: str,
        request_id: str | None,
        limit: int,
        on_sent: Callable[[int | None], None] | None = None,
    ) -> tuple[int, bytes]:
        """One request on a fresh connection; ``on_sent`` hears the status once it was sent."""
        if not path.startswith("/"):
            raise ValueError(f"supplier path {path!r} must start with /")
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"supplier URL {url!r} must be https://host[:port]")
        host, port = parts.hostname, parts.port or 443
        headers = {KEY_HEADER: key.decode("latin-1"), "Accept": "application/json"}
        if request_id is not None:
            headers[REQUEST_ID_HEADER] = request_id
        if body is not None:
            headers["Content-Type"] = content_type
        connection = _PinnedHTTPSConnection(host, port, context=self._tls)
        watchdog = threading.Timer(REQUEST_DEADLINE_SECONDS, connection.expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            try:
                connection.connect()
            except OSError as exc:  # ssl.SSLError is an OSError
                raise SupplierConnectionError(
                    _unanswered(connection, f"cannot connect to {host}:{port}", exc)
                ) from None
            try:
                response = _exchange(connection, method, path, body, headers)
            except (OSError, http.client.HTTPException) as exc:
                if on_sent is not None:
                    on_sent(None)
                raise SupplierConnectionError(
                    _unanswered(connection, f"{method} {path} to {host}:{port} got no reply", exc)
                ) from None
            if on_sent is not None:
                on_sent(None if connection.expired else response.status)
            try:
                data = _read_capped(response, limit, f"{method} {path}")
            except (OSError, http.client.HTTPException) as exc:
                raise SupplierConnectionError(
                    _unanswered(connection, f"{method} {path} to {host}:{port}: the reply", exc)
                ) from None
            if connection.expired:
                # Cut at the deadline, a reply can read as whole (its head ended by the cut):
                # it is not one.
                raise SupplierConnectionError(
                    _unanswered(
                        connection, f"{method} {path} to {host}:{port}", TimeoutError("deadline")
                    )
                )
            return response.status, data
        finally:
            watchdog.cancel()
            connection.close()
            connection.release()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        key: bytes | None = None,
        url: str | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> SupplierReply:
        """One recorded request. ``key`` replaces the real key (the 401 control); ``url`` the
        base URL (the alias-host control)."""
        request_id = self.next_request_id()
        target = url or self.endpoint.url
        host = urlsplit(target).hostname or ""
        sent: list[int | None] = []

        def record(status: int | None) -> None:
            sent.append(status)
            call = CallRecord(request_id, "controller", method, path, host, status, True)
            self.calls.record(call)

        try:
            status, data = self._send(
                method,
                path,
                body=body,
                content_type=content_type,
                key=self._key if key is None else key,
                url=target,
                request_id=request_id,
                limit=max_reply_bytes,
                on_sent=record,
            )
        except SupplierConnectionError:
            if not sent:
                # Never connected, so nothing reached the supplier API to be logged.
                self.calls.record(
                    CallRecord(request_id, "controller", method, path, host, None, False)
                )
            raise
        return SupplierReply(status, data, request_id)

    def availability(self, case_id: str, supplier_ids: Sequence[str]) -> dict[str, bool]:
        """The case's own supplier ids, each with the one strict boolean the supplier reported.

        Keys come from the case, never from the reply: an extra key is dropped, a missing id or
        a value that is not exactly true or false stops the run.
        """
        reply = self.request("GET", f"/cases/{case_id}/suppliers")
        if reply.status != 200:
            raise SupplierReplyError(
                f"GET /cases/{case_id}/suppliers answered {reply.status}, expected 200"
            )
        doc = reply.json()
        served = doc.get("availability") if isinstance(doc, dict) else None
        if not isinstance(served, dict):
            raise SupplierReplyError(
                f"GET /cases/{case_id}/suppliers: the reply has no availability object"
            )
        rebuilt: dict[str, bool] = {}
        for supplier_id in supplier_ids:
            value = served.get(supplier_id)
            if type(value) is not bool:
                raise SupplierReplyError(
                    f"GET /cases/{case_id}/suppliers: supplier {supplier_id} has no true/false "
                    "availability in the reply"
                )
            rebuilt[supplier_id] = value
        return rebuilt

    def read_log(self) -> list[dict[str, Any]]:
        """The supplier API's own request log over HTTPS: an admin read, logged by the server
        like any request but with no request id of the run's, and not recorded as a call."""
        status, data = self._send(
            "GET",
            "/_log",
            body=None,
            content_type="",
            key=self._key,
            url=self.endpoint.url,
            request_id=None,
            limit=MAX_LOG_BYTES,
        )
        if status != 200:
            raise SupplierReplyError(f"GET /_log answered {status}, expected 200")
        try:
            entries = json.loads(data)["entries"]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise SupplierReplyError("GET /_log: the reply has no entries list") from exc
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise SupplierReplyError("GET /_log: entries must be a list of objects")
        return entries

    def tcp_reachable(self) -> bool:
        """A plain TCP connect to the supplier's address and port: the network control. A
        connect that fails is the supplier API's fault, not a finding: it stops the run,
        naming the service, rather than fail the control."""
        address, port = self.endpoint.address, self.endpoint.port
        try:
            with socket.create_connection((address, port), timeout=TIMEOUT_SECONDS):
                return True
        except ConnectionRefusedError:
            raise SupplierConnectionError(
                f"cannot connect to {SUPPLIER} at {address}:{port}: it refused the connection, "
                "so it is not running"
            ) from None
        except TimeoutError:
            raise SupplierConnectionError(
                f"cannot connect to {SUPPLIER} at {address}:{port}: no connection within "
                f"{TIMEOUT_SECONDS:.0f}s"
            ) from None
        except OSError as exc:
            raise SupplierConnectionError(
                f"cannot connect to {SUPPLIER} at {address}:{port}: {exc.strerror or exc}"
            ) from None
