"""The choice and citation gates accept the right answer and refuse each wrong one."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from app.controller.comparison import Comparison, SupplierVerdict
from app.controller.gates import GateRejected, Recommendation, choice_gate, citation_gate
from app.controller.phases.model import _gate_controls, absent_id
from app.core.catalogue import Section, each
from app.core.checklog import CheckLog
from app.core.ids import is_valid_id, other_case_id
from app.tools.catalogue import controller as c

COMPARISON = Comparison(
    "rfp-001",
    "northstar",
    (
        SupplierVerdict("northstar", True, (), "wins"),
        SupplierVerdict("harbor", False, ("delivery",), "loses"),
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


@pytest.mark.parametrize(
    "ids",
    [
        {"not-a-supplier"},
        {"not-a-supplier", "not-a-supplier-2", "not-a-supplier-3"},
        {"northstar"},
        set(),
    ],
)
def test_the_absent_id_is_never_one_of_the_case(ids: set[str]) -> None:
    assert absent_id(ids) not in ids
    assert is_valid_id(absent_id(ids))


def test_the_choice_control_holds_when_the_only_supplier_is_called_not_a_supplier() -> None:
    """The control once named the winner itself, so the gate accepted it and the run failed."""
    only = Comparison(
        "rfp-x", "not-a-supplier", (SupplierVerdict("not-a-supplier", True, (), "wins"),)
    )
    answer = Recommendation(
        recommended_supplier="not-a-supplier", analysis="`proposals/rfp-x/not-a-supplier.json`"
    )
    stream = io.StringIO()
    run = SimpleNamespace(checks=CheckLog(stream=stream))
    # The last checks of the model section: the gates' controls.
    run.checks.begin(Section("model", each("control", c.GATE_CONTROLS, c.GATE_CONTROL)))
    _gate_controls(run, only, answer, ["proposals/rfp-x/not-a-supplier.json"])  # type: ignore[arg-type]
    header, *lines = stream.getvalue().splitlines()
    assert header == "== model (3 checks)"
    assert len(lines) == 3 and all(line.startswith("PASS control: ") for line in lines)
    assert "an id that is no supplier of the case, not-a-supplier-2" in lines[0]


@pytest.mark.parametrize("case_id", ["rfp-001", "rfp-other", "rfp-other-2", "x"])
def test_the_access_denied_control_case_is_never_the_runs_own(case_id: str) -> None:
    assert other_case_id(case_id) != case_id
    assert is_valid_id(other_case_id(case_id))
