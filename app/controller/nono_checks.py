"""The nono layer's own checks: profiles against the committed files, then every file, credential,
network and proxy-policy refusal beside a control in which the same operation succeeds.

Nothing here records a credential, a placeholder or a digest: the credential comparison is made
in memory and only its outcome becomes a check line. Failure details name errnos and statuses,
never a probe's full result (an unconfined open reports a file's digest).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.controller.context import MODEL_KEY_VARIABLES, LayerChecks, RunContext
from app.controller.supplier_client import CallRecord
from app.core.run_tree import ROLES, Role
from app.tools.nono.launcher import AuditEvent, NonoLayer
from app.tools.nono.profiles import differences, fill
from app.tools.nono.render import rendered

KERNEL_REFUSALS = ("EACCES", "EPERM")
# The variables an AWS SDK would take a credential from, directly or by pointing at one.
AWS_CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
)
WRITER_PROBE_FILE = "boundary-probe.txt"


def _opened_or_errno(result: dict[str, Any]) -> str:
    """What a file or socket probe observed, without the digest an open reports."""
    return "succeeded" if result.get("ok") else f"failed with {result.get('errno')}"


def _forwarded(events: list[AuditEvent]) -> bool:
    """nono forwarded the request: an allow record that carries the supplier's status."""
    return any(e["decision"] == "allow" and e["status"] is not None for e in events)


class NonoChecks(LayerChecks):
    """Called by the orchestrator: boundary() after staging, submit_draft() in the business step."""

    expects_refused_operation = True

    def __init__(self, ctx: RunContext, layer: NonoLayer) -> None:
        super().__init__(ctx)
        self.layer = layer
        self.checks = ctx.checks
        self.case_id = layer.setup.case_id
        self.supplier_host = urlsplit(ctx.supplier.url).hostname or ""

    def boundary(self) -> None:
        self._profiles()
        self._files()
        self._credentials()
        self._environment()
        self._network()
        self._endpoint_policy()

    # profiles -------------------------------------------------------------------------------
    def _mismatch(self, role: Role, profile: dict[str, Any]) -> list[str]:
        """Where a profile differs from the committed file with this run's values filled in."""
        committed = json.loads((self.layer.committed_dir / f"{role}.json").read_text("utf-8"))
        return differences(profile, fill(committed, self.layer.values))

    def _profiles(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin("profiles")
        directory = layer.committed_dir
        drift = [
            name
            for name, text in rendered(layer.widening).items()
            if not (directory / name).is_file() or (directory / name).read_text("utf-8") != text
        ]
        checks.require(
            not drift,
            f"the committed nono profiles ({', '.join(f'{r}.json' for r in ROLES)}) are exactly "
            "what the profile generator renders",
            detail=f"differs: {', '.join(drift)}",
        )
        for role in ROLES:
            found = self._mismatch(role, layer.live_profile(role))
            checks.require(
                not found,
                f"the {role} runs under the committed {role}.json with only this run's values "
                f"filled in ({layer.profile_path(role)})",
                detail=f"differs at {', '.join(found)}",
            )
        altered = layer.live_profile("reader")
        altered["filesystem"]["read"].append(str(layer.setup.supplier.key_file))
        found = self._mismatch("reader", altered)
        checks.require(
            found == ["filesystem.read"],
            "control: the same comparison reports a copy of the reader's profile with the "
            "supplier key file added to its read list as different, at filesystem.read",
            detail=f"the comparison reported {found or 'no difference'}",
        )

    # files ----------------------------------------------------------------------------------
    def _refusal_with_control(self, role: Role, action: str, path: Path, what: str) -> None:
        """The unconfined control at the tool's uid first, then the role under its profile."""
        checks, uid = self.checks, self.ctx.tool.uid
        suffix = " for writing" if action == "open-write" else ""
        control = self.layer.run_unconfined(action, [str(path)]).result
        checks.require(
            control.get("ok") is True,
            f"control: an unconfined process at uid {uid} can open {what}{suffix}",
            detail=f"the open {_opened_or_errno(control)}",
        )
        confined = self.layer.run(role, action, [str(path)]).result
        errno = confined.get("errno")
        checks.require(
            confined.get("ok") is False and errno in KERNEL_REFUSALS,
            f"the {role} cannot open {what}{suffix}: {errno}",
            detail=f"the open {_opened_or_errno(confined)}; only EACCES or EPERM is a refusal",
        )

    def _reader_reads_proposals(self) -> None:
        """The reader opens every proposal staged for it, each the bytes its case entry names."""
        case, layer = self.ctx.case, self.layer
        seen = {}
        for entry in case.suppliers:
            path = layer.role_path("reader", "in", f"proposals/{entry.id}.json")
            result = layer.run("reader", "read-proposal", [path]).result
            seen[entry.id] = (result.get("supplier_id"), result.get("sha256"))
        expected = {entry.id: (entry.id, entry.sha256) for entry in case.suppliers}
        self.checks.require(
            seen == expected,
            f"the reader reads its assigned proposals ({', '.join(expected)}), each the bytes "
            "whose sha256 the case entry names",
            detail=f"read {seen}",
        )

    def _files(self) -> None:
        checks, layer, ctx = self.checks, self.layer, self.ctx
        checks.begin("files")
        case_file = ctx.paths.workspace("reader").input / "case.json"
        staged = hashlib.sha256(case_file.read_bytes()).hexdigest()
        read = layer.run("reader", "read-case", [layer.role_path("reader", "in", "case.json")])
        checks.require(
            read.result.get("ok") is True and read.result.get("sha256") == staged,
            f"the reader reads its assigned case file, the bytes the controller staged "
            f"(sha256 {staged[:12]}…)",
            detail=f"read-case reported {read.result.get('sha256')}",
        )
        self._reader_reads_proposals()
        self._refusal_with_control(
            "reader",
            "open-write",
            case_file,
            f"its own input case.json (owned by uid {ctx.tool.uid})",
        )
        self._refusal_with_control(
            "reader",
            "open-read",
            ctx.paths.workspace("writer").input / "private.json",
            "the writer's private file",
        )
        self._refusal_with_control(
            "reader", "open-read", ctx.supplier.key_file, "the supplier key file"
        )
        self._refusal_with_control(
            "reader", "open-read", ctx.aws_credential.path, ctx.aws_credential.description
        )
        text = f"written by the writer in run {ctx.run_id}\n"
        written = layer.run(
            "writer", "create-file", [layer.role_path("writer", "out", WRITER_PROBE_FILE), text]
        ).result
        target = ctx.paths.workspace("writer").output / WRITER_PROBE_FILE
        checks.require(
            written.get("ok") is True and target.read_text("utf-8") == text,
            "the writer creates a file in its own output directory and the controller reads the "
            "same bytes back",
            detail=f"the create {_opened_or_errno(written)}",
        )

    # credentials ------------------------------------------------------------------------------
    def _credentials(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin("credentials")
        real = self.ctx.supplier.key_file.read_bytes().strip()
        real_digest = layer.credential_digest(real)
        del real
        seen: dict[Role, str] = {}
        for role in ("reader", "writer"):
            measured = layer.run(role, "credential-digest", []).result
            checks.require(
                measured.get("present") is True and measured.get("non_empty") is True,
                f"the {role} holds a supplier credential: SUPPLIER_API_KEY is set and not empty",
                detail=f"present {measured.get('present')}, non-empty {measured.get('non_empty')}",
            )
            digest = str(measured["digest"])
            issued = layer.credential_digest(layer.issued_placeholder(role))
            checks.require(
                digest == issued and digest != real_digest,
                f"the {role}'s credential is the placeholder its own proxy issued, not the real "
                "supplier key (PBKDF2-HMAC-SHA256 under a per-run key, compared in memory, "
                "nothing kept)",
                detail=(
                    "it is the real supplier key"
                    if digest == real_digest
                    else "it is not the placeholder the proxy issued"
                ),
            )
            seen[role] = digest
        checks.require(
            seen["reader"] != seen["writer"],
            "the reader and the writer hold different placeholders: each online role has its "
            "own proxy",
            detail="both roles hold the same placeholder",
        )
        seen.clear()
        del real_digest

    # environment ------------------------------------------------------------------------------
    def _environment(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin("environment")
        names: dict[Role, list[str]] = {}
        for role in ROLES:
            names[role] = layer.run(role, "env-names", []).result["names"]
            kept = layer.live_profile(role)["environment"]["allow_vars"]
            added = layer.proxy_variable_names(role)
            expected = sorted(set(kept) | set(added))
            extra = sorted(set(names[role]) - set(expected))
            missing = sorted(set(expected) - set(names[role]))
            claim = f"the {role}'s environment is exactly what its profile keeps: {', '.join(kept)}"
            if added:
                claim += f"; plus what its proxy sets: {', '.join(added)}"
            checks.require(
                not extra and not missing,
                claim,
                detail=f"extra {extra}, missing {missing}",
            )
        reader = names["reader"]
        aws_names = sorted(n for n in reader if n.startswith("AWS_"))
        holding = sorted(n for n in reader if n in AWS_CREDENTIAL_VARIABLES)
        checks.require(
            not holding,
            f"the reader has no AWS credential variable ({len(AWS_CREDENTIAL_VARIABLES)} names "
            f"checked); its AWS_ variables are {aws_names}",
            detail=f"it holds {holding}",
        )
        model_keys = sorted(n for n in reader if n in MODEL_KEY_VARIABLES)
        checks.require(
            not model_keys,
            f"the reader has no model API key: {', '.join(MODEL_KEY_VARIABLES)} are all absent",
            detail=f"it holds {model_keys}",
        )

    # network ----------------------------------------------------------------------------------
    def _connect_with_control(self, role: Role, host: str, port: int, what: str) -> None:
        checks, uid = self.checks, self.ctx.tool.uid
        control = self.layer.run_unconfined("tcp-connect", [host, str(port)]).result
        checks.require(
            control.get("ok") is True,
            f"control: an unconfined process at uid {uid} connects to {what} at {host}:{port}",
            detail=f"the connect {_opened_or_errno(control)}",
        )
        confined = self.layer.run(role, "tcp-connect", [host, str(port)]).result
        checks.expect_equal(
            confined.get("errno"),
            "EACCES",
            f"the {role} cannot connect to {what} at {host}:{port} directly: Landlock answers "
            "EACCES",
        )

    def _network(self) -> None:
        checks, layer, ctx = self.checks, self.layer, self.ctx
        checks.begin("network")
        host, port = ctx.aws_endpoint
        self._connect_with_control("reader", host, port, "the controller's AWS endpoint")
        online = layer.run("reader", "socket-inet", []).result
        checks.require(
            online.get("ok") is True,
            "the online reader creates an Internet socket: socket(AF_INET, SOCK_STREAM), no "
            "connect",
            detail=f"socket() {_opened_or_errno(online)}",
        )
        offline = layer.run("evaluator", "socket-inet", []).result
        checks.expect_equal(
            offline.get("errno"),
            "EPERM",
            "the offline evaluator cannot create an Internet socket: the same socket() call "
            "fails with EPERM",
        )
        self._connect_with_control(
            "reader", ctx.supplier.address, ctx.supplier.port, "the supplier API"
        )

    # the proxy's endpoint policy --------------------------------------------------------------
    def _role_request(
        self, role: Role, method: str, path: str, body_file: str = "-"
    ) -> tuple[dict[str, Any], list[AuditEvent]]:
        """One request by the role through its proxy, recorded in the run's call log."""
        layer = self.layer
        request_id = layer.next_request_id(role)
        mark = layer.audit_mark(role)
        result = layer.run(role, "supplier-request", [method, path, body_file, request_id]).result
        events = layer.audit_since(role, mark)
        self.ctx.supplier_client.calls.record(
            CallRecord(
                request_id,
                role,
                method,
                path,
                self.supplier_host,
                result.get("status"),
                _forwarded(events),
            )
        )
        return result, events

    def _expect_status(
        self,
        role: Role,
        method: str,
        path: str,
        result: dict[str, Any],
        status: int,
        via: str = "through its proxy",
    ) -> None:
        observed = result.get("status") if result.get("ok") else result.get("errno")
        self.checks.expect_equal(
            observed, status, f"{role}: {method} {path} {via} returns {status}"
        )

    def _expect_audit(
        self, role: Role, method: str, path: str, events: list[AuditEvent], allowed: int | None
    ) -> None:
        """The audit record for this one request: allowed with the supplier's status, or denied
        by the endpoint policy and never forwarded."""
        mine = [
            e
            for e in events
            if e["mode"] == "reverse" and e["method"] == method and e["path"] == path
        ]
        summary = [(e["decision"], e["status"], e["denial_category"]) for e in mine]
        if allowed is not None:
            held = (
                _forwarded(mine)
                and all(e["decision"] == "allow" for e in mine)
                and any(e["status"] == allowed for e in mine)
            )
            claim = (
                f"nono's audit records the {role}'s {method} {path}: allow, forwarded, supplier "
                f"status {allowed}"
            )
        else:
            held = (
                bool(mine)
                and not _forwarded(mine)
                and any(
                    e["decision"] == "deny" and e["denial_category"] == "endpoint_policy"
                    for e in mine
                )
            )
            claim = (
                f"nono's audit records the {role}'s {method} {path}: deny by the endpoint policy, "
                "not forwarded"
            )
        self.checks.require(held, claim, detail=f"records {summary}")

    def _denied_but_accepted_upstream(self, method: str, path: str, accepted: int) -> None:
        """The supplier takes it from the controller with the real key; the writer's proxy won't."""
        reply = self.ctx.supplier_client.request(
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

    def _endpoint_policy(self) -> None:
        checks, layer, ctx = self.checks, self.layer, self.ctx
        checks.begin("supplier proxy")
        read = f"/cases/{self.case_id}/suppliers"
        result, events = self._role_request("reader", "GET", read)
        self._expect_status("reader", "GET", read, result, 200)
        self._expect_audit("reader", "GET", read, events, 200)

        alias = urlsplit(ctx.supplier.alias_url)
        reply = ctx.supplier_client.request("GET", read, url=ctx.supplier.alias_url)
        checks.expect_equal(
            reply.status,
            200,
            f"control: the controller reaches the same server by its second name, "
            f"{alias.hostname}, with the real key: GET {read} returns 200",
        )
        request_id = layer.next_request_id("reader")
        mark = layer.audit_mark("reader")
        tunnel = layer.run("reader", "alias-request", [ctx.supplier.alias_url, request_id]).result
        events = layer.audit_since("reader", mark)
        authority = f"{alias.hostname}:{alias.port}"
        ctx.supplier_client.calls.record(
            CallRecord(
                request_id, "reader", "CONNECT", authority, alias.hostname or "",
                tunnel.get("connect_status"), False,
            )
        )  # fmt: skip
        checks.expect_equal(
            tunnel.get("connect_status") if tunnel.get("ok") else tunnel.get("errno"),
            403,
            f"reader: its proxy refuses a tunnel to {authority}, the second name for the same "
            "server: CONNECT answered 403",
        )
        denied = [
            e
            for e in events
            if e["mode"] == "connect"
            and e["target"] == alias.hostname
            and e["port"] == alias.port
            and e["decision"] == "deny"
            and e["denial_category"] == "host_denied"
        ]
        checks.require(
            len(denied) == 1,
            f"nono's audit records the refused host {authority}: deny, host not allowed",
            detail=f"records {[(e['mode'], e['target'], e['decision']) for e in events]}",
        )

        self._placeholder_is_per_role(read)

        draft = f"/cases/{self.case_id}/recommendations"
        result, events = self._role_request("reader", "POST", draft)
        self._expect_status("reader", "POST", draft, result, 403)
        self._expect_audit("reader", "POST", draft, events, None)

        supplier_id = ctx.case.suppliers[0].id
        self._denied_but_accepted_upstream("PATCH", f"/suppliers/{supplier_id}", 200)
        self._denied_but_accepted_upstream("POST", "/purchase-orders", 201)
        self._denied_but_accepted_upstream("GET", f"/cases/{self.ctx.other_case_id}/suppliers", 200)

    def _placeholder_is_per_role(self, read: str) -> None:
        """The writer's proxy takes its own placeholder and refuses the reader's."""
        checks, layer, ctx = self.checks, self.layer, self.ctx
        result, events = self._role_request("writer", "GET", read)
        self._expect_status("writer", "GET", read, result, 200)
        self._expect_audit("writer", "GET", read, events, 200)
        request_id = ctx.supplier_client.next_request_id()
        mark = layer.audit_mark("writer")
        status = layer.send_through_proxy(
            "writer", "GET", read, key=layer.issued_placeholder("reader"), request_id=request_id
        )
        events = layer.audit_since("writer", mark)
        ctx.supplier_client.calls.record(
            CallRecord(
                request_id, "controller", "GET", read, self.supplier_host, status,
                _forwarded(events),
            )
        )  # fmt: skip
        rejected = [
            e
            for e in events
            if e["decision"] == "deny" and e["denial_category"] == "authentication_failed"
        ]
        summary = [(e["decision"], e["denial_category"]) for e in events]
        checks.require(
            status == 401 and len(rejected) == 1 and not _forwarded(events),
            f"the writer's proxy refuses the reader's placeholder on GET {read} with 401 and "
            "records deny (authentication failed): a placeholder works only at its own proxy",
            detail=f"status {status}, records {summary}",
        )

    # business -----------------------------------------------------------------------------------
    def submit_draft(self, draft_path: Path) -> None:
        path = f"/cases/{self.case_id}/recommendations"
        result, events = self._role_request("writer", "POST", path, str(draft_path))
        self._expect_status(
            "writer", "POST", path, result, 201, via="with its draft through its proxy"
        )
        self._expect_audit("writer", "POST", path, events, 201)
