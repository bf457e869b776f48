"""The report: written after a scan for every secret, and round-tripped through the store."""

from __future__ import annotations

from collections.abc import Mapping

from app.controller.comparison import Comparison
from app.controller.environment import Services
from app.controller.phases.model import CheckedAnswer
from app.controller.recommendation import render_recommendation
from app.controller.secret_scan import KeyLeak, write_scanned
from app.core.files import json_bytes
from app.core.run import Run
from app.tools.catalogue import controller as c


def report(
    run: Run,
    services: Services,
    checked: CheckedAnswer,
    comparison: Comparison,
    secrets: Mapping[str, bytes],
) -> None:
    checks = run.checks
    checks.begin(c.REPORT)
    documents = {
        "recommendation.md": render_recommendation(run.case, checked.supplier_id, checked.answer),
        "comparison.json": json_bytes(comparison.as_json()),
    }
    try:
        write_scanned(run.paths.run, documents, secrets)
    except KeyLeak as leak:
        checks.fail(c.REPORT_CLEAN, str(leak))
        raise
    for document, (name, data) in zip(c.REPORT_DOCUMENTS, documents.items(), strict=True):
        key = f"{run.report_prefix}{name}"
        services.store.put(key, data)
        same = services.store.get(key) == data
        checks.require(
            c.ROUND_TRIP(document=document, name=name),
            same,
            detail=f"s3://{services.bucket}/{key}, {len(data)} bytes"
            + ("" if same else ", differs from what was written"),
        )
