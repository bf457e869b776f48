"""The pods' egress, bounded on the node (egressPolicy): the ApplicationNetworkPolicy against the
CRD AWS publishes (vendored in infra/schemas/), the supplier's ingress policy, the program's
prerequisite check, the order of creation, the Job's probe settings and the pack's refusal."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate as kv
import pytest
import yaml

from app.core import cluster_env as env
from infra.egress import (
    ANALYST_POLICY,
    CRD_SCHEMA,
    PUBLIC_ADDRESS,
    analyst_egress_policy,
    bucket_hosts,
    cluster_dns_address,
    host_cidr,
    supplier_ingress_policy,
)
from infra.render_manifests import DeployValues, stack_config, stack_objects
from infra.render_manifests import main as render_main
from policies.pack import analyst_guard
from tests.support.policy_runs import stack_violations
from tests.support.stack_run import REPO_ROOT, StackRun, run_failing, run_stack

ANP = "kubernetes:networking.k8s.aws/v1alpha1:ApplicationNetworkPolicy"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
JOB = "kubernetes:batch/v1:Job"
SCHEMA = REPO_ROOT / "infra" / "schemas" / CRD_SCHEMA


def _crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    (version,) = crd["spec"]["versions"]
    assert (crd["spec"]["group"], version["name"]) == ("networking.k8s.aws", "v1alpha1")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _peers(policy: dict[str, Any]) -> list[dict[str, Any]]:
    return [peer for rule in policy["spec"]["egress"] for peer in rule.get("to", [])]


def _rendered() -> list[dict[str, Any]]:
    return stack_objects(stack_config("dev"), DeployValues())


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_the_rendered_policy_validates_against_the_published_crd() -> None:
    policy = _one(_rendered(), "ApplicationNetworkPolicy")
    jsonschema.validate(policy, _crd_schema())
    # The CRD's CEL rules, which a JSON schema validator does not run: domainNames stands alone.
    for peer in _peers(policy):
        if "domainNames" in peer:
            assert set(peer) == {"domainNames"}, peer
    # And the schema can fail: a field the CRD does not have, a bad domain.
    broken = copy.deepcopy(policy)
    broken["spec"]["egress"][2]["to"][0]["domainNames"].append("not a domain!")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, _crd_schema())


def test_the_analyst_pods_reach_dns_the_agent_aws_by_name_and_the_supplier_only() -> None:
    policy = analyst_egress_policy(
        "ns", "eu-west-1", bucket_hosts("b", "eu-west-1"), host_cidr("172.20.0.10")
    )
    assert (
        policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]
    )
    assert policy["spec"]["podSelector"] == {"matchLabels": {env.COMPONENT_LABEL: "analyst"}}
    rules = policy["spec"]["egress"]
    assert [[(p["protocol"], p["port"]) for p in rule["ports"]] for rule in rules] == [
        [("UDP", 53), ("TCP", 53)],
        [("TCP", 80)],
        [("TCP", 443)],
        [("TCP", env.SUPPLIER_PORT)],
    ]
    # DNS by the resolver's address: on Auto Mode no kube-dns pod exists for a selector to
    # match (https://github.com/aws/containers-roadmap/issues/2552).
    assert rules[0]["to"] == [{"ipBlock": {"cidr": "172.20.0.10/32"}}]
    # The Pod Identity agent on both of its addresses (IPv6 clusters call fd00:ec2::23,
    # https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html).
    assert rules[1]["to"] == [
        {"ipBlock": {"cidr": "169.254.170.23/32"}},
        {"ipBlock": {"cidr": "fd00:ec2::23/128"}},
    ]
    assert rules[2]["to"] == [
        {
            "domainNames": [
                "b.s3.eu-west-1.amazonaws.com",
                "sts.eu-west-1.amazonaws.com",
                "bedrock-runtime.eu-west-1.amazonaws.com",
                "kms.eu-west-1.amazonaws.com",
            ]
        }
    ]
    assert rules[3]["to"] == [
        {"podSelector": {"matchLabels": {env.COMPONENT_LABEL: "supplier-api"}}}
    ]


def test_the_supplier_accepts_the_analyst_pods_only(tmp_path: Path) -> None:
    policy = supplier_ingress_policy("ns")
    kv.validate(policy, "1.36.0", strict=True)
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {env.COMPONENT_LABEL: "analyst"}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": env.SUPPLIER_PORT}]


@pytest.fixture(scope="module")
def bounded() -> StackRun:
    return run_stack(egressPolicy=True, comparisonPod=True)


def test_the_program_creates_the_rendered_policies_before_any_analyst_pod(
    bounded: StackRun,
) -> None:
    anp, ingress = bounded.one(ANP), bounded.one(NETWORK_POLICY)
    values = DeployValues(bucket=bounded.outputs["bucket"], cluster_dns="10.100.0.10")
    rendered = stack_objects(stack_config("dev", {"namespace": "procurement-analyst",
                                                  "comparisonPod": True}), values)  # fmt: skip
    for registered, kind in ((anp, "ApplicationNetworkPolicy"), (ingress, "NetworkPolicy")):
        expected = _one(rendered, kind)
        assert registered["inputs"]["spec"] == expected["spec"], registered["urn"]
        assert registered["inputs"]["metadata"] == expected["metadata"], registered["urn"]
    for job in bounded.of_type(JOB):
        if job["inputs"]["metadata"]["labels"][env.COMPONENT_LABEL] == env.ANALYST_COMPONENT:
            # (The comparison Jobs come after their analyst Job, so after these too.)
            assert {anp["urn"], ingress["urn"]} <= set(job["dependencies"]), job["urn"]


def test_each_analyst_job_is_told_what_it_must_fail_to_reach(bounded: StackRun) -> None:
    for job in bounded.of_type(JOB):
        env_of = {
            e["name"]: e["value"]
            for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0].get("env", [])
        }
        component = job["inputs"]["metadata"]["labels"][env.COMPONENT_LABEL]
        if component == env.ANALYST_COMPONENT:
            assert env_of[env.EGRESS_DENIED] == (
                f"sqs.us-west-2.amazonaws.com:443 {PUBLIC_ADDRESS}:443"
            ), job["urn"]
    off = run_stack()
    assert off.of_type(ANP) == [] and off.of_type(NETWORK_POLICY) == []
    for job in off.of_type(JOB):
        names = [
            e["name"] for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
        ]
        assert env.EGRESS_DENIED not in names, "no probe without a policy to prove"


def test_the_namespace_waits_for_the_checked_prerequisites(bounded: StackRun) -> None:
    namespace = bounded.one("kubernetes:core/v1:Namespace")
    assert namespace["inputs"]["metadata"]["annotations"] == {
        "procurement-analyst/egress-prerequisites": (
            "network policy controller on; NodeClass default enforces network policy"
        )
    }
    reads = {r["inputs"]["id"] for r in bounded.resources if r["read"]}
    assert "default" in reads
    assert {"kind": "ConfigMap", "namespace": "kube-system", "name": "amazon-vpc-cni"} in (
        bounded.program_reads
    )


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        (
            {"network_policy_controller": "false"},
            'kube-system/amazon-vpc-cni does not set enable-network-policy-controller: "true"',
        ),
        # The common case: Auto Mode clusters start without the ConfigMap; one line naming it
        # and how to create it, never the engine's bare "does not exist".
        (
            {"vpc_cni_config_map": False},
            "the ConfigMap kube-system/amazon-vpc-cni does not exist, so Auto Mode's network "
            "policy controller is off: create it with data "
            'enable-network-policy-controller: "true"',
        ),
        (
            {"node_class_network_policy": None},
            "AWS advises against editing the built-in default NodeClass; create a NodeClass of "
            "your own with spec.networkPolicy DefaultAllow",
        ),
    ],
)
def test_a_cluster_that_would_not_enforce_the_policy_stops_the_program(
    world: dict[str, Any], expected: str
) -> None:
    failure = run_failing(world=world, egressPolicy=True)
    assert (
        "ClusterNotReady: egressPolicy: cluster procurement-analyst would accept" in failure.stderr
    )
    assert expected in failure.stderr


def test_the_pack_refuses_an_analyst_pod_without_its_egress_policy(bounded: StackRun) -> None:
    assert stack_violations(bounded) == []
    without = [r for r in bounded.resources if r["type"] != ANP]
    violations = [message for message, _ in stack_violations(bounded, without)]
    assert sorted(violations) == sorted(
        f"{job['name']}: an analyst pod that probes its bounded egress, but no "
        f"ApplicationNetworkPolicy selects it"
        for job in bounded.of_type(JOB)
        if job["inputs"]["metadata"]["labels"][env.COMPONENT_LABEL] == env.ANALYST_COMPONENT
    ), violations
    assert ANALYST_POLICY == "analyst-egress"
    assert analyst_guard.APPLICATION_NETWORK_POLICY == ANP


@pytest.mark.parametrize(
    ("service_cidr", "resolver"),
    [
        ("10.100.0.0/16", "10.100.0.10"),
        ("172.20.0.0/16", "172.20.0.10"),
        ("192.168.128.0/20", "192.168.128.10"),
        ("fd12:3456:789a::/108", "fd12:3456:789a::a"),
    ],
)
def test_the_resolver_is_the_tenth_address_of_the_service_cidr(
    service_cidr: str, resolver: str
) -> None:
    # As EKS's node bootstrap sets the kubelet's clusterDNS: DNS_CLUSTER_IP=
    # ${SERVICE_IPV4_CIDR%.*}.10, and ${SERVICE_IPV6_CIDR%/*}a (awslabs/amazon-eks-ami,
    # files/bootstrap.sh).
    assert cluster_dns_address(service_cidr) == resolver


@pytest.mark.parametrize(
    ("world", "settings", "cidr"),
    [
        ({}, {}, "10.100.0.10/32"),
        ({"service_ipv4_cidr": "172.20.0.0/16"}, {}, "172.20.0.10/32"),
        ({"ip_family": "ipv6"}, {}, "fd12:3456:789a::a/128"),
        ({}, {"clusterDnsAddress": "169.254.20.10"}, "169.254.20.10/32"),
    ],
)
def test_the_program_allows_dns_to_the_clusters_own_resolver(
    world: dict[str, Any], settings: dict[str, Any], cidr: str
) -> None:
    run = run_stack(world=world, egressPolicy=True, **settings)
    (dns,) = [
        rule
        for rule in run.one(ANP)["inputs"]["spec"]["egress"]
        if {"protocol": "UDP", "port": 53} in rule["ports"]
    ]
    assert dns == {
        "to": [{"ipBlock": {"cidr": cidr}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    assert run.outputs["clusterDnsAddress"] == cidr.rsplit("/", 1)[0]


def test_make_manifests_renders_the_dns_rule_for_the_resolver_it_is_given(
    tmp_path: Path,
) -> None:
    def dns_cidr(*args: str) -> str:
        assert render_main(["--out", str(tmp_path), *args]) == 0
        policy = yaml.safe_load(
            (tmp_path / f"applicationnetworkpolicy-{ANALYST_POLICY}.yaml").read_text()
        )
        (peer,) = policy["spec"]["egress"][0]["to"]
        return str(peer["ipBlock"]["cidr"])

    assert dns_cidr() == "172.20.0.10/32"
    assert dns_cidr("--cluster-dns", "10.100.0.10") == "10.100.0.10/32"
    with pytest.raises(SystemExit):
        render_main(["--out", str(tmp_path), "--cluster-dns", "kube-dns"])


def test_egress_policy_is_refused_up_front_on_a_cluster_that_is_not_auto_mode() -> None:
    # Only Auto Mode's node agent enforces an ApplicationNetworkPolicy
    # (https://docs.aws.amazon.com/eks/latest/userguide/auto-net-pol.html); elsewhere the
    # policy would be accepted and ignored.
    world = {"auto_mode": False, "addons": ["eks-pod-identity-agent"]}
    failure = run_failing(world=world, egressPolicy=True)
    assert "egressPolicy is true but the cluster is not EKS Auto Mode" in failure.stderr
    assert run_stack(world=world).one("kubernetes:core/v1:Namespace")


def test_in_us_east_1_the_bucket_is_also_allowed_by_s3s_global_name() -> None:
    # botocore's us_east_1_regional_endpoint defaults to 'legacy': the global name in us-east-1
    # (botocore/args.py, _should_force_s3_global).
    assert bucket_hosts("b", "us-east-1") == ["b.s3.us-east-1.amazonaws.com", "b.s3.amazonaws.com"]
    assert bucket_hosts("b", "eu-west-1") == ["b.s3.eu-west-1.amazonaws.com"]
    policy = _one(
        stack_objects(stack_config("dev", {"region": "us-east-1"}), DeployValues(bucket="b")),
        "ApplicationNetworkPolicy",
    )
    names = [n for peer in _peers(policy) for n in peer.get("domainNames", [])]
    assert names[:2] == ["b.s3.us-east-1.amazonaws.com", "b.s3.amazonaws.com"]
    jsonschema.validate(policy, _crd_schema())
