"""Identity and storage: who the controller is, what the store holds, what IAM refuses."""

from __future__ import annotations

import hashlib
import os

from app.controller.context import MODEL_KEY_VARIABLES
from app.controller.phases.state import RunState, json_bytes, write_input
from app.core.case import parse_case, parse_proposal


def identity_and_storage(run: RunState) -> bytes:
    checks, env, case = run.checks, run.env, run.case
    checks.begin("identity")
    method = env.credential_method()
    checks.require(
        method == env.expected_credential_method,
        f"the AWS SDK takes the controller's credentials from {env.credential_source}",
        detail=f"credential method {method!r}, expected {env.expected_credential_method!r}",
    )
    arn = env.store.caller_identity()["Arn"]
    checks.require(
        env.caller_matches(arn),
        f"the caller is the analyst's role: {arn}",
        detail=f"expected {env.expected_caller}",
    )
    present = [name for name in MODEL_KEY_VARIABLES if os.environ.get(name)]
    checks.require(
        not present,
        "no model API key is in the controller's environment: "
        f"{', '.join(MODEL_KEY_VARIABLES)} are all absent",
        detail=f"present: {present}",
    )
    case_bytes = env.store.get(case.case_key())
    stored_case = parse_case(case_bytes, f"s3://{env.bucket}/{case.case_key()}")
    for entry in stored_case.suppliers:
        key = stored_case.proposal_key(entry.id)
        data = env.store.get(key)
        digest = hashlib.sha256(data).hexdigest()
        checks.require(
            digest == entry.sha256,
            f"the stored proposal {key} matches the case entry for {entry.id} "
            f"(sha256 {digest[:12]}…)",
            detail=f"sha256 {digest}, case entry {entry.sha256}",
        )
        run.proposals[entry.id] = parse_proposal(data, entry, key)
        run.proposal_bytes[entry.id] = data
    stored = {"case.json": case_bytes} | {
        f"proposals/{sid}.json": env.store.get(stored_case.proposal_key(sid))
        for sid in run.proposals
    }
    checks.require(
        stored == run.shipped and stored_case == case,
        f"the shipped case folder matches the store, byte for byte ({len(stored)} objects)",
        detail="the case folder and the store differ",
    )
    first = case.suppliers[0].id
    proposal_key = case.proposal_key(first)
    other_key = f"cases/{run.ctx.other_case_id}/case.json"
    for claim, outcome in (
        ("overwriting a source proposal", env.store.try_put(proposal_key, b"{}")),
        ("deleting a source proposal", env.store.try_delete(proposal_key)),
        ("reading another case's object", env.store.try_get(other_key)),
    ):
        checks.require(
            outcome == "AccessDenied",
            f"IAM returns AccessDenied for {claim}",
            detail=f"the store answered {outcome}",
        )
    return case_bytes


def stage_inputs(run: RunState, case_bytes: bytes) -> None:
    paths, tool = run.ctx.paths, run.ctx.tool
    reader_in = paths.workspace("reader").input
    write_input(reader_in / "case.json", case_bytes, tool, tool_owned=True)
    # The reader's documents: the case and, as stored, each proposal it names.
    (reader_in / "proposals").mkdir(mode=0o755)
    for supplier_id, data in run.proposal_bytes.items():
        write_input(reader_in / "proposals" / f"{supplier_id}.json", data, tool, tool_owned=False)
    private = {"draft_reference": f"DR-{run.ctx.run_id[:8]}", "note": "writer's private notes"}
    write_input(
        paths.workspace("writer").input / "private.json",
        json_bytes(private),
        tool,
        tool_owned=False,
    )
