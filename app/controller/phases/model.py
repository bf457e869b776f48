"""One model turn with the evidence tool, its answer through both gates, and each gate's control."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.controller.comparison import Comparison
from app.controller.environment import ModelChoice
from app.controller.gates import GateRejected, Recommendation, choice_gate, citation_gate
from app.controller.phases.identity import StoredCase
from app.core.run import Run
from app.tools.catalogue import controller as c


@dataclass(frozen=True)
class CheckedAnswer:
    """The model's answer once both gates accepted it, with the turn's usage for the evidence."""

    supplier_id: str
    answer: Recommendation
    usage: dict[str, Any]


def evidence_for_model(run: Run, stored: StoredCase, comparison: Comparison) -> dict[str, Any]:
    case = run.case
    verdicts = {v.id: v for v in comparison.verdicts}
    return {
        "case_id": case.case_id,
        "title": case.title,
        "requirements": case.requirements.model_dump(),
        "suppliers": [
            {
                "id": s.id,
                "name": s.name,
                "store_key": case.proposal_key(s.id),
                "price_usd": stored.proposals[s.id].price_usd,
                "delivery_days": stored.proposals[s.id].delivery_days,
                "warranty_months": stored.proposals[s.id].warranty_months,
                "summary": stored.proposals[s.id].summary,
                "eligible": verdicts[s.id].eligible,
                "misses": list(verdicts[s.id].misses),
            }
            for s in case.suppliers
        ],
        "comparison": comparison.as_json(),
    }


def model_turn(
    run: Run, model: ModelChoice, stored: StoredCase, comparison: Comparison
) -> CheckedAnswer:
    checks, case = run.checks, run.case
    checks.begin(c.MODEL)
    # Imported here, not with this module: see environment.MODEL_MODULE.
    from app.controller.agent_turn import run_model_turn

    answer, record = run_model_turn(model.make(), evidence_for_model(run, stored, comparison))
    checks.require(
        c.EVIDENCE_TOOL(model=model.description),
        record.tool_calls == ["get_case_evidence"],
        detail=f"tool calls {record.tool_calls}",
    )
    if model.bedrock:
        checks.require(
            c.BEDROCK_USAGE,
            record.input_tokens > 0 and record.output_tokens > 0,
            detail=f"{record.model_name}: {record.input_tokens} input, "
            f"{record.output_tokens} output tokens",
        )
    else:
        checks.skip(c.BEDROCK_USAGE, model.no_bedrock_reason)
    keys = [case.proposal_key(s.id) for s in case.suppliers]
    chosen = checks.holds(
        c.CHOICE(supplier=answer.recommended_supplier),
        lambda: choice_gate(answer, comparison),
        refusals=(GateRejected,),
        detail=lambda winner: f"the comparison's winner is {winner!r}",
    )
    checks.holds(
        c.CITATIONS(count=len(keys)),
        lambda: citation_gate(answer, keys),
        refusals=(GateRejected,),
        detail=lambda _: ", ".join(keys),
    )
    _gate_controls(run, comparison, answer, keys)
    usage = {
        "model": record.model_name,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
    }
    return CheckedAnswer(chosen, answer, usage)


def _gate_controls(
    run: Run, comparison: Comparison, answer: Recommendation, keys: list[str]
) -> None:
    """Each gate refuses a deliberately wrong copy of the accepted answer."""
    ineligible = [v.id for v in comparison.verdicts if not v.eligible]
    losers = [v.id for v in comparison.verdicts if v.id != comparison.winner]
    # Prefer an ineligible supplier; a case where every supplier qualifies offers a loser,
    # and a one-supplier case an id that is not in the case at all.
    wrong = (ineligible or losers or [absent_id({v.id for v in comparison.verdicts})])[0]
    wrong_label = (
        "an ineligible supplier"
        if ineligible
        else "a supplier it did not choose"
        if losers
        else "an id that is no supplier of the case"
    )

    def choose(candidate: Recommendation) -> object:
        return choice_gate(candidate, comparison)

    def cite(candidate: Recommendation) -> object:
        citation_gate(candidate, keys)
        return None

    wrong_supplier, prose_only, missing_key = c.GATE_CONTROLS
    controls: tuple[
        tuple[str, str, str, Recommendation, Callable[[Recommendation], object]], ...
    ] = (
        (
            wrong_supplier,
            "choice",
            f"an answer naming {wrong_label}, {wrong}",
            answer.model_copy(update={"recommended_supplier": wrong}),
            choose,
        ),
        (
            prose_only,
            "choice",
            "an answer that names the supplier only in its prose",
            answer.model_copy(update={"recommended_supplier": None}),
            choose,
        ),
        (
            missing_key,
            "citation",
            f"an answer missing the source key {keys[-1]}",
            answer.model_copy(update={"analysis": answer.analysis.replace(keys[-1], "")}),
            cite,
        ),
    )
    for control, gate, label, bad, check in controls:
        claim = c.GATE_CONTROL(control=control, gate=gate, label=label)
        try:
            check(bad)
        except GateRejected as rejected:
            run.checks.require(claim, True, detail=str(rejected))
        else:
            run.checks.fail(claim, "it was accepted")


def absent_id(ids: set[str]) -> str:
    """A valid supplier id that is not in ``ids``, whatever ``ids`` holds."""
    candidates = ("not-a-supplier", *(f"not-a-supplier-{n}" for n in range(2, len(ids) + 3)))
    return next(candidate for candidate in candidates if candidate not in ids)
