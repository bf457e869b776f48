"""The last writes: evidence, the call record, the check list and the report page, each scanned
before it is written, then every file left in the run directory read back and scanned again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from app.controller.attest import Attested, attest, kms_client_if_named, store_attestation
from app.controller.environment import Services
from app.controller.evidence_document import EvidenceParts, checks_document, evidence_document
from app.controller.report_templates import ReportTemplates
from app.controller.secret_scan import KeyLeak, ScanIncomplete, scan_directory, write_scanned
from app.controller.timing import PhaseClock
from app.core.files import json_bytes
from app.core.run import Run
from app.tools.catalogue import controller as c

STORED_LAST = ("evidence.json", "calls.json", "checks.json", "report.html")
# The report page's render, timed as a phase of its own (`make bench` prints what it costs).
REPORT_PAGE_PHASE: Final = "report page"
# The signed statement, timed apart too (`make bench` prints signing and verifying).
ATTESTATION_PHASE: Final = "attestation"


def finish(
    run: Run,
    services: Services,
    parts: EvidenceParts,
    comparison: dict[str, Any],
    secrets: Mapping[str, bytes],
    clock: PhaseClock,
    templates: ReportTemplates,
) -> Attested:
    """Writes and stores the run's last files; returns how its attestation was signed."""
    checks = run.checks
    checks.begin(c.EVIDENCE)
    evidence = evidence_document(parts)
    calls = run.supplier_client.calls.as_json()
    documents = {
        "evidence.json": json_bytes(evidence),
        "calls.json": json_bytes(calls),
    }
    checks.holds(
        c.SCANNED_BEFORE,
        lambda: write_scanned(run.paths.run, documents, secrets),
        refusals=(KeyLeak,),
        detail=lambda _: f"for {', '.join(secrets)}",
    )
    listed = checks_document(
        parts.facts, checks.as_json(), after_written=((c.EVIDENCE.name, c.SCANNED_AFTER),)
    )
    with clock.aside(REPORT_PAGE_PHASE):
        # Its modules and templates were made ready in a thread beside the checks.
        templates.wait()
        from app.report.page import ReportInputs, render_report

        page = render_report(ReportInputs(evidence, listed, comparison))
    write_scanned(run.paths.run, {"checks.json": json_bytes(listed), "report.html": page}, secrets)
    for name in STORED_LAST:
        services.store.put(f"{run.report_prefix}{name}", (run.paths.run / name).read_bytes())
    # The last write is above: from here on nothing in the run directory changes.
    try:
        scanned = scan_directory(run.paths.run, secrets)
    except (KeyLeak, ScanIncomplete) as unsafe:
        # A secret found, or an entry the scan could not read as a regular file: either way
        # the claim cannot be made.
        checks.fail(c.SCANNED_AFTER, str(unsafe))
        raise
    checks.require(c.SCANNED_AFTER, True, detail=f"{len(scanned)} files: {', '.join(scanned)}")
    checks.close()
    # Signed once every check is made: the statement holds the read-back scan's outcome too.
    with clock.aside(ATTESTATION_PHASE):
        attested = attest(
            run.paths.run,
            evidence,
            checks.as_json(),
            evidence,
            secrets,
            kms_client=kms_client_if_named(services.session),
        )
        store_attestation(run.paths.run, services.store, run.report_prefix)
    return attested
