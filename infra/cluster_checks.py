"""Decides whether a cluster (or a created cluster's network) can run the analyst's Jobs.

Pure: facts EKS reports in, one error naming every problem and its fix out. The program asks
EKS for the facts before it creates anything, so a cluster that cannot run the sandbox or give
the pod its AWS identity stops `pulumi preview` and `pulumi up` at once, instead of a Job that
fails at its first AWS call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# The lowest Kubernetes minor version whose EKS Auto Mode clusters offer the isolated-sandbox
# RuntimeClass the analyst's pods require.
MIN_KUBERNETES = (1, 36)

# Pod Identity needs its agent on the node. EKS Auto Mode has it built in; any other cluster
# needs this add-on. https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
POD_IDENTITY_AGENT = "eks-pod-identity-agent"


class ClusterNotReady(Exception):
    """The cluster or network cannot run the stack; the message says what to change."""


@dataclass(frozen=True)
class ClusterFacts:
    """What EKS reports about a cluster, as far as the analyst depends on it."""

    name: str
    region: str
    version: str
    auto_mode: bool
    pod_identity_agent: bool
    # The stack asks for egressPolicy, which only Auto Mode's node agent enforces.
    egress_policy: bool = False


@dataclass(frozen=True)
class SubnetFacts:
    """What EC2 reports about one subnet."""

    subnet_id: str
    vpc_id: str
    availability_zone: str


def version_tuple(version: str) -> tuple[int, int] | None:
    """`MAJOR.MINOR` (a platform suffix is ignored) as a tuple, or None if it is not one."""
    match = re.match(r"^(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def cluster_problems(facts: ClusterFacts) -> list[str]:
    """Each reason the cluster cannot run the analyst's Jobs, with its fix."""
    problems = []
    floor = ".".join(map(str, MIN_KUBERNETES))
    found = version_tuple(facts.version)
    if found is None or found < MIN_KUBERNETES:
        problems.append(
            f"it runs Kubernetes {facts.version}; the isolated-sandbox RuntimeClass needs {floor}"
            f" or later: aws eks update-cluster-version --region {facts.region}"
            f" --name {facts.name} --kubernetes-version <next minor>, until {floor}"
        )
    if not facts.auto_mode and not facts.pod_identity_agent:
        problems.append(
            "it has neither EKS Auto Mode compute nor the eks-pod-identity-agent add-on, so the"
            " Jobs' pods would get no AWS credentials: aws eks create-addon --region"
            f" {facts.region} --cluster-name {facts.name} --addon-name {POD_IDENTITY_AGENT}"
        )
    if facts.egress_policy and not facts.auto_mode:
        problems.append(
            "egressPolicy is true but the cluster is not EKS Auto Mode, whose node agent is what"
            " enforces the ApplicationNetworkPolicy (networking.k8s.aws) the stack bounds egress"
            " with (https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html): set"
            " egressPolicy false, or use an Auto Mode cluster"
        )
    return problems


def require_ready_cluster(facts: ClusterFacts) -> None:
    """Raise ClusterNotReady naming every problem of the cluster, or return."""
    problems = cluster_problems(facts)
    if problems:
        raise ClusterNotReady(
            f"cluster {facts.name} ({facts.region}) cannot run the analyst: "
            + "; and ".join(problems)
        )


def subnet_problems(vpc_id: str, subnets: Sequence[SubnetFacts]) -> list[str]:
    """Each reason these subnets cannot host a created cluster in vpc_id."""
    problems = [
        f"subnetIds: {subnet.subnet_id} is in {subnet.vpc_id}, not vpcId {vpc_id}"
        for subnet in subnets
        if subnet.vpc_id != vpc_id
    ]
    zones = {subnet.availability_zone for subnet in subnets}
    if len(zones) < 2:
        problems.append(
            "subnetIds: EKS needs subnets in at least two Availability Zones; these are all in "
            + ", ".join(sorted(zones))
        )
    return problems


def require_usable_subnets(vpc_id: str, subnets: Sequence[SubnetFacts]) -> None:
    """Raise ClusterNotReady naming every problem of the created cluster's network, or return."""
    problems = subnet_problems(vpc_id, subnets)
    if problems:
        raise ClusterNotReady("the cluster's network is not usable: " + "; ".join(problems))
