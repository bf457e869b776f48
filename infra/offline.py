"""Runs the Pulumi program offline under recording mocks and reports what it registered.

No CLI, no cloud: `pulumi.runtime.set_mocks` stands in for the engine, every resource and
read is recorded with its inputs, parent, provider and secret options, and every provider
call the program makes is answered with a fixed, plausible result. Secret values never
leave this module: they are recorded as SECRET_MARKER.

    python -m infra.offline [--config JSON] [--stack NAME]

prints {"resources": [...], "outputs": {...}} as JSON, or exits 2 with the program's error.
"""

from __future__ import annotations

import argparse
import base64
import json
import runpy
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from .config import PROJECT, REPO_ROOT

SECRET_MARKER = {"__secret__": True}
PROGRAM = REPO_ROOT / "infra" / "__main__.py"

ACCOUNT_ID = "123456789012"
CLUSTER_ENDPOINT = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
CLUSTER_CA = base64.b64encode(b"offline cluster CA").decode()


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
    retain_on_delete: bool = False
    delete_before_replace: bool = False


def _plain(value: Any) -> Any:
    """Inputs as JSON: secrets redacted, assets by path, numbers as Kubernetes wants them."""
    if rpc.is_rpc_secret(value):
        inner = rpc.unwrap_rpc_secret(value)
        # A secret map keeps its keys (names, not values) so a reader can see what it holds.
        return {key: SECRET_MARKER for key in inner} if isinstance(inner, dict) else SECRET_MARKER
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, pulumi.FileAsset):
        return {"__asset__": str(value.path)}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


class RecordingMonitor(mocks.MockMonitor):
    """The mock engine, keeping each request's options next to its inputs."""

    def __init__(self, program_mocks: ProgramMocks) -> None:
        super().__init__(program_mocks)
        self.recorded: list[Recorded] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.recorded.append(
                Recorded(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    inputs=_plain(rpc.deserialize_properties(request.object)),
                    parent=request.parent,
                    provider=request.provider,
                    custom=request.custom,
                    providers=dict(request.providers),
                    additional_secret_outputs=list(request.additionalSecretOutputs),
                    dependencies=sorted(request.dependencies),
                    retain_on_delete=request.retainOnDelete,
                    delete_before_replace=request.deleteBeforeReplace,
                )
            )
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
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
            )
        )
        return response


class ProgramMocks(pulumi.runtime.Mocks):
    """Plausible outputs for what the program reads back from its resources and calls."""

    def __init__(self, region: str) -> None:
        self.region = region

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        name = args.name
        match args.typ:
            case "aws:s3/bucket:Bucket":
                bucket = f"{state.get('bucketPrefix', '')}20260101000000000000000001"
                state |= {"bucket": bucket, "arn": f"arn:aws:s3:::{bucket}"}
                return bucket, state
            case "aws:iam/role:Role":
                state |= {"arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}", "name": name}
                return name, state
            case "aws:ecr/repository:Repository":
                url = f"{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com/{state['name']}"
                state |= {"repositoryUrl": url, "registryId": ACCOUNT_ID}
            case "docker-build:index:Image":
                state |= {
                    "ref": f"{state['tags'][0]}@sha256:{'0' * 64}",
                    "digest": f"sha256:{'0' * 64}",
                }
            case "eks:index:Cluster":
                # A remote component: its outputs come from the eks provider's process,
                # which does not run here. The program reads the cluster back by name.
                state |= {
                    "kubeconfigJson": "{}",
                    "clusterSecurityGroupId": "sg-offline",
                    "oidcIssuer": "",
                }
            case "aws:eks/podIdentityAssociation:PodIdentityAssociation":
                state |= {"associationId": "a-offline0000000000"}
            case "tls:index/privateKey:PrivateKey":
                state |= {
                    "privateKeyPem": f"offline private key of {name}",
                    "publicKeyPem": "offline public key",
                }
            case (
                "tls:index/selfSignedCert:SelfSignedCert"
                | "tls:index/locallySignedCert:LocallySignedCert"
            ):
                state |= {"certPem": f"offline certificate of {name}"}
            case "tls:index/certRequest:CertRequest":
                state |= {"certRequestPem": f"offline request of {name}"}
            case "random:index/randomPassword:RandomPassword":
                state |= {"result": "offline-supplier-key"}
        return f"{name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        match args.token:
            case "aws:eks/getCluster:getCluster":
                name = args.args["name"]
                return {
                    "name": name,
                    "arn": f"arn:aws:eks:{self.region}:{ACCOUNT_ID}:cluster/{name}",
                    "endpoint": CLUSTER_ENDPOINT,
                    "certificateAuthorities": [{"data": CLUSTER_CA}],
                    "version": "1.36",
                }
            case "aws:index/getCallerIdentity:getCallerIdentity":
                return {
                    "accountId": ACCOUNT_ID,
                    "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/deployer",
                    "id": ACCOUNT_ID,
                    "userId": "AIDAOFFLINE",
                }
            case "aws:index/getPartition:getPartition":
                return {
                    "partition": "aws",
                    "dnsSuffix": "amazonaws.com",
                    "id": "aws",
                    "reverseDnsPrefix": "com.amazonaws",
                }
            case "aws:ecr/getAuthorizationToken:getAuthorizationToken":
                return {
                    "proxyEndpoint": f"https://{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com",
                    "userName": "AWS",
                    "password": "offline-registry-token",
                    "authorizationToken": "offline",
                    "expiresAt": "2026-01-01T12:00:00Z",
                    "id": self.region,
                }
        raise NotImplementedError(f"offline run has no answer for the call {args.token}")


def _resolve(value: Any) -> Any:
    output = pulumi.Output.from_input(value)
    if _sync_await(output.is_secret()):
        return SECRET_MARKER
    return _plain(_sync_await(output.future()))


def run_program(config: dict[str, Any], stack: str = "dev") -> dict[str, Any]:
    """Run the program with these project config values; return its resources and outputs."""
    values = {
        f"{PROJECT}:{key}": value if isinstance(value, str) else json.dumps(value)
        for key, value in config.items()
    }
    pulumi.runtime.set_all_config(values)
    region = str(config.get("region", "us-west-2"))
    monitor = RecordingMonitor(ProgramMocks(region))
    pulumi.runtime.set_mocks(
        monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor
    )
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    stack_resource = pulumi.runtime.get_root_resource()
    outputs = {name: _resolve(value) for name, value in stack_resource.outputs.items()}  # type: ignore[union-attr]
    return {"resources": [asdict(r) for r in monitor.recorded], "outputs": outputs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="{}", help="project config values as a JSON object")
    parser.add_argument("--stack", default="dev")
    options = parser.parse_args(argv)
    try:
        result = run_program(json.loads(options.config), options.stack)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
