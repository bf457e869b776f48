"""The policy pack run as `pulumi preview --policy-pack` runs it: its own program
(policies/pack/__main__.py) serving pulumi-policy's analyzer over gRPC, asked by the engine's
requests (Analyze per resource, AnalyzeStack for the stack) with the properties as the engine
sends them in a preview: an unknown value as the engine's unknown sentinel.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from tests.support.engine import SECRET_MARKER, UNKNOWN_MARKER
from tests.support.stack_run import REPO_ROOT

PACK = REPO_ROOT / "policies" / "pack"
# How the engine marks a secret value in a property map (Pulumi's resource protocol).
SECRET_SIGNATURE = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
START_SECONDS = 60


@dataclass(frozen=True)
class Diagnostic:
    policy: str
    message: str
    mandatory: bool
    urn: str


def _engine_value(value: Any) -> Any:
    """A recorded input as the engine serializes it for an analyzer."""
    if value == UNKNOWN_MARKER:
        return rpc.UNKNOWN
    if value == SECRET_MARKER:
        return {**SECRET_SIGNATURE, "value": "[secret]"}
    if isinstance(value, dict):
        return {key: _engine_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_engine_value(item) for item in value]
    return value


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(_engine_value(props))
    return struct


class PolicyServer:
    def __init__(self, stub: analyzer_pb2_grpc.AnalyzerStub) -> None:
        self._stub = stub

    @staticmethod
    def _diagnostics(response: Any) -> list[Diagnostic]:
        return [
            Diagnostic(d.policyName, d.message, d.enforcementLevel == analyzer_pb2.MANDATORY, d.urn)
            for d in response.diagnostics
        ]

    def analyze(self, resource: dict[str, Any]) -> list[Diagnostic]:
        request = analyzer_pb2.AnalyzeRequest(
            type=resource["type"],
            properties=_struct(resource["inputs"]),
            urn=resource["urn"],
            name=resource["name"],
            options=analyzer_pb2.AnalyzerResourceOptions(),
        )
        return self._diagnostics(self._stub.Analyze(request))

    def analyze_stack(self, resources: list[dict[str, Any]]) -> list[Diagnostic]:
        request = analyzer_pb2.AnalyzeStackRequest(
            resources=[
                analyzer_pb2.AnalyzerResource(
                    type=r["type"],
                    properties=_struct(r["inputs"]),
                    urn=r["urn"],
                    name=r["name"],
                    options=analyzer_pb2.AnalyzerResourceOptions(),
                    propertyDependencies={
                        key: analyzer_pb2.AnalyzerPropertyDependencies(urns=urns)
                        for key, urns in r["property_dependencies"].items()
                    },
                )
                for r in resources
            ]
        )
        return self._diagnostics(self._stub.AnalyzeStack(request))


@contextmanager
def policy_server() -> Iterator[PolicyServer]:
    """The pack's own program, started as the CLI starts it: it prints its port, then serves."""
    process = subprocess.Popen(
        [sys.executable, "-u", "__main__.py"],
        cwd=PACK,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            error = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"the pack did not start: {port!r} {error}")
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=START_SECONDS)
        try:
            yield PolicyServer(analyzer_pb2_grpc.AnalyzerStub(channel))
        finally:
            channel.close()
    finally:
        process.kill()
        process.wait()
