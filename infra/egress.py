"""The pods' own egress, bounded on the node (`egressPolicy`): pure builders and the cluster check.

EKS Auto Mode enforces network policies on the node, outside the pod and its sandbox guest, and
accepts, besides Kubernetes' NetworkPolicy, its ApplicationNetworkPolicy (networking.k8s.aws/
v1alpha1), whose egress peers may be domain names. Each analyst pod gets one: egress to the
cluster's DNS resolver by address, the Pod Identity agent (IPv4 and IPv6), S3 (the stack's
bucket), STS and Bedrock runtime of the stack's Region by name on 443, and the supplier API's pods
on their port; no ingress.

DNS is allowed by the resolver's address, never by a kube-dns pod selector: on Auto Mode CoreDNS
runs on the node, not as a pod in kube-system, so a selector matches nothing and every name
(STS, S3, Bedrock, the supplier's Service) stops resolving
(https://github.com/aws/containers-roadmap/issues/2552; the same fix, found on a real Auto Mode
cluster: https://github.com/archestra-ai/archestra/pull/5538). The address is the one the
kubelet writes into each pod's /etc/resolv.conf: the 10th address of the cluster's service CIDR,
as EKS's node bootstrap computes it (`DNS_CLUSTER_IP=${SERVICE_IPV4_CIDR%.*}.10`,
awslabs/amazon-eks-ami files/bootstrap.sh, and `${SERVICE_IPV6_CIDR%/*}a` for IPv6), unless the
stack names another (clusterDnsAddress, e.g. a node-local cache). The supplier
API's pods accept ingress from the analyst pods only, on their port (a NetworkPolicy). The
shape follows the CRD AWS publishes (infra/schemas/, vendored with its source); the prerequisites
(the network policy controller switched on, a NodeClass with network policy) come from
https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html.

What no rule names is refused, and the Job proves it (app/controller/phases/cluster.py): the
destinations in EGRESS_DENIED, an AWS endpoint of the same Region and a public address, must time
out or be refused while STS and the supplier answer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from app.core import cluster_env as env

from .pod_specs import DeployValue, labels

API_VERSION: Final = "networking.k8s.aws/v1alpha1"
KIND: Final = "ApplicationNetworkPolicy"
CRD_SCHEMA: Final = "networking.k8s.aws_applicationnetworkpolicies.yaml"
ANALYST_POLICY: Final = "analyst-egress"
SUPPLIER_POLICY: Final = "supplier-api-ingress"

# The agent listens on both addresses; an IPv6 cluster's SDKs call the second.
# https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
POD_IDENTITY_AGENT: Final = "169.254.170.23/32"
POD_IDENTITY_AGENT_V6: Final = "fd00:ec2::23/128"
POD_IDENTITY_PORT: Final = 80
HTTPS: Final = 443
DNS_PORT: Final = 53
# The resolver is the service CIDR's address of this index (see the module's docstring).
CLUSTER_DNS_INDEX: Final = 10
# The Region's endpoints the controller calls: STS (its identity check), Bedrock runtime (the
# model turn) and KMS (signing the run's statement with the stack's key); S3 by the bucket's own
# virtual-hosted name (infra/egress.bucket_host).
AWS_SERVICES: Final = ("sts", "bedrock-runtime", "kms")
# What the Job tries and must fail to reach: an AWS endpoint of the same Region that no rule
# names, and a public address outside AWS that answers on 443 from anywhere with internet egress
# (Cloudflare's anycast resolver), so a policy without its default deny shows as a connection.
UNNAMED_AWS_SERVICE: Final = "sqs"
PUBLIC_ADDRESS: Final = "1.1.1.1"

# The prerequisites, by the names the Auto Mode guide gives them.
VPC_CNI_CONFIGMAP: Final = ("kube-system", "amazon-vpc-cni")
NETWORK_POLICY_FLAG: Final = "enable-network-policy-controller"
NODE_CLASS_API: Final = "eks.amazonaws.com/v1"
NETWORK_POLICY_GUIDE: Final = "https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html"
NODE_CLASS_GUIDE: Final = "https://docs.aws.amazon.com/eks/latest/userguide/create-node-class.html"
# The NodeClass of Auto Mode's built-in node pools, where the analyst pods run.
NODE_CLASS: Final = "default"
NODE_CLASS_POLICIES: Final = ("DefaultAllow", "DefaultDeny")

ANALYST_PODS: Final = {env.COMPONENT_LABEL: env.ANALYST_COMPONENT}
SUPPLIER_PODS: Final = {env.COMPONENT_LABEL: env.SUPPLIER_SERVICE}


def cluster_dns_address(service_cidr: str) -> str:
    """The cluster DNS address the kubelet gives pods, from the cluster's service CIDR."""
    network = ipaddress.ip_network(service_cidr, strict=False)
    return str(network.network_address + CLUSTER_DNS_INDEX)


def host_cidr(address: str) -> str:
    """One address as an ipBlock CIDR (/32 or /128)."""
    parsed = ipaddress.ip_address(address)
    return f"{parsed}/{parsed.max_prefixlen}"


def aws_host(service: str, region: str) -> str:
    return f"{service}.{region}.amazonaws.com"


def bucket_host(bucket: str, region: str) -> str:
    """The virtual-hosted S3 name boto3 calls for the bucket (the only S3 name allowed)."""
    return f"{bucket}.s3.{region}.amazonaws.com"


# In us-east-1 botocore calls S3's global name unless told otherwise: its
# `us_east_1_regional_endpoint` setting defaults to 'legacy', which forces the global endpoint
# there (botocore/args.py, _should_force_s3_global).
GLOBAL_S3_REGION: Final = "us-east-1"


def bucket_hosts(bucket: str, region: str) -> list[str]:
    """Every S3 name boto3 may call for the bucket in `region`."""
    hosts = [bucket_host(bucket, region)]
    if region == GLOBAL_S3_REGION:
        hosts.append(f"{bucket}.s3.amazonaws.com")
    return hosts


def denied_destinations(region: str) -> str:
    """The EGRESS_DENIED value: `host:port` pairs, space-separated."""
    return f"{aws_host(UNNAMED_AWS_SERVICE, region)}:{HTTPS} {PUBLIC_ADDRESS}:{HTTPS}"


def _tcp(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


def dns_rule(resolver_cidr: DeployValue) -> dict[str, Any]:
    """Egress to the cluster's resolver, over UDP and TCP (a truncated answer is retried on
    TCP)."""
    return {
        "to": [{"ipBlock": {"cidr": resolver_cidr}}],
        "ports": [
            {"protocol": "UDP", "port": DNS_PORT},
            {"protocol": "TCP", "port": DNS_PORT},
        ],
    }


def analyst_egress_policy(
    namespace: str,
    region: str,
    bucket_name_hosts: DeployValue,
    resolver_cidr: DeployValue,
) -> dict[str, Any]:
    """The analyst pods' ApplicationNetworkPolicy: no ingress, and egress only as listed.
    `bucket_name_hosts` is bucket_hosts' list (or an Output of it); `resolver_cidr` the cluster DNS
    address as a /32 (or /128) block (host_cidr)."""
    services = [aws_host(service, region) for service in AWS_SERVICES]
    if isinstance(bucket_name_hosts, list):
        names: DeployValue = [*bucket_name_hosts, *services]
    else:  # an Output of the list: the whole list follows it
        names = bucket_name_hosts.apply(lambda hosts: [*hosts, *services])
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": ANALYST_POLICY, "namespace": namespace, "labels": labels("analyst")},
        "spec": {
            "podSelector": {"matchLabels": dict(ANALYST_PODS)},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                dns_rule(resolver_cidr),
                {
                    "to": [
                        {"ipBlock": {"cidr": POD_IDENTITY_AGENT}},
                        {"ipBlock": {"cidr": POD_IDENTITY_AGENT_V6}},
                    ],
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
    """Each reason the cluster would accept the policies without enforcing them, one line each:
    the missing piece and the supported way to enable it. `vpc_cni` is None when the ConfigMap
    does not exist (the common case: Auto Mode clusters start without it)."""
    problems = []
    namespace, name = VPC_CNI_CONFIGMAP
    if vpc_cni is None:
        problems.append(
            f"the ConfigMap {namespace}/{name} does not exist, so Auto Mode's network policy "
            f'controller is off: create it with data {NETWORK_POLICY_FLAG}: "true" '
            f"(cluster {cluster}, {region}; {NETWORK_POLICY_GUIDE})"
        )
    elif vpc_cni.get(NETWORK_POLICY_FLAG) != "true":
        problems.append(
            f'the ConfigMap {namespace}/{name} does not set {NETWORK_POLICY_FLAG}: "true", so '
            f"Auto Mode's network policy controller is off: set that key in it "
            f"(cluster {cluster}, {region}; {NETWORK_POLICY_GUIDE})"
        )
    found = (node_class or {}).get("networkPolicy")
    if found not in NODE_CLASS_POLICIES:
        problems.append(
            f"the NodeClass {NODE_CLASS} has no spec.networkPolicy (found {found!r}), so its "
            "nodes enforce no policy: AWS advises against editing the built-in default NodeClass; "
            "create a NodeClass of your own with spec.networkPolicy DefaultAllow and a NodePool "
            f"that uses it ({NODE_CLASS_GUIDE})"
        )
    return problems
