"""The roles' real work: read the case, compare offline from staged facts, write the draft.

The evaluator's comparison is written here again, apart from the controller's, on purpose:
the controller checks that the confined process and its own code reach the same answer.
"""

from __future__ import annotations

import hashlib
import json
import os

from .protocol import Result, ok


def _read(path: str) -> bytes:
    with open(path, "rb") as source:
        return source.read()


def _write_output(path: str, data: bytes) -> str:
    """Writes one of the role's output files, which the controller created before it started:
    a role creates no file of its own."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return hashlib.sha256(data).hexdigest()


def read_case(args: list[str]) -> Result:
    """Reader: reads its assigned case document and reports what it holds."""
    (path,) = args
    data = _read(path)
    case = json.loads(data)
    return ok(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        case_id=case["case_id"],
        supplier_ids=[entry["id"] for entry in case["suppliers"]],
    )


def read_proposal(args: list[str]) -> Result:
    """Reader: reads one proposal it was given and reports its supplier id and digest."""
    (path,) = args
    data = _read(path)
    return ok(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        supplier_id=json.loads(data)["supplier_id"],
    )


def _misses(supplier: dict[str, int], req: dict[str, int], available: bool) -> list[str]:
    """The requirements a supplier misses (from its price, delivery and warranty, and the
    case's three limits); empty means eligible."""
    misses = []
    if supplier["price_usd"] > req["max_price_usd"]:
        misses.append("price")
    if supplier["delivery_days"] > req["max_delivery_days"]:
        misses.append("delivery")
    if supplier["warranty_months"] < req["min_warranty_months"]:
        misses.append("warranty")
    if not available:
        misses.append("availability")
    return misses


def evaluate(args: list[str]) -> Result:
    """Evaluator: the offline comparison, from the facts file alone, written to its output."""
    facts_path, out_path = args
    facts = json.loads(_read(facts_path))
    req = facts["requirements"]
    rows = []
    for supplier in facts["suppliers"]:
        misses = _misses(supplier, req, facts["availability"][supplier["id"]])
        rows.append({"id": supplier["id"], "eligible": not misses, "misses": misses})
    eligible = [s for s, row in zip(facts["suppliers"], rows, strict=True) if row["eligible"]]
    eligible.sort(key=lambda s: (s["price_usd"], s["delivery_days"], s["id"]))
    winner = eligible[0]["id"] if eligible else None
    comparison = {"case_id": facts["case_id"], "winner": winner, "suppliers": rows}
    data = (json.dumps(comparison, indent=2, sort_keys=True) + "\n").encode("utf-8")
    digest = _write_output(out_path, data)
    return ok(comparison=comparison, sha256=digest)


def write_draft(args: list[str]) -> Result:
    """Writer: saves the comparison and a draft recommendation in its own output directory."""
    in_dir, out_dir = args
    comparison_bytes = _read(os.path.join(in_dir, "comparison.json"))
    comparison = json.loads(comparison_bytes)
    private = json.loads(_read(os.path.join(in_dir, "private.json")))
    draft = (
        f"Draft recommendation {private['draft_reference']} for case {comparison['case_id']}: "
        f"award to {comparison['winner']}.\n"
    ).encode()
    return ok(
        comparison_sha256=_write_output(os.path.join(out_dir, "comparison.json"), comparison_bytes),
        draft_sha256=_write_output(os.path.join(out_dir, "draft.txt"), draft),
        winner=comparison["winner"],
    )


ACTIONS = {
    "read-case": read_case,
    "read-proposal": read_proposal,
    "evaluate": evaluate,
    "write-draft": write_draft,
}
