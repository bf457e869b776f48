"""The run's record of supplier calls against the supplier API's own request log."""

from __future__ import annotations

from app.controller.call_correlation import CorrelationResult, correlate
from app.controller.supplier_client import SupplierClient
from app.core.run import Run
from app.tools.catalogue import controller as c


def correlation(run: Run, client: SupplierClient, refuses_upstream: bool) -> CorrelationResult:
    checks = run.checks
    checks.begin(c.CORRELATION, refuses_upstream=refuses_upstream)
    result = correlate(client.calls.as_json(), client.read_log(), run.run_id)
    checks.require(
        c.SUPPLIER_LOG,
        not result.problems,
        detail="; ".join(result.problems)
        or f"{result.matched} requests arrived once; {result.refused_calls} refused requests "
        "never arrived",
    )
    checks.require(
        c.READ_AND_DRAFT,
        result.had_successful_read and result.had_accepted_draft,
        detail=f"read {result.had_successful_read}, draft {result.had_accepted_draft}",
    )
    checks.expect_equal(c.ONE_DRAFT, result.drafts_posted, 1)
    checks.require(
        c.NO_BODY_ON_READ(reads=result.reads),
        result.reads > 0 and not result.reads_with_a_body,
        detail="; ".join(result.reads_with_a_body) or f"{result.reads} GETs",
    )
    checks.require(
        c.NO_BODY_ON_READ_CONTROL(draft=result.draft_body_bytes),
        result.draft_body_bytes > 0,
        detail=f"the accepted draft counted {result.draft_body_bytes} bytes",
    )
    if refuses_upstream:
        checks.require(
            c.REFUSED_OPERATION,
            result.had_refused_operation,
            detail="some call of this run was refused before the supplier"
            if result.had_refused_operation
            else "no call of this run was refused before the supplier",
        )
    return result
