"""What a run stopped by a failed check keeps: its check list and a page leading with the
failed check, scanned, signed, copied to --out and stored."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Final

from app.controller.attest import ATTESTATION_FILES, attest, kms_client_if_named
from app.controller.evidence_document import checks_document
from app.controller.prepared_run import PreparedRun, kept_elsewhere, run_facts, run_secrets
from app.controller.provenance import code_revision, policy_digests
from app.controller.secret_scan import write_scanned
from app.core.checklog import CheckFailed
from app.core.errors import AnalystError
from app.core.escaping import escaped
from app.core.files import json_bytes
from app.tools.layer import ConfinementLayer

# What a run that stopped at a failed check keeps, with its attestation.
FAILED_FILES: Final = ("checks.json", "report.html")


def keep_failure(
    prepared: PreparedRun, layer: ConfinementLayer, failed: CheckFailed
) -> Path | None:
    """A failed run's evidence, kept: its check list and a page leading with the failed check,
    each scanned for the secrets, signed into its statement, copied to --out and stored. Only
    these files: what else the run directory holds is not scanned here, so it is not kept.
    Whatever keeps them from being written, the run's own failure is what is reported."""
    run, services = prepared.run, prepared.services
    try:
        facts = run_facts(run, services)
        listed = checks_document(facts, run.checks.as_json())
        secrets = run_secrets(services, layer)
        from app.report.failed_page import render_failed

        page = render_failed(listed, failed.check_id)
        write_scanned(
            run.paths.run, {"checks.json": json_bytes(listed), "report.html": page}, secrets
        )
        attest(
            run.paths.run,
            facts.as_json(),
            run.checks.as_json(),
            # What can be said of a run stopped early: the policy in force beside the committed
            # one (a broken element shows here) and the code that ran.
            {
                "provenance": {
                    "policy_digests": policy_digests(layer),
                    "code_revision": asdict(code_revision(run.in_cluster)),
                }
            },
            secrets,
            kms_client=kms_client_if_named(services.session),
            stopped_at=failed.check_id,
            names=FAILED_FILES,
        )
        kept = {name: run.paths.run / name for name in (*FAILED_FILES, *ATTESTATION_FILES)}
        published = prepared.out.publish(
            kept, kept_elsewhere=kept_elsewhere(run, services, prepared.keeps_tree)
        )
    except Exception as error:  # whatever it was, the check's failure is what the run reports
        print(
            escaped(f"note: the failed run's page and statement were not kept: {error}"),
            file=run.checks.stream,
            flush=True,
        )
        return None
    # Stored after the copy: a failure of the store itself (its check may be the one that
    # failed) leaves the copy in --out.
    try:
        for name, path in kept.items():
            services.store.put(f"{run.report_prefix}{name}", path.read_bytes())
    except (AnalystError, OSError) as error:
        print(
            escaped(f"note: the failed run's page and statement were not stored: {error}"),
            file=run.checks.stream,
            flush=True,
        )
    return published
