"""Every variable cluster mode reads, with a well-formed value: the tests' cluster environment."""

from __future__ import annotations

from typing import Final

from app.core import cluster_env

CLUSTER_ENV: Final = {
    cluster_env.MODE: cluster_env.CLUSTER_MODE,
    cluster_env.BUCKET: "analyst-bucket",
    cluster_env.REGION: "us-west-2",
    cluster_env.MODEL_ID: "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    cluster_env.ROLE_NAME: "analyst-role",
    cluster_env.SUPPLIER_API_URL: "https://supplier-api.ns.svc.cluster.local:8443",
    cluster_env.SUPPLIER_API_ALIAS_URL: "https://supplier-api-alias.ns.svc.cluster.local:8443",
    cluster_env.SUPPLIER_KEY_FILE: "/opt/supplier-key/api-key",
    cluster_env.SUPPLIER_CA_FILE: "/opt/supplier-ca/ca.crt",
    cluster_env.POD_IDENTITY_URI: "http://169.254.170.23/v1/credentials",
    cluster_env.POD_IDENTITY_TOKEN_FILE: "/var/run/secrets/pods.eks.amazonaws.com/token",
}


def cluster_environment(**changes: str | None) -> dict[str, str]:
    """CLUSTER_ENV with some variables changed, or removed where the value is None."""
    env = dict(CLUSTER_ENV)
    for name, value in changes.items():
        if value is None:
            env.pop(name)
        else:
            env[name] = value
    return env
