"""Renders every Kubernetes object the program creates to YAML, one file per object.

Runs the program offline (infra/offline.py) with a stack's config file and writes what it
would apply, for review and schema validation. Secret values are never written: each
`data`/`stringData` value of a Secret is "<redacted>".

    python infra/render_manifests.py --out build/manifests [--stack dev]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from infra.config import PROJECT, REPO_ROOT
from infra.offline import run_program

REDACTED = "<redacted>"


def stack_config(stack: str) -> dict[str, Any]:
    """The project's keys of `Pulumi.<stack>.yaml`, without the project prefix."""
    document = (
        yaml.safe_load((REPO_ROOT / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")) or {}
    )
    prefix = f"{PROJECT}:"
    return {
        key.removeprefix(prefix): value
        for key, value in (document.get("config") or {}).items()
        if key.startswith(prefix)
    }


def kubernetes_objects(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects the program creates (not the provider, not what it only reads), redacted."""
    objects = []
    for resource in resources:
        if not resource["type"].startswith("kubernetes:") or resource["read"]:
            continue
        manifest = dict(resource["inputs"])
        if manifest.get("kind") == "Secret":
            for field in ("data", "stringData"):
                if field in manifest:
                    manifest[field] = {key: REDACTED for key in manifest[field]}
        objects.append(_ordered(manifest))
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


def render(out: Path, stack: str) -> list[Path]:
    """Write the stack's manifests to `out`, replacing any rendered there before."""
    result = run_program(stack_config(stack), stack)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.yaml"):
        stale.unlink()
    written = []
    for manifest in kubernetes_objects(result["resources"]):
        path = out / file_name(manifest)
        path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "manifests")
    parser.add_argument("--stack", default="dev", help="reads Pulumi.<stack>.yaml (default: dev)")
    options = parser.parse_args(argv)
    for path in render(options.out, options.stack):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
