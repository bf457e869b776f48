"""The last writes: evidence, the call record, the check list and the report page, each scanned
before it is written, then every file left in the run directory read back and scanned again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.controller.environment import Services
from app.controller.evidence_document import EvidenceParts, checks_document, evidence_document
from app.controller.report_page import ReportInputs, render_report
from app.controller.secret_scan import KeyLeak, scan_directory, write_scanned
from app.core.files import json_bytes
from app.core.run import Run

STORED_LAST = ("evidence.json", "calls.json", "checks.json", "report.html")


def finish(
    run: Run,
    services: Services,
    parts: EvidenceParts,
    comparison: dict[str, Any],
    secrets: Mapping[str, bytes],
) -> list[str]:
    checks = run.checks
    checks.begin("evidence")
    evidence = evidence_document(parts)
    calls = run.supplier_client.calls.as_json()
    documents = {
        "evidence.json": json_bytes(evidence),
        "calls.json": json_bytes(calls),
    }
    checks.holds(
        "the report, the comparison, the evidence and the call record were scanned before "
        f"being written for {', '.join(secrets)}; the run stops if one appears",
        lambda: write_scanned(run.paths.run, documents, secrets),
        refusals=(KeyLeak,),
    )
    listed = checks_document(parts.facts, checks.as_json())
    page = render_report(ReportInputs(evidence, listed, comparison))
    write_scanned(run.paths.run, {"checks.json": json_bytes(listed), "report.html": page}, secrets)
    for name in STORED_LAST:
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
