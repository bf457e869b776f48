"""The supplier and the business work: availability, the two comparisons, the writer's draft."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.controller.comparison import Comparison, compare
from app.controller.phases.state import RunState, json_bytes, write_input
from app.controller.supplier_client import SupplierReplyError


def supplier(run: RunState) -> dict[str, bool]:
    checks, client, case = run.checks, run.ctx.supplier_client, run.case
    checks.begin("supplier")
    ids = [s.id for s in case.suppliers]
    availability = checks.holds(
        "the supplier API answers the controller's authenticated read with 200, and the "
        "reply holds one true/false per supplier of the case",
        lambda: client.availability(case.case_id, ids),
        refusals=(SupplierReplyError,),
    )
    wrong = client.request("GET", f"/cases/{case.case_id}/suppliers", key=b"not-the-supplier-key")
    checks.expect_equal(wrong.status, 401, "the supplier API refuses an invalid key with 401")
    facts = _facts(run, availability)
    staged = run.ctx.paths.workspace("evaluator").input / "facts.json"
    write_input(staged, json_bytes(facts), run.ctx.tool, tool_owned=False)
    reread = json.loads(staged.read_bytes())["availability"]
    checks.require(
        sorted(reread) == sorted(ids) and all(type(v) is bool for v in reread.values()),
        "the availability staged for the evaluator holds the case's own supplier ids and one "
        f"boolean each, nothing else the supplier sent: {sorted(reread)}",
        detail=f"staged {reread!r}",
    )
    return availability


def _facts(run: RunState, availability: dict[str, bool]) -> dict[str, Any]:
    case = run.case
    return {
        "case_id": case.case_id,
        "requirements": case.requirements.model_dump(),
        "suppliers": [
            {
                "id": p.supplier_id,
                "price_usd": p.price_usd,
                "delivery_days": p.delivery_days,
                "warranty_months": p.warranty_months,
            }
            for p in (run.proposals[s.id] for s in case.suppliers)
        ],
        "availability": availability,
    }


# business -------------------------------------------------------------------------------
def business(
    run: RunState, availability: dict[str, bool], suite_submit: Callable[[Path], None]
) -> Comparison:
    checks, ctx = run.checks, run.ctx
    checks.begin("business")
    # The controller's own comparison first: with no eligible supplier the run stops here,
    # before anything is drafted.
    mine = compare(run.case, run.proposals, availability)
    outcome = ctx.layer.run(
        "evaluator",
        "evaluate",
        [run.role_in("evaluator", "facts.json"), run.role_out("evaluator", "comparison.json")],
    ).result
    theirs = outcome["comparison"]
    checks.require(
        theirs["winner"] == mine.winner and len(mine.eligible_ids()) >= 1,
        f"the evaluator's offline comparison names {theirs['winner']}, {_eligibility_phrase(mine)}",
        detail=f"evaluator chose {theirs['winner']!r}",
    )
    checks.require(
        theirs == mine.as_json(),
        "the controller's own comparison agrees with the evaluator's, supplier by supplier",
        detail=f"controller {mine.as_json()}, evaluator {theirs}",
    )
    staged = ctx.paths.workspace("writer").input / "comparison.json"
    write_input(staged, json_bytes(mine.as_json()), ctx.tool, tool_owned=False)
    ctx.layer.run("writer", "write-draft", [run.role_in("writer", ""), run.role_out("writer", "")])
    saved = ctx.paths.workspace("writer").output / "comparison.json"
    checks.require(
        saved.read_bytes() == staged.read_bytes(),
        "the writer saves the comparison in its own output directory",
        detail="writer/out/comparison.json differs from what was staged",
    )
    suite_submit(ctx.paths.workspace("writer").output / "draft.txt")
    return mine


def _eligibility_phrase(comparison: Comparison) -> str:
    count = len(comparison.eligible_ids())
    if count == 1:
        return "the one supplier that meets every requirement"
    return f"the lowest-priced of the {count} suppliers that meet every requirement"
