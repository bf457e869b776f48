"""The in-toto Statement (v1) of one run: its files by sha256 as the subjects, and as the
predicate every check's id, outcome and claim, the policy digests in force against the committed
ones, the code revision (commit or image), the guest readings and the model.

Built from the run's own documents alone, so the statement a run signs and the one `verify`
expects of a stored run are made by the same code. The predicate's shape is this project's own
type, versioned in its URI and described by the committed JSON Schema in app/report/schemas/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
PREDICATE_TYPE: Final = "https://procurement-analyst.invalid/attestation/run-proofs/v1"
PREDICATE_SCHEMA: Final = Path(__file__).parent / "schemas" / "run-proofs-v1.schema.json"
ATTESTATION_NAME: Final = "attestation.intoto.jsonl"
PUBLIC_KEY_NAME: Final = "attestation.pub"
# The run's files a statement may name, in this order; a stopped run has only some of them.
SUBJECT_NAMES: Final = (
    "report.html",
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
)
RUN_FACTS: Final = ("run_id", "layer", "case_id", "report_prefix", "in_cluster", "rehearsal")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def subjects(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """Each of the run's files present in ``files`` (name to content), by its sha256."""
    return [
        {"name": name, "digest": {"sha256": sha256(files[name])}}
        for name in SUBJECT_NAMES
        if name in files
    ]


def check_entries(records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {"id": str(r["id"]), "outcome": str(r["outcome"]), "claim": str(r["claim"])}
        for r in records
    ]


def predicate(
    facts: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    evidence: Mapping[str, Any] | None,
    stopped_at: str | None = None,
) -> dict[str, Any]:
    """``facts``: the run's names (evidence.json's or checks.json's opening fields); ``records``:
    every check as made; ``evidence``: evidence.json, None for a run that stopped before it was
    written; ``stopped_at``: the id of the check that stopped the run."""
    checks = check_entries(records)
    counts = {status: sum(1 for c in checks if c["outcome"] == status) for status in _STATUSES}
    provenance = (evidence or {}).get("provenance", {})
    return {
        "run": {name: facts.get(name) for name in RUN_FACTS},
        "outcome": "FAIL" if counts["FAIL"] or stopped_at else "PASS",
        "stopped_at": stopped_at,
        "counts": counts,
        "checks": checks,
        "policy_digests": provenance.get("policy_digests"),
        "code_revision": provenance.get("code_revision"),
        "versions": provenance.get("versions"),
        "guest": (evidence or {}).get("guest"),
        "model": provenance.get("model"),
    }


_STATUSES: Final = ("PASS", "SKIP", "FAIL")


def statement(files: Mapping[str, bytes], proofs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects(files),
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(proofs),
    }
