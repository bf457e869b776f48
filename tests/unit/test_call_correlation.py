"""The correlation of the run's supplier calls with the supplier API's own log."""

from __future__ import annotations

from typing import Any

from app.controller.call_correlation import correlate

RUN = "run0123"


def call(
    n: int, method: str, path: str, status: int | None, reaches: bool = True
) -> dict[str, Any]:
    return {
        "request_id": f"{RUN}-c{n}",
        "by": "controller",
        "method": method,
        "path": path,
        "host": "localhost",
        "status": status,
        "reaches_upstream": reaches,
    }


def entry(c: dict[str, Any], **changes: Any) -> dict[str, Any]:
    logged = {"time": "t", **{k: c[k] for k in ("method", "path", "status", "request_id")}}
    return {**logged, **changes}


READ = call(1, "GET", "/cases/rfp-001/suppliers", 200)
DRAFT = call(2, "POST", "/cases/rfp-001/recommendations", 201)
REFUSED = call(3, "POST", "/purchase-orders", 403, reaches=False)


def test_every_call_once_and_flags() -> None:
    other_run = {"method": "GET", "path": "/x", "status": 200, "request_id": "other-c1"}
    anonymous = {"method": "GET", "path": "/x", "status": 401, "request_id": None}
    log = [entry(READ), other_run, entry(DRAFT), anonymous]
    result = correlate([READ, DRAFT, REFUSED], log, RUN)
    assert result.ok, result.problems
    assert (result.upstream_calls, result.refused_calls, result.matched) == (2, 1, 2)
    assert result.run_log_entries == 2
    assert result.had_successful_read and result.had_accepted_draft
    assert result.had_refused_operation


def test_empty_run_passes_but_flags_nothing() -> None:
    result = correlate([], [], RUN)
    assert result.ok
    assert not (result.had_successful_read or result.had_accepted_draft)
    assert not result.had_refused_operation


def test_missing_call_is_a_problem() -> None:
    result = correlate([READ, DRAFT], [entry(READ)], RUN)
    assert not result.ok
    assert "reached the supplier API 0 times" in result.problems[0]


def test_duplicate_arrival_is_a_problem() -> None:
    result = correlate([READ], [entry(READ), entry(READ)], RUN)
    assert any("2 times" in p for p in result.problems)


def test_status_or_path_mismatch_is_a_problem() -> None:
    result = correlate([READ], [entry(READ, status=401)], RUN)
    assert any("differs in status" in p for p in result.problems)
    result = correlate([READ], [entry(READ, path="/cases/rfp-other/suppliers")], RUN)
    assert any("differs in path" in p for p in result.problems)


def test_refused_call_that_arrived_is_a_problem() -> None:
    result = correlate([READ, REFUSED], [entry(READ), entry(REFUSED)], RUN)
    assert any("recorded as refused but reached" in p for p in result.problems)


def test_unrecorded_request_of_this_run_is_a_problem() -> None:
    stray = {"method": "PATCH", "path": "/suppliers/x", "status": 200, "request_id": f"{RUN}-r9"}
    result = correlate([READ], [entry(READ), stray], RUN)
    assert any("never made by the run" in p for p in result.problems)


def test_call_outside_the_run_prefix_is_a_problem() -> None:
    foreign = {**READ, "request_id": "someone-else-c1"}
    result = correlate([foreign], [entry(foreign)], RUN)
    assert any("prefix" in p for p in result.problems)


def test_refused_call_does_not_count_as_a_read() -> None:
    refused_read = call(4, "GET", "/cases/rfp-001/suppliers", 403, reaches=False)
    result = correlate([refused_read], [], RUN)
    assert result.ok
    assert not result.had_successful_read


def test_every_draft_of_the_run_in_the_suppliers_log_is_counted_whoever_sent_it() -> None:
    assert correlate([READ, DRAFT], [entry(READ), entry(DRAFT)], RUN).drafts_posted == 1
    # One a role's proxy passed on under an id of its own, never recorded by the run.
    stamped = entry(DRAFT, request_id=f"{RUN}-writerproxy-1")
    other_run = entry(DRAFT, request_id="other-c2")
    result = correlate([READ, DRAFT], [entry(READ), entry(DRAFT), stamped, other_run], RUN)
    assert result.drafts_posted == 2
    assert result.problems == [
        f"the supplier's log holds POST /cases/rfp-001/recommendations ({RUN}-writerproxy-1), "
        "never made by the run"
    ]


def test_a_get_of_the_run_that_carried_a_body_is_named_and_the_drafts_body_counted() -> None:
    clean = correlate([READ, DRAFT], [entry(READ, body_bytes=0), entry(DRAFT, body_bytes=412)], RUN)
    assert (clean.reads, clean.reads_with_a_body, clean.draft_body_bytes) == (1, [], 412)
    leaked = correlate(
        [READ, DRAFT], [entry(READ, body_bytes=61440), entry(DRAFT, body_bytes=412)], RUN
    )
    assert leaked.reads_with_a_body == [f"GET /cases/rfp-001/suppliers ({RUN}-c1): 61440 bytes"]
    # A log that counts no body at all: every GET is named, and the control reads 0.
    uncounted = correlate([READ, DRAFT], [entry(READ), entry(DRAFT)], RUN)
    assert uncounted.reads_with_a_body == [f"GET /cases/rfp-001/suppliers ({RUN}-c1): None bytes"]
    assert uncounted.draft_body_bytes == 0
