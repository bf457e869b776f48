"""Runs the Pulumi program under the mock engine in a subprocess and gives tests its records.

Pulumi's Python runtime is process-global state, so each stack config runs in a process of
its own (`python -m tests.support.engine`), once per test process, and comes back as JSON: a
child forked from a warm interpreter that holds the SDK and providers imported
(engine_server.py), which spares each run the second of imports a new interpreter spends.
"""

from __future__ import annotations

import atexit
import json
import select
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

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


class _EngineServer:
    """This process's warm interpreter (tests.support.engine_server), started at its first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.engine_server"],
                cwd=REPO_ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        return self._process

    def run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        with self._lock, tempfile.TemporaryDirectory(prefix="engine-run-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            process = self._started()
            stdin, stdout = _pipe(process.stdin), _pipe(process.stdout)
            request = {"argv": argv, "stdout": str(out), "stderr": str(err)}
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            ready, _, _ = select.select([stdout], [], [], timeout)
            line = stdout.readline() if ready else ""
            if not line:
                self.stop()
                raise subprocess.TimeoutExpired(argv, timeout)
            returncode = int(json.loads(line)["returncode"])
            return subprocess.CompletedProcess(
                argv, returncode, out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")
            )

    def stop(self) -> None:
        if self._process is not None:
            process, self._process = self._process, None
            if process.poll() is None:
                _pipe(process.stdin).close()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _pipe(stream: IO[str] | None) -> IO[str]:
    assert stream is not None, "the engine server was started with pipes"
    return stream


_SERVER = _EngineServer()
atexit.register(_SERVER.stop)


def _invoke(
    config_json: str, stack: str, preview: bool, world_json: str, organization: str
) -> subprocess.CompletedProcess[str]:
    argv = ["--config", config_json, "--stack", stack, "--world", world_json]
    argv += ["--organization", organization]
    if preview:
        argv.append("--preview")
    return _SERVER.run(argv, timeout=120)


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
