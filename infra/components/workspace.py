"""Workspace: the stack's namespace and the analyst's ServiceAccount."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..manifests import analyst_service_account, namespace_object
from .options import child_options


@dataclass(frozen=True)
class WorkspaceSettings:
    """The namespace, the strictest Pod Security Standard its pods allow, and what the
    namespace waits for, as annotations (Outputs that must resolve before any object of the
    stack exists)."""

    namespace: str
    pod_security: str
    waits_for: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class Workspace(pulumi.ComponentResource):
    """The namespace every object of the stack lives in, and the identity the Jobs run as.

    The namespace enforces the settings' Pod Security Standard.
    """

    namespace: pulumi.Output[str]
    service_account: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: WorkspaceSettings,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:workspace:Workspace", name, None, opts)
        k8s_opts = child_options(self, opts, provider)
        metadata = namespace_object(settings.namespace, settings.pod_security)["metadata"]
        if settings.waits_for:
            # What the namespace waits for, in words (the egress prerequisites, checked).
            metadata["annotations"] = dict(settings.waits_for)
        created = k8s.core.v1.Namespace(f"{name}-namespace", metadata=metadata, opts=k8s_opts)
        account = analyst_service_account(settings.namespace)
        service_account = k8s.core.v1.ServiceAccount(
            f"{name}-analyst",
            metadata=account["metadata"],
            automount_service_account_token=account["automountServiceAccountToken"],
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[created])
            ),
        )
        self.namespace = created.metadata.name
        self.service_account = service_account.metadata.name
        self.register_outputs(
            {"namespace": self.namespace, "service_account": self.service_account}
        )
