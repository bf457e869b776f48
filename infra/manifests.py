"""Builds every Kubernetes object the stack creates, whole, as plain dicts.

Pure: the components create their resources from these objects, and `make manifests` renders
the same objects to YAML for review, so what is reviewed is what is applied. A value only a
deployment knows (an image reference, the CA certificate, a Secret's contents) is a slot the
caller fills: inside the program with a Pulumi Output, in `make manifests` with a placeholder.
"""

from __future__ import annotations

import hashlib
from typing import Any

from app.core import cluster_env as env
from app.core.roles import Layer

from .comparison_pod import comparison_job_spec
from .naming import job_name, rendered_suffix, spec_digest
from .pod_specs import (
    LAYER_LABEL,
    DeployValue,
    JobInputs,
    job_spec,
    labels,
)
from .supplier_pod import supplier_pod_spec
from .targets import POD_SECURITY_VERSION

ANALYST_SERVICE_ACCOUNT = "analyst"

# The supplier pod restarts when what it mounts changes: a Deployment rolls out only when its
# pod template changes, and replacing the Secret or ConfigMap it mounts does not change it.
SUPPLIER_CONFIG_CHECKSUM = "procurement-analyst/supplier-config-sha256"

# `pulumi up` returns once a Job exists; its verdict is its log (`kubectl logs -f`).
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}

SUPPLIER_SELECTOR = {"app.kubernetes.io/name": env.SUPPLIER_SERVICE}


def _metadata(name: DeployValue, namespace: str | None, component: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels(component)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def namespace_object(name: str, pod_security: str) -> dict[str, Any]:
    """The namespace the stack creates and owns, enforcing the Pod Security Standard its pods
    allow (infra/targets.py, pod_security_level)."""
    metadata = _metadata(name, None, "procurement-analyst")
    metadata["labels"] |= {
        "pod-security.kubernetes.io/enforce": pod_security,
        "pod-security.kubernetes.io/enforce-version": POD_SECURITY_VERSION,
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def analyst_service_account(namespace: str) -> dict[str, Any]:
    """The identity the Jobs run as; EKS Pod Identity binds the analyst's role to it."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(ANALYST_SERVICE_ACCOUNT, namespace, "analyst"),
        "automountServiceAccountToken": False,
    }


def supplier_key_secret(namespace: str, key: DeployValue) -> dict[str, Any]:
    """The supplier API key, mounted by the supplier API and the controller only."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(env.SUPPLIER_KEY_SECRET, namespace, env.SUPPLIER_SERVICE),
        "type": "Opaque",
        "stringData": {env.SUPPLIER_KEY_ITEM: key},
    }


def supplier_tls_secret(namespace: str, cert: DeployValue, key: DeployValue) -> dict[str, Any]:
    """The supplier API's server certificate and private key."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(env.SUPPLIER_TLS_SECRET, namespace, env.SUPPLIER_SERVICE),
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": cert, "tls.key": key},
    }


def supplier_ca_config_map(namespace: str, ca_cert: DeployValue) -> dict[str, Any]:
    """The CA the controller verifies the supplier API with (public, so a ConfigMap)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(env.SUPPLIER_CA_CONFIGMAP, namespace, "analyst"),
        "data": {env.SUPPLIER_CA_ITEM: ca_cert},
    }


def supplier_config_checksum(*, cert_pem: str, ca_pem: str, key_digest: str) -> str:
    """A digest over what the supplier pod mounts: its certificate, the CA, and the key's digest.

    Takes the key's own SHA-256, never the key, so the result can sit in a pod annotation (and
    in Pulumi state) in plain text. A new server key always comes with a new certificate, so the
    certificate stands for it.
    """
    digest = hashlib.sha256()
    for part in (cert_pem, ca_pem, key_digest):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def supplier_deployment(
    namespace: str, *, image: DeployValue, case_id: str, config_checksum: DeployValue
) -> dict[str, Any]:
    """The supplier API: one replica of an ordinary hardened pod, outside the sandbox."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(env.SUPPLIER_SERVICE, namespace, env.SUPPLIER_SERVICE),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": SUPPLIER_SELECTOR},
            "template": {
                "metadata": {
                    "labels": labels(env.SUPPLIER_SERVICE),
                    "annotations": {SUPPLIER_CONFIG_CHECKSUM: config_checksum},
                },
                "spec": supplier_pod_spec(image=image, case_id=case_id),
            },
        },
    }


def supplier_service(namespace: str, name: str) -> dict[str, Any]:
    """A ClusterIP Service for the supplier pod; the alias selects the same pod."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(name, namespace, env.SUPPLIER_SERVICE),
        "spec": {
            "type": "ClusterIP",
            "selector": SUPPLIER_SELECTOR,
            "ports": [
                {
                    "name": "https",
                    "port": env.SUPPLIER_PORT,
                    "targetPort": "https",
                    "protocol": "TCP",
                }
            ],
        },
    }


def supplier_services(namespace: str) -> list[dict[str, Any]]:
    """The supplier API under its two names."""
    return [
        supplier_service(namespace, name)
        for name in (env.SUPPLIER_SERVICE, env.SUPPLIER_ALIAS_SERVICE)
    ]


def job_metadata(
    layer: Layer, namespace: str, name: DeployValue, component: str = env.ANALYST_COMPONENT
) -> dict[str, Any]:
    """A Job's metadata; the name is known only once the spec is (see analyst_job)."""
    metadata = _metadata(name, namespace, component)
    metadata["labels"][LAYER_LABEL] = layer.value
    metadata["annotations"] = dict(SKIP_AWAIT)
    return metadata


def analyst_job(job: JobInputs, run_trigger: str, suffix: str | None = None) -> dict[str, Any]:
    """One run of the case under one layer, named after its trigger and `suffix` (the stack's
    random id; rendered here, the first digits of the spec's digest stand in for it)."""
    spec = job_spec(job)
    drawn = suffix or rendered_suffix(spec_digest(run_trigger, spec))
    name = job_name(job.layer, run_trigger, drawn)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_metadata(job.layer, job.namespace, name),
        "spec": spec,
    }


COMPARISON_JOB_PREFIX = "compare"


def comparison_job(
    layer: Layer,
    namespace: str,
    *,
    image: str,
    analyst_job: str,
    tolerations: list[dict[str, Any]],
    run_trigger: str,
) -> dict[str, Any]:
    """The ordinary pod that prints the node's guest readings beside the layer's analyst pod,
    as rendered (the stack builds the same spec with its Outputs: see components/jobs.py)."""
    spec = comparison_job_spec(
        image=image, layer=layer, analyst_job=analyst_job, tolerations=tolerations
    )
    suffix = rendered_suffix(spec_digest(run_trigger, spec))
    name = job_name(layer, run_trigger, suffix, prefix=COMPARISON_JOB_PREFIX)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_metadata(layer, namespace, name, env.COMPARISON_COMPONENT),
        "spec": spec,
    }
