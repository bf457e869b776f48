"""The commands a user runs next, as stack outputs: kubeconfig, a Job's log, the reports.

Pure: settings in, one shell command line out, each value quoted for the shell.
"""

from __future__ import annotations

import shlex

from .config import StackConfig


def _aws_identity(config: StackConfig) -> list[str]:
    # The same profile the stack deploys with (a role, if any, is assumed by the user's own
    # profile setup; the commands name only what the CLI takes directly).
    return ["--profile", config.aws_profile] if config.aws_profile else []


def kubeconfig_command(config: StackConfig) -> str:
    """`aws eks update-kubeconfig` for the stack's cluster, so kubectl can follow the Jobs."""
    args = ["aws", *_aws_identity(config), "eks", "update-kubeconfig"]
    args += ["--region", config.region, "--name", config.cluster_name]
    if config.aws_role_arn:
        args += ["--role-arn", config.aws_role_arn]
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


def reports_command(config: StackConfig, bucket: str, report_prefix: str) -> str:
    """`aws s3 ls` of the case's reports in the stack's bucket."""
    args = ["aws", *_aws_identity(config), "s3", "ls", f"s3://{bucket}/{report_prefix}"]
    args += ["--recursive", "--region", config.region]
    return shlex.join(args)
