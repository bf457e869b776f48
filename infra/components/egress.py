"""Egress: the cluster's network-policy prerequisites, checked before any workload, and the pods'
network policies (infra/egress.py builds them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from .. import cluster_reads
from ..cluster_checks import ClusterNotReady
from ..egress import (
    NODE_CLASS,
    NODE_CLASS_API,
    VPC_CNI_CONFIGMAP,
    analyst_egress_policy,
    bucket_hosts,
    host_cidr,
    prerequisite_problems,
    supplier_ingress_policy,
)
from .options import child_options


@dataclass(frozen=True)
class EgressSettings:
    namespace: str
    region: str
    cluster_name: str


def _require(values: list[Any], settings: EgressSettings) -> str:
    vpc_cni, node_class = values
    problems = prerequisite_problems(vpc_cni, node_class, settings.cluster_name, settings.region)
    if problems:
        raise ClusterNotReady(
            f"egressPolicy: cluster {settings.cluster_name} would accept the network policies "
            "without enforcing them: " + "; and ".join(problems)
        )
    return "network policy controller on; NodeClass default enforces network policy"


class EgressPrerequisites(pulumi.ComponentResource):
    """Reads the two settings Auto Mode enforces network policies by, and stops the program
    (naming the fix) when either is off. `checked` is what the namespace waits for, so no
    Kubernetes object of the stack is created on a cluster that would not enforce its policy."""

    checked: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: EgressSettings,
        provider: k8s.Provider,
        kubeconfig: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:egress:EgressPrerequisites", name, None, opts)
        read = child_options(self, opts, provider)
        namespace, config_map = VPC_CNI_CONFIGMAP
        # Asked of the API server directly: a missing ConfigMap is an answer, not an error.
        vpc_cni = pulumi.Output.from_input(kubeconfig).apply(
            lambda config: cluster_reads.read_config_map(config, namespace, config_map)
        )
        # The NodeClass is a custom resource: read through the provider with its spec as the
        # one output asked for.
        node_class = pulumi.CustomResource(
            f"kubernetes:{NODE_CLASS_API}:NodeClass",
            f"{name}-node-class",
            {"apiVersion": NODE_CLASS_API, "kind": "NodeClass", "metadata": None, "spec": None},
            opts=pulumi.ResourceOptions.merge(read, pulumi.ResourceOptions(id=NODE_CLASS)),
        )
        spec = cast("pulumi.Output[Any]", node_class.spec)  # type: ignore[attr-defined]
        self.checked = pulumi.Output.all(vpc_cni, spec).apply(
            lambda values: _require(values, settings)
        )
        self.register_outputs({"checked": self.checked})


class EgressPolicies(pulumi.ComponentResource):
    """The analyst pods' ApplicationNetworkPolicy and the supplier API's ingress policy; `gate`
    is what the Jobs wait for, so no analyst pod starts before its egress is bounded."""

    gate: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        settings: EgressSettings,
        *,
        bucket_name: pulumi.Input[str],
        resolver: pulumi.Input[str],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:egress:EgressPolicies", name, None, opts)
        k8s_opts = child_options(self, opts, provider)
        host = pulumi.Output.from_input(bucket_name).apply(
            lambda bucket: bucket_hosts(bucket, settings.region)
        )
        resolver_cidr = pulumi.Output.from_input(resolver).apply(
            lambda address: host_cidr(address) if address else ""
        )
        analyst = analyst_egress_policy(settings.namespace, settings.region, host, resolver_cidr)
        created = k8s.apiextensions.CustomResource(
            f"{name}-analyst",
            api_version=analyst["apiVersion"],
            kind=analyst["kind"],
            metadata=cast("k8s.meta.v1.ObjectMetaArgsDict", analyst["metadata"]),
            spec=analyst["spec"],
            opts=k8s_opts,
        )
        supplier = supplier_ingress_policy(settings.namespace)
        ingress = k8s.networking.v1.NetworkPolicy(
            f"{name}-supplier",
            metadata=cast("k8s.meta.v1.ObjectMetaArgsDict", supplier["metadata"]),
            spec=cast("k8s.networking.v1.NetworkPolicySpecArgsDict", supplier["spec"]),
            opts=k8s_opts,
        )
        self.gate = [created, ingress]
        self.register_outputs({})
