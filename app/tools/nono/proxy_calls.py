"""Requests through a role's proxy as the checks send them: each with the front's records of
it, found by its request id, and the run's record of the call; and the lines every proxy
check words the same way.

A role's front records a request before the role has its answer, so once the tool process
that sent it has ended, a drain holds the request's record.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from app.core.calls import CallRecord
from app.core.catalogue import Claim
from app.core.roles import Role
from app.core.run import Run
from app.tools.nono.audit_events import AuditEvent, forwarded, nono_events
from app.tools.nono.front import FrontRecord, Refusal
from app.tools.nono.runner import NonoRunner


@dataclass(frozen=True)
class Sent:
    """One request through a role's proxy: what answered it (a status, or the errno that kept
    it from being sent), the front's records of it, and the run's record of the call."""

    status: int | None
    errno: str | None
    records: list[FrontRecord]
    call: CallRecord

    @property
    def observed(self) -> object:
        return self.status if self.errno is None else self.errno

    def refused_at_front(self, refusal: Refusal) -> bool:
        """Its one record says the front answered it, for ``refusal``, and nono never saw it."""
        return (
            len(self.records) == 1
            and self.records[0].refusal is refusal
            and not self.records[0].nono
        )


@dataclass(frozen=True)
class Behind:
    """A request sent straight to a role's nono listener, past its front."""

    status: int | None
    events: list[AuditEvent]


def authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def summary(records: list[FrontRecord]) -> str:
    """What a check's line shows of a request's records, in words: never a header or a body."""
    if not records:
        return "none"
    return " | ".join(_record_words(record) for record in records)


def _record_words(record: FrontRecord) -> str:
    words = f"{record.form} request"
    if record.refusal is not None:
        words += f", refused at the front ({record.refusal.value})"
    if record.status is not None:
        words += f", answered {record.status}"
    events = [
        event.decision
        + (f" {event.status}" if event.status is not None else "")
        + (f" ({event.denial_category})" if event.denial_category else "")
        for event in nono_events(record)
    ]
    return words + (f"; nono: {', '.join(events)}" if events else "; nothing passed to nono")


class ProxyCalls:
    """Sends the checks' requests through the roles' proxies, and words their lines."""

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.supplier_host = urlsplit(run.supplier.url).hostname or ""

    # --- sending (a call record is kept when its lines print: keep) ---------------------------

    def role_request(
        self, role: Role, method: str, path: str, request_id: str, body_file: str = "-"
    ) -> Sent:
        """One supplier call by the role through its proxy."""
        result = self.layer.run_tool(role, "supplier-request", method, path, body_file, request_id)
        records = self.layer.proxies.of(role, request_id)
        status = result.data.get("status")
        call = CallRecord(
            request_id, role, method, path, self.supplier_host, status, forwarded(records)
        )
        return Sent(status, None if result.ok else str(result.errno), records, call)

    def raw_requests(self, role: Role, requests: list[tuple[str, str, str]]) -> list[Sent]:
        """Request lines the role sends its proxy as written, (request id, method, target)
        each: tunnels and absolute URIs, none of them a supplier call."""
        flat = [part for request in requests for part in request]
        result = self.layer.run_tool(role, "proxy-requests", *flat)
        sent = []
        for item in result.data["requests"]:
            rid, method, target = str(item["request_id"]), str(item["method"]), str(item["target"])
            host = (target if method == "CONNECT" else urlsplit(target).netloc).rsplit(":", 1)[0]
            status = item.get("status")
            call = CallRecord(rid, role, method, target, host, status, False)
            errno = None if item.get("ok") else str(item.get("errno"))
            sent.append(Sent(status, errno, self.layer.proxies.of(role, rid), call))
        return sent

    def shaped_requests(self, role: Role, requests: list[tuple[str, str, str, str]]) -> list[Sent]:
        """Supplier calls the role sends its proxy raw, with its key variable, each in a shape
        (request id, method, path, shape: see the worker's shaped-requests); one tool process."""
        flat = [part for request in requests for part in request]
        result = self.layer.run_tool(role, "shaped-requests", *flat)
        sent = []
        for item in result.data["requests"]:
            rid, method, path = str(item["request_id"]), str(item["method"]), str(item["target"])
            records = self.layer.proxies.of(role, rid)
            status = item.get("status")
            call = CallRecord(
                rid, role, method, path, self.supplier_host, status, forwarded(records)
            )
            errno = None if item.get("ok") else str(item.get("errno"))
            sent.append(Sent(status, errno, records, call))
        return sent

    def with_key(
        self,
        role: Role,
        method: str,
        path: str,
        key: bytes,
        request_id: str,
        body: bytes | None = None,
    ) -> Sent:
        """The controller's own request to a role's proxy, with a credential of its choosing:
        what the proxy answers any sender, the role's own included."""
        proxies = self.layer.proxies
        status = proxies.send(role, method, path, key=key, request_id=request_id, body=body)
        records = proxies.of(role, request_id)
        call = CallRecord(
            request_id, "controller", method, path, self.supplier_host, status, forwarded(records)
        )
        return Sent(status, None, records, call)

    def behind(self, role: Role, method: str, path: str, request_id: str) -> Behind:
        """The same request straight to the role's nono listener, with its placeholder."""
        status, events = self.layer.proxies.behind(role, method, path, request_id)
        reached = any(event.forwarded for event in events)
        self.run.supplier_client.calls.record(
            CallRecord(request_id, "controller", method, path, self.supplier_host, status, reached)
        )
        return Behind(status, events)

    def keep(self, sent: Sent) -> Sent:
        self.run.supplier_client.calls.record(sent.call)
        return sent

    # --- the lines ----------------------------------------------------------------------------

    def expect_status(self, claim: Claim, sent: Sent, status: int) -> None:
        self.checks.expect_equal(claim, sent.observed, status)

    def expect_passed(self, claim: Claim, sent: Sent, allowed: int) -> None:
        """The front passed this one request to nono, which forwarded it: the supplier's status."""
        events = [e for r in sent.records for e in nono_events(r)]
        held = (
            len(sent.records) == 1
            and sent.records[0].passed
            and forwarded(sent.records)
            and all(e.decision == "allow" for e in events)
            and any(e.status == allowed for e in events)
        )
        self.checks.require(claim, held, detail=f"records {summary(sent.records)}")

    def expect_refused(self, claim: Claim, sent: Sent, refusal: Refusal) -> None:
        """The front answered this one request itself, for ``refusal``; nono never saw it."""
        self.checks.require(
            claim, sent.refused_at_front(refusal), detail=f"records {summary(sent.records)}"
        )
