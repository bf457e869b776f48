"""One rehearsal, inside its namespaces: the stack's objects, its stand-ins, and each pod run as
the kubelet would, in the order `pulumi up` creates them (the supplier ready, then the Jobs)."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Final, TextIO

from app.core import cluster_env as env
from app.core.roles import Layer
from infra.targets import RuntimeTarget

from . import dns, egress, namespace
from .aws import RehearsalAws
from .diagnose import explain
from .dns import CLUSTER_DNS
from .image_stand_in import ensure_image
from .network import allocate, bring_up, service_records
from .nitro import compare_guests
from .objects import BUCKET, ROLE_NAME, Manifest, StackUnderRehearsal, Tweak, render
from .pod_identity import PodIdentityAgent
from .pods import Kubelet, PodResult, pod_name, service_reaches
from .seccomp_profiles import KUBELET_SECCOMP_ROOT, prepare_node
from .secret_values import make_values
from .verdicts import (
    Verdicts,
    analyst_verdicts,
    egress_verdicts,
    filter_counts,
    init_outcome,
    installed_profiles,
)

NITRO: Final = {
    RuntimeTarget.ISOLATED_SANDBOX: "the Nitro VM: not simulated; every pod runs on this "
    "machine's kernel (runtimeClassName is named below as not simulated)",
    RuntimeTarget.HARDENED_CONTAINER: "the node: this machine's kernel runs every pod, as an "
    "ordinary node's would (runtimeTarget hardened-container asks for no sandbox)",
}
STAND_INS: Final = (
    "EKS Pod Identity: a stand-in webhook (the variables and the projected token it adds) and "
    "agent (169.254.170.23:80) that checks the pod's token and the role's trust policy",
    "S3, IAM and STS: a moto server with IAM enforcement, the stack's bucket, seeded objects, "
    "role and policies as the program renders them",
    "Bedrock: not called; the controller's offline model, selected by "
    f"{env.REHEARSAL}={env.REHEARSAL_ON}",
    "the images: this machine's /usr and /etc, the checkout at /opt/analyst, and "
    "requirements-runtime.txt in a virtual environment of /usr/bin/python3 at /usr/local",
    f"cluster DNS and Services: a resolver at the cluster DNS address {CLUSTER_DNS}, named by "
    "each pod's /etc/resolv.conf as the kubelet writes it, answering the Services' cluster "
    "names with their ClusterIPs (on the rehearsal network's loopback, one network for every "
    "pod) and the egress check's denied names with their stand-ins; nothing else resolves",
    "the container runtime's seccomp: each container's profile loaded as runc loads it "
    "(libseccomp, then exec); RuntimeDefault is containerd's default profile as "
    "app/tools/bubblewrap/container_seccomp.py states it",
)
OPERATOR: Final = (
    "the Security Profiles Operator and cert-manager: cluster installs (Helm charts), not "
    "installed; the rehearsal writes each SeccompProfile object's spec where the operator writes "
    f"it on every node, {KUBELET_SECCOMP_ROOT}/operator/<name>.json"
)


@dataclass(frozen=True)
class Options:
    layers: tuple[Layer, ...]
    comparison: bool
    stream: TextIO
    settings: dict[str, str]
    tweak: Tweak | None = None


def rehearse(options: Options) -> int:
    out = options.stream
    verdicts = Verdicts(out)
    ensure_image(out)  # built before the namespaces; here only confirmed
    stack = render(options.tweak, options.settings)
    config = stack.config
    print(
        f"==> rehearsal of the {stack.namespace} namespace ({config.runtime_target} pods, case "
        f"{config.case_id}): {len(stack.objects)} objects rendered by infra.render_manifests "
        "(what `make manifests` writes)",
        file=out,
    )
    for line in (NITRO[config.runtime_target], *STAND_INS):
        print(f"  stand-in: {line}", file=out)
    state = namespace.mount_state()
    node = prepare_node(state / "node", stack.objects)
    if node.installed:
        print(f"  stand-in: {OPERATOR}", file=out)
    installed_profiles(node, verdicts)
    host_userns = namespace.host_max_user_namespaces()
    services = allocate(stack.services, stack.namespace)
    for address in services:
        problem = service_reaches(address, stack.supplier)
        if problem:
            verdicts.check(False, "every Service routes to its pod", problem)
            return 1
    policies = [m for m in stack.objects if m["kind"] == "ApplicationNetworkPolicy"]
    bounded = egress.plan(policies[0], stack, services) if policies else None
    bring_up(services, list(bounded.addresses.values()) if bounded else [])
    names = {layer: pod_name(job["metadata"]["name"]) for layer, job in stack.analyst_jobs.items()}
    aws = RehearsalAws(stack, BUCKET, ROLE_NAME, state / "aws", list(names.values()))
    (state / "aws").mkdir()
    records = service_records(services) | (bounded.records if bounded else {})
    resolver = dns.Resolver(CLUSTER_DNS, records)
    with ExitStack() as cleanup:
        resolver.start()
        cleanup.callback(resolver.stop)
        cleanup.callback(aws.stop)
        aws.start()
        agent = PodIdentityAgent(aws)
        agent.start()
        cleanup.callback(agent.stop)
        added = {"AWS_ENDPOINT_URL": aws.endpoint_url, env.REHEARSAL: env.REHEARSAL_ON}
        kubelet = Kubelet(stack, state, make_values(stack), services, agent, added, node)
        cleanup.callback(kubelet.stop)
        if bounded is not None:
            cleanup.callback(egress.close, bounded)
        print(f"  moto: bucket {aws.bucket}, role {aws.role_arn}, at {aws.endpoint_url}", file=out)
        supplier = kubelet.start_deployment(stack.supplier)
        _pod_header(supplier, out)

        def announce(result: PodResult) -> None:
            _pod_header(result, out)
            if result.admitted:
                for name, value in added.items():
                    print(
                        f"  added by the rehearsal, not in the manifest: {name}={value}", file=out
                    )
            print(f"--- log of {result.name} ---", file=out, flush=True)

        if not verdicts.check(
            not supplier.refusal and supplier.exit_code is None,
            f"the supplier Deployment's pod {supplier.name} is ready "
            f"(readiness probe on port {env.SUPPLIER_PORT})",
            "; ".join([supplier.refusal, *supplier.log("supplier-api")[-5:]]),
        ):
            return 1
        if bounded is not None and not _bound_egress(bounded, policies[0], out, verdicts):
            return 1
        supplier_name = service_names_of(stack)
        if bounded is not None:
            # Not a stop: the Job then shows what a pod without DNS does.
            _resolver_answers(supplier_name, verdicts)
        for layer in options.layers:
            job = stack.analyst_jobs.get(layer)
            if job is None:
                verdicts.check(False, f"the stack renders an analyst Job for {layer}")
                continue
            result = kubelet.run_job(job, out, name=names[layer], announce=announce)
            _pod_header(result, out, after=True)
            init_outcome(result, host_userns, verdicts)
            stored = analyst_verdicts(result, layer, aws, agent, verdicts, added)
            if bounded is not None and stored is not None:
                egress_verdicts(stored, bounded.denied, verdicts)
            # What every layer's Job resolves: the supplier's name, and each denied name.
            denied_names = list(bounded.records) if bounded is not None else []
            _resolved_through_the_resolver(resolver, [supplier_name, *denied_names], verdicts)
            filter_counts(result, verdicts)
            for sentence in explain(result) if not result.succeeded else []:
                verdicts.check(False, f"the failure comes from {sentence}")
            comparison = stack.comparison_jobs.get(layer)
            if options.comparison and comparison is not None:
                compared = kubelet.run_job(comparison, out, announce=announce)
                _pod_header(compared, out, after=True)
                compare_guests(result, compared, verdicts)
        if namespace.host_max_user_namespaces() != host_userns:
            verdicts.check(False, "this machine's user.max_user_namespaces is unchanged")
    print("==> rehearsal summary", file=out)
    for line in verdicts.lines:
        print(f"  {line}", file=out)
    return 1 if verdicts.failed else 0


def _bound_egress(
    bounded: egress.EgressStandIn, policy: Manifest, out: TextIO, verdicts: Verdicts
) -> bool:
    """Listeners on the denied destinations, a control that each accepts, then the rules."""
    name = policy["metadata"]["name"]
    print(f"==> egress: ApplicationNetworkPolicy {name} as nftables rules", file=out)
    egress.listen(bounded)
    for host, port in bounded.denied:
        address = bounded.addresses[host]
        if not verdicts.check(
            egress.accepts(address, port),
            f"before the rules, {host}:{port} (here {address}, a listener of the rehearsal) "
            "accepts a connection: only the rules can refuse it",
        ):
            return False
    egress.apply(bounded)
    print(
        "  stand-in: the rules apply to the whole rehearsal network namespace, which every pod "
        "shares (the node applies them to the analyst pods alone); the supplier's ingress "
        "NetworkPolicy is not simulated (every source here is local)",
        file=out,
    )
    for rule in bounded.rules:
        print(f"  nft: {rule}", file=out)
    for note in bounded.notes:
        print(f"  not simulated: {note}", file=out)
    return True


def service_names_of(stack: StackUnderRehearsal) -> str:
    """The supplier Service's cluster DNS name, which the controller calls."""
    return env.service_host(env.SUPPLIER_SERVICE, stack.namespace)


def _resolver_answers(name: str, verdicts: Verdicts) -> bool:
    """Under the rules, the cluster resolver still answers, over UDP and over TCP: the policy's
    DNS rule at work (without it, both time out)."""
    answered = {transport: dns.query(CLUSTER_DNS, name, transport) for transport in ("udp", "tcp")}
    return verdicts.check(
        all(answered.values()),
        f"under the rules, the cluster resolver {CLUSTER_DNS}:{dns.DNS_PORT} answers {name} over "
        "UDP and TCP (the policy's DNS rule; without it no name resolves)",
        ", ".join(f"{t}: {a or 'no answer'}" for t, a in answered.items()),
    )


def _resolved_through_the_resolver(
    resolver: dns.Resolver, expected: list[str], verdicts: Verdicts
) -> None:
    """The Job asked the cluster resolver for each expected name (nothing else could answer)."""
    asked = set(resolver.names_asked())
    missing = [name for name in expected if name not in asked]
    verdicts.check(
        not missing,
        f"the Job resolved {', '.join(expected)} through the cluster resolver",
        f"never asked: {', '.join(missing)}",
    )


def _pod_header(result: PodResult, out: TextIO, *, after: bool = False) -> None:
    if after:
        state = f"refused: {result.refusal}" if result.refusal else f"exit code {result.exit_code}"
        print(f"==> pod {result.name} ({result.owner}) ended: {state}", file=out, flush=True)
        return
    print(f"==> pod {result.name} ({result.owner})", file=out)
    for line in result.admitted:
        print(f"  admission (Pod Identity webhook stand-in) added {line}", file=out)
    for where, choice in result.seccomp.items():
        print(f"  seccomp of {where}: {choice.describe()}", file=out)
    for line in result.not_simulated:
        print(f"  not simulated: {line}", file=out)
