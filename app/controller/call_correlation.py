"""Checks the run's record of supplier calls against the supplier API's own request log.

Each call that reached the supplier must appear in its log exactly once, as recorded; each
call refused before the supplier must not appear at all; and the log must hold no request of
this run that the run did not record. An empty log would satisfy the last two on its own, so
the result also says whether the run held a successful read, an accepted draft and a refusal.
And no GET of this run carried a body into the supplier, by the body bytes its log counts for
each request (the accepted draft's, more than 0, shows it counts them).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_READ = re.compile(r"^/cases/[^/]+/suppliers$")
_DRAFT = re.compile(r"^/cases/[^/]+/recommendations$")


@dataclass(frozen=True)
class CallSeen:
    """One call of the run's record, and how many times the supplier's own log holds it."""

    request_id: str
    by: str
    method: str
    path: str
    status: int | None
    reaches_upstream: bool
    in_supplier_log: int

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CorrelationResult:
    upstream_calls: int  # calls recorded as reaching the supplier API
    refused_calls: int  # calls recorded as refused before it
    matched: int  # upstream calls found once in the log, with the same method, path and status
    run_log_entries: int  # log entries carrying this run's request-id prefix
    had_successful_read: bool
    had_accepted_draft: bool
    had_refused_operation: bool
    # Draft submissions of this run in the supplier's own log, whoever sent them.
    drafts_posted: int = 0
    # The supplier's own count of body bytes: this run's GETs that carried any, and the
    # body of the draft it accepted (the control: the log counts a body it read).
    reads_with_a_body: list[str] = field(default_factory=list)
    reads: int = 0
    draft_body_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    calls: list[CallSeen] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _describe(call: Mapping[str, Any]) -> str:
    return f"{call.get('method')} {call.get('path')} ({call.get('request_id')})"


def correlate(
    calls: Sequence[Mapping[str, Any]],
    supplier_log: Sequence[Mapping[str, Any]],
    run_id: str,
) -> CorrelationResult:
    """Compares ``calls`` (CallLog.as_json()) with ``supplier_log`` (the server's entries)."""
    prefix = f"{run_id}-"
    problems: list[str] = []
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for entry in supplier_log:
        request_id = entry.get("request_id")
        if isinstance(request_id, str):
            by_id.setdefault(request_id, []).append(entry)

    counts = Counter(call.get("request_id") for call in calls)
    for request_id, n in counts.items():
        if n > 1:
            problems.append(f"request id {request_id} was recorded {n} times")

    matched = upstream = refused = 0
    seen_calls: list[CallSeen] = []
    for call in calls:
        request_id = call.get("request_id")
        seen_calls.append(_seen(call, len(by_id.get(str(request_id), []))))
        if not isinstance(request_id, str) or not request_id.startswith(prefix):
            # A call outside the run's prefix could hide in the log among other runs' traffic.
            problems.append(f"{_describe(call)} does not carry this run's request-id prefix")
            continue
        seen = by_id.get(request_id, [])
        if call.get("reaches_upstream"):
            upstream += 1
            if len(seen) != 1:
                problems.append(f"{_describe(call)} reached the supplier API {len(seen)} times")
                continue
            entry = seen[0]
            differs = [
                name for name in ("method", "path", "status") if entry.get(name) != call.get(name)
            ]
            if differs:
                problems.append(
                    f"{_describe(call)}: the supplier's log differs in {', '.join(differs)}"
                )
                continue
            matched += 1
        else:
            refused += 1
            if seen:
                problems.append(
                    f"{_describe(call)} was recorded as refused but reached the supplier API"
                )

    recorded_ids = set(counts)
    run_entries = [e for e in supplier_log if str(e.get("request_id") or "").startswith(prefix)]
    for entry in run_entries:
        if entry.get("request_id") not in recorded_ids:
            problems.append(f"the supplier's log holds {_describe(entry)}, never made by the run")

    drafts = [
        e for e in run_entries if e.get("method") == "POST" and _DRAFT.fullmatch(str(e.get("path")))
    ]
    run_reads = [e for e in run_entries if e.get("method") == "GET"]

    def reached(method: str, pattern: re.Pattern[str], status: int) -> bool:
        return any(
            c.get("reaches_upstream")
            and c.get("method") == method
            and pattern.fullmatch(str(c.get("path")))
            and c.get("status") == status
            for c in calls
        )

    return CorrelationResult(
        upstream_calls=upstream,
        refused_calls=refused,
        matched=matched,
        run_log_entries=len(run_entries),
        had_successful_read=reached("GET", _READ, 200),
        had_accepted_draft=reached("POST", _DRAFT, 201),
        had_refused_operation=any(not c.get("reaches_upstream") for c in calls),
        drafts_posted=len(drafts),
        reads_with_a_body=[
            f"{_describe(e)}: {e.get('body_bytes')} bytes"
            for e in run_reads
            if e.get("body_bytes") != 0
        ],
        reads=len(run_reads),
        draft_body_bytes=max((_body_bytes(e) for e in drafts if e.get("status") == 201), default=0),
        problems=problems,
        calls=seen_calls,
    )


def _body_bytes(entry: Mapping[str, Any]) -> int:
    """The body bytes a log entry counts; 0 when it counts none (an entry without the field
    is a log that does not count them, which the control shows)."""
    counted = entry.get("body_bytes")
    return counted if type(counted) is int else 0


def _seen(call: Mapping[str, Any], times: int) -> CallSeen:
    status = call.get("status")
    return CallSeen(
        request_id=str(call.get("request_id")),
        by=str(call.get("by")),
        method=str(call.get("method")),
        path=str(call.get("path")),
        status=status if isinstance(status, int) else None,
        reaches_upstream=bool(call.get("reaches_upstream")),
        in_supplier_log=times,
    )
