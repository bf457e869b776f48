"""SecurityProfiles: the hardened-container target's profile delivery: cert-manager and the
Security Profiles Operator from their Helm charts (clusterAddons install) or the ones the
cluster already runs (existing), then bwrap's SeccompProfile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from ..config import ClusterAddons
from ..security_profiles import (
    CERT_MANAGER,
    SECCOMP_PROFILE_CRD,
    SECURITY_PROFILES_OPERATOR,
    HelmChart,
    seccomp_profile_object,
)
from .options import child_options


@dataclass(frozen=True)
class ProfileSettings:
    """The namespace the profile is named for, and whether the stack installs the operators."""

    namespace: str
    addons: ClusterAddons


class SecurityProfiles(pulumi.ComponentResource):
    """Puts the bubblewrap pod's Localhost seccomp profile on every node before any Job runs.

    The operators are the cluster's, not the stack's: `install` (one stack per cluster)
    installs them, each release waiting for its workloads (Helm's wait, the Release default) so
    the operator's CRDs and webhook exist before the profile, and retained on `pulumi destroy`,
    which must not take them from the other stacks on the cluster; `existing` reads the
    operator's SeccompProfile CRD instead, and a cluster without it stops the program before
    the profile. The profile object, this stack's own, waits until the operator reports it
    Installed (its waitFor annotation). `gate` is what the Jobs wait for.
    """

    gate: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        settings: ProfileSettings,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:security:SecurityProfiles", name, None, opts)
        base = child_options(self, opts, provider)
        operator: pulumi.Resource
        if settings.addons is ClusterAddons.INSTALL:
            kept = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(retain_on_delete=True))
            cert_manager = self._release(f"{name}-cert-manager", CERT_MANAGER, kept)
            operator = self._release(
                f"{name}-operator",
                SECURITY_PROFILES_OPERATOR,
                pulumi.ResourceOptions.merge(
                    kept, pulumi.ResourceOptions(depends_on=[cert_manager])
                ),
            )
        else:
            operator = k8s.apiextensions.v1.CustomResourceDefinition.get(
                f"{name}-operator-crd",
                SECCOMP_PROFILE_CRD,
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        profile = seccomp_profile_object(settings.namespace)
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
