"""The report, correlation with the supplier's own log, and the scans around the last write."""

from __future__ import annotations

from typing import Any

from app.controller.comparison import Comparison
from app.controller.correlation import correlate
from app.controller.gates import Recommendation
from app.controller.phases.state import RunState, json_bytes
from app.controller.report import KeyLeak, render_recommendation, scan_directory, write_scanned


def report(run: RunState, chosen: str, answer: Recommendation, comparison: Comparison) -> None:
    checks, env, ctx = run.checks, run.env, run.ctx
    checks.begin("report")
    documents = {
        "recommendation.md": render_recommendation(run.case, chosen, answer),
        "comparison.json": json_bytes(comparison.as_json()),
    }
    try:
        write_scanned(ctx.paths.run, documents, run.secrets())
    except KeyLeak as leak:
        checks.require(False, "the report and the comparison hold no secret", detail=str(leak))
        raise
    for name, data in documents.items():
        key = f"{run.report_prefix}{name}"
        env.store.put(key, data)
        checks.require(
            env.store.get(key) == data,
            f"the report object round-trips through the store: {name}",
            detail=f"s3://{env.bucket}/{key} differs from what was written",
        )


def correlation(run: RunState, expects_refused_operation: bool) -> dict[str, Any]:
    checks, ctx = run.checks, run.ctx
    checks.begin("correlation")
    calls = ctx.supplier_client.calls.as_json()
    result = correlate(calls, ctx.supplier_client.read_log(), ctx.run_id)
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
    if expects_refused_operation:
        checks.require(
            result.had_refused_operation,
            "and at least one refused operation, so an empty upstream log could not pass this",
            detail="no call of this run was refused before the supplier",
        )
    return {
        "arrived_once": result.matched,
        "refused_never_arrived": result.refused_calls,
        "had_refused_operation": result.had_refused_operation,
    }


def finish(run: RunState, usage: dict[str, Any], correlation: dict[str, Any]) -> list[str]:
    checks, env, ctx = run.checks, run.env, run.ctx
    evidence = ctx.evidence | {
        "run_id": ctx.run_id,
        "layer": ctx.layer_name,
        "case_id": run.case.case_id,
        "policy": ctx.layer.evidence(),
        "model": usage,
        "correlation": correlation,
        "report_prefix": f"s3://{env.bucket}/{run.report_prefix}",
    }
    documents = {
        "evidence.json": json_bytes(evidence),
        "calls.json": json_bytes(ctx.supplier_client.calls.as_json()),
    }
    secrets = run.secrets()
    checks.holds(
        "the report, the comparison, the evidence and the call record were scanned before "
        f"being written for {', '.join(secrets)}; the run stops if one appears",
        lambda: write_scanned(ctx.paths.run, documents, secrets),
        refusals=(KeyLeak,),
    )
    write_scanned(ctx.paths.run, {"checks.json": json_bytes(checks.as_json())}, secrets)
    for name in ("evidence.json", "calls.json", "checks.json"):
        env.store.put(f"{run.report_prefix}{name}", (ctx.paths.run / name).read_bytes())
    # The last write is above: from here on nothing in the run directory changes.
    try:
        scanned = scan_directory(ctx.paths.run, secrets)
    except KeyLeak as leak:
        checks.require(False, "no file left in the run directory holds a secret", detail=str(leak))
        raise
    checks.require(
        True,
        f"and so was every one of the {len(scanned)} files left in the run directory, read "
        f"back after the last write: {', '.join(scanned)}",
    )
    return scanned
