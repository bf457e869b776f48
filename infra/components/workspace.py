"""Workspace: the stack's namespace and the analyst's ServiceAccount."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..pod_specs import labels

ANALYST_SERVICE_ACCOUNT = "analyst"


class Workspace(pulumi.ComponentResource):
    """The namespace every object of the stack lives in, and the identity the Jobs run as."""

    namespace: pulumi.Output[str]
    service_account: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        namespace: str,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:workspace:Workspace", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=list(depends_on)
        )
        created = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": namespace, "labels": labels("procurement-analyst")},
            opts=k8s_opts,
        )
        account = k8s.core.v1.ServiceAccount(
            f"{name}-analyst",
            metadata={
                "name": ANALYST_SERVICE_ACCOUNT,
                "namespace": created.metadata.name,
                "labels": labels("analyst"),
            },
            automount_service_account_token=False,
            opts=k8s_opts,
        )
        self.namespace = created.metadata.name
        self.service_account = account.metadata.name
        self.register_outputs(
            {"namespace": self.namespace, "service_account": self.service_account}
        )
