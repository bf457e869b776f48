"""Real nono-py on this machine: Landlock, the seccomp socket rule, and the credential proxy."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.controller.call_correlation import correlate
from app.controller.environment import read_supplier_key
from app.controller.services.local_supplier import LocalSupplierService
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog
from app.core.catalogue import Section
from app.core.endpoints import HostPort
from app.core.ids import OTHER_CASE_ID
from app.core.repo import CASES_DIR, SAMPLE_CASE
from app.core.results import Errno, ToolRunError
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import CHECK_FILE, ToolIdentity
from app.tools.execution import make_release_fifo
from app.tools.nono.deadline import ToolDeadline
from app.tools.nono.launcher import NonoLayer
from tests.support.runs import bare_run, bare_tree

pytestmark = pytest.mark.integration


@dataclass
class Bench:
    run: Run
    client: SupplierClient
    real_key: bytes
    stream: io.StringIO


@contextmanager
def _bench() -> Iterator[Bench]:
    """A fresh run tree and supplier API, so request ids of one run are never reused."""
    # Not pytest's tmp_path: its parents are 0700, which the tool's uid could not traverse.
    base = Path(tempfile.mkdtemp(prefix="nono-layer-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    paths = bare_tree(base)
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the AWS endpoint
    try:
        tool = ToolIdentity.for_this_controller()
        with LocalSupplierService(paths, tool, [SAMPLE_CASE, CASES_DIR / OTHER_CASE_ID]) as sup:
            reader_in = paths.workspace("reader").input
            (reader_in / "case.json").write_bytes((SAMPLE_CASE / "case.json").read_bytes())
            proposals = reader_in / "proposals"
            shutil.copytree(SAMPLE_CASE / "proposals", proposals)
            for path in [proposals, *proposals.iterdir()]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            private = paths.workspace("writer").input / "private.json"
            private.write_text('{"draft_reference": "DR-test"}\n')
            os.chmod(private, 0o644)
            key = read_supplier_key(sup.key_file)
            client = SupplierClient(sup, key, CallLog(), paths.run_id)
            stream = io.StringIO()
            endpoint = HostPort(*listener.getsockname())
            run = bare_run(
                paths, Layer.NONO, supplier=sup, client=client, aws_endpoint=endpoint, stream=stream
            )
            yield Bench(run, client, key, stream)
    finally:
        listener.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    with _bench() as made:
        yield made


@pytest.fixture
def layer(bench: Bench) -> Iterator[NonoLayer]:
    made = NonoLayer(bench.run)
    made.preflight()
    yield made
    made.close()


def test_landlock_refuses_an_unlisted_file_that_the_same_uid_can_open(
    bench: Bench, layer: NonoLayer
) -> None:
    key_file = str(bench.run.supplier.key_file)
    assert layer.run_unconfined("open-read", key_file).ok
    confined = layer.run_tool("reader", "open-read", key_file)
    assert (confined.ok, confined.errno) == (False, Errno.EACCES)


def test_the_offline_evaluator_cannot_create_a_socket_and_the_reader_can(layer: NonoLayer) -> None:
    assert layer.run_tool("evaluator", "socket-inet").errno is Errno.EPERM
    online = layer.run_tool("reader", "socket-inet")
    assert (online.ok, online.errno) == (True, None)


def test_the_proxy_forwards_a_listed_request_and_audits_it_as_allow(layer: NonoLayer) -> None:
    mark = layer.proxies.mark("reader")
    request_id = layer.next_request_id("reader")
    result = layer.run_tool(
        "reader", "supplier-request", "GET", "/cases/rfp-001/suppliers", "-", request_id
    )
    assert result.data["status"] == 200
    events = layer.proxies.since("reader", mark)
    assert {(e.mode, e.decision, e.method, e.path) for e in events} == {
        ("reverse", "allow", "GET", "/cases/rfp-001/suppliers")
    }
    assert [e.status for e in events if e.status is not None] == [200]


def test_the_proxy_refuses_an_unlisted_request_with_403_and_audits_it_as_deny(
    layer: NonoLayer,
) -> None:
    mark = layer.proxies.mark("writer")
    request_id = layer.next_request_id("writer")
    result = layer.run_tool(
        "writer", "supplier-request", "POST", "/purchase-orders", "-", request_id
    )
    assert result.data["status"] == 403
    events = layer.proxies.since("writer", mark)
    assert [(e.decision, e.method, e.path, e.status, e.denial_category) for e in events] == [
        ("deny", "POST", "/purchase-orders", None, "endpoint_policy")
    ]


def test_a_writer_draft_over_the_limit_is_answered_413_through_its_proxy(
    bench: Bench, layer: NonoLayer
) -> None:
    """The writer's own POST of an oversized draft: the supplier reads and drops it, then
    answers 413, which reaches the writer through its proxy every time."""
    # The writer's own draft file (its profile grants it no other), over the supplier's limit.
    draft = bench.run.paths.workspace("writer").output / "draft.txt"
    draft.write_bytes(b"d" * (64 * 1024 + 1))
    path = "/cases/rfp-001/recommendations"
    statuses = [
        layer.run_tool(
            "writer", "supplier-request", "POST", path, str(draft), layer.next_request_id("writer")
        ).data.get("status")
        for _ in range(20)
    ]
    assert statuses == [413] * 20


def test_the_role_holds_a_placeholder_not_the_real_key(bench: Bench, layer: NonoLayer) -> None:
    measured = layer.run_tool("reader", "credential-digest").data
    assert measured["present"] is True and measured["non_empty"] is True
    assert measured["digest"] == layer.credential_digest(layer.proxies.placeholder("reader"))
    assert measured["digest"] != layer.credential_digest(bench.real_key)
    assert layer.proxies.placeholder("reader") != bench.real_key


def test_the_check_suite_passes_and_records_no_credential() -> None:
    with _bench() as bench:
        layer = NonoLayer(bench.run)
        try:
            layer.preflight()
            _suite_records_no_credential(bench, layer)
        finally:
            layer.close()


def _suite_records_no_credential(bench: Bench, layer: NonoLayer) -> None:
    run, client = bench.run, bench.client
    suite = layer.checks()
    suite.process()
    suite.boundary()
    run.checks.begin(Section("business", *suite.submission))
    draft = layer.role_path("writer", "out", "draft.txt")
    layer.run_tool("writer", "write-file", draft, "Draft recommendation: award to northstar.\n")
    suite.submit_draft(Path(draft))

    lines = [line for line in bench.stream.getvalue().splitlines() if not line.startswith("== ")]
    assert lines and all(line.startswith("PASS ") for line in lines)
    result = correlate(client.calls.as_json(), client.read_log(), run.run_id)
    assert result.problems == [] and result.had_accepted_draft and result.refused_calls >= 6
    records = [run.checks.as_json(), client.calls.as_json(), layer.evidence()]
    recorded = bench.stream.getvalue() + json.dumps(records)
    for secret in (bench.real_key, *(layer.proxies.placeholder(r) for r in ("reader", "writer"))):
        assert secret.decode() not in recorded


@pytest.mark.parametrize("holder", ["controller", "nono-py"])
def test_a_tool_process_past_its_time_limit_is_killed_and_the_run_told(
    bench: Bench, layer: NonoLayer, holder: str
) -> None:
    """A role that blocks for good (``hold`` on a FIFO nobody opens) is killed at its limit,
    whether the controller holds the limit (nono/deadline.py) or nono-py does; the control:
    an ordinary action under the same short limit completes."""
    layer.time_limit_seconds = 1.0
    layer.deadline_held_here = holder == "controller"
    assert layer.run_tool("reader", "env-names").ok  # the control
    inputs = bench.run.paths.workspace("reader").input
    fifo = make_release_fifo(inputs, f"never-released-{holder}.fifo")
    pid_file = layer.role_path("reader", "out", CHECK_FILE)
    started = time.monotonic()
    try:
        with pytest.raises(ToolRunError, match=r"timed out after 1\.0s"):
            layer.run_tool("reader", "hold", str(fifo), pid_file)
    finally:
        fifo.unlink()
    assert time.monotonic() - started < 10
    pid = int(Path(pid_file).read_text(encoding="ascii"))
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped, not left waiting


def test_the_controllers_time_limit_spares_a_child_that_was_there_before() -> None:
    """The deadline kills what the calling thread forked during the call, nothing older."""
    older = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with ToolDeadline(0.5) as deadline:
            done = subprocess.run(["sleep", "30"], start_new_session=True, check=False)
        assert deadline.expired and done.returncode == -signal.SIGKILL
        assert older.poll() is None
        with ToolDeadline(5) as deadline:
            subprocess.run(["true"], check=True)
        assert not deadline.expired
    finally:
        older.kill()
        older.wait()
