"""The offline model goes through the real Strands agent loop: tool call, then structured answer."""

from __future__ import annotations

from app.controller.agent_turn import OfflineModel, run_model_turn

EVIDENCE = {
    "case_id": "rfp-001",
    "title": "an office",
    "requirements": {"max_price_usd": 10, "max_delivery_days": 5, "min_warranty_months": 1},
    "suppliers": [
        {
            "id": sid,
            "name": sid.title(),
            "store_key": f"proposals/rfp-001/{sid}.json",
            "price_usd": 9,
            "delivery_days": 4,
            "warranty_months": 2,
            "eligible": sid == "b",
            "misses": [] if sid == "b" else ["price"],
        }
        for sid in ("a", "b")
    ],
    "comparison": {"winner": "b"},
}


def test_offline_turn_calls_the_evidence_tool_then_answers_from_it() -> None:
    answer, record = run_model_turn(OfflineModel(), EVIDENCE)
    assert record.tool_calls == ["get_case_evidence"]
    assert answer.recommended_supplier == "b"
    assert "`proposals/rfp-001/a.json`" in answer.analysis
    assert "`proposals/rfp-001/b.json`" in answer.analysis
