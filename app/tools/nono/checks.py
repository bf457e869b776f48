"""The nono layer's own checks: profiles against the committed files, then every file,
credential and network refusal beside a control in which the same operation succeeds.

Nothing here records a credential, a placeholder or a digest: the credential comparison is made
in memory and only its outcome becomes a check line. Failure details name errnos and statuses,
never a probe's full result (an unconfined open reports a file's identity).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from app.core.draft import ExpectedDraft
from app.core.results import Errno, ToolResult, ToolRunError
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.tools import catalogue as common_catalogue
from app.tools.attack_checks import AttackChecks
from app.tools.common_checks import CommonChecks
from app.tools.layer import LayerChecks, LayerReadings
from app.tools.nono import catalogue as c
from app.tools.nono import render
from app.tools.nono.attack_answers import ANSWERS
from app.tools.nono.endpoint_checks import EndpointChecks
from app.tools.nono.policy import differences, fill, intended_variables
from app.tools.nono.process_checks import NonoProcessChecks
from app.tools.nono.runner import NonoRunner
from app.tools.together import run_named, run_together


class NonoChecks(LayerChecks):
    """process: the profiles and environments; boundary: files, credentials, network and the
    proxies' endpoint policy; submit_draft: the writer's own POST through its proxy."""

    refuses_upstream = True
    submission = c.SUBMISSION
    process_sections = (c.PROFILES, c.ENVIRONMENT_SECTION, c.PROCESS)
    boundary_sections = (
        c.FILES,
        c.CREDENTIALS,
        c.NETWORK,
        common_catalogue.ATTACKS_SECTION,
        c.SUPPLIER_PROXY,
    )

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.common = CommonChecks(run, layer)
        self.endpoints = EndpointChecks(run, layer)
        self.processes = NonoProcessChecks(run, layer)
        self.attacks = AttackChecks(run, layer, ANSWERS)

    def process(self) -> None:
        self._profiles()
        self._environment()
        self.processes.check()

    def boundary(self) -> None:
        # Each online role has run, so its proxy has issued its placeholder.
        self.layer.prefetch_credential_digests()
        self._files()
        self._credentials()
        self._network()
        self.attacks.check()
        self.endpoints.check()

    def submit_draft(self, draft_path: Path, expected: ExpectedDraft) -> None:
        self.endpoints.submit_draft(draft_path, expected)

    def readings(self) -> LayerReadings:
        return LayerReadings(process=self.processes.readings, attacks=self.attacks.answers_seen)

    # --- profiles -----------------------------------------------------------------------------

    def _mismatch(self, role: Role, profile: dict[str, Any]) -> list[str]:
        """Where a profile differs from the committed file with this run's values filled in."""
        committed = json.loads((self.layer.committed_dir / f"{role}.json").read_text("utf-8"))
        return differences(profile, fill(committed, self.layer.values))

    def _profiles(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin(c.PROFILES)
        drift = render.drifted(layer.committed_dir, layer.widening, layer.omit)
        checks.require(
            c.COMMITTED(files=", ".join(f"{r}.json" for r in ROLES)),
            not drift,
            detail=f"differs: {', '.join(path.name for path in drift)}"
            if drift
            else f"in {layer.committed_dir}",
        )
        for role in ROLES:
            found = self._mismatch(role, layer.live_profile(role))
            checks.require(
                c.LIVE(role=role),
                not found,
                detail=f"{layer.profile_path(role)}"
                + (f" differs at {', '.join(found)}" if found else ""),
            )
        altered = layer.live_profile("reader")
        altered["filesystem"]["read"].append(str(self.run.supplier.key_file))
        found = self._mismatch("reader", altered)
        checks.require(
            c.COMPARISON_CONTROL,
            found == ["filesystem.read"],
            detail=f"the comparison reported {found or 'no difference'}",
        )

    # --- environment --------------------------------------------------------------------------

    def _environment(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin(c.ENVIRONMENT_SECTION)
        names: dict[Role, list[str]] = {}
        # Each role's first start, all at once (each starts its own proxy, if it has one).
        started = run_together([partial(layer.run_tool, role, "env-names") for role in ROLES])
        for role, outcome in zip(ROLES, started, strict=True):
            names[role] = list(
                checks.holds(c.STARTS(role=role), outcome.result, refusals=(ToolRunError,)).data[
                    "names"
                ]
            )
            kept = intended_variables(role)
            added = layer.proxies.variable_names(role)
            expected = sorted(set(kept) | set(added))
            extra = sorted(set(names[role]) - set(expected))
            missing = sorted(set(expected) - set(names[role]))
            checks.require(
                c.ENVIRONMENT(
                    role=role,
                    kept=", ".join(kept),
                    proxy="; plus what its proxy sets" if added else "",
                ),
                not extra and not missing,
                detail=f"extra {extra}, missing {missing}"
                if extra or missing
                else ", ".join(sorted(set(added) - set(kept)))
                if added
                else "nothing else",
            )
        self.common.no_credential_variables(names["reader"])

    # --- files --------------------------------------------------------------------------------

    def _files(self) -> None:
        self.checks.begin(c.FILES)
        self.common.read_only_file_checks()
        self.common.writer_file_read_back()
        self.common.roles_keep_to_their_directories()

    # --- credentials --------------------------------------------------------------------------

    def _credentials(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin(c.CREDENTIALS)
        online: tuple[Role, ...] = c.ONLINE_ROLES
        real = self.run.supplier.key_file.read_bytes().strip()
        # The roles' digests and the controller's (PBKDF2 lets other threads run) at once.
        calls: dict[str, Callable[[], Any]] = {
            "real": partial(layer.credential_digest, real),
            **{role: partial(layer.run_tool, role, "credential-digest") for role in online},
            **{
                f"{role} issued": partial(layer.credential_digest, layer.proxies.placeholder(role))
                for role in online
            },
        }
        del real
        got = run_named(calls)
        real_digest = str(got["real"].result())
        seen: dict[Role, str] = {}
        for role in online:
            measured = got[role].result().data
            checks.require(
                c.HOLDS_CREDENTIAL(role=role),
                measured.get("present") is True and measured.get("non_empty") is True,
                detail=f"present {measured.get('present')}, non-empty {measured.get('non_empty')}",
            )
            digest = str(measured["digest"])
            issued = str(got[f"{role} issued"].result())
            checks.require(
                c.PLACEHOLDER(role=role),
                digest == issued and digest != real_digest,
                detail=(
                    "it is the real supplier key"
                    if digest == real_digest
                    else "it is not the placeholder the proxy issued"
                    if digest != issued
                    else "its digest is the issued placeholder's, not the real key's"
                ),
            )
            seen[role] = digest
        checks.require(
            c.DISTINCT_PLACEHOLDERS,
            seen["reader"] != seen["writer"],
            detail="both roles hold the same placeholder"
            if seen["reader"] == seen["writer"]
            else "their digests differ",
        )
        seen.clear()
        calls.clear()
        got.clear()
        del real_digest

    # --- network ------------------------------------------------------------------------------

    def _connect_calls(
        self, name: str, role: Role, host: str, port: int
    ) -> dict[str, Callable[[], ToolResult]]:
        """The control's connect and the role's, named ``name`` and ``name`` + " control"."""
        return {
            f"{name} control": partial(self.layer.run_unconfined, "tcp-connect", host, str(port)),
            name: partial(self.layer.run_tool, role, "tcp-connect", host, str(port)),
        }

    def _connect_with_control(
        self,
        target: str,
        host: str,
        port: int,
        what: str,
        control: ToolResult,
        confined: ToolResult,
    ) -> None:
        checks, uid = self.checks, self.run.tool.uid
        checks.require(
            c.CONNECT_CONTROL(target=target, uid=uid, what=what),
            control.ok,
            detail=f"{host}:{port}: the connect {control.observed}",
        )
        checks.require(
            c.CONNECT_REFUSED(target=target, what=what),
            confined.refused_with(Errno.EACCES),
            detail=f"{host}:{port}: observed {confined.observed}",
        )

    def _network(self) -> None:
        checks, layer, run = self.checks, self.layer, self.run
        checks.begin(c.NETWORK)
        host, port = run.aws_endpoint
        supplier = (run.supplier.address, run.supplier.port)
        # Every call at once: each connects (or is refused) on its own, and sends nothing.
        calls: dict[str, Callable[[], ToolResult]] = {
            **self._connect_calls("aws", "reader", host, port),
            "online": partial(layer.run_tool, "reader", "socket-inet"),
            "offline": partial(layer.run_tool, "evaluator", "socket-inet"),
            **self._connect_calls("supplier", "reader", *supplier),
        }
        got = run_named(calls)
        self._connect_with_control(
            "aws",
            host,
            port,
            "the controller's AWS endpoint",
            got["aws control"].result(),
            got["aws"].result(),
        )
        online = got["online"].result()
        checks.require(c.SOCKET_CONTROL, online.ok, detail=f"socket() {online.observed}")
        offline = got["offline"].result()
        checks.require(
            c.NO_SOCKET, offline.refused_with(Errno.EPERM), detail=f"observed {offline.observed}"
        )
        self._connect_with_control(
            "supplier",
            *supplier,
            "the supplier API",
            got["supplier control"].result(),
            got["supplier"].result(),
        )
