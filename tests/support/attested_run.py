"""A run's files made without running it, signed as a run signs them: for the tests of
`verify`, which must fail on any byte of any subject, another key or another policy."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from securesystemslib.signer import CryptoSigner

from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES
from app.report.attestation import signed_line
from app.report.statement import ATTESTATION_NAME, SUBJECT_NAMES, predicate, statement

RUN_ID = "0123456789abcdef0123456789abcdef"
LAYER = "nono"
FACTS: dict[str, Any] = {
    "run_id": RUN_ID,
    "layer": LAYER,
    "case_id": "rfp-001",
    "report_prefix": f"s3://analyst-local/reports/rfp-001/{RUN_ID}/",
    "in_cluster": False,
    "rehearsal": False,
}
CHECKS: list[dict[str, str]] = [
    {
        "id": "files.reader.no-new-file",
        "outcome": "PASS",
        "claim": "no new file",
        "section": "files",
        "detail": "EACCES",
    },
    {
        "id": "model.bedrock-usage",
        "outcome": "SKIP",
        "claim": "Bedrock",
        "section": "model",
        "detail": "offline model",
    },
    {
        "id": "evidence.scanned-before",
        "outcome": "PASS",
        "claim": "scanned",
        "section": "evidence",
        "detail": "",
    },
]


def policy_digests(folder: Path = POLICIES_DIR / LAYER) -> dict[str, Any]:
    files = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }
    same = {"committed": "a" * 64, "in_force": "a" * 64, "same": True}
    return {
        "folder": f"policies/{LAYER}",
        "committed_files": files,
        "roles": dict.fromkeys(ROLES, same),
    }


def evidence() -> dict[str, Any]:
    return {
        **FACTS,
        "provenance": {
            "code_revision": {"source": "git", "value": "f" * 40, "note": "the checkout's commit"},
            "versions": {"python": "3.11", "bubblewrap": None, "nono_py": "0.16.0", "kernel": "6"},
            "policy_digests": policy_digests(),
            "model": {"description": "the offline model", "id": "offline"},
        },
        "guest": {"kernel": "6", "product_name": None},
    }


@dataclass
class AttestedRun:
    files: dict[str, bytes]
    signer: CryptoSigner

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in self.files.items():
            (folder / name).write_bytes(data)
        return folder


def attested_run(
    checks: list[dict[str, str]] | None = None,
    proofs_evidence: dict[str, Any] | None = None,
    stopped_at: str | None = None,
    signer: CryptoSigner | None = None,
) -> AttestedRun:
    signer = signer or CryptoSigner.generate_ed25519()
    records = CHECKS if checks is None else checks
    made = proofs_evidence if proofs_evidence is not None else evidence()
    files = {name: f"<{name} of run {RUN_ID}>".encode() * 3 for name in SUBJECT_NAMES}
    files["evidence.json"] = json.dumps(made).encode()
    files["checks.json"] = json.dumps({**FACTS, "checks": records}).encode()
    proofs = predicate(FACTS, records, made, stopped_at)
    files[ATTESTATION_NAME] = signed_line(statement(files, proofs), signer)
    return AttestedRun(files, signer)


def assert_failure_kept(out: Path, check_id: str) -> None:
    """A run stopped at ``check_id`` kept exactly its check list, a page leading with that
    check and its signed statement, which `verify` refuses, naming the check."""
    from app.controller.verify_command import folder_files
    from app.report.attestation import key_from_pem
    from app.report.verification import verify_run

    assert sorted(p.name for p in out.iterdir()) == [
        "attestation.intoto.jsonl",
        "attestation.pub",
        "checks.json",
        "report.html",
    ]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f'<code id="failed-check">{check_id}</code>' in page
    key = key_from_pem((out / "attestation.pub").read_bytes())
    problems = verify_run(folder_files(out), [key], POLICIES_DIR).problems
    assert any(p.startswith(f"check {check_id} FAILED: ") for p in problems), problems
    assert f"the run did not complete: it stopped at {check_id}" in problems
