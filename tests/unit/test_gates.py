"""The choice and citation gates accept the right answer and refuse each wrong one."""

from __future__ import annotations

import pytest

from app.controller.comparison import Comparison, SupplierVerdict
from app.controller.gates import GateRejected, Recommendation, choice_gate, citation_gate

COMPARISON = Comparison(
    "rfp-001",
    "northstar",
    (
        SupplierVerdict("northstar", True, ()),
        SupplierVerdict("harbor", False, ("delivery",)),
    ),
)
KEYS = ["proposals/rfp-001/northstar.json", "proposals/rfp-001/harbor.json"]
GOOD = Recommendation(
    recommended_supplier="northstar",
    analysis="`proposals/rfp-001/northstar.json` and `proposals/rfp-001/harbor.json`",
)


def test_the_right_answer_passes_both_gates() -> None:
    assert choice_gate(GOOD, COMPARISON) == "northstar"
    citation_gate(GOOD, KEYS)


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("harbor", "comparison's winner is 'northstar'"),
        ("acme", "not a supplier of this case"),
        (None, "names no supplier"),
        ("", "names no supplier"),
    ],
)
def test_choice_gate_refuses(choice: str | None, message: str) -> None:
    answer = GOOD.model_copy(
        update={"recommended_supplier": choice, "analysis": "We pick northstar."}
    )
    with pytest.raises(GateRejected, match=message):
        choice_gate(answer, COMPARISON)


def test_citation_gate_names_the_missing_key() -> None:
    answer = GOOD.model_copy(update={"analysis": "`proposals/rfp-001/northstar.json` only"})
    with pytest.raises(GateRejected, match=r"does not cite proposals/rfp-001/harbor\.json"):
        citation_gate(answer, KEYS)
