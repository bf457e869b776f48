"""Renders every Kubernetes object a stack creates to YAML, one file per object.

    python -m infra.render_manifests --out build/manifests [--stack dev] [--analyst-image REF] ...

The objects come from the same pure builders the components create them from (infra/manifests.py)
with a stack file's settings, so this needs no engine and no mocks. What only a deployment
knows is a stated value: the images, the bucket and the role name default to placeholders and
can be given (a local rehearsal passes its own), the CA is a placeholder, and a Secret's values
are always "<redacted>". A Job's name carries the digest of its spec, so it follows these
values: with the deployment's values it is the deployed name.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.core import cluster_env as env

from .config import PROJECT, REPO_ROOT, ConfigError, StackConfig, parse_config
from .egress import (
    analyst_egress_policy,
    bucket_hosts,
    denied_destinations,
    host_cidr,
    supplier_ingress_policy,
)
from .manifests import (
    ANALYST_SERVICE_ACCOUNT,
    analyst_job,
    analyst_service_account,
    comparison_job,
    namespace_object,
    supplier_ca_config_map,
    supplier_config_checksum,
    supplier_deployment,
    supplier_key_secret,
    supplier_services,
    supplier_tls_secret,
)
from .pod_specs import JobSettings
from .security_profiles import seccomp_profile_object
from .targets import RuntimeTarget, needs_security_profiles, pod_security_level

REDACTED = "<redacted>"
CA_PLACEHOLDER = "<the stack's CA certificate>"


@dataclass(frozen=True)
class DeployValues:
    """What the program learns only while deploying, as rendered here."""

    analyst_image: str = "procurement-analyst/analyst:local"
    supplier_image: str = "procurement-analyst/supplier-api:local"
    bucket: str = "procurement-analyst-bucket"
    role_name: str = "procurement-analyst-role"
    # The cluster DNS address (the stack's clusterDnsAddress output). EKS picks the service
    # CIDR 10.100.0.0/16 or 172.20.0.0/16 when none is given (by the VPC's own range), whose DNS
    # addresses are .10: https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html
    cluster_dns: str = "172.20.0.10"
    # The isolated-sandbox RuntimeClass's scheduling.tolerations, which the stack reads from
    # the cluster for the comparison pods; rendered offline as what they stand for.
    sandbox_tolerations: tuple[dict[str, Any], ...] = (
        {
            "key": "<the isolated-sandbox RuntimeClass's scheduling.tolerations>",
            "operator": "Exists",
        },
    )


def stack_config(stack: str, overrides: dict[str, Any] | None = None) -> StackConfig:
    """The validated settings of `Pulumi.<stack>.yaml` (project keys only), with overrides."""
    path = REPO_ROOT / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    prefix = f"{PROJECT}:"
    raw = {
        key.removeprefix(prefix): value
        for key, value in (document.get("config") or {}).items()
        if key.startswith(prefix)
    }
    return parse_config(raw | (overrides or {}))


def job_settings(config: StackConfig) -> JobSettings:
    """The stack's settings as the analyst Jobs take them: the program's and this renderer's."""
    return JobSettings(
        namespace=config.namespace,
        case_id=config.case_id,
        region=config.region,
        model_id=config.model_id,
        layers=config.layers,
        runtime_target=config.runtime_target,
        node_apparmor=config.node_app_armor,
        run_trigger=config.run_trigger,
        comparison_pod=config.comparison_pod,
        service_account=ANALYST_SERVICE_ACCOUNT,
        egress_denied=denied_destinations(config.region) if config.egress_policy else "",
    )


def stack_objects(config: StackConfig, values: DeployValues) -> list[dict[str, Any]]:
    """Every object the stack creates, in the order the program creates them (the Helm
    releases of the hardened-container target are charts, not objects: see security_profiles)."""
    namespace = config.namespace
    objects = [
        namespace_object(namespace, pod_security_level(config.runtime_target, config.layers)),
        analyst_service_account(namespace),
        supplier_key_secret(namespace, REDACTED),
        supplier_tls_secret(namespace, REDACTED, REDACTED),
        supplier_ca_config_map(namespace, CA_PLACEHOLDER),
        supplier_deployment(
            namespace,
            image=values.supplier_image,
            case_id=config.case_id,
            config_checksum=supplier_config_checksum(
                cert_pem=REDACTED, ca_pem=CA_PLACEHOLDER, key_digest=REDACTED
            ),
        ),
        *supplier_services(namespace),
    ]
    if needs_security_profiles(config.runtime_target, config.layers):
        objects.append(seccomp_profile_object(namespace))
    if config.egress_policy:
        objects += [
            analyst_egress_policy(
                namespace,
                config.region,
                bucket_hosts(values.bucket, config.region),
                host_cidr(config.cluster_dns_address or values.cluster_dns),
            ),
            supplier_ingress_policy(namespace),
        ]
    settings = job_settings(config)
    jobs = [
        analyst_job(
            settings.inputs(
                layer, image=values.analyst_image, bucket=values.bucket, role_name=values.role_name
            ),
            config.run_trigger,
        )
        for layer in config.layers
    ]
    objects += jobs
    sandboxed = config.runtime_target is RuntimeTarget.ISOLATED_SANDBOX
    if config.comparison_pod:
        objects += [
            comparison_job(
                layer,
                namespace,
                image=values.analyst_image,
                analyst_job=job["metadata"]["name"],
                tolerations=list(values.sandbox_tolerations) if sandboxed else [],
                run_trigger=config.run_trigger,
            )
            for layer, job in zip(config.layers, jobs, strict=True)
        ]
    return objects


def _ordered(manifest: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind and metadata first, as people write manifests; the rest sorted."""
    head = ("apiVersion", "kind", "metadata")
    return {
        **{key: _sorted(manifest[key]) for key in head if key in manifest},
        **{key: _sorted(manifest[key]) for key in sorted(manifest) if key not in head},
    }


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def file_name(manifest: dict[str, Any]) -> str:
    """`<kind>-<name>.yaml`, lower case: every object of the stack is in one namespace."""
    return f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"


def render(
    out: Path, stack: str, values: DeployValues, overrides: dict[str, Any] | None = None
) -> list[Path]:
    """Write the stack's manifests to `out`, replacing any rendered there before."""
    objects = stack_objects(stack_config(stack, overrides), values)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.yaml"):
        stale.unlink()
    written = []
    for manifest in objects:
        path = out / file_name(manifest)
        path.write_text(yaml.safe_dump(_ordered(manifest), sort_keys=False), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.render_manifests", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO_ROOT / "build" / "manifests",
        help="the folder the YAML files are written to (default: build/manifests)",
    )
    parser.add_argument(
        "--stack", default="dev", type=_stack, help="reads Pulumi.<stack>.yaml (default: dev)"
    )
    defaults = DeployValues()
    parser.add_argument(
        "--analyst-image",
        default=defaults.analyst_image,
        help="the analyst image reference the Jobs run (default: %(default)s)",
    )
    parser.add_argument(
        "--supplier-image",
        default=defaults.supplier_image,
        help="the supplier API image reference its Deployment runs (default: %(default)s)",
    )
    parser.add_argument("--bucket", default=defaults.bucket, help=f"the {env.BUCKET} of the Jobs")
    parser.add_argument(
        "--role-name",
        default=defaults.role_name,
        help="the analyst IAM role's name (default: %(default)s)",
    )
    parser.add_argument(
        "--cluster-dns",
        default=defaults.cluster_dns,
        type=_address,
        help="the cluster DNS address the egress policy allows, the stack's clusterDnsAddress "
        "output (default: %(default)s; the stack's clusterDnsAddress setting wins)",
    )
    parser.add_argument(
        "--runtime-target",
        choices=[target.value for target in RuntimeTarget],
        help="render the stack as if its runtimeTarget were this",
    )
    options = parser.parse_args(argv)
    values = DeployValues(
        analyst_image=options.analyst_image,
        supplier_image=options.supplier_image,
        bucket=options.bucket,
        role_name=options.role_name,
        cluster_dns=options.cluster_dns,
    )
    overrides = {"runtimeTarget": options.runtime_target} if options.runtime_target else {}
    out: Path = options.out
    if out.exists() and not out.is_dir():
        return _refuse(f"--out {out}: is a file, not a folder; pass a folder, or a new path")
    try:
        written = render(out, options.stack, values, overrides)
    except ConfigError as error:
        return _refuse(f"Pulumi.{options.stack}.yaml: {error}")
    except yaml.YAMLError:
        return _refuse(f"Pulumi.{options.stack}.yaml is not valid YAML")
    except OSError as error:
        return _refuse(f"--out {out}: cannot write the manifests there ({error.strerror})")
    for path in written:
        print(path)
    return 0


def _stack(name: str) -> str:
    """A stack with a settings file here: Pulumi.<name>.yaml."""
    if (
        re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name)
        and (REPO_ROOT / f"Pulumi.{name}.yaml").is_file()
    ):
        return name
    files = REPO_ROOT.glob("Pulumi.*.yaml")
    stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in files)
    raise argparse.ArgumentTypeError(
        f"no stack {name!r}: there is no Pulumi.{name}.yaml; the stacks here: {', '.join(stacks)}"
    )


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IPv4 or IPv6 address") from None


def _refuse(message: str) -> int:
    print(f"error (bad input): {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
