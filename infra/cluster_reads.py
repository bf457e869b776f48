"""Reads from the cluster that the engine's `.get` cannot make: an object that may not exist.

`ConfigMap.get` of a missing object stops the program with the engine's bare "does not exist",
and the amazon-vpc-cni ConfigMap is missing on most Auto Mode clusters (AWS's guide has you create
it to switch network policies on: https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html).
So the program asks the API server itself, as the stack's deploying identity (the provider's own
kubeconfig and token command), and a 404 is an answer: None. The tests replace `read_config_map`
as the Pulumi mocks replace the providers.
"""

from __future__ import annotations

import json

from .cluster_checks import ClusterNotReady

NOT_FOUND = 404


def read_config_map(kubeconfig: str, namespace: str, name: str) -> dict[str, str] | None:
    """The ConfigMap's data ({} when it has none), or None when it does not exist."""
    from kubernetes import client, config

    api = config.new_client_from_config_dict(json.loads(kubeconfig))
    try:
        found = client.CoreV1Api(api).read_namespaced_config_map(name, namespace)
    except client.ApiException as error:
        if error.status == NOT_FOUND:
            return None
        raise ClusterNotReady(
            f"reading the ConfigMap {namespace}/{name} failed: {error.status} {error.reason}"
        ) from error
    return dict(found.data or {})
