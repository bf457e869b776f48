"""The proxies' endpoint policy, request by request: each allowed operation answered by the
supplier and recorded as allowed, each refused one answered 403 and recorded as denied, while
the supplier API itself accepts those same operations from the controller with the real key.

Each role's proxy keeps its own audit, read from a mark taken before each request; a
request's own records are the ones that name what it names (mode, method and path, or a
tunnel's target), and no two requests sent at once name the same thing. So the roles' requests
are sent at once (together.py); the controller's own controls go first, and its request with
the wrong placeholder goes last and alone, since the proxy's record of it names nothing. The
lines then follow in their usual order, and each call record is kept as its lines print.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from app.core.calls import CallRecord, SupplierReply
from app.core.catalogue import Claim
from app.core.ids import other_case_id
from app.core.results import ToolResult
from app.core.roles import Role
from app.core.run import Run
from app.tools.nono import catalogue as c
from app.tools.nono.proxy import AuditEvent, forwarded
from app.tools.nono.runner import NonoRunner
from app.tools.together import run_in_turn, run_together


@dataclass(frozen=True)
class Sent:
    """One request through a role's proxy: what answered it (the tool's result, or the status
    when the controller sent it), the proxy's records of it, and the run's record of the call."""

    result: ToolResult | None
    status: int | None
    events: list[AuditEvent]
    call: CallRecord

    @property
    def observed(self) -> object:
        """The status it was answered with, or the errno that kept the tool from sending it."""
        result = self.result
        return self.status if result is None or result.ok else result.errno


# The writer's refused operations, each accepted upstream from the controller: its request
# name in the catalogue, method, path (given the case id and the first supplier) and the
# supplier's status.
def _refused_operations(case_id: str, supplier_id: str) -> list[tuple[str, str, str, int]]:
    patch, order, other = c.REFUSED_OPERATIONS
    return [
        (patch, "PATCH", f"/suppliers/{supplier_id}", 200),
        (order, "POST", "/purchase-orders", 201),
        (other, "GET", f"/cases/{other_case_id(case_id)}/suppliers", 200),
    ]


def _names_request(method: str, path: str) -> Callable[[AuditEvent], bool]:
    return lambda event: event.mode == "reverse" and (event.method, event.path) == (method, path)


def _names_tunnel(host: str | None, port: int | None) -> Callable[[AuditEvent], bool]:
    return lambda event: event.mode == "connect" and (event.target, event.port) == (host, port)


class EndpointChecks:
    """The "supplier proxy" section of a nono run, and the writer's draft submission."""

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.case_id = run.case.case_id
        self.supplier_host = urlsplit(run.supplier.url).hostname or ""

    # --- sending ------------------------------------------------------------------------------

    def _role_request(
        self, role: Role, method: str, path: str, request_id: str, body_file: str = "-"
    ) -> Sent:
        """One request by the role through its proxy; its call record is not kept yet."""
        proxies = self.layer.proxies
        mark = proxies.mark(role)
        result = self.layer.run_tool(role, "supplier-request", method, path, body_file, request_id)
        events = proxies.since(role, mark, _names_request(method, path))
        status = result.data.get("status")
        call = CallRecord(
            request_id, role, method, path, self.supplier_host, status, forwarded(events)
        )
        return Sent(result, status, events, call)

    def _tunnel(self, url: str, request_id: str) -> Sent:
        """The reader's CONNECT to ``url`` through its proxy."""
        proxies = self.layer.proxies
        target = urlsplit(url)
        mark = proxies.mark("reader")
        tunnel = self.layer.run_tool("reader", "alias-request", url, request_id)
        events = proxies.since("reader", mark, _names_tunnel(target.hostname, target.port))
        status = tunnel.data.get("connect_status")
        call = CallRecord(
            request_id, "reader", "CONNECT", f"{target.hostname}:{target.port}",
            target.hostname or "", status, False,
        )  # fmt: skip
        return Sent(tunnel, status, events, call)

    def _foreign_placeholder(self, read: str, request_id: str) -> Sent:
        """The controller's GET through the writer's proxy, with the reader's placeholder."""
        proxies = self.layer.proxies
        mark = proxies.mark("writer")
        status = proxies.send(
            "writer", "GET", read, key=proxies.placeholder("reader"), request_id=request_id
        )
        events = proxies.since("writer", mark)
        call = CallRecord(
            request_id, "controller", "GET", read, self.supplier_host, status, forwarded(events)
        )
        return Sent(None, status, events, call)

    def _kept(self, outcome: Future[Sent]) -> Sent:
        """A request's outcome, its call record kept now (raises what sending it raised)."""
        sent = outcome.result()
        self.run.supplier_client.calls.record(sent.call)
        return sent

    # --- the lines ----------------------------------------------------------------------------

    def _audit(
        self, claim: Claim, method: str, path: str, events: list[AuditEvent], allowed: int | None
    ) -> None:
        """The audit record for this one request: allowed with the supplier's status, or denied
        by the endpoint policy and never forwarded."""
        mine = [e for e in events if e.mode == "reverse" and e.method == method and e.path == path]
        summary = [(e.decision, e.status, e.denial_category) for e in mine]
        if allowed is not None:
            held = (
                forwarded(mine)
                and all(e.decision == "allow" for e in mine)
                and any(e.status == allowed for e in mine)
            )
        else:
            held = (
                bool(mine)
                and not forwarded(mine)
                and any(
                    e.decision == "deny" and e.denial_category == "endpoint_policy" for e in mine
                )
            )
        self.checks.require(claim, held, detail=f"records {summary}")

    def _role_lines(
        self,
        request: str,
        role: Role,
        method: str,
        path: str,
        outcome: Future[Sent],
        allowed: int | None,
    ) -> None:
        """The status and audit lines of one role request: ``allowed`` is the supplier's status
        for an allowed request, None for one the proxy must refuse with 403."""
        sent = self._kept(outcome)
        status = 403 if allowed is None else allowed
        said = dict(request=request, role=role, method=method, path=path)
        self.checks.expect_equal(c.STATUS(**said, status=status), sent.observed, status)
        verdict = (
            f"allow, forwarded, supplier status {allowed}"
            if allowed is not None
            else "deny by the endpoint policy, not forwarded"
        )
        self._audit(c.AUDIT(**said, verdict=verdict), method, path, sent.events, allowed)

    def check(self) -> None:
        checks, run, layer = self.checks, self.run, self.layer
        checks.begin(c.SUPPLIER_PROXY)
        read = f"/cases/{self.case_id}/suppliers"
        draft = f"/cases/{self.case_id}/recommendations"
        refused = _refused_operations(self.case_id, run.case.suppliers[0].id)
        # The controller's controls, first: direct requests with the real key.
        alias_control = run.supplier_client.request("GET", read, url=run.supplier.alias_url)
        controls = [
            run.supplier_client.request(method, path, body=b"{}" if method != "GET" else None)
            for _, method, path, _ in refused
        ]
        # The request ids, in the order the lines name the requests.
        order: list[tuple[str, Role]] = [
            ("read", "reader"),
            ("tunnel to alias", "reader"),
            ("tunnel to supplier", "reader"),
            ("writer read", "writer"),
            ("draft", "reader"),
            *((f"refused {i}", "writer") for i in range(len(refused))),
        ]
        ids = {step: layer.next_request_id(role) for step, role in order}
        placeholder_id = run.supplier_client.next_request_id()
        reader_steps: list[Callable[[], Sent]] = [
            partial(self._role_request, "reader", "GET", read, ids["read"]),
            partial(self._tunnel, run.supplier.alias_url, ids["tunnel to alias"]),
            partial(self._tunnel, run.supplier.url, ids["tunnel to supplier"]),
            partial(self._role_request, "reader", "POST", draft, ids["draft"]),
        ]
        writer_steps: list[Callable[[], Sent]] = [
            partial(self._role_request, "writer", "GET", read, ids["writer read"]),
            *(
                partial(self._role_request, "writer", method, path, ids[f"refused {i}"])
                for i, (_, method, path, _) in enumerate(refused)
            ),
        ]
        outcomes = run_together([*reader_steps, *writer_steps])
        reader, writer = outcomes[: len(reader_steps)], outcomes[len(reader_steps) :]
        # Alone, once those have ended: the proxy's record of the refused placeholder names no
        # method or path, so it is this request's only while nothing else is in flight.
        (placeholder,) = run_in_turn([partial(self._foreign_placeholder, read, placeholder_id)])

        self._role_lines("reader.read", "reader", "GET", read, reader[0], 200)
        alias = urlsplit(run.supplier.alias_url)
        checks.expect_equal(
            c.ALIAS_CONTROL(alias=alias.hostname, path=read), alias_control.status, 200
        )
        self._tunnel_lines(
            "alias",
            reader[1],
            "host_denied",
            "the second name for the same server",
            "host not allowed",
        )
        self._tunnel_lines(
            "supplier",
            reader[2],
            "connect_bypasses_l7",
            "the supplier itself, where a tunnel would carry requests past its method and path "
            "rules",
            "a tunnel would bypass the endpoint rules",
        )
        self._role_lines("writer.read", "writer", "GET", read, writer[0], 200)
        self._placeholder_lines(read, placeholder)
        self._role_lines("reader.draft", "reader", "POST", draft, reader[3], None)
        for (request, method, path, accepted), control, outcome in zip(
            refused, controls, writer[1:], strict=True
        ):
            self._accepted_upstream(request, method, path, accepted, control)
            self._role_lines(request, "writer", method, path, outcome, None)

    def _accepted_upstream(
        self, request: str, method: str, path: str, accepted: int, control: SupplierReply
    ) -> None:
        """The supplier takes it from the controller with the real key; the writer's proxy won't."""
        self.checks.expect_equal(
            c.ACCEPTED_UPSTREAM(request=request, method=method, path=path, status=accepted),
            control.status,
            accepted,
        )

    def _tunnel_lines(
        self, name: str, outcome: Future[Sent], category: str, what: str, reason: str
    ) -> None:
        """The reader's CONNECT through its proxy: 403, and one audit record."""
        sent = self._kept(outcome)
        target, port = sent.call.path.rsplit(":", 1)
        self.checks.expect_equal(
            c.TUNNEL(target=name, where=sent.call.path, what=what), sent.observed, 403
        )
        denied = [
            e
            for e in sent.events
            if e.mode == "connect"
            and e.target == target
            and e.port == int(port)
            and e.decision == "deny"
            and e.denial_category == category
        ]
        records = [(e.mode, e.target, e.decision, e.denial_category) for e in sent.events]
        self.checks.require(
            c.TUNNEL_AUDIT(target=name, where=sent.call.path, reason=reason),
            len(denied) == 1,
            detail=f"records {records}",
        )

    def _placeholder_lines(self, read: str, outcome: Future[Sent]) -> None:
        """The writer's proxy takes its own placeholder and refuses the reader's."""
        sent = self._kept(outcome)
        rejected = [
            e
            for e in sent.events
            if e.decision == "deny" and e.denial_category == "authentication_failed"
        ]
        summary = [(e.decision, e.denial_category) for e in sent.events]
        self.checks.require(
            c.FOREIGN_PLACEHOLDER(path=read),
            sent.status == 401 and len(rejected) == 1 and not forwarded(sent.events),
            detail=f"status {sent.status}, records {summary}",
        )

    def submit_draft(self, draft_path: Path) -> None:
        path = f"/cases/{self.case_id}/recommendations"
        request_id = self.layer.next_request_id("writer")
        sent = self._role_request("writer", "POST", path, request_id, str(draft_path))
        self.run.supplier_client.calls.record(sent.call)
        self.checks.expect_equal(c.DRAFT_SUBMITTED(path=path), sent.observed, 201)
        self._audit(c.DRAFT_AUDIT(path=path), "POST", path, sent.events, 201)
