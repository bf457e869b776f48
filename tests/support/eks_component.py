"""The mock engine's stand-in for pulumi-eks's `eks:index:Cluster`, a remote component.

A remote component's resources are made by its plugin, not by the program, so under the mocks
the program registers the component alone (`remote` set) and reads what the plugin would answer.
This makes the one child the program reads, the EKS cluster (`aws:eks/cluster:Cluster`), with the
inputs pulumi-eks gives it for the component's inputs (pulumi/pulumi-eks
`nodejs/eks/cluster/cluster.ts` at 7bf0c1b1, `createCore`: Auto Mode's compute, storage and
network settings, `bootstrapSelfManagedAddons: false` with Auto Mode, and `accessConfig` with
`bootstrapClusterCreatorAdminPermissions: true` whenever an authentication mode is set), runs
the transforms the program declared on the component over it, as the engine does for a packaged
component's children, and answers the component's `eksCluster` output with a reference to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import rpc

COMPONENT_TYPE = "eks:index:Cluster"
CLUSTER_TYPE = "aws:eks/cluster:Cluster"
# cluster.ts: the compute config's default pools, under the program's own computeConfig.
DEFAULT_NODE_POOLS = ["general-purpose", "system"]


@dataclass(frozen=True)
class Child:
    """A resource the component's plugin registers, as the engine would record it."""

    type: str
    name: str
    inputs: dict[str, Any]


def cluster_child(name: str, inputs: dict[str, Any], transforms: list[Any]) -> Child:
    """The EKS cluster pulumi-eks makes for these component inputs, after the transforms."""
    auto_mode = inputs.get("autoMode") or {}
    props: dict[str, Any] = {
        "name": inputs.get("name"),
        "version": inputs.get("version"),
        "vpcConfig": {
            "subnetIds": inputs.get("subnetIds"),
            "endpointPrivateAccess": inputs.get("endpointPrivateAccess"),
            "endpointPublicAccess": inputs.get("endpointPublicAccess"),
        },
    }
    if auto_mode.get("enabled"):
        props |= {
            "computeConfig": {
                "enabled": True,
                "nodePools": DEFAULT_NODE_POOLS,
                **(auto_mode.get("computeConfig") or {}),
            },
            "storageConfig": {"blockStorage": {"enabled": True}},
            "kubernetesNetworkConfig": {
                "ipFamily": "ipv4",
                "elasticLoadBalancing": {"enabled": True},
            },
            "bootstrapSelfManagedAddons": False,
        }
    if inputs.get("authenticationMode"):
        props["accessConfig"] = {
            "authenticationMode": inputs["authenticationMode"],
            "bootstrapClusterCreatorAdminPermissions": True,
        }
    child_name = f"{name}-eksCluster"
    for transform in transforms:
        options = pulumi.ResourceOptions()
        args = pulumi.ResourceTransformArgs(True, CLUSTER_TYPE, child_name, props, options)
        result = transform(args)
        if result is not None:
            props = dict(result.props)
    return Child(CLUSTER_TYPE, child_name, props)


def cluster_reference(urn: str, resource_id: str) -> dict[str, str]:
    """A resource reference as the engine sends one in a component's outputs."""
    return {rpc._special_sig_key: rpc._special_resource_sig, "urn": urn, "id": resource_id}
