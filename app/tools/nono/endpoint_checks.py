"""The proxies' policy, request by request: each allowed operation answered by the supplier
and recorded as passed on and allowed, each refused one answered 403 and recorded as refused
at its role's front, while the supplier API itself accepts those same operations from the
controller with the real key, and nono's own rules behind the front refuse them too; every
tunnel and absolute-URI request refused (tunnel_checks.py); each read with a body or a type
refused (shape_checks.py); the writer's one draft, verified
by the controller, passed once; then the proxies' records, whole (proxy_audit.py).

Each request is sent where its lines print, and its call record kept then: its records are
the ones at its role's front that carry its request id.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from app.core.draft import ExpectedDraft
from app.core.ids import other_case_id
from app.core.roles import Role
from app.core.run import Run
from app.tools.catalogue import nono as c
from app.tools.draft_checks import verified_draft
from app.tools.nono.audit_events import forwarded, nono_events
from app.tools.nono.front import Refusal
from app.tools.nono.policy import draft_rule
from app.tools.nono.proxy_audit import check_proxy_audit
from app.tools.nono.proxy_calls import ProxyCalls, Sent, summary
from app.tools.nono.runner import NonoRunner
from app.tools.nono.shape_checks import ShapeChecks
from app.tools.nono.tunnel_checks import ONLINE, TunnelChecks


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


class EndpointChecks:
    """The "supplier proxy" section of a nono run, and the writer's draft submission."""

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.calls = ProxyCalls(run, layer)
        self.case_id = run.case.case_id
        # Connections the run's own checks leave without a whole request, by role.
        self._headless: dict[Role, int] = {}

    def check(self) -> None:
        checks, run = self.checks, self.run
        checks.begin(c.SUPPLIER_PROXY, loopback=TunnelChecks.canary_here(run))
        read = f"/cases/{self.case_id}/suppliers"
        draft_method, draft = draft_rule(self.case_id)
        refused = _refused_operations(self.case_id, run.case.suppliers[0].id)
        # Each request is found in its proxy's records by its own request id, so none of these
        # depends on another: they are made at once.
        checks.at_once(
            partial(self._role_lines, "reader.read", "reader", "GET", read, 200),
            partial(self._alias_control, read),
            partial(self._role_lines, "writer.read", "writer", "GET", read, 200),
            partial(self._placeholder_lines, read),
            partial(self._role_lines, "reader.draft", "reader", draft_method, draft, None),
            *(
                line
                for name, method, path, accepted in refused
                for line in (
                    partial(self._accepted_upstream, name, method, path, accepted),
                    partial(self._role_lines, name, "writer", method, path, None),
                )
            ),
            partial(self._behind_lines, refused),
            partial(self._early_draft_lines, draft_method, draft),
            *(partial(ShapeChecks(self.calls, read).lines, role) for role in ONLINE),
        )
        with TunnelChecks(self.calls) as others:
            others.check()
        # Each role's front filled by the controller, once the role's requests have ended.
        for role in ONLINE:
            others.limit_lines(role)
        self._headless = {role: others.limit(role) for role in ONLINE}

    # --- the lines ----------------------------------------------------------------------------

    def _role_lines(
        self, request: str, role: Role, method: str, path: str, allowed: int | None
    ) -> None:
        """One request by the role through its proxy, and its status and record lines:
        ``allowed`` is the supplier's status for an allowed request, None for one the front
        must refuse with 403."""
        calls = self.calls
        sent = calls.keep(calls.role_request(role, method, path, self.layer.next_request_id(role)))
        said = dict(request=request, role=role, method=method, path=path)
        status = 403 if allowed is None else allowed
        calls.expect_status(c.STATUS(**said, status=status), sent, status)
        if allowed is None:
            calls.expect_refused(
                c.FRONT(**said, what=f"its {method} {path}", why="not one of its listed pairs"),
                sent,
                Refusal.NOT_LISTED,
            )
        else:
            verdict = f"allow, forwarded, supplier status {allowed}"
            calls.expect_passed(c.AUDIT(**said, verdict=verdict), sent, allowed)

    def _alias_control(self, read: str) -> None:
        """The controller's own control: the same server by its second name, with the real key."""
        alias = urlsplit(self.run.supplier.alias_url)
        control = self.run.supplier_client.request("GET", read, url=self.run.supplier.alias_url)
        self.checks.expect_equal(
            c.ALIAS_CONTROL(alias=alias.hostname, path=read), control.status, 200
        )

    def _accepted_upstream(self, request: str, method: str, path: str, accepted: int) -> None:
        """The supplier takes it from the controller with the real key; the writer's front
        won't."""
        body = b"{}" if method != "GET" else None
        control = self.run.supplier_client.request(method, path, body=body)
        self.checks.expect_equal(
            c.ACCEPTED_UPSTREAM(request=request, method=method, path=path, status=accepted),
            control.status,
            accepted,
        )

    def _placeholder_lines(self, read: str) -> None:
        """The writer's proxy takes its own placeholder and refuses the reader's: the
        controller's GET through it with the reader's."""
        layer = self.layer
        rid = layer.next_request_id("reader")
        sent = self.calls.keep(
            self.calls.with_key("writer", "GET", read, layer.proxies.placeholder("reader"), rid)
        )
        events = [e for r in sent.records for e in nono_events(r)]
        rejected = [
            e
            for e in events
            if e.decision == "deny" and e.denial_category == "authentication_failed"
        ]
        self.checks.require(
            c.FOREIGN_PLACEHOLDER(path=read),
            sent.status == 401 and len(rejected) == 1 and not forwarded(sent.records),
            detail=f"status {sent.status}, records {summary(sent.records)}",
        )

    def _behind_lines(self, refused: list[tuple[str, str, str, int]]) -> None:
        """Past the front, nono's own endpoint rules refuse the same requests."""
        answers = [
            self.calls.behind("writer", method, path, self.layer.next_request_id("writer"))
            for _, method, path, _ in refused
        ]
        held = all(
            answer.status == 403
            and len(answer.events) == 1
            and answer.events[0].decision == "deny"
            and answer.events[0].denial_category == "endpoint_policy"
            for answer in answers
        )
        said = ", ".join(
            f"{method} {path} {answer.status}"
            for (_, method, path, _), answer in zip(refused, answers, strict=True)
        )
        self.checks.require(
            c.BEHIND(said=said),
            held,
            detail=str([[(e.decision, e.denial_category) for e in a.events] for a in answers]),
        )

    def _early_draft_lines(self, method: str, path: str) -> None:
        """The controller's draft through the writer's proxy, with the writer's placeholder,
        before any draft is verified: refused at the front."""
        layer = self.layer
        rid = layer.next_request_id("writer")
        sent = self.calls.keep(
            self.calls.with_key(
                "writer",
                method,
                path,
                layer.proxies.placeholder("writer"),
                rid,
                b"an early draft\n",
            )
        )
        self.calls.expect_status(c.EARLY_DRAFT(path=path), sent, 403)
        self.calls.expect_refused(
            c.FRONT(
                request="writer.early-draft",
                role="writer",
                what=f"that {method}",
                why="no verified draft yet",
            ),
            sent,
            Refusal.NOT_VERIFIED,
        )

    # --- the draft ------------------------------------------------------------------------------

    def submit_draft(self, draft_path: Path, expected: ExpectedDraft) -> None:
        """The controller verifies the writer's draft and lets its proxy pass exactly that body
        once: another body is refused, the writer's own draft answered 201, the same draft
        again refused. Then the proxies' records, whole."""
        calls, layer = self.calls, self.layer
        method, path = draft_rule(self.case_id)
        body = verified_draft(self.run, draft_path, expected)
        layer.proxies.arm("writer", method, path, body)
        placeholder = layer.proxies.placeholder("writer")

        def through_writers_proxy(sent_body: bytes) -> Sent:
            rid = layer.next_request_id("writer")
            return calls.keep(calls.with_key("writer", method, path, placeholder, rid, sent_body))

        # The controller's own, with the writer's placeholder: what the writer's proxy answers
        # any sender of a draft; then the writer's own draft, once.
        forged = through_writers_proxy(body.replace(expected.winner.encode(), b"someone-else"))
        posted = calls.keep(
            calls.role_request(
                "writer", method, path, layer.next_request_id("writer"), str(draft_path)
            )
        )
        again = through_writers_proxy(body)
        self.checks.require(
            c.FORGED_DRAFT(path=path),
            forged.status == 403 and forged.refused_at_front(Refusal.BODY_DIFFERS),
            detail=f"observed {forged.observed}, records {summary(forged.records)}",
        )
        calls.expect_status(c.DRAFT_SUBMITTED(path=path), posted, 201)
        calls.expect_passed(c.DRAFT_AUDIT(path=path), posted, 201)
        calls.expect_status(c.DRAFT_AGAIN(path=path), again, 403)
        calls.expect_refused(
            c.FRONT(
                request="writer.draft-again",
                role="writer",
                what="the second",
                why="its one draft already posted",
            ),
            again,
            Refusal.ALREADY_SENT,
        )
        check_proxy_audit(self.run, layer, self._headless)
