"""Builds the kubeconfig the explicit Kubernetes provider uses: endpoint, CA and an exec token.

Pure: parameters in, a kubeconfig document out. The token comes from `aws eks get-token` at
the moment the provider connects, so no credential is written into Pulumi state.
"""

from __future__ import annotations

from typing import Any


def exec_kubeconfig(
    *, cluster_name: str, endpoint: str, ca_data: str, region: str
) -> dict[str, Any]:
    """A single-context kubeconfig that authenticates with the caller's AWS identity."""
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
                        "args": [
                            "--region",
                            region,
                            "eks",
                            "get-token",
                            "--cluster-name",
                            cluster_name,
                            "--output",
                            "json",
                        ],
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
