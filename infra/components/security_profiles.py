"""SecurityProfiles: the hardened-container target's profile delivery, cert-manager and the
Security Profiles Operator from their Helm charts, then bwrap's SeccompProfile."""

from __future__ import annotations

from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from ..security_profiles import (
    CERT_MANAGER,
    SECURITY_PROFILES_OPERATOR,
    HelmChart,
    seccomp_profile_object,
)
from .options import child_options


class SecurityProfiles(pulumi.ComponentResource):
    """Puts the bubblewrap pod's Localhost seccomp profile on every node before any Job runs.

    Each release waits for its workloads to be ready (Helm's wait, the Release default), so the
    operator's CRDs and webhook exist before the profile; the profile object waits until the
    operator reports it Installed (its waitFor annotation). `gate` is what the Jobs wait for.
    """

    gate: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        namespace: str,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:security:SecurityProfiles", name, None, opts)
        base = child_options(self, opts, provider)
        cert_manager = self._release(f"{name}-cert-manager", CERT_MANAGER, base)
        operator = self._release(
            f"{name}-operator",
            SECURITY_PROFILES_OPERATOR,
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[cert_manager])),
        )
        profile = seccomp_profile_object(namespace)
        created = k8s.apiextensions.CustomResource(
            f"{name}-bwrap-seccomp",
            api_version=profile["apiVersion"],
            kind=profile["kind"],
            metadata=cast("k8s.meta.v1.ObjectMetaArgsDict", profile["metadata"]),
            spec=profile["spec"],
            opts=pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[operator])),
        )
        self.gate = [created]
        self.register_outputs({"seccomp_profile": profile["metadata"]["name"]})

    @staticmethod
    def _release(name: str, chart: HelmChart, opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
        return k8s.helm.v3.Release(
            name,
            name=chart.release,
            chart=chart.chart,
            version=chart.version,
            namespace=chart.namespace,
            create_namespace=True,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository)
            if chart.repository
            else None,
            values=chart.values,
            opts=opts,
        )
