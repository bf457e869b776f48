"""What the rehearsal itself checks about a Job's pod once it has run: its exit code and log,
the cluster-mode lines in that log, where the report landed, what the init container did to
the guest's setting, what the Pod Identity agent served, and the seccomp filters the Job
counted; and, before any pod, the profiles the operator stand-in put on the node."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from app.core import cluster_env as env
from app.core.roles import ROLES, Layer
from app.tools import catalogue as tools
from app.tools.catalogue import controller as c
from app.tools.inherited import over_inherited
from infra.pod_specs import USERNS_SYSCTL

from .aws import RehearsalAws
from .kubelet import ContainerRun
from .pod_identity import PodIdentityAgent
from .pods import PodResult
from .seccomp_profiles import Node

# The checks only a run in the analyst Job's pod makes, by id: each must PASS in the run's own
# checks.json, as the Job stored it.
CLUSTER_CHECKS: Final = (
    c.CREDENTIAL_SOURCE.id,
    c.CALLER.id,
    *(tools.HIDDEN.id_for(target="aws-credential", role=role) for role in ROLES),
    tools.HIDDEN_CONTROL.id_for(target="aws-credential"),
    c.SERVICE_NAME.id,
    c.SECRET_FILE_MODE.id,
)
# The credential source the SDK must report in the Job (the controller's cluster environment).
POD_IDENTITY_SOURCE: Final = "EKS Pod Identity"
_COMPLETE = re.compile(r"^ANALYST_COMPLETE=([0-9a-f]{32})$")


@dataclass
class Verdicts:
    """The rehearsal's own PASS/FAIL lines; any FAIL makes it exit 1."""

    stream: TextIO
    lines: list[str] = field(default_factory=list)

    def check(self, ok: bool, claim: str, detail: str = "") -> bool:
        line = f"{'PASS' if ok else 'FAIL'} rehearsal: {claim}"
        if detail and not ok:
            line += f" ({detail})"
        self.lines.append(line)
        print(line, file=self.stream, flush=True)
        return ok

    @property
    def failed(self) -> bool:
        return any(line.startswith("FAIL") for line in self.lines)


def init_outcome(result: PodResult, host_value: str, verdicts: Verdicts) -> None:
    """What each init container did, and the guest stand-in's value it left."""
    pod = result.context
    if pod is None:
        return
    inits = [run for run in result.runs if ".initContainers[" in run.where]
    for run in inits:
        verdicts.check(
            run.exit_code == 0,
            f"init container {run.name} ran to completion first ({run.where}), as uid "
            f"{run.privileges.uid}{', privileged' if run.privileges.privileged else ''}",
            f"exit code {run.exit_code}: {' / '.join(run.log[-3:])}",
        )
    for stand_in in pod.stand_ins:
        value = Path(stand_in["source"]).read_text(encoding="ascii").strip()
        print(
            f"  guest stand-in: {USERNS_SYSCTL} in pod {result.name} reads {value} "
            f"({'written by ' + ', '.join(r.name for r in inits) if inits else 'no init container'}"
            f"; it started at 0, as a Nitro guest does); this machine's own setting is "
            f"{host_value}, untouched",
            file=verdicts.stream,
        )


@dataclass(frozen=True)
class StoredRun:
    """What a Job's run left in the store: its checks by id, and its evidence."""

    prefix: str
    keys: list[str]
    checks: dict[str, dict[str, Any]]
    evidence: dict[str, Any]

    @classmethod
    def read(cls, aws: RehearsalAws, run_id: str) -> StoredRun:
        prefix = f"reports/{aws.stack.config.case_id}/{run_id}/"
        keys = aws.keys_under(prefix)
        stored = {
            name: json.loads(aws.read(prefix + name)) if prefix + name in keys else {}
            for name in ("checks.json", "evidence.json")
        }
        checks = {check["id"]: check for check in stored["checks.json"].get("checks", [])}
        return cls(prefix, keys, checks, stored["evidence.json"])

    def outcome(self, check_id: str) -> str:
        return str(self.checks.get(check_id, {}).get("outcome", "absent"))

    def unpassed(self, check_ids: tuple[str, ...] | list[str]) -> list[str]:
        return [f"{i}: {self.outcome(i)}" for i in check_ids if self.outcome(i) != "PASS"]


def analyst_verdicts(
    result: PodResult,
    layer: Layer,
    aws: RehearsalAws,
    agent: PodIdentityAgent,
    verdicts: Verdicts,
    added: dict[str, str],
) -> StoredRun | None:
    """The Job's own verdict, then what its run stored; the stored run, for later verdicts."""
    log = result.log("analyst")
    fails = [line for line in log if line.startswith("FAIL ")]
    run_ids = [m.group(1) for m in map(_COMPLETE.match, log) if m]
    if not verdicts.check(
        result.succeeded and not fails and len(run_ids) == 1,
        f"the {layer} Job's pod {result.name} exits 0 with ANALYST_COMPLETE and no FAIL line",
        result.refusal
        or f"exit code {result.exit_code}, {len(fails)} FAIL lines: "
        + " | ".join(fails[:2] or log[-3:]),
    ):
        return None
    stored = StoredRun.read(aws, run_ids[0])
    verdicts.check(
        f"{stored.prefix}recommendation.md" in stored.keys and bool(stored.checks),
        f"the report landed in the store: s3://{aws.bucket}/{stored.prefix} holds "
        + ", ".join(key.removeprefix(stored.prefix) for key in stored.keys),
        f"found {stored.keys}",
    )
    credentials = stored.checks.get(c.CREDENTIAL_SOURCE.id, {}).get("claim", "")
    missing = stored.unpassed(CLUSTER_CHECKS)
    verdicts.check(
        not missing and POD_IDENTITY_SOURCE in credentials,
        f"its checks.json passes the cluster-mode checks {', '.join(CLUSTER_CHECKS)}, the "
        f"credentials from {POD_IDENTITY_SOURCE}",
        f"not passed: {missing}; {credentials!r}",
    )
    bedrock = stored.checks.get(c.BEDROCK_USAGE.id, {})
    verdicts.check(
        bedrock.get("outcome") == "SKIP" and "a rehearsal" in str(bedrock.get("detail")),
        f"Bedrock's token-usage check ({c.BEDROCK_USAGE.id}) is a SKIP that names the "
        "rehearsal, never a PASS",
        f"found {bedrock}",
    )
    image_named(stored, next(run for run in result.runs if run.name == "analyst"), verdicts)
    served = [line for line in agent.record.served if line.startswith(f"{result.name}:")]
    verdicts.check(
        bool(served),
        f"the Pod Identity agent stand-in served {result.name} the role's session: "
        + (served[0].split(": ", 1)[1] if served else "none"),
        f"refused: {agent.record.refused}",
    )
    print(
        f"  the rehearsal added {', '.join(added)} to the pod's environment; nothing else "
        "differs from the manifest",
        file=verdicts.stream,
    )
    return stored


def image_named(stored: StoredRun, analyst: ContainerRun, verdicts: Verdicts) -> None:
    """The report's code revision is the image reference the container was given and ran."""
    told = analyst.env.get(env.IMAGE)
    revision = stored.evidence.get("provenance", {}).get("code_revision", {})
    verdicts.check(
        told == analyst.image and revision == {**revision, "source": "image", "value": told},
        f"its evidence.json names the image the pod ran, {analyst.image}, as the code revision "
        "report.html shows",
        f"{env.IMAGE}={told}; code_revision is {revision}",
    )


def installed_profiles(node: Node, verdicts: Verdicts) -> None:
    """Each SeccompProfile the operator stand-in wrote is the committed profile, byte for byte."""
    for installed in node.installed:
        difference = installed.committed_difference()
        verdicts.check(
            not difference,
            f"SeccompProfile {installed.name} carries the committed "
            f"policies/bubblewrap/container-seccomp.json byte for byte (sha256 "
            f"{installed.sha256[:12]}…), written to {installed.node_path}",
            f"its spec differs from the committed file: {difference}",
        )


def filter_counts(result: PodResult, verdicts: Verdicts) -> None:
    """The Job's filter counts (its PASS lines that read Seccomp_filters) hold exactly the filter
    the container's profile gave the controller: one over the tool's own, or none."""
    run = next((r for r in result.runs if r.name == "analyst"), None)
    if run is None or not result.succeeded:
        return
    counts = [line for line in run.log if line.startswith("PASS ") and "Seccomp_filters " in line]
    inherited = 0 if run.seccomp.file is None else 1
    words = over_inherited(inherited) or "the controller itself runs under"
    counted = [line for line in counts if words in line]
    verdicts.check(
        bool(counts) and len(counted) == (len(counts) if inherited else 0),
        f"the Job's {len(counts)} filter counts each count in the {inherited} "
        f"filter{'' if inherited == 1 else 's'} the controller holds from its container's "
        f"profile ({run.seccomp.kind})",
        f"{len(counted)} of them say {words!r}",
    )


def egress_verdicts(stored: StoredRun, denied: list[tuple[str, int]], verdicts: Verdicts) -> None:
    """The Job's own egress check ran under the rules: both controls, one refusal per
    destination, each a PASS of its checks.json."""
    controls = [c.EGRESS_CONTROL.id_for(target=target) for target in ("sts", "supplier")]
    refused = [c.EGRESS_REFUSED.id_for(key=c.egress_key(host, port)) for host, port in denied]
    missing = stored.unpassed([*controls, *refused])
    verdicts.check(
        not missing,
        f"the Job's egress check passed under the policy's rules: {', '.join(controls)} "
        f"reached, {', '.join(refused)} refused",
        f"not passed: {missing}",
    )
