"""The nono layer's own checks: profiles against the committed files, then every file,
credential and network refusal beside a control in which the same operation succeeds.

Nothing here records a credential, a placeholder or a digest: the credential comparison is made
in memory and only its outcome becomes a check line. Failure details name errnos and statuses,
never a probe's full result (an unconfined open reports a file's identity).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from app.core.draft import ExpectedDraft
from app.core.results import Errno, ToolRunError
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.tools.attack_checks import AttackChecks
from app.tools.catalogue import ATTACKS_SECTION
from app.tools.catalogue import nono as c
from app.tools.catalogue.order import NONO, make_in_order
from app.tools.common_checks import CommonChecks
from app.tools.layer import LayerChecks, LayerReadings
from app.tools.nono import render
from app.tools.nono.attack_answers import ANSWERS
from app.tools.nono.endpoint_checks import EndpointChecks
from app.tools.nono.policy import differences, fill, intended_variables, policy_file
from app.tools.nono.process_checks import NonoProcessChecks
from app.tools.nono.runner import NonoRunner


class NonoChecks(LayerChecks):
    """process: the profiles, environments and the reader seen from the host; boundary: files,
    credentials, network, attacks and the proxies' endpoint policy (each in the catalogue's
    order, order.NONO); submit_draft: the writer's own POST through its proxy."""

    refuses_upstream = True
    submission = NONO.submission
    process_sections = NONO.process
    boundary_sections = NONO.boundary

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.common = CommonChecks(run, layer)
        self.endpoints = EndpointChecks(run, layer)
        self.processes = NonoProcessChecks(run, layer)
        self.attacks = AttackChecks(run, layer, ANSWERS)

    def process(self) -> None:
        make_in_order(
            self.checks,
            self.process_sections,
            {
                c.PROFILES.name: self._profiles,
                c.ENVIRONMENT_SECTION.name: self._environment,
                c.PROCESS.name: self.processes.check,
            },
        )

    def boundary(self) -> None:
        # Each online role has run, so its proxy has issued its placeholder.
        self.layer.prefetch_credential_digests()
        make_in_order(
            self.checks,
            self.boundary_sections,
            {
                c.FILES.name: partial(self.common.files, c.FILES),
                c.CREDENTIALS.name: self._credentials,
                c.NETWORK.name: self._network,
                ATTACKS_SECTION.name: self.attacks.check,
                c.SUPPLIER_PROXY.name: self.endpoints.check,
            },
        )

    def submit_draft(self, draft_path: Path, expected: ExpectedDraft) -> None:
        self.endpoints.submit_draft(draft_path, expected)

    def readings(self) -> LayerReadings:
        return LayerReadings(process=self.processes.readings, attacks=self.attacks.answers_seen)

    # --- profiles -----------------------------------------------------------------------------

    def _mismatch(self, role: Role, profile: dict[str, Any]) -> list[str]:
        """Where a profile differs from the committed file with this run's values filled in."""
        committed = json.loads((self.layer.committed_dir / policy_file(role)).read_text("utf-8"))
        return differences(profile, fill(committed, self.layer.values))

    def _profiles(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin(c.PROFILES)
        drift = render.drifted(layer.committed_dir, layer.profiles, layer.omit)
        checks.require(
            c.COMMITTED(files=", ".join(policy_file(r) for r in ROLES)),
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

        def first_start(role: Role) -> None:
            started = checks.holds(
                c.STARTS(role=role),
                partial(layer.run_tool, role, "env-names"),
                refusals=(ToolRunError,),
            )
            names[role] = list(started.data["names"])
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

        # Each role's first start (which starts its own proxy, if it has one).
        checks.at_once_in_plan(
            {c.STARTS.id_for(role=role): partial(first_start, role) for role in ROLES}
        )
        self.common.no_credential_variables(names["reader"])

    # --- credentials --------------------------------------------------------------------------

    def _credentials(self) -> None:
        checks, layer = self.checks, self.layer
        checks.begin(c.CREDENTIALS)
        online: tuple[Role, ...] = c.ONLINE_ROLES
        real_digest = layer.digests.digest(self.run.supplier.key_file.read_bytes().strip())
        seen: dict[Role, str] = {}

        def holds_placeholder(role: Role) -> None:
            measured = layer.run_tool(role, "credential-digest").data
            checks.require(
                c.HOLDS_CREDENTIAL(role=role),
                measured.get("present") is True and measured.get("non_empty") is True,
                detail=f"present {measured.get('present')}, non-empty {measured.get('non_empty')}",
            )
            digest = str(measured["digest"])
            issued = layer.digests.digest(layer.proxies.placeholder(role))
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

        checks.at_once_in_plan(
            {
                c.HOLDS_CREDENTIAL.id_for(role=role): partial(holds_placeholder, role)
                for role in online
            }
        )
        checks.require(
            c.DISTINCT_PLACEHOLDERS,
            seen["reader"] != seen["writer"],
            detail="both roles hold the same placeholder"
            if seen["reader"] == seen["writer"]
            else "their digests differ",
        )
        seen.clear()

    # --- network ------------------------------------------------------------------------------

    def _connect_control(self, target: str, host: str, port: int, what: str) -> None:
        """An unconfined connect to ``host:port`` at the tool's uid, which sends no byte."""
        uid = self.run.tool.uid
        control = self.layer.run_unconfined("tcp-connect", host, str(port))
        self.checks.require(
            c.CONNECT_CONTROL(target=target, uid=uid, what=what),
            control.ok,
            detail=f"{host}:{port}: the connect {control.observed}",
        )

    def _connect_refused(self, target: str, host: str, port: int, what: str) -> None:
        """The reader's connect to ``host:port``, which Landlock refuses."""
        confined = self.layer.run_tool("reader", "tcp-connect", host, str(port))
        self.checks.require(
            c.CONNECT_REFUSED(target=target, what=what),
            confined.refused_with(Errno.EACCES),
            detail=f"{host}:{port}: observed {confined.observed}",
        )

    def _network(self) -> None:
        checks, layer, run = self.checks, self.layer, self.run
        checks.begin(c.NETWORK)
        host, port = run.aws_endpoint
        supplier = (run.supplier.address, run.supplier.port)

        def online_socket() -> None:
            online = layer.run_tool("reader", "socket-inet")
            checks.require(c.SOCKET_CONTROL, online.ok, detail=f"socket() {online.observed}")

        def offline_socket() -> None:
            offline = layer.run_tool("evaluator", "socket-inet")
            checks.require(
                c.NO_SOCKET,
                offline.refused_with(Errno.EPERM),
                detail=f"observed {offline.observed}",
            )

        targets = {
            "aws": (host, port, "the controller's AWS endpoint"),
            "supplier": (*supplier, "the supplier API"),
        }
        checks.at_once_in_plan(
            {
                c.SOCKET_CONTROL.id: online_socket,
                c.NO_SOCKET.id: offline_socket,
                **{
                    made.id_for(target=target): partial(connect, target, *at)
                    for target, at in targets.items()
                    for made, connect in (
                        (c.CONNECT_CONTROL, self._connect_control),
                        (c.CONNECT_REFUSED, self._connect_refused),
                    )
                },
            }
        )
