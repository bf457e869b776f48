"""The last writes: evidence, the call record and the check list, each scanned before it is
written, then every file left in the run directory read back and scanned again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.controller.environment import Services
from app.controller.secret_scan import KeyLeak, scan_directory, write_scanned
from app.core.files import json_bytes
from app.core.run import Run


def finish(
    run: Run,
    services: Services,
    policy: dict[str, Any],
    secrets: Mapping[str, bytes],
) -> list[str]:
    checks = run.checks
    checks.begin("evidence")
    evidence = run.evidence.sections | {
        "run_id": run.run_id,
        "layer": str(run.layer),
        "case_id": run.case.case_id,
        "policy": policy,
        "report_prefix": f"s3://{services.bucket}/{run.report_prefix}",
    }
    documents = {
        "evidence.json": json_bytes(evidence),
        "calls.json": json_bytes(run.supplier_client.calls.as_json()),
    }
    checks.holds(
        "the report, the comparison, the evidence and the call record were scanned before "
        f"being written for {', '.join(secrets)}; the run stops if one appears",
        lambda: write_scanned(run.paths.run, documents, secrets),
        refusals=(KeyLeak,),
    )
    write_scanned(run.paths.run, {"checks.json": json_bytes(checks.as_json())}, secrets)
    for name in ("evidence.json", "calls.json", "checks.json"):
        services.store.put(f"{run.report_prefix}{name}", (run.paths.run / name).read_bytes())
    # The last write is above: from here on nothing in the run directory changes.
    try:
        scanned = scan_directory(run.paths.run, secrets)
    except KeyLeak as leak:
        checks.require(False, "no file left in the run directory holds a secret", detail=str(leak))
        raise
    checks.require(
        True,
        f"and so was every one of the {len(scanned)} files left in the run directory, read "
        f"back after the last write: {', '.join(scanned)}",
    )
    return scanned
