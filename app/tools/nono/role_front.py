"""One role's front, as the proxy host runs it: the role's connections accepted up to the
front's limit, each request read within its deadline and judged by front.py, refused at once or
passed to the role's nono proxy one request at a time, with nono's audit of it read back, and
every connection's record kept up to a bound.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from app.tools.nono.front import (
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_RECORDS,
    MAX_RESPONSE_BYTES,
    STATUS,
    FrontPolicy,
    FrontRecord,
    MalformedRequest,
    Refusal,
    RequestHead,
    head_refusal,
    parse_head,
    recorded_target,
    refusal_response,
    request_id,
    response_body_length,
    response_status,
    shape_refusal,
    upstream_request,
)

if TYPE_CHECKING:
    from nono_py import ProxyHandle

# A role's whole request must arrive within this of its connection; nono's whole answer within
# the next; and an answer must be taken within a second of being written.
REQUEST_SECONDS: Final = 5.0
UPSTREAM_SECONDS: Final = 10.0
WRITE_SECONDS: Final = 1.0
# nono records a request once its answer is written: how long the front waits for that.
NONO_AUDIT_SECONDS: Final = 1.0
LOOPBACK: Final = "127.0.0.1"


class _Incomplete(Exception):
    """The role closed the connection before a whole request."""


@dataclass
class _Exchange:
    """One connection of a role's, within its deadline (from its accept)."""

    connection: socket.socket
    deadline: float
    buffer: bytes = b""

    def _recv(self, size: int) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.connection.settimeout(left)
        return self.connection.recv(size)

    def head(self) -> bytes:
        """Everything up to and with the blank line that ends the request head."""
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise OverflowError
            chunk = self._recv(16384)
            if not chunk:
                raise _Incomplete
            self.buffer += chunk
        head, self.buffer = self.buffer[: end + 4], self.buffer[end + 4 :]
        if len(head) > MAX_HEAD_BYTES:
            raise OverflowError
        return head

    def body(self, length: int) -> bytes:
        while len(self.buffer) < length:
            chunk = self._recv(length - len(self.buffer))
            if not chunk:
                raise _Incomplete
            self.buffer += chunk
        return self.buffer[:length]

    def answer(self, data: bytes) -> None:
        self.connection.settimeout(WRITE_SECONDS)
        self.connection.sendall(data)

    def linger(self) -> None:
        """Reads and drops what the role still sends after its answer, until it closes or its
        deadline: closed with unread bytes, the connection would reset before the role read
        the answer."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_WR)
            left = MAX_BODY_BYTES + MAX_HEAD_BYTES
            while left > 0 and (chunk := self._recv(min(left, 16384))):
                left -= len(chunk)


@dataclass
class RoleFront:
    """One role's front, its nono proxy and its records."""

    role: str
    run_id: str
    policy: FrontPolicy
    nono: ProxyHandle
    placeholder: str
    listener: socket.socket
    records: list[FrontRecord] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0
    seq: int = 0
    active: int = 0
    armed: dict[tuple[str, str], str] = field(default_factory=dict)
    sent: set[tuple[str, str]] = field(default_factory=set)
    forwarded_ids: set[str] = field(default_factory=set)
    stamps: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # nono sees one request at a time, so its next audit events are that request's.
    one_at_a_time: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        port: int = self.listener.getsockname()[1]
        return port

    @property
    def nono_port(self) -> int:
        return int(self.nono.port)

    def record(
        self,
        head: RequestHead | None,
        refusal: Refusal | None,
        status: int | None,
        nono: list[dict[str, Any]] | None = None,
        *,
        forwarded_as: str | None = None,
    ) -> None:
        with self.lock:
            self.seq += 1
            if self.kept >= MAX_RECORDS:
                self.dropped += 1
                return
            self.kept += 1
            self.records.append(
                FrontRecord(
                    seq=self.seq,
                    form=None if head is None else head.form,
                    method=None if head is None else head.method,
                    target=recorded_target(head),
                    request_id=forwarded_as or request_id(head, self.run_id),
                    refusal=refusal,
                    status=status,
                    nono=tuple(nono or ()),
                )
            )

    # --- accepting ----------------------------------------------------------------------------

    def accept_forever(self) -> None:
        """Serves each connection in a thread of its own, up to the limit; one past it is
        answered here, at once, unread, and closed."""
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # sealed: the listener is closed
            with self.lock:
                served = self.active < self.policy.max_connections
                self.active += served
            if not served:
                self.record(None, Refusal.CONNECTION_LIMIT, STATUS[Refusal.CONNECTION_LIMIT])
                with contextlib.suppress(OSError):
                    connection.setblocking(False)
                    connection.send(refusal_response(Refusal.CONNECTION_LIMIT))
                connection.close()
                continue
            exchange = _Exchange(connection, time.monotonic() + REQUEST_SECONDS)
            threading.Thread(target=self._connection, args=(exchange,), daemon=True).start()

    def _connection(self, exchange: _Exchange) -> None:
        try:
            self._serve(exchange)
        except OSError:
            pass  # the role went away; its record, if any, is already kept
        finally:
            exchange.connection.close()
            with self.lock:
                self.active -= 1

    def _serve(self, exchange: _Exchange) -> None:
        try:
            raw = exchange.head()
        except TimeoutError:
            return self._refuse(None, Refusal.TIMEOUT, exchange)
        except OverflowError:
            return self._refuse(None, Refusal.TOO_LARGE, exchange)
        except _Incomplete:
            return self.record(None, Refusal.INCOMPLETE, None)
        try:
            head = parse_head(raw)
            # The shape before any body is read: a read's body is never taken, let alone sent.
            refusal = head_refusal(self.policy, head) or shape_refusal(self.policy, head)
            length = head.body_length() if refusal is None else 0
        except MalformedRequest:
            return self._refuse(None, Refusal.MALFORMED, exchange)
        if refusal is None and length > MAX_BODY_BYTES:
            refusal = Refusal.TOO_LARGE
        if refusal is not None:
            return self._refuse(head, refusal, exchange)
        try:
            body = exchange.body(length)
        except TimeoutError:
            return self._refuse(head, Refusal.TIMEOUT, exchange)
        except _Incomplete:
            return self.record(head, Refusal.INCOMPLETE, None)
        refusal = self._once_refusal(head, body)
        if refusal is not None:
            return self._refuse(head, refusal, exchange)
        self._forward(head, body, exchange)

    def _once_refusal(self, head: RequestHead, body: bytes) -> Refusal | None:
        """A once-only write passes once, with the body the controller verified."""
        pair = (head.method, self.policy.upstream_path(head.target) or "")
        if pair not in self.policy.once:
            return None
        with self.lock:
            if pair in self.sent:
                return Refusal.ALREADY_SENT
            armed = self.armed.get(pair)
            if armed is None:
                return Refusal.NOT_VERIFIED
            if hashlib.sha256(body).hexdigest() != armed:
                return Refusal.BODY_DIFFERS
            # Taken before the request goes on, so a second one sent at once is refused too.
            self.sent.add(pair)
        return None

    def _forward(self, head: RequestHead, body: bytes, exchange: _Exchange) -> None:
        # Forwarded under a request id of this run that no other request had, whatever the
        # role gave: all that reaches the supplier through a role's proxy is matched with the
        # run's record, and a request the run did not make shows there as such.
        with self.lock:
            rid = request_id(head, self.run_id)
            if rid is None or rid in self.forwarded_ids:
                self.stamps += 1
                rid = f"{self.run_id}-{self.role}proxy-{self.stamps}"
            self.forwarded_ids.add(rid)
        request = upstream_request(
            self.policy, head, body, request_id=rid, host=f"{LOOPBACK}:{self.nono_port}"
        )
        status, response, events = self.through_nono(request)
        # Recorded before the role has its answer: once the role's tool process has ended,
        # the controller's next drain holds the record.
        if status is None:
            failed = Refusal.UPSTREAM_FAILED
            self.record(head, failed, STATUS[failed], events, forwarded_as=rid)
            exchange.answer(refusal_response(failed))
        else:
            self.record(head, None, status, events, forwarded_as=rid)
            exchange.answer(response)

    def _refuse(self, head: RequestHead | None, refusal: Refusal, exchange: _Exchange) -> None:
        self.record(head, refusal, STATUS[refusal])
        exchange.answer(refusal_response(refusal))
        exchange.linger()

    # --- nono ---------------------------------------------------------------------------------

    def through_nono(self, request: bytes) -> tuple[int | None, bytes, list[dict[str, Any]]]:
        """Sends one request to nono's listener and waits for its answer and audit record."""
        with self.one_at_a_time:
            try:
                answer = self._exchange(request)
            except OSError:
                answer = b""
            events = self._nono_events()
        return response_status(answer), answer, events

    def _exchange(self, request: bytes) -> bytes:
        """nono's whole answer: its head and the body its Content-Length gives (or all there
        is, when it gives none), within the deadline and the bound; else nothing."""
        deadline = time.monotonic() + UPSTREAM_SECONDS
        with socket.create_connection((LOOPBACK, self.nono_port), timeout=UPSTREAM_SECONDS) as up:
            up.sendall(request)
            answer = b""
            while True:
                end = answer.find(b"\r\n\r\n")
                length = None if end < 0 else response_body_length(answer[: end + 4])
                if length is not None and len(answer) >= end + 4 + length:
                    return answer[: end + 4 + length]
                left = deadline - time.monotonic()
                if len(answer) > MAX_RESPONSE_BYTES or left <= 0:
                    return b""
                up.settimeout(left)
                chunk = up.recv(65536)
                if not chunk:
                    return answer if end >= 0 else b""
                answer += chunk

    def _nono_events(self) -> list[dict[str, Any]]:
        """nono's records of the request just answered: one that denies it, or one that
        allows it with the supplier's status."""
        deadline = time.monotonic() + NONO_AUDIT_SECONDS
        events: list[dict[str, Any]] = []
        while True:
            events.extend(dict(event) for event in self.nono.drain_audit_events())
            settled = any(
                e["decision"] == "deny" or (e["decision"] == "allow" and e["status"] is not None)
                for e in events
            )
            if settled or time.monotonic() >= deadline:
                return events
            time.sleep(0.002)

    # --- commands -----------------------------------------------------------------------------

    def drain(self, limit: int) -> dict[str, Any]:
        with self.lock:
            batch, self.records = self.records[:limit], self.records[limit:]
            return {
                "records": [r.as_json() for r in batch],
                "dropped": self.dropped,
                "more": bool(self.records),
            }

    def behind(self, method: str, path: str, rid: str) -> dict[str, Any]:
        """The same request sent to nono's own listener, past the front, with the role's
        placeholder: what nono's own endpoint rules answer."""
        head = RequestHead(
            method,
            f"/{self.policy.prefix}{path}",
            {self.policy.inject_header.lower(): self.placeholder},
        )
        request = upstream_request(
            self.policy, head, b"", request_id=rid, host=f"{LOOPBACK}:{self.nono_port}"
        )
        status, _, events = self.through_nono(request)
        return {"status": status, "nono": events}

    def seal(self) -> None:
        """Stops accepting, and lets the connections already open end (within their deadline)."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        deadline = time.monotonic() + REQUEST_SECONDS + UPSTREAM_SECONDS
        while self.active and time.monotonic() < deadline:
            time.sleep(0.01)
