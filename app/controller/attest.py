"""A run's signed statement: its files, checks, policies, code, guest and model, in an in-toto
Statement signed into attestation.intoto.jsonl, beside the signer's public key (attestation.pub),
both written to the run directory and stored with the report.

Made last, once every other file is final and every check made (the read-back scan too), so the
statement covers all of them; its own two files are scanned for the secrets before they are
written, as every document is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from app.controller.secret_scan import write_scanned
from app.controller.signing_key import kms_key, signer_for
from app.controller.store import CaseStore
from app.report.attestation import public_key_pem, signed_line
from app.report.statement import (
    ATTESTATION_NAME,
    PUBLIC_KEY_NAME,
    SUBJECT_NAMES,
    predicate,
    statement,
)

ATTESTATION_FILES: Final = (ATTESTATION_NAME, PUBLIC_KEY_NAME)


@dataclass(frozen=True)
class Attested:
    keyid: str
    public_key: bytes  # PEM
    made_key: Path | None  # the installation's key, when this run made it


def attest(
    run_dir: Path,
    facts: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    evidence: Mapping[str, Any] | None,
    secrets: Mapping[str, bytes],
    *,
    kms_client: Any | None = None,
    stopped_at: str | None = None,
    names: Sequence[str] = SUBJECT_NAMES,
) -> Attested:
    """Signs the run's files in ``run_dir`` (those of ``names`` it holds) and writes the two
    attestation files there."""
    signer, key_path, made = signer_for(kms_client, kms_key())
    files = {
        name: (run_dir / name).read_bytes() for name in SUBJECT_NAMES if (run_dir / name).is_file()
    }
    proofs = predicate(facts, records, evidence, stopped_at)
    line = signed_line(statement(files, proofs), signer)
    pem = public_key_pem(signer.public_key)
    write_scanned(run_dir, {ATTESTATION_NAME: line, PUBLIC_KEY_NAME: pem}, secrets)
    return Attested(signer.public_key.keyid, pem, key_path if made else None)


def store_attestation(run_dir: Path, store: CaseStore, prefix: str) -> None:
    for name in ATTESTATION_FILES:
        store.put(f"{prefix}{name}", (run_dir / name).read_bytes())


def kms_client_if_named(session: Any) -> Any | None:
    """A KMS client of the run's own session when the run signs with KMS."""
    return session.client("kms") if kms_key() else None
