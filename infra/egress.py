"""The pods' own egress, bounded on the node (`egressPolicy`): pure builders and the cluster check.

EKS Auto Mode enforces network policies on the node, outside the pod and its sandbox guest, and
accepts, besides Kubernetes' NetworkPolicy, its ApplicationNetworkPolicy (networking.k8s.aws/
v1alpha1), whose egress peers may be domain names. Each analyst pod gets one: egress to the
cluster's DNS, the Pod Identity agent, S3 (the stack's bucket), STS and Bedrock runtime of the
stack's Region by name on 443, and the supplier API's pods on their port; no ingress. The supplier
API's pods accept ingress from the analyst pods only, on their port (a NetworkPolicy). The
shape follows the CRD AWS publishes (infra/schemas/, vendored with its source); the prerequisites
(the network policy controller switched on, a NodeClass with network policy) come from
https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html.

What no rule names is refused, and the Job proves it (app/controller/phases/cluster.py): the
destinations in EGRESS_DENIED, an AWS endpoint of the same Region and a public address, must time
out or be refused while STS and the supplier answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from app.core import cluster_env as env

from .pod_specs import DeployValue, labels

API_VERSION: Final = "networking.k8s.aws/v1alpha1"
KIND: Final = "ApplicationNetworkPolicy"
CRD_SCHEMA: Final = "networking.k8s.aws_applicationnetworkpolicies.yaml"
ANALYST_POLICY: Final = "analyst-egress"
SUPPLIER_POLICY: Final = "supplier-api-ingress"

POD_IDENTITY_AGENT: Final = "169.254.170.23/32"
POD_IDENTITY_PORT: Final = 80
HTTPS: Final = 443
DNS_PORT: Final = 53
# CoreDNS, which EKS runs in kube-system with this label.
CLUSTER_DNS: Final = {"k8s-app": "kube-dns"}
# The Region's endpoints the controller calls: STS (its identity check) and Bedrock runtime
# (the model turn); S3 by the bucket's own virtual-hosted name (infra/egress.bucket_host).
AWS_SERVICES: Final = ("sts", "bedrock-runtime")
# What the Job tries and must fail to reach: an AWS endpoint of the same Region that no rule
# names, and a public address outside AWS that answers on 443 from anywhere with internet egress
# (Cloudflare's anycast resolver), so a policy without its default deny shows as a connection.
UNNAMED_AWS_SERVICE: Final = "sqs"
PUBLIC_ADDRESS: Final = "1.1.1.1"

# The prerequisites, by the names the Auto Mode guide gives them.
VPC_CNI_CONFIGMAP: Final = ("kube-system", "amazon-vpc-cni")
NETWORK_POLICY_FLAG: Final = "enable-network-policy-controller"
NODE_CLASS_API: Final = "eks.amazonaws.com/v1"
# The NodeClass of Auto Mode's built-in node pools, where the analyst pods run.
NODE_CLASS: Final = "default"
NODE_CLASS_POLICIES: Final = ("DefaultAllow", "DefaultDeny")

ANALYST_PODS: Final = {env.COMPONENT_LABEL: env.ANALYST_COMPONENT}
SUPPLIER_PODS: Final = {env.COMPONENT_LABEL: env.SUPPLIER_SERVICE}


def aws_host(service: str, region: str) -> str:
    return f"{service}.{region}.amazonaws.com"


def bucket_host(bucket: str, region: str) -> str:
    """The virtual-hosted S3 name boto3 calls for the bucket (the only S3 name allowed)."""
    return f"{bucket}.s3.{region}.amazonaws.com"


def denied_destinations(region: str) -> str:
    """The EGRESS_DENIED value: `host:port` pairs, space-separated."""
    return f"{aws_host(UNNAMED_AWS_SERVICE, region)}:{HTTPS} {PUBLIC_ADDRESS}:{HTTPS}"


def _tcp(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


def analyst_egress_policy(
    namespace: str, region: str, bucket_name_host: DeployValue
) -> dict[str, Any]:
    """The analyst pods' ApplicationNetworkPolicy: no ingress, and egress only as listed."""
    names = [bucket_name_host, *(aws_host(service, region) for service in AWS_SERVICES)]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": ANALYST_POLICY, "namespace": namespace, "labels": labels("analyst")},
        "spec": {
            "podSelector": {"matchLabels": dict(ANALYST_PODS)},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                            },
                            "podSelector": {"matchLabels": dict(CLUSTER_DNS)},
                        }
                    ],
                    "ports": [
                        {"protocol": "UDP", "port": DNS_PORT},
                        {"protocol": "TCP", "port": DNS_PORT},
                    ],
                },
                {
                    "to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}],
                    "ports": [_tcp(POD_IDENTITY_PORT)],
                },
                {"to": [{"domainNames": names}], "ports": [_tcp(HTTPS)]},
                {
                    "to": [{"podSelector": {"matchLabels": dict(SUPPLIER_PODS)}}],
                    "ports": [_tcp(env.SUPPLIER_PORT)],
                },
            ],
        },
    }


def supplier_ingress_policy(namespace: str) -> dict[str, Any]:
    """The supplier API's pods: ingress from the analyst pods on the API's port, nothing else."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": SUPPLIER_POLICY,
            "namespace": namespace,
            "labels": labels(env.SUPPLIER_SERVICE),
        },
        "spec": {
            "podSelector": {"matchLabels": dict(SUPPLIER_PODS)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": dict(ANALYST_PODS)}}],
                    "ports": [_tcp(env.SUPPLIER_PORT)],
                }
            ],
        },
    }


def prerequisite_problems(
    vpc_cni: Mapping[str, str] | None,
    node_class: Mapping[str, Any] | None,
    cluster: str,
    region: str,
) -> list[str]:
    """Each reason the cluster would accept the policies without enforcing them, with its fix."""
    problems = []
    namespace, name = VPC_CNI_CONFIGMAP
    if (vpc_cni or {}).get(NETWORK_POLICY_FLAG) != "true":
        problems.append(
            f'the ConfigMap {namespace}/{name} does not set {NETWORK_POLICY_FLAG}: "true", so '
            "Auto Mode's network policy controller is off: kubectl apply a ConfigMap of that name "
            f'with data {NETWORK_POLICY_FLAG}: "true" (cluster {cluster}, {region})'
        )
    found = (node_class or {}).get("networkPolicy")
    if found not in NODE_CLASS_POLICIES:
        problems.append(
            f"the NodeClass {NODE_CLASS} has no spec.networkPolicy (found {found!r}), so its nodes "
            f"enforce no policy: set it to DefaultAllow (kubectl edit nodeclass {NODE_CLASS})"
        )
    return problems
