"""clusterMode create: the cluster is pulumi-eks's `eks.Cluster` in Auto Mode, in the configured
subnets, with the creator's admin grant as `clusterCreatorAdmin` says, in preview and in up.

pulumi-eks is a remote component: under the mocks the program registers it alone, and the mock
engine answers for its plugin (tests/support/eks_component.py makes the EKS cluster pulumi-eks
would make, and runs the program's transforms over it, as the engine does for its children).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from infra.components.auto_mode_cluster import without_creator_admin
from tests.support.stack_run import (
    AWS_PROVIDER_TYPE,
    CREATE_MODE,
    CREATE_WORLD,
    K8S_PROVIDER_TYPE,
    SUBNETS,
    VPC,
    StackRun,
    run_failing,
    run_stack,
)

EKS_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"
DEPLOYER_ROLE = "arn:aws:iam::123456789012:role/deployer"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def _created(preview: bool, **settings: Any) -> StackRun:
    return run_stack(preview=preview, world=CREATE_WORLD, **CREATE_MODE, **settings)


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_create_mode_makes_an_auto_mode_cluster_through_pulumi_eks(preview: bool) -> None:
    stack = _created(preview)
    component = stack.one(EKS_COMPONENT)
    inputs = component["inputs"]
    assert (inputs["name"], inputs["version"]) == ("analyst-new", "1.37"), component["urn"]
    assert (inputs["vpcId"], inputs["subnetIds"]) == (VPC, list(SUBNETS)), component["urn"]
    assert inputs["authenticationMode"] == "API", component["urn"]
    # Auto Mode with its two built-in node pools; EKS runs DNS and the Pod Identity agent on
    # the node, so pulumi-eks's CoreDNS add-on stays off.
    assert inputs["autoMode"]["enabled"] is True, component["urn"]
    assert inputs["autoMode"]["computeConfig"] == {"nodePools": ["general-purpose", "system"]}
    assert inputs["corednsAddonOptions"]["enabled"] is False, component["urn"]
    # Its AWS resources are made through the stack's tagged provider.
    aws_provider = stack.one(AWS_PROVIDER_TYPE)
    assert stack.provider_urn(component["providers"]["aws"]) == aws_provider["urn"]
    # The only EKS cluster is pulumi-eks's child: nothing makes one by hand.
    (cluster,) = stack.of_type(EKS_CLUSTER)
    assert cluster["parent"] == component["urn"], cluster["urn"]
    assert cluster["inputs"]["computeConfig"]["enabled"] is True, cluster["urn"]
    assert cluster["inputs"]["bootstrapSelfManagedAddons"] is False, cluster["urn"]
    roles = [r["name"] for r in stack.of_type("aws:iam/role:Role")]
    assert roles == ["identity-role"], "the cluster's and nodes' roles are pulumi-eks's to make"


def test_the_kubernetes_provider_connects_to_the_cluster_pulumi_eks_made() -> None:
    stack = _created(preview=False, awsRoleArn=DEPLOYER_ROLE)
    provider = stack.one(K8S_PROVIDER_TYPE)
    assert provider["inputs"]["clusterIdentifier"] == (
        "arn:aws:eks:us-west-2:123456789012:cluster/analyst-new"
    )
    kubeconfig = json.loads(provider["inputs"]["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == (
        "https://analyst-new.eks.us-west-2.amazonaws.com"
    )
    args = kubeconfig["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--role-arn") + 1] == DEPLOYER_ROLE
    # pulumi-eks's own kubeconfig acts as the same identity.
    component = stack.one(EKS_COMPONENT)
    assert component["inputs"]["providerCredentialOpts"] == {"roleArn": DEPLOYER_ROLE}
    # It waits for the component, which stands for all of pulumi-eks's children.
    assert component["urn"] in provider["dependencies"], provider["urn"]
    association = stack.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association["inputs"]["clusterName"] == "analyst-new", association["urn"]


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_by_default_the_creator_gets_no_implicit_admin_and_the_deployer_a_managed_entry(
    preview: bool,
) -> None:
    stack = _created(preview)
    entries = stack.one(EKS_COMPONENT)["inputs"]["accessEntries"]
    # The deployer's session is assumed-role/deployer/session; the entry names the role.
    assert entries == {
        "deployer": {
            "principalArn": DEPLOYER_ROLE,
            "accessPolicies": {
                "admin": {"policyArn": ADMIN_POLICY, "accessScope": {"type": "cluster"}}
            },
        }
    }
    (cluster,) = stack.of_type(EKS_CLUSTER)
    assert cluster["inputs"]["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }, f"{cluster['urn']}: the transform did not turn the creator's admin off"


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_cluster_creator_admin_keeps_the_grant_pulumi_eks_makes(preview: bool) -> None:
    stack = _created(preview, clusterCreatorAdmin=True)
    # No second entry for the same principal: EKS makes the creator's own.
    assert stack.one(EKS_COMPONENT)["inputs"].get("accessEntries") in (None, {})
    (cluster,) = stack.of_type(EKS_CLUSTER)
    assert cluster["inputs"]["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": True,
    }, cluster["urn"]


def test_cluster_creator_admin_is_refused_for_an_existing_cluster() -> None:
    failure = run_failing(clusterCreatorAdmin=True)
    assert failure.returncode == 2
    assert "clusterCreatorAdmin applies to clusterMode create only" in failure.stderr


def _transformed(type_: str, props: dict[str, Any]) -> pulumi.ResourceTransformResult | None:
    options = pulumi.ResourceOptions()
    args = pulumi.ResourceTransformArgs(
        custom=True, type_=type_, name="c-eksCluster", props=props, opts=options
    )
    return without_creator_admin(args)


def test_the_transform_turns_off_only_the_creator_grant_of_the_eks_cluster() -> None:
    props = {
        "name": "analyst-new",
        "accessConfig": {
            "authenticationMode": "API",
            "bootstrapClusterCreatorAdminPermissions": True,
        },
    }
    result = _transformed(EKS_CLUSTER, props)
    assert result is not None
    assert result.props == {
        "name": "analyst-new",
        "accessConfig": {
            "authenticationMode": "API",
            "bootstrapClusterCreatorAdminPermissions": False,
        },
    }
    assert props["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is True, "copied"
    # pulumi-eks's other children (roles, access entries) pass untouched.
    assert _transformed("aws:eks/accessEntry:AccessEntry", {"principalArn": "x"}) is None
    assert _transformed("aws:iam/role:Role", {}) is None


def test_the_sandbox_runtime_class_is_read_after_pulumi_eks_is_done() -> None:
    stack = _created(preview=False)
    read = stack.one(RUNTIME_CLASS)
    assert read["read"] is True and read["inputs"]["id"] == "isolated-sandbox"
    (wait,) = stack.of_type("pulumi-python:dynamic:Resource")
    assert stack.one(EKS_COMPONENT)["urn"] in wait["dependencies"]
    assert wait["urn"] in read["dependencies"]


def test_the_dns_address_the_egress_policy_allows_comes_from_the_cluster_pulumi_eks_made() -> None:
    # The mocked EKS answers the service CIDR 10.100.0.0/16 once it has made the cluster.
    stack = _created(preview=False, egressPolicy=True)
    assert stack.outputs["clusterDnsAddress"] == "10.100.0.10"
    # A preview cannot know it: EKS picks the CIDR when it creates the cluster.
    preview = _created(preview=True, egressPolicy=True)
    assert preview.outputs["clusterDnsAddress"] == {"__unknown__": True}
