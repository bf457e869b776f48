"""The commands a user runs next, as stack outputs: kubeconfig, a Job's log, the reports.

Pure: settings in, one shell command line out, each value quoted for the shell.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class AwsCli:
    """How the user's AWS CLI reaches the stack: the Region, the cluster, and the identity the
    stack deploys with."""

    region: str
    cluster_name: str
    profile: str = ""
    role_arn: str = ""

    def identity(self) -> list[str]:
        # The same profile the stack deploys with (a role, if any, is assumed by the user's own
        # profile setup; the commands name only what the CLI takes directly).
        return ["--profile", self.profile] if self.profile else []


def kubeconfig_command(aws: AwsCli) -> str:
    """`aws eks update-kubeconfig` for the stack's cluster, so kubectl can follow the Jobs."""
    args = ["aws", *aws.identity(), "eks", "update-kubeconfig"]
    args += ["--region", aws.region, "--name", aws.cluster_name]
    if aws.role_arn:
        args += ["--role-arn", aws.role_arn]
    return shlex.join(args)


def logs_command(job_name: str, namespace: str) -> str:
    """`kubectl logs -f` for one Job: its check list, one PASS/FAIL/SKIP line per check."""
    return shlex.join(["kubectl", "logs", "-f", f"job/{job_name}", "-n", namespace])


def nitro_evidence_command(layer: str, namespace: str) -> str:
    """The side-by-side guest readings of a layer's analyst pod and the ordinary pod beside it,
    run from this checkout with the kubeconfig `kubeconfigCommand` writes."""
    return shlex.join(
        [".venv/bin/python", "-m", "app.controller", "nitro-evidence", "--layer", layer,
         "--namespace", namespace]
    )  # fmt: skip


def reports_command(aws: AwsCli, bucket: str, report_prefix: str) -> str:
    """`aws s3 ls` of the case's reports in the stack's bucket."""
    args = ["aws", *aws.identity(), "s3", "ls", f"s3://{bucket}/{report_prefix}"]
    args += ["--recursive", "--region", aws.region]
    return shlex.join(args)
