"""Runs the Pulumi program under the mock engine in a subprocess and gives tests its records.

Pulumi's Python runtime is process-global state, so each stack config runs in its own
interpreter (`python -m tests.support.engine`), once per test session, and comes back as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = {"__secret__": True}
UNKNOWN = {"__unknown__": True}
K8S_PROVIDER_TYPE = "pulumi:providers:kubernetes"
AWS_PROVIDER_TYPE = "pulumi:providers:aws"


@dataclass(frozen=True)
class StackRun:
    """What one run of the program registered, read and invoked, and its stack outputs."""

    resources: list[dict[str, Any]]
    invokes: list[dict[str, Any]]
    outputs: dict[str, Any]
    logs: list[dict[str, str]]
    # Reads the program made itself, not through the engine (infra/cluster_reads.py).
    program_reads: list[dict[str, str]]

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [r for r in self.resources if r["type"] == type_]

    def one(self, type_: str, name: str | None = None) -> dict[str, Any]:
        found = [r for r in self.of_type(type_) if name is None or r["name"] == name]
        assert len(found) == 1, (
            f"expected one {type_} {name or ''}, found {[r['urn'] for r in found]}"
        )
        return found[0]

    def by_urn(self, urn: str) -> dict[str, Any]:
        return next(r for r in self.resources if r["urn"] == urn)

    def provider_urn(self, reference: str) -> str:
        """A provider reference is `<urn>::<id>`; the URN is the part before the last `::`."""
        return reference.rsplit("::", 1)[0]

    def destroyed_by_destroy(self) -> list[dict[str, Any]]:
        """What `pulumi destroy` would delete: every created resource not retained on delete."""
        return [
            r for r in self.resources if r["custom"] and not r["read"] and not r["retain_on_delete"]
        ]


@dataclass(frozen=True)
class Failure:
    """A run the engine or the program refused: its exit code and what it printed."""

    returncode: int
    stderr: str


def _invoke(
    config_json: str, stack: str, preview: bool, world_json: str, organization: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.support.engine", "--config", config_json]
    command += ["--stack", stack, "--world", world_json, "--organization", organization]
    if preview:
        command.append("--preview")
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@cache
def _run_cached(
    config_json: str, stack: str, preview: bool, world_json: str, organization: str
) -> StackRun | Failure:
    completed = _invoke(config_json, stack, preview, world_json, organization)
    if completed.returncode != 0:
        return Failure(completed.returncode, completed.stderr)
    result = json.loads(completed.stdout)
    return StackRun(
        result["resources"],
        result["invokes"],
        result["outputs"],
        result["logs"],
        result["program_reads"],
    )


def _key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def run_stack(
    *,
    stack: str = "dev",
    preview: bool = False,
    world: dict[str, Any] | None = None,
    organization: str = "organization",
    **config: Any,
) -> StackRun:
    """The program's records for these stack config values (cached per arguments)."""
    result = _run_cached(_key(config), stack, preview, _key(world or {}), organization)
    assert isinstance(result, StackRun), f"the program failed for {config}:\n{result.stderr}"
    return result


def run_failing(
    *,
    stack: str = "dev",
    preview: bool = False,
    world: dict[str, Any] | None = None,
    **config: Any,
) -> Failure:
    """The failure the engine or program reports for these values; asserts it does fail."""
    result = _run_cached(_key(config), stack, preview, _key(world or {}), "organization")
    assert isinstance(result, Failure), f"the program accepted {config}"
    return result


# A created cluster's settings, and the account's subnets the mocks describe for them.
VPC = "vpc-0123456789abcdef0"
SUBNETS = ("subnet-0123456789abcdef0", "subnet-0123456789abcdef1")
CREATE_MODE: dict[str, Any] = {
    "clusterMode": "create",
    "clusterName": "analyst-new",
    "kubernetesVersion": "1.37",
    "vpcId": VPC,
    "subnetIds": list(SUBNETS),
}
CREATE_WORLD: dict[str, Any] = {
    "subnets": {SUBNETS[0]: [VPC, "us-west-2a"], SUBNETS[1]: [VPC, "us-west-2b"]}
}
PREBUILT: dict[str, Any] = {
    "imageMode": "prebuilt",
    "analystImage": "111122223333.dkr.ecr.us-west-2.amazonaws.com/analyst@sha256:" + "a" * 64,
    "supplierImage": "111122223333.dkr.ecr.us-west-2.amazonaws.com/supplier@sha256:" + "b" * 64,
}
