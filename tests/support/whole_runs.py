"""Runs for the tests: a bare run object for driving one layer, and whole runs of the sample
case under a layer broken on purpose."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.controller.run import run_case
from app.controller.run_plan import RunOptions
from app.core.calls import CallLog, SupplierAccess, SupplierReply
from app.core.case import load_case_folder
from app.core.checklog import CheckFailed, CheckLog, CheckRecord
from app.core.endpoints import AwsCredentialFile, HostPort, SupplierEndpoint
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import (
    RunPaths,
    ToolIdentity,
    create_run,
    create_secrets_dir,
    write_secret_file,
)
from app.tools.at_once import made_at_once
from app.tools.decoy_view import DecoyView
from app.tools.layer import LayerFactory
from tests.support.attested_run import assert_failure_kept

# The discard port on loopback: an address no test service listens on.
NOTHING_LISTENS = HostPort("127.0.0.1", 9)
CASE_BYTES = b'{"case_id": "rfp-001", "suppliers": [{"id": "northstar"}]}\n'


class NoSupplier:
    """A supplier client for runs that never call the supplier: any use fails the test."""

    def __init__(self) -> None:
        self.calls = CallLog()

    def next_request_id(self) -> str:
        raise AssertionError("this run has no supplier")

    def request(self, method: str, path: str, **_: object) -> SupplierReply:
        raise AssertionError(f"this run has no supplier: {method} {path}")

    def tcp_reachable(self) -> bool:
        raise AssertionError("this run has no supplier")


def bare_tree(base: Path) -> RunPaths:
    """A run tree with a staged case file and local-shaped secrets: an AWS credential file and a
    placeholder supplier key (the local supplier service adds its own when one is started)."""
    tool = ToolIdentity.for_this_controller()
    paths = create_run(base, tool)
    secrets = create_secrets_dir(paths, tool)
    write_secret_file(secrets / "supplier.key", b"not-a-real-key", tool)
    write_secret_file(secrets / "aws-credentials", b"[default]\n", tool)
    case = paths.workspace("reader").input / "case.json"
    case.write_bytes(CASE_BYTES)
    os.chmod(case, 0o644)
    if os.geteuid() == 0:
        # Writable at the tool's uid, so only the layer can refuse the write.
        os.chown(case, tool.uid, tool.gid)
    return paths


def bare_run(
    paths: RunPaths,
    layer: Layer,
    *,
    supplier: SupplierEndpoint | None = None,
    client: SupplierAccess | None = None,
    aws_endpoint: HostPort = NOTHING_LISTENS,
    stream: io.StringIO | None = None,
) -> Run:
    """The run object for a bare tree: no services unless the test brings them."""
    return Run(
        run_id=paths.run_id,
        layer=layer,
        case=load_case_folder(SAMPLE_CASE).case,
        case_dir=SAMPLE_CASE,
        paths=paths,
        tool=ToolIdentity.for_this_controller(),
        supplier=supplier
        or SupplierEndpoint(
            url="https://supplier.invalid",
            alias_url="https://alias.invalid",
            address=NOTHING_LISTENS.host,
            port=NOTHING_LISTENS.port,
            ca_file=paths.secrets / "ca.pem",
            key_file=paths.secrets / "supplier.key",
        ),
        supplier_client=client or NoSupplier(),
        aws_credential=AwsCredentialFile(
            paths.secrets / "aws-credentials", "the AWS credential file"
        ),
        aws_endpoint=aws_endpoint,
        checks=CheckLog(stream=stream or io.StringIO(), make_at_once=made_at_once),
        # As a run makes it (app/controller/run.py): every tool process starts in it. Closed
        # with the test's process.
        decoy_view=DecoyView.create(paths.secrets, paths.decoys)
        if os.geteuid() == 0 and paths.secrets.is_dir()
        else None,
    )


@contextmanager
def captured() -> Iterator[io.StringIO]:
    """A stream for a run's check lines, printed when the test fails."""
    stream = io.StringIO()
    try:
        yield stream
    finally:
        print(stream.getvalue())


def failing_check(layer: Layer, factory: LayerFactory, work_base: Path) -> CheckRecord:
    """Runs the sample case under ``factory``'s layer; returns the record of its one failed
    check, and checks that its FAIL line is the last check line, that it names the check's id,
    and that the run kept only what a failed run keeps: its check list, a page leading with the
    failed check, and its signed statement, which `verify` refuses."""
    out = work_base / "out"
    with captured() as stream, pytest.raises(CheckFailed) as failed:
        run_case(
            RunOptions(layer=layer, case_dir=SAMPLE_CASE, out_dir=out, work_base=work_base / "w"),
            make_layer=factory,
            stream=stream,
        )
    lines = [
        line for line in stream.getvalue().splitlines() if line[:5] in ("PASS ", "FAIL ", "SKIP ")
    ]
    fails = [line for line in lines if line.startswith("FAIL ")]
    assert len(fails) == 1, fails
    assert fails[0] == lines[-1], "checks went on after a FAIL"
    assert fails[0].endswith(f"[{failed.value.check_id}]"), "the FAIL line names its check"
    assert_failure_kept(out, failed.value.check_id)
    return failed.value.record
