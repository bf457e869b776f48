"""The proxies' endpoint policy, request by request: each allowed operation answered by the
supplier and recorded as allowed, each refused one answered 403 and recorded as denied, while
the supplier API itself accepts those same operations from the controller with the real key."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from app.core.calls import CallRecord
from app.core.ids import other_case_id
from app.core.results import ToolResult
from app.core.roles import Role
from app.core.run import Run
from app.tools.nono.proxy import AuditEvent, forwarded
from app.tools.nono.runner import NonoRunner


class EndpointChecks:
    """The "supplier proxy" section of a nono run, and the writer's draft submission."""

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.case_id = run.case.case_id
        self.supplier_host = urlsplit(run.supplier.url).hostname or ""

    def _role_request(
        self, role: Role, method: str, path: str, body_file: str = "-"
    ) -> tuple[ToolResult, list[AuditEvent]]:
        """One request by the role through its proxy, recorded in the run's call log."""
        proxies = self.layer.proxies
        request_id = self.layer.next_request_id(role)
        mark = proxies.mark(role)
        result = self.layer.run_tool(role, "supplier-request", method, path, body_file, request_id)
        events = proxies.since(role, mark)
        status = result.data.get("status")
        self.run.supplier_client.calls.record(
            CallRecord(
                request_id, role, method, path, self.supplier_host, status, forwarded(events)
            )
        )
        return result, events

    def _expect_status(
        self,
        role: Role,
        method: str,
        path: str,
        result: ToolResult,
        status: int,
        via: str = "through its proxy",
    ) -> None:
        observed = result.data.get("status") if result.ok else result.errno
        self.checks.expect_equal(
            observed, status, f"{role}: {method} {path} {via} returns {status}"
        )

    def _expect_audit(
        self, role: Role, method: str, path: str, events: list[AuditEvent], allowed: int | None
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
            claim = (
                f"nono's audit records the {role}'s {method} {path}: allow, forwarded, supplier "
                f"status {allowed}"
            )
        else:
            held = (
                bool(mine)
                and not forwarded(mine)
                and any(
                    e.decision == "deny" and e.denial_category == "endpoint_policy" for e in mine
                )
            )
            claim = (
                f"nono's audit records the {role}'s {method} {path}: deny by the endpoint policy, "
                "not forwarded"
            )
        self.checks.require(held, claim, detail=f"records {summary}")

    def _denied_but_accepted_upstream(self, method: str, path: str, accepted: int) -> None:
        """The supplier takes it from the controller with the real key; the writer's proxy won't."""
        reply = self.run.supplier_client.request(
            method, path, body=b"{}" if method != "GET" else None
        )
        self.checks.expect_equal(
            reply.status,
            accepted,
            f"control: the supplier API accepts {method} {path} from the controller with the "
            f"real key, outside any profile: {accepted}",
        )
        result, events = self._role_request("writer", method, path)
        self._expect_status("writer", method, path, result, 403)
        self._expect_audit("writer", method, path, events, None)

    def check(self) -> None:
        checks, run = self.checks, self.run
        checks.begin("supplier proxy")
        read = f"/cases/{self.case_id}/suppliers"
        result, events = self._role_request("reader", "GET", read)
        self._expect_status("reader", "GET", read, result, 200)
        self._expect_audit("reader", "GET", read, events, 200)

        alias = urlsplit(run.supplier.alias_url)
        reply = run.supplier_client.request("GET", read, url=run.supplier.alias_url)
        checks.expect_equal(
            reply.status,
            200,
            f"control: the controller reaches the same server by its second name, "
            f"{alias.hostname}, with the real key: GET {read} returns 200",
        )
        self._tunnel_refused(
            run.supplier.alias_url,
            "host_denied",
            "the second name for the same server",
            "host not allowed",
        )
        self._tunnel_refused(
            run.supplier.url,
            "connect_bypasses_l7",
            "the supplier itself, where a tunnel would carry requests past its method and path "
            "rules",
            "a tunnel would bypass the endpoint rules",
        )

        self._placeholder_is_per_role(read)

        draft = f"/cases/{self.case_id}/recommendations"
        result, events = self._role_request("reader", "POST", draft)
        self._expect_status("reader", "POST", draft, result, 403)
        self._expect_audit("reader", "POST", draft, events, None)

        supplier_id = run.case.suppliers[0].id
        self._denied_but_accepted_upstream("PATCH", f"/suppliers/{supplier_id}", 200)
        self._denied_but_accepted_upstream("POST", "/purchase-orders", 201)
        other = other_case_id(self.case_id)
        self._denied_but_accepted_upstream("GET", f"/cases/{other}/suppliers", 200)

    def _tunnel_refused(self, url: str, category: str, what: str, reason: str) -> None:
        """The reader's CONNECT to ``url`` through its proxy: 403, and one audit record."""
        run, proxies = self.run, self.layer.proxies
        target = urlsplit(url)
        request_id = self.layer.next_request_id("reader")
        mark = proxies.mark("reader")
        tunnel = self.layer.run_tool("reader", "alias-request", url, request_id)
        events = proxies.since("reader", mark)
        authority = f"{target.hostname}:{target.port}"
        connect_status = tunnel.data.get("connect_status")
        run.supplier_client.calls.record(
            CallRecord(
                request_id, "reader", "CONNECT", authority, target.hostname or "",
                connect_status, False,
            )
        )  # fmt: skip
        self.checks.expect_equal(
            connect_status if tunnel.ok else tunnel.errno,
            403,
            f"reader: its proxy refuses a tunnel to {authority}, {what}: CONNECT answered 403",
        )
        denied = [
            e
            for e in events
            if e.mode == "connect"
            and e.target == target.hostname
            and e.port == target.port
            and e.decision == "deny"
            and e.denial_category == category
        ]
        self.checks.require(
            len(denied) == 1,
            f"nono's audit records the refused tunnel to {authority}: deny, {reason}",
            detail=f"records {[(e.mode, e.target, e.decision, e.denial_category) for e in events]}",
        )

    def _placeholder_is_per_role(self, read: str) -> None:
        """The writer's proxy takes its own placeholder and refuses the reader's."""
        checks, run, proxies = self.checks, self.run, self.layer.proxies
        result, events = self._role_request("writer", "GET", read)
        self._expect_status("writer", "GET", read, result, 200)
        self._expect_audit("writer", "GET", read, events, 200)
        request_id = run.supplier_client.next_request_id()
        mark = proxies.mark("writer")
        status = proxies.send(
            "writer", "GET", read, key=proxies.placeholder("reader"), request_id=request_id
        )
        events = proxies.since("writer", mark)
        run.supplier_client.calls.record(
            CallRecord(
                request_id, "controller", "GET", read, self.supplier_host, status,
                forwarded(events),
            )
        )  # fmt: skip
        rejected = [
            e
            for e in events
            if e.decision == "deny" and e.denial_category == "authentication_failed"
        ]
        summary = [(e.decision, e.denial_category) for e in events]
        checks.require(
            status == 401 and len(rejected) == 1 and not forwarded(events),
            f"the writer's proxy refuses the reader's placeholder on GET {read} with 401 and "
            "records deny (authentication failed): a placeholder works only at its own proxy",
            detail=f"status {status}, records {summary}",
        )

    def submit_draft(self, draft_path: Path) -> None:
        path = f"/cases/{self.case_id}/recommendations"
        result, events = self._role_request("writer", "POST", path, str(draft_path))
        self._expect_status(
            "writer", "POST", path, result, 201, via="with its draft through its proxy"
        )
        self._expect_audit("writer", "POST", path, events, 201)
