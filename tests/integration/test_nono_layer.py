"""Real nono-py on this machine: Landlock, the seccomp socket rule, and the credential proxy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.call_correlation import correlate
from app.core.catalogue import Section
from app.core.results import Errno, ToolRunError
from app.core.run_tree import CHECK_FILE
from app.tools.execution import make_release_fifo
from app.tools.nono.audit_events import nono_events
from app.tools.nono.front import Refusal
from app.tools.nono.launcher import NonoLayer
from app.tools.secret_controls import SecretControls
from tests.support.nono_bench import Bench, nono_bench
from tests.support.sample_draft import sample_draft

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    with nono_bench() as made:
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
    """The control opens the key's path in the decoy view, where the same uid can open it."""
    key_file = str(bench.run.supplier.key_file)
    assert SecretControls(bench.run, layer).call(Path(key_file))().ok
    confined = layer.run_tool("reader", "open-read", key_file)
    assert (confined.ok, confined.errno) == (False, Errno.EACCES)


def test_the_offline_evaluator_cannot_create_a_socket_and_the_reader_can(layer: NonoLayer) -> None:
    assert layer.run_tool("evaluator", "socket-inet").errno is Errno.EPERM
    online = layer.run_tool("reader", "socket-inet")
    assert (online.ok, online.errno) == (True, None)


def test_the_proxy_forwards_a_listed_request_and_audits_it_as_allow(layer: NonoLayer) -> None:
    request_id = layer.next_request_id("reader")
    result = layer.run_tool(
        "reader", "supplier-request", "GET", "/cases/rfp-001/suppliers", "-", request_id
    )
    assert result.data["status"] == 200
    (record,) = layer.proxies.of("reader", request_id)
    assert (record.form, record.method, record.refusal, record.status) == (
        "origin",
        "GET",
        None,
        200,
    )
    # nono records its decision, then the same request again with the supplier's status.
    assert [(e.mode, e.decision, e.method, e.path, e.status) for e in nono_events(record)] == [
        ("reverse", "allow", "GET", "/cases/rfp-001/suppliers", None),
        ("reverse", "allow", "GET", "/cases/rfp-001/suppliers", 200),
    ]


def test_the_proxy_refuses_an_unlisted_request_with_403_and_never_passes_it_on(
    layer: NonoLayer,
) -> None:
    request_id = layer.next_request_id("writer")
    result = layer.run_tool(
        "writer", "supplier-request", "POST", "/purchase-orders", "-", request_id
    )
    assert result.data["status"] == 403
    (record,) = layer.proxies.of("writer", request_id)
    assert (record.refusal, record.status, record.nono) == (Refusal.NOT_LISTED, 403, ())


def test_a_writer_draft_over_the_limit_is_answered_413_through_its_proxy_every_time(
    bench: Bench, layer: NonoLayer
) -> None:
    """The writer's own POST of an oversized draft: its front answers 413 without reading it,
    then reads and drops what the writer still sends, so the answer reaches the writer."""
    # The writer's own draft file (its profile grants it no other), over the front's limit.
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
    assert measured["digest"] == layer.digests.digest(layer.proxies.placeholder("reader"))
    assert measured["digest"] != layer.digests.digest(bench.real_key)
    assert layer.proxies.placeholder("reader") != bench.real_key


def test_the_check_suite_passes_and_records_no_credential() -> None:
    with nono_bench() as bench:
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
    text, expected = sample_draft(run)
    layer.run_tool("writer", "write-file", draft, text)
    suite.submit_draft(Path(draft), expected)

    lines = [line for line in bench.stream.getvalue().splitlines() if not line.startswith("== ")]
    assert lines and all(line.startswith(("PASS ", "SKIP ")) for line in lines)
    # Only what a root controller cannot show here (app/tools/undumpable_checks.py) SKIPs.
    skipped = {r.id for r in run.checks.records if r.outcome == "SKIP"}
    assert skipped == {"attacks.undumpable.control", "attacks.undumpable"}
    result = correlate(client.calls.as_json(), client.read_log(), run.run_id)
    assert result.problems == [] and result.had_accepted_draft and result.refused_calls >= 6
    records = [run.checks.as_json(), client.calls.as_json(), layer.evidence()]
    recorded = bench.stream.getvalue() + json.dumps(records)
    for secret in (bench.real_key, *(layer.proxies.placeholder(r) for r in ("reader", "writer"))):
        assert secret.decode() not in recorded


def test_a_tool_process_past_its_time_limit_is_killed_and_the_run_told(
    bench: Bench, layer: NonoLayer
) -> None:
    """A role that blocks for good (``hold`` on a FIFO nobody opens) is killed at its limit,
    which nono-py holds; the control: an ordinary action under the same short limit completes."""
    layer.time_limit_seconds = 1.0
    assert layer.run_tool("reader", "env-names").ok  # the control
    inputs = bench.run.paths.workspace("reader").input
    fifo = make_release_fifo(inputs, "never-released.fifo")
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
