"""The run's record of supplier calls against the supplier API's own request log."""

from __future__ import annotations

from app.controller.call_correlation import CorrelationResult, correlate
from app.controller.supplier_client import SupplierClient
from app.core.run import Run


def correlation(run: Run, client: SupplierClient, refuses_upstream: bool) -> CorrelationResult:
    checks = run.checks
    checks.begin("correlation")
    result = correlate(client.calls.as_json(), client.read_log(), run.run_id)
    checks.require(
        not result.problems,
        f"the supplier API's own log holds every request of this run that reached it exactly "
        f"once ({result.matched} requests) and none that was refused "
        f"({result.refused_calls} refused requests never arrived)",
        detail="; ".join(result.problems),
    )
    checks.require(
        result.had_successful_read and result.had_accepted_draft,
        "the run's record includes a successful availability read and an accepted draft",
        detail=f"read {result.had_successful_read}, draft {result.had_accepted_draft}",
    )
    if refuses_upstream:
        checks.require(
            result.had_refused_operation,
            "and at least one refused operation, so an empty upstream log could not pass this",
            detail="no call of this run was refused before the supplier",
        )
    return result
