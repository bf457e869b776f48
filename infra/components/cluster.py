"""Cluster access: the EKS cluster (checked, or created), the explicit Kubernetes provider, and the
required isolated-sandbox RuntimeClass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..cluster_checks import (
    POD_IDENTITY_AGENT,
    ClusterFacts,
    SubnetFacts,
    require_ready_cluster,
    require_usable_subnets,
)
from ..config import ClusterMode
from ..egress import cluster_dns_address
from ..kubeconfig import exec_kubeconfig
from ..runtime_class_wait import RuntimeClassReadable, dynamic_provider
from ..targets import SANDBOX_RUNTIME_CLASS, RuntimeTarget
from .auto_mode_cluster import AutoModeCluster, AutoModeSettings


@dataclass(frozen=True)
class ClusterSettings:
    """The stack settings that say which cluster, as whom, and what it must offer."""

    mode: ClusterMode
    name: str
    region: str
    runtime_target: RuntimeTarget
    aws_profile: str
    aws_role_arn: str
    # clusterMode create only.
    created: AutoModeSettings
    # egressPolicy: only Auto Mode enforces the ApplicationNetworkPolicy the stack relies on.
    egress_policy: bool = False
    # The cluster DNS address the pods resolve through; empty: derived from the service CIDR.
    cluster_dns_address: str = ""


def _service_cidr(configs: Any) -> str:
    """The service CIDR EKS reports for the cluster: IPv6's on an IPv6 cluster, else IPv4's."""
    (network,) = configs
    if network.ip_family == "ipv6":
        return str(network.service_ipv6_cidr)
    return str(network.service_ipv4_cidr)


def _tolerations(scheduling: Any) -> list[dict[str, Any]]:
    """A RuntimeClass's scheduling.tolerations as the pod spec spells them."""
    found = []
    for toleration in getattr(scheduling, "tolerations", None) or []:
        entry = {
            "key": toleration.key,
            "operator": toleration.operator,
            "value": toleration.value,
            "effect": toleration.effect,
            "tolerationSeconds": toleration.toleration_seconds,
        }
        found.append({field: value for field, value in entry.items() if value is not None})
    return found


class ClusterAccess(pulumi.ComponentResource):
    """Connects the stack to its cluster and, for runtimeTarget isolated-sandbox, proves the
    sandbox RuntimeClass is there.

    Existing cluster: before anything is created, EKS is asked for the cluster's version and
    whether it can give pods an identity (Auto Mode, or the Pod Identity agent add-on); the
    RuntimeClass is read in preview and in `up`, since the provider is known from the lookup.

    Created cluster: the provider is unknown until the cluster exists, so a preview cannot read
    the RuntimeClass; it says so in a warning instead of skipping silently. `up` reads it once
    the cluster and the deployer's access exist, before any workload.
    """

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    # The resolver address in each pod's /etc/resolv.conf (infra/egress.py says how it is found).
    dns_address: pulumi.Output[str]
    provider: k8s.Provider
    # The provider's kubeconfig (the deploying identity's token command), for direct reads.
    kubeconfig: pulumi.Output[str]
    runtime_class: k8s.node.v1.RuntimeClass | None
    workload_gate: list[pulumi.Resource]
    # What the sandbox RuntimeClass tolerates (its nodes' taint), for pods placed beside its
    # pods without it; empty for runtimeTarget hardened-container.
    sandbox_tolerations: pulumi.Output[list[dict[str, Any]]]

    def __init__(
        self,
        name: str,
        settings: ClusterSettings,
        aws_provider: aws.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:cluster:ClusterAccess", name, None, opts)
        self._config = settings
        self._aws = aws_provider
        self._invoke = pulumi.InvokeOptions(parent=self, provider=aws_provider)
        if settings.mode is ClusterMode.EXISTING:
            self._use_existing(name)
        else:
            self._create(name)
        if self.runtime_class is not None:
            self.sandbox_tolerations = self.runtime_class.scheduling.apply(_tolerations)
        elif self._sandboxed:
            # A created cluster's RuntimeClass is read only once the cluster exists.
            self.sandbox_tolerations = self.cluster_arn.apply(lambda _: [])
        else:
            self.sandbox_tolerations = pulumi.Output.from_input([])
        self.register_outputs({"cluster_name": self.cluster_name, "cluster_arn": self.cluster_arn})

    def _use_existing(self, name: str) -> None:
        found = aws.eks.get_cluster(name=self._config.name, opts=self._invoke)
        auto_mode = any(compute.enabled for compute in found.compute_configs)
        require_ready_cluster(
            ClusterFacts(
                name=found.name,
                region=self._config.region,
                version=found.version,
                auto_mode=auto_mode,
                # Auto Mode has the agent built in; only another cluster needs the add-on.
                pod_identity_agent=auto_mode or self._has_pod_identity_agent(),
                egress_policy=self._config.egress_policy,
            )
        )
        self.dns_address = pulumi.Output.from_input(
            self._config.cluster_dns_address
            or cluster_dns_address(_service_cidr(found.kubernetes_network_configs))
        )
        self.cluster_name = pulumi.Output.from_input(found.name)
        self.cluster_arn = pulumi.Output.from_input(found.arn)
        self.provider = self._create_provider(
            name,
            cluster_name=self.cluster_name,
            endpoint=pulumi.Output.from_input(found.endpoint),
            ca_data=pulumi.Output.from_input(found.certificate_authorities[0].data),
            depends_on=[],
        )
        self.runtime_class = self._require_runtime_class() if self._sandboxed else None
        self.workload_gate = [self.runtime_class] if self.runtime_class else []

    @property
    def _sandboxed(self) -> bool:
        """Only the isolated-sandbox target needs the RuntimeClass; hardened-container pods run
        on the cluster's ordinary nodes."""
        return self._config.runtime_target is RuntimeTarget.ISOLATED_SANDBOX

    def _has_pod_identity_agent(self) -> bool:
        try:
            aws.eks.get_addon(
                addon_name=POD_IDENTITY_AGENT,
                cluster_name=self._config.name,
                opts=self._invoke,
            )
        except Exception as exc:
            # EKS answers ResourceNotFoundException for a missing add-on; whatever it said is
            # logged, and the readiness check names the fix.
            pulumi.log.info(f"{POD_IDENTITY_AGENT} add-on not found: {exc}", resource=self)
            return False
        return True

    def _create(self, name: str) -> None:
        self._check_subnets()
        created = AutoModeCluster(
            f"{name}-auto-mode",
            self._config.created,
            self._aws,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.cluster_name = created.cluster_name
        self.cluster_arn = created.cluster_arn
        self.dns_address = (
            pulumi.Output.from_input(self._config.cluster_dns_address)
            if self._config.cluster_dns_address
            else created.service_cidr.apply(lambda cidr: cluster_dns_address(cidr) if cidr else "")
        )
        # The provider connects as the deployer, so it waits for the deployer's access entry:
        # depending on a remote component waits for all of its children (pulumi's
        # `runtime/rpc.py`, `_add_dependency`), the access entries pulumi-eks makes included.
        self.provider = self._create_provider(
            name,
            cluster_name=created.cluster_name,
            endpoint=created.endpoint,
            ca_data=created.ca_data,
            depends_on=[created.cluster],
        )
        if not self._sandboxed:
            self.runtime_class = None
            self.workload_gate = [created]
            return
        # First up: the deployer's access and Auto Mode's RuntimeClass may still be on their way
        # when the access entry returns; the read waits for them, within a bound. (Planned in a
        # preview too, which never runs the wait.)
        readable = RuntimeClassReadable(
            f"{name}-runtime-class-readable",
            name=SANDBOX_RUNTIME_CLASS,
            kubeconfig=self._kubeconfig,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=dynamic_provider(f"{name}-dynamic", self),
                depends_on=[created.cluster],
            ),
        )
        if pulumi.runtime.is_dry_run():
            pulumi.log.warn(
                f"the {SANDBOX_RUNTIME_CLASS} RuntimeClass of the cluster this stack creates is"
                " not read in a preview (the cluster does not exist yet); `pulumi up` waits"
                " for it before any workload and stops if it does not appear",
                resource=self,
            )
            self.runtime_class = None
            self.workload_gate = [created, readable]
        else:
            self.runtime_class = self._require_runtime_class(after=[readable])
            self.workload_gate = [self.runtime_class]

    def _check_subnets(self) -> None:
        subnets = [
            aws.ec2.get_subnet(id=subnet_id, opts=self._invoke)
            for subnet_id in self._config.created.subnet_ids
        ]
        require_usable_subnets(
            self._config.created.vpc_id,
            [
                SubnetFacts(
                    subnet_id=subnet.id,
                    vpc_id=subnet.vpc_id,
                    availability_zone=subnet.availability_zone,
                )
                for subnet in subnets
            ],
        )

    def _create_provider(
        self,
        name: str,
        *,
        cluster_name: pulumi.Output[str],
        endpoint: pulumi.Output[str],
        ca_data: pulumi.Output[str],
        depends_on: list[pulumi.Resource],
    ) -> k8s.Provider:
        settings = self._config
        kubeconfig = pulumi.Output.all(cluster_name, endpoint, ca_data).apply(
            lambda values: json.dumps(
                exec_kubeconfig(
                    cluster_name=values[0],
                    endpoint=values[1],
                    ca_data=values[2],
                    region=settings.region,
                    profile=settings.aws_profile,
                    role_arn=settings.aws_role_arn,
                )
            )
        )
        self._kubeconfig = kubeconfig
        self.kubeconfig = kubeconfig
        return k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            # Only a change of cluster replaces the provider (and so every object it made);
            # a refreshed endpoint, CA or token command is an in-place update.
            cluster_identifier=self.cluster_arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
        )

    def _require_runtime_class(
        self, after: list[pulumi.Resource] | None = None
    ) -> k8s.node.v1.RuntimeClass:
        # Read, never created or deleted: the cluster provides the sandbox. If it is missing,
        # the read fails and `pulumi up` stops before any workload is scheduled without it.
        return k8s.node.v1.RuntimeClass.get(
            "isolated-sandbox",
            SANDBOX_RUNTIME_CLASS,
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=after),
        )
