"""Every variable cluster mode reads, with a well-formed value: the tests' cluster environment,
its files (a supplier key, a CA in PEM, a Pod Identity token) made for real where a test says."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Final

from app.controller.services.pki import generate_run_pki
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


@cache
def _ca_pem() -> bytes:
    return generate_run_pki().ca_cert_pem


def cluster_files(directory: Path) -> dict[str, str]:
    """The three files cluster mode reads, written in ``directory`` as the pod's mounts hold
    them (the key with the newline a Secret often has), by variable."""
    files = {
        cluster_env.SUPPLIER_KEY_FILE: (directory / "api-key", b"not-a-real-key\n"),
        cluster_env.SUPPLIER_CA_FILE: (directory / "ca.crt", _ca_pem()),
        cluster_env.POD_IDENTITY_TOKEN_FILE: (directory / "token", b"eyJhbGciOi.not-a.token"),
    }
    for path, data in files.values():
        path.write_bytes(data)
        os.chmod(path, 0o644)
    return {name: str(path) for name, (path, _) in files.items()}


def cluster_environment(directory: Path | None = None, **changes: str | None) -> dict[str, str]:
    """CLUSTER_ENV (with real files in ``directory`` when given) with some variables changed,
    or removed where the value is None."""
    env = dict(CLUSTER_ENV)
    if directory is not None:
        env.update(cluster_files(directory))
    for name, value in changes.items():
        if value is None:
            env.pop(name)
        else:
            env[name] = value
    return env
