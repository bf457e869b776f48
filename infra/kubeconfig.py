"""Builds the kubeconfig the explicit Kubernetes provider uses: endpoint, CA and an exec token.

Pure: parameters in, a kubeconfig document out. The token comes from `aws eks get-token` at
the moment the provider connects, so no credential is written into Pulumi state, and it is
asked for with the same profile and role as the stack's AWS provider, so both providers act as
one identity (the one a created cluster gives an access entry).
"""

from __future__ import annotations

from typing import Any


def token_command(
    *, cluster_name: str, region: str, profile: str = "", role_arn: str = ""
) -> list[str]:
    """`aws eks get-token` arguments for this cluster, as the deploying identity."""
    args = ["--region", region]
    if profile:
        args += ["--profile", profile]
    args += ["eks", "get-token", "--cluster-name", cluster_name, "--output", "json"]
    if role_arn:
        # get-token assumes the role itself and signs the token as the role's session.
        # https://awscli.amazonaws.com/v2/documentation/api/latest/reference/eks/get-token.html
        args += ["--role-arn", role_arn]
    return args


def exec_kubeconfig(
    *,
    cluster_name: str,
    endpoint: str,
    ca_data: str,
    region: str,
    profile: str = "",
    role_arn: str = "",
) -> dict[str, Any]:
    """A single-context kubeconfig that authenticates as the stack's AWS identity."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": endpoint, "certificate-authority-data": ca_data},
            }
        ],
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": token_command(
                            cluster_name=cluster_name,
                            region=region,
                            profile=profile,
                            role_arn=role_arn,
                        ),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [
            {"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}
        ],
        "current-context": cluster_name,
    }
