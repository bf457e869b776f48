"""Real nono-py on this machine: Landlock, the seccomp socket rule, and the credential proxy."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.controller.checks import CheckLog
from app.controller.context import AwsCredentialFile, LayerSetup, RunContext, SupplierEndpoint
from app.controller.correlation import correlate
from app.controller.supplier_client import CallLog, SupplierClient
from app.controller.supplier_service import LocalSupplierService
from app.core.case import load_case_folder
from app.core.run_tree import RunPaths, ToolIdentity, create_run, write_secret_file
from app.tools.nono.launcher import NonoLayer

pytestmark = pytest.mark.integration

CASES = Path(__file__).resolve().parents[2] / "cases"
# Not pytest's tmp_path: its parents are 0700, which the tool's uid could not traverse.
WORK_BASE = Path("/var/tmp/analyst-tests")


@dataclass
class Bench:
    paths: RunPaths
    tool: ToolIdentity
    supplier: SupplierEndpoint
    setup: LayerSetup
    real_key: bytes


@contextmanager
def _bench() -> Iterator[Bench]:
    """A fresh run tree and supplier API, so request ids of one run are never reused."""
    tool = ToolIdentity.for_this_controller()
    paths = create_run(WORK_BASE, tool)
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the AWS endpoint
    try:
        with LocalSupplierService(paths, tool, [CASES / "rfp-001", CASES / "rfp-other"]) as sup:
            aws_file = paths.secrets / "aws-credentials"
            write_secret_file(aws_file, b"[analyst]\n", tool)
            setup = LayerSetup(
                run_id=paths.run_id,
                case_id="rfp-001",
                other_case_id="rfp-other",
                paths=paths,
                tool=tool,
                supplier=sup,
                aws_credential=AwsCredentialFile(aws_file, "the AWS credential file"),
                aws_endpoint=listener.getsockname(),
            )
            case_file = paths.workspace("reader").input / "case.json"
            case_file.write_bytes((CASES / "rfp-001" / "case.json").read_bytes())
            os.chmod(case_file, 0o644)
            if os.geteuid() == 0:
                os.chown(case_file, tool.uid, tool.gid)
            proposals = paths.workspace("reader").input / "proposals"
            shutil.copytree(CASES / "rfp-001" / "proposals", proposals)
            for path in [proposals, *proposals.iterdir()]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            private = paths.workspace("writer").input / "private.json"
            private.write_text('{"draft_reference": "DR-test"}\n')
            os.chmod(private, 0o644)
            yield Bench(paths, tool, sup, setup, sup.key_file.read_bytes().strip())
    finally:
        listener.close()
        shutil.rmtree(paths.top, ignore_errors=True)


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    with _bench() as made:
        yield made


@pytest.fixture
def layer(bench: Bench) -> Iterator[NonoLayer]:
    made = NonoLayer(bench.setup)
    made.preflight()
    yield made
    made.close()


def test_landlock_refuses_an_unlisted_file_that_the_same_uid_can_open(
    bench: Bench, layer: NonoLayer
) -> None:
    key_file = str(bench.supplier.key_file)
    assert layer.run_unconfined("open-read", [key_file]).result["ok"] is True
    confined = layer.run("reader", "open-read", [key_file]).result
    assert (confined["ok"], confined["errno"]) == (False, "EACCES")


def test_the_offline_evaluator_cannot_create_a_socket_and_the_reader_can(layer: NonoLayer) -> None:
    assert layer.run("evaluator", "socket-inet", []).result["errno"] == "EPERM"
    online = layer.run("reader", "socket-inet", []).result
    assert (online["ok"], online["errno"]) == (True, None)


def test_the_proxy_forwards_a_listed_request_and_audits_it_as_allow(layer: NonoLayer) -> None:
    mark = layer.audit_mark("reader")
    args = ["GET", "/cases/rfp-001/suppliers", "-", layer.next_request_id("reader")]
    result = layer.run("reader", "supplier-request", args).result
    assert result["status"] == 200
    events = layer.audit_since("reader", mark)
    assert {(e["mode"], e["decision"], e["method"], e["path"]) for e in events} == {
        ("reverse", "allow", "GET", "/cases/rfp-001/suppliers")
    }
    assert [e["status"] for e in events if e["status"] is not None] == [200]


def test_the_proxy_refuses_an_unlisted_request_with_403_and_audits_it_as_deny(
    layer: NonoLayer,
) -> None:
    mark = layer.audit_mark("writer")
    args = ["POST", "/purchase-orders", "-", layer.next_request_id("writer")]
    assert layer.run("writer", "supplier-request", args).result["status"] == 403
    events = layer.audit_since("writer", mark)
    assert [
        (e["decision"], e["method"], e["path"], e["status"], e["denial_category"]) for e in events
    ] == [("deny", "POST", "/purchase-orders", None, "endpoint_policy")]


def test_the_role_holds_a_placeholder_not_the_real_key(bench: Bench, layer: NonoLayer) -> None:
    measured = layer.run("reader", "credential-digest", []).result
    assert measured["present"] is True and measured["non_empty"] is True
    assert measured["digest"] == layer.credential_digest(layer.issued_placeholder("reader"))
    assert measured["digest"] != layer.credential_digest(bench.real_key)
    assert layer.issued_placeholder("reader") != bench.real_key


def test_the_check_suite_passes_and_records_no_credential() -> None:
    with _bench() as bench:
        layer = NonoLayer(bench.setup)
        try:
            layer.preflight()
            _suite_records_no_credential(bench, layer)
        finally:
            layer.close()


def _suite_records_no_credential(bench: Bench, layer: NonoLayer) -> None:
    case, _ = load_case_folder(CASES / "rfp-001")
    client = SupplierClient(bench.supplier, bench.real_key, CallLog(), bench.paths.run_id)
    stream = io.StringIO()
    ctx = RunContext(
        run_id=bench.paths.run_id,
        layer_name="nono",
        paths=bench.paths,
        tool=bench.tool,
        case=case,
        case_dir=CASES / "rfp-001",
        other_case_id="rfp-other",
        checks=CheckLog(stream=stream),
        supplier=bench.supplier,
        supplier_client=client,
        aws_credential=bench.setup.aws_credential,
        aws_endpoint=bench.setup.aws_endpoint,
        layer=layer,
    )
    suite = layer.check_suite(ctx)
    suite.boundary()
    draft = layer.role_path("writer", "out", "draft.txt")
    layer.run("writer", "create-file", [draft, "Draft recommendation: award to northstar.\n"])
    suite.submit_draft(Path(draft))

    lines = stream.getvalue().splitlines()
    assert lines and all(line.startswith("PASS ") for line in lines)
    result = correlate(client.calls.as_json(), client.read_log(), bench.paths.run_id)
    assert result.problems == [] and result.had_accepted_draft and result.refused_calls >= 6
    records = [ctx.checks.as_json(), client.calls.as_json(), layer.evidence()]
    recorded = stream.getvalue() + json.dumps(records)
    for secret in (bench.real_key, *(layer.issued_placeholder(r) for r in ("reader", "writer"))):
        assert secret.decode() not in recorded
