"""What the rehearsal itself checks about a Job's pod once it has run: its exit code and log,
the cluster-mode lines in that log, where the report landed, what the init container did to
the guest's setting, what the Pod Identity agent served, and the seccomp filters the Job
counted; and, before any pod, the profiles the operator stand-in put on the node."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TextIO

from app.core.roles import ROLES, Layer
from app.tools.inherited import over_inherited
from infra.pod_specs import USERNS_SYSCTL

from .aws import RehearsalAws
from .pod_identity import PodIdentityAgent
from .pods import PodResult
from .seccomp_profiles import Node

# The cluster-mode lines every analyst Job's log must hold, as PASS lines.
CLUSTER_LINES: Final = (
    (
        "the AWS SDK's credential provider is the container provider",
        "the AWS SDK takes the "
        "controller's credentials from EKS Pod Identity (the container credential provider)",
    ),
    ("the caller is the stack's role", "the caller is the analyst's role ("),
    *(
        (
            f"the {role} cannot open the Pod Identity token file",
            f"the {role} cannot open the Pod Identity token file",
        )
        for role in ROLES
    ),
    ("the controller can open it", "opens the Pod Identity token file ("),
    (
        "the supplier is reached by its Service name over verified TLS",
        "the controller reaches the supplier API by its Service's cluster DNS name",
    ),
    ("the Secret's file has the manifest's mode", "the supplier key Secret's file "),
)
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


def analyst_verdicts(
    result: PodResult,
    layer: Layer,
    aws: RehearsalAws,
    agent: PodIdentityAgent,
    verdicts: Verdicts,
    added: dict[str, str],
) -> None:
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
        return
    passes = [line for line in log if line.startswith("PASS ")]
    missing = [name for name, text in CLUSTER_LINES if not any(text in line for line in passes)]
    verdicts.check(
        not missing,
        f"its log holds the cluster-mode lines: {'; '.join(name for name, _ in CLUSTER_LINES)}",
        f"missing: {missing}",
    )
    bedrock = [line for line in log if line.startswith("SKIP Bedrock returned")]
    verdicts.check(
        len(bedrock) == 1 and "a rehearsal" in bedrock[0],
        "Bedrock's token-usage check is a SKIP that names the rehearsal, never a PASS",
        f"found {bedrock}",
    )
    prefix = f"reports/{aws.stack.config.case_id}/{run_ids[0]}/"
    keys = aws.keys_under(prefix)
    verdicts.check(
        f"{prefix}recommendation.md" in keys,
        f"the report landed in the store: s3://{aws.bucket}/{prefix} holds "
        + ", ".join(key.removeprefix(prefix) for key in keys),
        f"found {keys}",
    )
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


def egress_verdicts(result: PodResult, denied: list[tuple[str, int]], verdicts: Verdicts) -> None:
    """The Job's own egress check ran under the rules: two controls, one refusal per destination."""
    log = result.log("analyst")
    controls = [line for line in log if line.startswith("PASS control: the controller connects")]
    refused = [
        line
        for host, port in denied
        for line in log
        if line.startswith(f"PASS so the controller cannot reach {host}:{port}, ")
    ]
    verdicts.check(
        len(controls) == 2 and len(refused) == len(denied),
        f"the Job's egress check passed under the policy's rules: {len(controls)} controls "
        f"reached, {len(refused)} of {len(denied)} unnamed destinations refused",
        " | ".join(line for line in log if "egress" in line or "cannot reach" in line)[:400],
    )
