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


@dataclass(frozen=True)
class StoredCase:
    """The case as the store holds it, each proposal checked against the case's digest."""

    case_bytes: bytes
    proposals: dict[str, Proposal]
    proposal_bytes: dict[str, bytes]


def identity_and_storage(run: Run, services: Services, folder: CaseFolder) -> StoredCase:
    checks, case = run.checks, run.case
    checks.begin("identity")
    method = services.credential_method()
    identity = services.identity
    checks.require(
        method == identity.credential_method,
        f"the AWS SDK takes the controller's credentials from {identity.credential_source}",
        detail=f"credential method {method!r}, expected {identity.credential_method!r}",
    )
    arn = services.store.caller_identity()["Arn"]
    checks.require(
        identity.matches(arn),
        f"the caller is the analyst's role: {arn}",
        detail=f"expected {identity.expected_caller}",
    )
    present = [name for name in MODEL_KEY_VARIABLES if os.environ.get(name)]
    checks.require(
        not present,
        "no model API key is in the controller's environment: "
        f"{', '.join(MODEL_KEY_VARIABLES)} are all absent",
        detail=f"present: {present}",
    )
    checks.begin("storage")
    case_bytes = services.store.get(case.case_key())
    stored_case = parse_case(case_bytes, f"s3://{services.bucket}/{case.case_key()}")
    proposals: dict[str, Proposal] = {}
    proposal_bytes: dict[str, bytes] = {}
    for entry in stored_case.suppliers:
        key = stored_case.proposal_key(entry.id)
        data = services.store.get(key)
        digest = hashlib.sha256(data).hexdigest()
        checks.require(
            digest == entry.sha256,
            f"the stored proposal {key} matches the case entry for {entry.id} "
            f"(sha256 {digest[:12]}…)",
            detail=f"sha256 {digest}, case entry {entry.sha256}",
        )
        proposals[entry.id] = parse_proposal(data, entry, key)
        proposal_bytes[entry.id] = data
    stored = {"case.json": case_bytes} | {
        f"proposals/{sid}.json": data for sid, data in proposal_bytes.items()
    }
    checks.require(
        stored == folder.shipped() and stored_case == case,
        f"the shipped case folder matches the store, byte for byte ({len(stored)} objects)",
        detail="the case folder and the store differ",
    )
    proposal_key = case.proposal_key(case.suppliers[0].id)
    # The control's case is never the run's own, whatever the run's case id is.
    other_key = case_key(other_case_id(case.case_id))
    for claim, outcome in (
        ("overwriting a source proposal", services.store.try_put(proposal_key, b"{}")),
        ("deleting a source proposal", services.store.try_delete(proposal_key)),
        ("reading another case's object", services.store.try_get(other_key)),
    ):
        checks.require(
            outcome == "AccessDenied",
            f"IAM returns AccessDenied for {claim}",
            detail=f"the store answered {outcome}",
        )
    return StoredCase(case_bytes, proposals, proposal_bytes)
