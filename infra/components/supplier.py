"""Supplier: the synthetic supplier API's Deployment and its two ClusterIP Services."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from app.core import cluster_env as env

from ..manifests import supplier_deployment, supplier_services
from .options import child_options


@dataclass(frozen=True)
class SupplierSettings:
    """The namespace, and the case whose suppliers the API serves."""

    namespace: str
    case_id: str


class SupplierApi(pulumi.ComponentResource):
    """The supplier API, reachable inside the cluster under two names that select one pod.

    What its pod mounts (the key and TLS Secrets, by `opts.depends_on`) must exist before it
    starts; `config_checksum` restarts the pod whenever they change.
    """

    deployment_name: pulumi.Output[str]
    urls: list[str]

    def __init__(
        self,
        name: str,
        settings: SupplierSettings,
        *,
        image: pulumi.Input[str],
        config_checksum: pulumi.Input[str],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:supplier:SupplierApi", name, None, opts)
        k8s_opts = child_options(self, opts, provider)
        namespace = settings.namespace
        deployment = supplier_deployment(
            namespace, image=image, case_id=settings.case_id, config_checksum=config_checksum
        )
        created = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=deployment["metadata"],
            spec=deployment["spec"],
            opts=k8s_opts,
        )
        # The alias selects the same pod: a request refused under the alias name is refused
        # for its name, not because the route is broken.
        for service in supplier_services(namespace):
            k8s.core.v1.Service(
                f"{name}-{service['metadata']['name']}",
                metadata=service["metadata"],
                spec=service["spec"],
                opts=k8s_opts,
            )
        self.deployment_name = created.metadata.name
        self.urls = [
            env.supplier_url(service, namespace)
            for service in (env.SUPPLIER_SERVICE, env.SUPPLIER_ALIAS_SERVICE)
        ]
        self.register_outputs({"deployment_name": self.deployment_name, "urls": self.urls})
