"""Supplier: the synthetic supplier API's Deployment and its two ClusterIP Services."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from app.core import cluster_env as env

from ..pod_specs import labels, supplier_pod_spec

SELECTOR = {"app.kubernetes.io/name": env.SUPPLIER_SERVICE}


class SupplierApi(pulumi.ComponentResource):
    """The supplier API, reachable inside the cluster under two names that select one pod."""

    deployment_name: pulumi.Output[str]
    urls: list[str]

    def __init__(
        self,
        name: str,
        *,
        namespace: pulumi.Output[str],
        namespace_name: str,
        image: pulumi.Input[str],
        case_id: str,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:supplier:SupplierApi", name, None, opts)
        # depends_on: what the pod mounts (the key and TLS Secrets) must exist before it starts.
        self._k8s = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=list(depends_on)
        )
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={
                "name": env.SUPPLIER_SERVICE,
                "namespace": namespace,
                "labels": labels(env.SUPPLIER_SERVICE),
            },
            spec={
                "replicas": 1,
                "selector": {"matchLabels": SELECTOR},
                "template": {
                    "metadata": {"labels": labels(env.SUPPLIER_SERVICE)},
                    "spec": pulumi.Output.from_input(image).apply(
                        lambda ref: supplier_pod_spec(image=ref, case_id=case_id)
                    ),
                },
            },
            opts=self._k8s,
        )
        # The alias selects the same pod: a request refused under the alias name is refused
        # for its name, not because the route is broken.
        for service in (env.SUPPLIER_SERVICE, env.SUPPLIER_ALIAS_SERVICE):
            self._create_service(name, service, namespace)
        self.deployment_name = deployment.metadata.name
        self.urls = [
            env.supplier_url(s, namespace_name)
            for s in (env.SUPPLIER_SERVICE, env.SUPPLIER_ALIAS_SERVICE)
        ]
        self.register_outputs({"deployment_name": self.deployment_name, "urls": self.urls})

    def _create_service(
        self, name: str, service: str, namespace: pulumi.Output[str]
    ) -> k8s.core.v1.Service:
        return k8s.core.v1.Service(
            f"{name}-{service}",
            metadata={
                "name": service,
                "namespace": namespace,
                "labels": labels(env.SUPPLIER_SERVICE),
            },
            spec={
                "type": "ClusterIP",
                "selector": SELECTOR,
                "ports": [
                    {
                        "name": "https",
                        "port": env.SUPPLIER_PORT,
                        "targetPort": "https",
                        "protocol": "TCP",
                    }
                ],
            },
            opts=self._k8s,
        )
