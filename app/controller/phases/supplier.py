"""The supplier: the controller's authenticated read, a wrong key refused, and the availability
staged for the evaluator rebuilt from the case's own ids."""

from __future__ import annotations

import json
from typing import Any

from app.controller.phases.identity import StoredCase
from app.controller.supplier_client import SupplierClient
from app.core.calls import SupplierReplyError
from app.core.files import json_bytes
from app.core.run import Run
from app.core.run_tree import stage_file
from app.tools.catalogue import controller as c


def supplier(run: Run, client: SupplierClient, stored: StoredCase) -> dict[str, bool]:
    checks, case = run.checks, run.case
    checks.begin(c.SUPPLIER)
    ids = [s.id for s in case.suppliers]
    availability: dict[str, bool] = checks.holds(
        c.AVAILABILITY,
        lambda: client.availability(case.case_id, ids),
        refusals=(SupplierReplyError,),
        detail=lambda answer: f"availability {answer}",
    )
    wrong = client.request("GET", f"/cases/{case.case_id}/suppliers", key=b"not-the-supplier-key")
    checks.expect_equal(c.WRONG_KEY, wrong.status, 401)
    staged = run.paths.workspace("evaluator").input / "facts.json"
    stage_file(staged, json_bytes(_facts(run, stored, availability)), run.tool, tool_owned=False)
    reread = json.loads(staged.read_bytes())["availability"]
    checks.require(
        c.STAGED_AVAILABILITY,
        sorted(reread) == sorted(ids) and all(type(v) is bool for v in reread.values()),
        detail=f"staged {reread!r}",
    )
    return availability


def _facts(run: Run, stored: StoredCase, availability: dict[str, bool]) -> dict[str, Any]:
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
            for p in (stored.proposals[s.id] for s in case.suppliers)
        ],
        "availability": availability,
    }
