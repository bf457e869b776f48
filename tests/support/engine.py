"""Runs the Pulumi program under recording mocks and reports what it registered.

No CLI, no cloud: `pulumi.runtime.set_mocks` stands in for the engine. Before the program
runs, the stack's config goes through the engine's own type check and defaults
(engine_config.py); then every resource, read and invoke is recorded with its inputs, parent,
provider and options, and every provider call is answered from a described account and
cluster (`World`). In preview mode a resource's outputs are only what the engine would know
before creating it: its known inputs, and nothing a provider computes. Secret values never
leave this module: they are recorded as SECRET_MARKER.

    python -m tests.support.engine [--config JSON] [--stack NAME] [--preview] [--world JSON]

prints {"resources": [...], "invokes": [...], "outputs": {...}, "logs": [...]} as JSON, or
exits 2 with the engine's or the program's error.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import runpy
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from . import eks_component
from .engine_config import PROJECT_FILE, ConfigValue, program_config, project_document

SECRET_MARKER = {"__secret__": True}
# The taint the mocked sandbox RuntimeClass tolerates: the program must copy it, not know it.
SANDBOX_TAINT = "mock.example/sandbox-node"
ACCOUNT_ID = "123456789012"
CLUSTER_CA = base64.b64encode(b"mock cluster CA").decode()
DIGEST = "sha256:" + "0" * 64
# The secret values the mocks hand out, so tests can look for them where they must not be.
SUPPLIER_KEY = "mock-supplier-key"
PRIVATE_KEY_PREFIX = "mock private key of"
REGISTRY_TOKEN = "mock-registry-token"
# What a self-managed backend calls the organization of every stack.
DEFAULT_ORGANIZATION = "organization"


@dataclass(frozen=True)
class World:
    """The account and cluster the mocks describe; each field is a fact a test can change."""

    partition: str = "aws"
    cluster_version: str = "1.36"
    auto_mode: bool = True
    addons: tuple[str, ...] = ()
    caller_arn: str = f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/deployer/session"
    # subnet id -> (vpc id, availability zone)
    subnets: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Auto Mode's network policy switches: the amazon-vpc-cni ConfigMap's flag, the NodeClass's.
    network_policy_controller: str | None = "true"
    # Whether kube-system/amazon-vpc-cni exists at all (on many clusters it does not).
    vpc_cni_config_map: bool = True
    # The service CIDR EKS reports (kubernetesNetworkConfig), and the cluster's IP family.
    service_ipv4_cidr: str = "10.100.0.0/16"
    # What the engine's random draws come from: another stack's state (another backend, another
    # person's `dev`) draws differently.
    random_seed: str = "state-1"
    ip_family: str = "ipv4"
    node_class_network_policy: str | None = "DefaultAllow"
    # The isolated-sandbox RuntimeClass's scheduling.tolerations (its nodes' taint).
    sandbox_tolerations: list[dict[str, str]] = field(
        default_factory=lambda: [
            {"key": SANDBOX_TAINT, "operator": "Exists", "effect": "NoSchedule"}
        ]
    )


@dataclass
class Recorded:
    """One resource registration (or read) as the engine would have seen it."""

    urn: str
    type: str
    name: str
    inputs: dict[str, Any]
    parent: str
    provider: str
    custom: bool
    providers: dict[str, str] = field(default_factory=dict)
    read: bool = False
    additional_secret_outputs: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    retain_on_delete: bool = False
    delete_before_replace: bool = False


def _plain(value: Any) -> Any:
    """Inputs as JSON: secrets redacted, unknowns marked, assets by path, integral floats as int."""
    if rpc.is_rpc_secret(value):
        inner = rpc.unwrap_rpc_secret(value)
        # A secret map keeps its keys (names, not values) so a reader can see what it holds.
        return {key: SECRET_MARKER for key in inner} if isinstance(inner, dict) else SECRET_MARKER
    if isinstance(value, pulumi.output.Unknown) or value == rpc.UNKNOWN:
        return UNKNOWN_MARKER
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, pulumi.FileAsset):
        return {"__asset__": str(value.path)}
    if isinstance(value, pulumi.StringAsset):
        return {"__asset_text__": value.text}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


UNKNOWN_MARKER = {"__unknown__": True}


class RecordingMonitor(mocks.MockMonitor):
    """The mock engine, keeping each request's options next to its inputs."""

    def __init__(self, program_mocks: ProgramMocks) -> None:
        super().__init__(program_mocks)
        self.recorded: list[Recorded] = []
        self.invokes: list[dict[str, Any]] = []
        program_mocks.make_urn = self.make_urn
        self.program_mocks = program_mocks
        self._constructing = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:
        if request.remote:
            # A remote component: the mocks answer for its plugin and make its children. One
            # at a time, since the SDK registers resources from several threads.
            with self._constructing:
                self.program_mocks.constructing = self.make_urn(
                    request.parent, request.type, request.name
                )
                response = self._record(request)
                children = self.program_mocks.take_children()
            self._record_children(request, response.urn, children)
            return response
        return self._record(request)

    def _record(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # SDK method has no annotations
        if request.type != "pulumi:pulumi:Stack":
            self.recorded.append(
                Recorded(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    inputs=_plain(rpc.deserialize_properties(request.object, keep_unknowns=True)),
                    parent=request.parent,
                    provider=request.provider,
                    custom=request.custom,
                    providers=dict(request.providers),
                    additional_secret_outputs=list(request.additionalSecretOutputs),
                    dependencies=sorted(request.dependencies),
                    property_dependencies={
                        key: sorted(deps.urns) for key, deps in request.propertyDependencies.items()
                    },
                    retain_on_delete=request.retainOnDelete,
                    delete_before_replace=request.deleteBeforeReplace,
                )
            )
        return response

    def _record_children(
        self,
        request: Any,
        parent: str,
        children: list[tuple[str, str, eks_component.Child, dict[str, Any]]],
    ) -> None:
        """Registers and records what a remote component's plugin would have made."""
        for urn, resource_id, child, state in children:
            self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, resource_id, state)
            self.recorded.append(
                Recorded(
                    urn=urn,
                    type=child.type,
                    name=child.name,
                    inputs=_plain(child.inputs),
                    parent=parent,
                    # A child without a provider of its own inherits its parent's.
                    provider=request.providers.get(child.type.split(":")[0], ""),
                    custom=True,
                )
            )

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)  # type: ignore[no-untyped-call]  # SDK method has no annotations
        self.recorded.append(
            Recorded(
                urn=response.urn,
                type=request.type,
                name=request.name,
                inputs={"id": request.id},
                parent=request.parent,
                provider=request.provider,
                custom=True,
                read=True,
                dependencies=sorted(request.dependencies),
            )
        )
        return response

    def Invoke(self, request: Any) -> Any:
        if request.tok != GET_RESOURCE:
            self.invokes.append({"token": request.tok, "provider": request.provider})
        return super().Invoke(request)  # type: ignore[no-untyped-call]  # SDK method has no annotations


# The engine's own read of a registered resource (a resource reference's state): no provider call.
GET_RESOURCE = "pulumi:pulumi:getResource"


class _CallFailure(Exception):
    """A provider's answer that an invoke failed, for one of its arguments."""

    def __init__(self, property_name: str, reason: str) -> None:
        super().__init__(reason)
        self.property = property_name


class ProgramMocks(pulumi.runtime.Mocks):
    """What the engine and providers would answer, for the account and cluster in `world`."""

    def __init__(self, region: str, world: World, preview: bool) -> None:
        self.region = region
        self.world = world
        self.preview = preview
        self.make_urn: Any = None
        # The remote component being registered, and the children its plugin would make.
        self.constructing = ""
        self._children: list[tuple[str, str, eks_component.Child, dict[str, Any]]] = []

    def take_children(self) -> list[tuple[str, str, eks_component.Child, dict[str, Any]]]:
        """The children made since the last call: (urn, id, child, state) each."""
        children, self._children = self._children, []
        return children

    def _eks_cluster(self, args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
        """pulumi-eks's Cluster: its EKS cluster, made as its plugin would, and its outputs."""
        child = eks_component.cluster_child(args.name, args.inputs, args.transforms)
        urn = self.make_urn(self.constructing, child.type, child.name)
        name = str(child.inputs["name"])
        state = dict(child.inputs)
        resource_id = ""
        if self.preview:
            # What EKS computes is unknown before the cluster exists, the service CIDR too.
            network = {
                **(state.get("kubernetesNetworkConfig") or {}),
                "serviceIpv4Cidr": rpc.UNKNOWN,
            }
            state["kubernetesNetworkConfig"] = network
        else:
            resource_id = name
            state |= {
                "arn": self._arn("eks", f"cluster/{name}", self.region),
                "endpoint": f"https://{name}.eks.{self.region}.amazonaws.com",
                "certificateAuthority": {"data": CLUSTER_CA},
                "kubernetesNetworkConfig": {
                    **(state.get("kubernetesNetworkConfig") or {}),
                    "serviceIpv4Cidr": self.world.service_ipv4_cidr,
                },
            }
        self._children.append((urn, resource_id, child, state))
        return {"eksCluster": eks_component.cluster_reference(urn, resource_id)}

    def _arn(self, service: str, resource: str, region: str = "") -> str:
        return f"arn:{self.world.partition}:{service}:{region}:{ACCOUNT_ID}:{resource}"

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        name = args.name
        if args.resource_id:
            # A read of an existing object: the engine reads it in a preview as well.
            return args.resource_id, self._read(args.typ, args.resource_id)
        if args.typ == eks_component.COMPONENT_TYPE:
            return "", self._eks_cluster(args)
        if self.preview:
            # Before a create the engine knows the inputs (and a name the provider's Check
            # assigns), never an ID or anything the provider computes.
            if args.typ == "aws:iam/role:Role":
                state.setdefault("name", name)
            return "", state
        match args.typ:
            case "aws:s3/bucket:Bucket":
                bucket = f"{state.get('bucketPrefix', '')}20260101000000000000000001"
                state |= {"bucket": bucket, "arn": f"arn:{self.world.partition}:s3:::{bucket}"}
                return bucket, state
            case "aws:iam/role:Role":
                state |= {"arn": self._arn("iam", f"role/{name}"), "name": name}
                return name, state
            case "aws:ecr/repository:Repository":
                url = f"{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com/{state['name']}"
                state |= {"repositoryUrl": url, "registryId": ACCOUNT_ID}
            case "docker-build:index:Image":
                state |= {"digest": DIGEST, "ref": ""}
            case "aws:kms/key:Key":
                key_id = "0a1b2c3d-0000-4000-8000-000000000001"
                state |= {"arn": self._arn("kms", f"key/{key_id}", self.region), "keyId": key_id}
                return key_id, state
            case "aws:eks/podIdentityAssociation:PodIdentityAssociation":
                state |= {"associationId": "a-mock0000000000000"}
            case "tls:index/privateKey:PrivateKey":
                state |= {"privateKeyPem": f"{PRIVATE_KEY_PREFIX} {name}", "publicKeyPem": "pk"}
            case (
                "tls:index/selfSignedCert:SelfSignedCert"
                | "tls:index/locallySignedCert:LocallySignedCert"
            ):
                state |= {"certPem": f"mock certificate of {name}"}
            case "tls:index/certRequest:CertRequest":
                state |= {"certRequestPem": f"mock request of {name}"}
            case "random:index/randomPassword:RandomPassword":
                state |= {"result": SUPPLIER_KEY}
            case "pulumi-python:dynamic:Resource":
                # The RuntimeClass wait: the mocked cluster answers at once.
                state |= {"attempts": 1}
            case "random:index/randomId:RandomId":
                # The engine draws new bytes whenever the keepers change; the mock takes them
                # from the keepers, so the rendered manifests (which put the spec's digest where
                # the random id goes) can be compared with what the program registers.
                keepers = state["keepers"]
                seed = (
                    keepers.get("spec")
                    or hashlib.sha256(f"{self.world.random_seed}/{name}".encode()).hexdigest()
                )
                drawn = str(seed)[: 2 * int(state["byteLength"])]
                state |= {"hex": drawn, "b64Url": drawn, "b64Std": drawn, "dec": drawn}
        return f"{name}-id", state

    def _read(self, type_: str, object_id: str) -> dict[str, Any]:
        if type_ == "kubernetes:node.k8s.io/v1:RuntimeClass":
            return {
                "metadata": {"name": object_id},
                "handler": "mock-sandbox",
                "scheduling": {"tolerations": self.world.sandbox_tolerations},
            }
        if type_ == "kubernetes:eks.amazonaws.com/v1:NodeClass":
            policy = self.world.node_class_network_policy
            return {"spec": {"role": "node-role"} | ({"networkPolicy": policy} if policy else {})}
        return {}

    def call(
        self, args: pulumi.runtime.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        # A provider's error reaches the program as a failed invoke, as it does from the engine.
        try:
            return self._answer(args.token, args.args), []
        except _CallFailure as failure:
            return {}, [(failure.property, str(failure))]

    def _answer(self, token: str, args: dict[str, Any]) -> dict[str, Any]:
        world = self.world
        match token:
            case "aws:eks/getCluster:getCluster":
                name = args["name"]
                return {
                    "name": name,
                    "arn": self._arn("eks", f"cluster/{name}", self.region),
                    "endpoint": f"https://{name}.eks.{self.region}.amazonaws.com",
                    "certificateAuthorities": [{"data": CLUSTER_CA}],
                    "version": world.cluster_version,
                    "computeConfigs": [
                        {"enabled": world.auto_mode, "nodePools": [], "nodeRoleArn": ""}
                    ],
                    "kubernetesNetworkConfigs": [
                        {
                            "ipFamily": world.ip_family,
                            "serviceIpv4Cidr": world.service_ipv4_cidr
                            if world.ip_family == "ipv4"
                            else "",
                            "serviceIpv6Cidr": "fd12:3456:789a::/108"
                            if world.ip_family == "ipv6"
                            else "",
                        }
                    ],
                }
            case "aws:eks/getAddon:getAddon":
                if args["addonName"] not in world.addons:
                    raise _CallFailure(
                        "addonName",
                        f"ResourceNotFoundException: No addon: {args['addonName']} found in"
                        f" cluster: {args['clusterName']}",
                    )
                return {"addonName": args["addonName"], "clusterName": args["clusterName"]}
            case "aws:ec2/getSubnet:getSubnet":
                vpc, zone = world.subnets[args["id"]]
                return {"id": args["id"], "vpcId": vpc, "availabilityZone": zone}
            case "aws:index/getCallerIdentity:getCallerIdentity":
                return {
                    "accountId": ACCOUNT_ID,
                    "arn": world.caller_arn,
                    "id": ACCOUNT_ID,
                    "userId": "AROAMOCK:session",
                }
            case "aws:iam/getSessionContext:getSessionContext":
                role = args["arn"].split(":assumed-role/")[-1].split("/")[0]
                return {
                    "arn": args["arn"],
                    "issuerArn": f"arn:{world.partition}:iam::{ACCOUNT_ID}:role/{role}",
                    "issuerId": "AROAMOCK",
                    "issuerName": role,
                    "sessionName": "session",
                }
            case "aws:index/getPartition:getPartition":
                return {
                    "partition": world.partition,
                    "dnsSuffix": "amazonaws.com",
                    "id": world.partition,
                    "reverseDnsPrefix": "com.amazonaws",
                }
            case "aws:ecr/getAuthorizationToken:getAuthorizationToken":
                return {
                    "proxyEndpoint": f"https://{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com",
                    "userName": "AWS",
                    "password": REGISTRY_TOKEN,
                    "authorizationToken": "mock",
                    "expiresAt": "2026-01-01T12:00:00Z",
                    "id": self.region,
                }
        raise NotImplementedError(f"the mocks have no answer for the call {token}")


class _LogRecorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append({"level": record.levelname.lower(), "message": record.getMessage()})


def _resolve(value: Any) -> Any:
    output = pulumi.Output.from_input(value)
    if not _sync_await(output.is_known()):
        return UNKNOWN_MARKER
    if _sync_await(output.is_secret()):
        return SECRET_MARKER
    return _plain(_sync_await(output.future()))


def run_program(
    config: dict[str, Any],
    stack: str = "dev",
    *,
    preview: bool = False,
    world: World | None = None,
    organization: str = DEFAULT_ORGANIZATION,
) -> dict[str, Any]:
    """Run the program with these stack config values (as a stack file holds them)."""
    project = project_document()
    name = project["name"]
    values = {
        key if ":" in key else f"{name}:{key}": ConfigValue.from_yaml(value)
        for key, value in config.items()
    }
    seen = program_config(stack, values, project)
    pulumi.runtime.set_all_config(seen)
    # The Python language host hands the program its whole config in this variable too.
    os.environ["PULUMI_CONFIG"] = json.dumps(seen)
    region = str(config.get("region", "us-west-2"))
    monitor = RecordingMonitor(ProgramMocks(region, world or World(), preview))
    logs = _LogRecorder()
    logger = logging.getLogger("pulumi-mocks")
    logger.addHandler(logs)
    logger.setLevel(logging.DEBUG)
    pulumi.runtime.set_mocks(
        monitor.mocks,
        project=name,
        stack=stack,
        preview=preview,
        monitor=monitor,
        logger=logger,
        organization=organization,
    )
    program_reads = _fake_cluster_reads(world or World())
    program = PROJECT_FILE.parent / project["main"] / "__main__.py"
    try:
        _sync_await(run_pulumi_func(lambda: _run(str(program))))
    except Exception as error:
        made = [r for r in monitor.recorded if r.custom and not r.type.startswith("pulumi:")]
        raise ProgramFailed(error, len(monitor.recorded), len(made)) from error
    root = pulumi.runtime.get_root_resource()
    outputs = {key: _resolve(value) for key, value in getattr(root, "outputs", {}).items()}
    return {
        "resources": [asdict(r) for r in monitor.recorded],
        "invokes": monitor.invokes,
        "outputs": outputs,
        "logs": logs.lines,
        "program_reads": program_reads,
    }


def _fake_cluster_reads(world: World) -> list[dict[str, str]]:
    """The program's direct reads (infra/cluster_reads.py) answered from `world`, as the Pulumi
    mocks answer the providers; each read is recorded."""
    from infra import cluster_reads

    reads: list[dict[str, str]] = []

    def read_config_map(kubeconfig: str, namespace: str, name: str) -> dict[str, str] | None:
        assert json.loads(kubeconfig)["users"], "the provider's own kubeconfig"
        reads.append({"kind": "ConfigMap", "namespace": namespace, "name": name})
        if name != "amazon-vpc-cni" or not world.vpc_cni_config_map:
            return None
        flag = world.network_policy_controller
        return {} if flag is None else {"enable-network-policy-controller": flag}

    cluster_reads.read_config_map = read_config_map
    return reads


class ProgramFailed(Exception):
    """The program (or the engine's config check) stopped; how many resources it registered."""

    def __init__(self, error: Exception, registered: int, made: int) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.registered = registered
        # Resources a provider would create or read (not providers, not components).
        self.made = made


def _run(program: str) -> None:
    runpy.run_path(program, run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", default="{}", help="stack config values as a JSON object")
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--preview", action="store_true")
    parser.add_argument("--world", default="{}", help="World fields as a JSON object")
    parser.add_argument("--organization", default=DEFAULT_ORGANIZATION)
    options = parser.parse_args(argv)
    world_fields = json.loads(options.world)
    if "addons" in world_fields:
        world_fields["addons"] = tuple(world_fields["addons"])
    if "subnets" in world_fields:
        world_fields["subnets"] = {k: tuple(v) for k, v in world_fields["subnets"].items()}
    try:
        result = run_program(
            json.loads(options.config),
            options.stack,
            preview=options.preview,
            world=World(**world_fields),
            organization=options.organization,
        )
    except ProgramFailed as failed:
        print(failed, file=sys.stderr)
        print(
            f"registered {failed.registered} resources before it stopped, {failed.made} of them "
            "provider resources",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "registered 0 resources before it stopped, 0 of them provider resources",
            file=sys.stderr,
        )
        return 2
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
