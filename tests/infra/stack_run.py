"""Runs the Pulumi program offline in a subprocess and gives tests its recorded resources.

Pulumi's Python runtime is process-global state, so each stack config runs in its own
interpreter (`python -m infra.offline`), once per test session, and comes back as JSON.
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
K8S_PROVIDER_TYPE = "pulumi:providers:kubernetes"
AWS_PROVIDER_TYPE = "pulumi:providers:aws"


@dataclass(frozen=True)
class StackRun:
    """What one offline run of the program registered, and its stack outputs."""

    resources: list[dict[str, Any]]
    outputs: dict[str, Any]

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


@dataclass(frozen=True)
class Failure:
    """A run the program refused: its exit code and what it printed."""

    returncode: int
    stderr: str


def _invoke(config_json: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.offline", "--config", config_json],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@cache
def _run_cached(config_json: str) -> StackRun | Failure:
    completed = _invoke(config_json)
    if completed.returncode != 0:
        return Failure(completed.returncode, completed.stderr)
    result = json.loads(completed.stdout)
    return StackRun(result["resources"], result["outputs"])


def run_stack(**config: Any) -> StackRun:
    """The program's resources for these project config values (cached per config)."""
    result = _run_cached(json.dumps(config, sort_keys=True))
    assert isinstance(result, StackRun), f"the program failed for {config}:\n{result.stderr}"
    return result


def run_failing(**config: Any) -> Failure:
    """The failure the program reports for these config values; asserts it does fail."""
    result = _run_cached(json.dumps(config, sort_keys=True))
    assert isinstance(result, Failure), f"the program accepted {config}"
    return result
