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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.core import cluster_env as env

from .config import PROJECT, REPO_ROOT, StackConfig, parse_config
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
from .pod_specs import JobInputs

REDACTED = "<redacted>"
CA_PLACEHOLDER = "<the stack's CA certificate>"


@dataclass(frozen=True)
class DeployValues:
    """What the program learns only while deploying, as rendered here."""

    analyst_image: str = "procurement-analyst/analyst:local"
    supplier_image: str = "procurement-analyst/supplier-api:local"
    bucket: str = "procurement-analyst-bucket"
    role_name: str = "procurement-analyst-role"


def stack_config(stack: str) -> StackConfig:
    """The validated settings of `Pulumi.<stack>.yaml` (project keys only)."""
    path = REPO_ROOT / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    prefix = f"{PROJECT}:"
    raw = {
        key.removeprefix(prefix): value
        for key, value in (document.get("config") or {}).items()
        if key.startswith(prefix)
    }
    return parse_config(raw)


def stack_objects(config: StackConfig, values: DeployValues) -> list[dict[str, Any]]:
    """Every object the stack creates, in the order the program creates them."""
    namespace = config.namespace
    objects = [
        namespace_object(namespace),
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
    objects += [
        analyst_job(
            JobInputs(
                layer=layer,
                image=values.analyst_image,
                namespace=namespace,
                case_id=config.case_id,
                bucket=values.bucket,
                region=config.region,
                model_id=config.model_id,
                role_name=values.role_name,
                service_account=ANALYST_SERVICE_ACCOUNT,
            ),
            config.run_trigger,
        )
        for layer in config.layers
    ]
    if config.comparison_pod:
        objects += [
            comparison_job(
                layer, namespace, image=values.analyst_image, run_trigger=config.run_trigger
            )
            for layer in config.layers
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


def render(out: Path, stack: str, values: DeployValues) -> list[Path]:
    """Write the stack's manifests to `out`, replacing any rendered there before."""
    objects = stack_objects(stack_config(stack), values)
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "manifests")
    parser.add_argument("--stack", default="dev", help="reads Pulumi.<stack>.yaml (default: dev)")
    defaults = DeployValues()
    parser.add_argument("--analyst-image", default=defaults.analyst_image)
    parser.add_argument("--supplier-image", default=defaults.supplier_image)
    parser.add_argument("--bucket", default=defaults.bucket, help=f"the {env.BUCKET} of the Jobs")
    parser.add_argument("--role-name", default=defaults.role_name)
    options = parser.parse_args(argv)
    values = DeployValues(
        analyst_image=options.analyst_image,
        supplier_image=options.supplier_image,
        bucket=options.bucket,
        role_name=options.role_name,
    )
    for path in render(options.out, options.stack, values):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
