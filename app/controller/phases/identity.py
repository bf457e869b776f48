"""Identity and storage: who the controller is, what the store holds, what IAM refuses."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from app.controller.environment import Services
from app.core.case import CaseFolder, Proposal, case_key, parse_case, parse_proposal
from app.core.ids import other_case_id
from app.core.run import Run
from app.core.secret_names import MODEL_KEY_VARIABLES
from app.tools.catalogue import controller as c


@dataclass(frozen=True)
class StoredCase:
    """The case as the store holds it, each proposal checked against the case's digest."""

    case_bytes: bytes
    proposals: dict[str, Proposal]
    proposal_bytes: dict[str, bytes]


def identity_and_storage(run: Run, services: Services, folder: CaseFolder) -> StoredCase:
    checks, case = run.checks, run.case
    checks.begin(c.IDENTITY)
    method = services.credential_method()
    identity = services.identity
    checks.require(
        c.CREDENTIAL_SOURCE(source=identity.credential_source),
        method == identity.credential_method,
        detail=f"credential method {method!r}"
        + (
            ""
            if method == identity.credential_method
            else f", expected {identity.credential_method!r}"
        ),
    )
    arn = services.store.caller_identity()["Arn"]
    checks.require(
        c.CALLER, identity.matches(arn), detail=f"{arn}, expected {identity.expected_caller}"
    )
    present = [name for name in MODEL_KEY_VARIABLES if os.environ.get(name)]
    checks.require(c.NO_MODEL_KEY, not present, detail=f"present: {present}")
    checks.begin(c.STORAGE, suppliers=[entry.id for entry in case.suppliers])
    case_bytes = services.store.get(case.case_key())
    stored_case = parse_case(case_bytes, f"s3://{services.bucket}/{case.case_key()}")
    proposals: dict[str, Proposal] = {}
    proposal_bytes: dict[str, bytes] = {}
    for entry in stored_case.suppliers:
        key = stored_case.proposal_key(entry.id)
        data = services.store.get(key)
        digest = hashlib.sha256(data).hexdigest()
        checks.require(
            c.STORED_PROPOSAL(supplier=entry.id),
            digest == entry.sha256,
            detail=f"{key}: sha256 {digest[:16]}…"
            if digest == entry.sha256
            else f"{key}: sha256 {digest}, case entry {entry.sha256}",
        )
        proposals[entry.id] = parse_proposal(data, entry, key)
        proposal_bytes[entry.id] = data
    stored = {"case.json": case_bytes} | {
        f"proposals/{sid}.json": data for sid, data in proposal_bytes.items()
    }
    same = stored == folder.shipped() and stored_case == case
    checks.require(
        c.CASE_FOLDER,
        same,
        detail=f"{len(stored)} objects"
        + ("" if same else "; the case folder and the store differ"),
    )
    proposal_key = case.proposal_key(case.suppliers[0].id)
    # The control's case is never the run's own, whatever the run's case id is.
    other_key = case_key(other_case_id(case.case_id))
    overwrite, delete, other = c.IAM_OPERATIONS
    for operation, what, outcome in (
        (overwrite, "overwriting a source proposal", services.store.try_put(proposal_key, b"{}")),
        (delete, "deleting a source proposal", services.store.try_delete(proposal_key)),
        (other, "reading another case's object", services.store.try_get(other_key)),
    ):
        checks.require(
            c.IAM_REFUSES(operation=operation, what=what),
            outcome == "AccessDenied",
            detail=f"the store answered {outcome}",
        )
    return StoredCase(case_bytes, proposals, proposal_bytes)
