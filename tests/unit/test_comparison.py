"""The deterministic comparison: eligibility, the tie-break order, and no eligible supplier."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.controller.comparison import NoEligibleSupplier, compare
from app.core.case import Proposal, load_case_folder

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"


def _sample():
    folder = load_case_folder(SAMPLE)
    case, raw = folder.case, folder.proposal_bytes
    proposals = {sid: Proposal.model_validate_json(data) for sid, data in raw.items()}
    return case, proposals


def test_sample_winner_is_northstar_with_reasons_for_the_others() -> None:
    case, proposals = _sample()
    result = compare(case, proposals, {"northstar": True, "harbor": True, "cedar": True})
    assert result.winner == "northstar"
    misses = {v.id: v.misses for v in result.verdicts}
    assert misses == {"northstar": (), "harbor": ("delivery",), "cedar": ("price",)}


def test_unavailable_winner_means_no_eligible_supplier() -> None:
    case, proposals = _sample()
    with pytest.raises(NoEligibleSupplier, match="northstar: availability"):
        compare(case, proposals, {"northstar": False, "harbor": True, "cedar": True})


def test_ties_break_on_delivery_then_id() -> None:
    case, proposals = _sample()
    same = proposals["northstar"].model_dump()
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar", "delivery_days": 20})
    assert compare(case, proposals, dict.fromkeys(proposals, True)).winner == "cedar"
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar"})
    assert compare(case, proposals, dict.fromkeys(proposals, True)).winner == "cedar"


def _whys(result) -> dict[str, str]:
    return {v.id: v.why for v in result.verdicts}


def test_each_supplier_says_why_it_won_or_lost() -> None:
    case, proposals = _sample()
    result = compare(case, proposals, {"northstar": True, "harbor": True, "cedar": True})
    assert _whys(result) == {
        "northstar": "wins: the only supplier that meets every requirement",
        "harbor": "loses: its delivery in 45 days is later than the 30 allowed",
        "cedar": "loses: its price 130000 USD is over the 125000 allowed",
    }
    unavailable = compare(case, proposals, {"northstar": True, "harbor": True, "cedar": False})
    assert _whys(unavailable)["cedar"] == (
        "loses: its price 130000 USD is over the 125000 allowed; the supplier API reports it "
        "unavailable"
    )
    assert result.as_json()["suppliers"][1] == {
        "id": "harbor",
        "eligible": False,
        "misses": ["delivery"],
        "why": "loses: its delivery in 45 days is later than the 30 allowed",
    }
    assert result.facts_json()["suppliers"][1] == {
        "id": "harbor",
        "eligible": False,
        "misses": ["delivery"],
    }


def test_an_eligible_loser_is_told_the_first_rule_that_beat_it() -> None:
    case, proposals = _sample()
    same = proposals["northstar"].model_dump()
    proposals["harbor"] = Proposal(**{**same, "supplier_id": "harbor", "price_usd": 121000})
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar", "warranty_months": 12})
    whys = _whys(compare(case, proposals, dict.fromkeys(proposals, True)))
    assert whys["northstar"] == (
        "wins: the lowest price of the 2 suppliers that meet every requirement (120000 USD)"
    )
    assert whys["harbor"] == "loses: eligible, but northstar costs less (120000 against 121000 USD)"
    assert whys["cedar"] == "loses: its warranty of 12 months is shorter than the 24 required"
    proposals["harbor"] = Proposal(**{**same, "supplier_id": "harbor", "delivery_days": 29})
    whys = _whys(compare(case, proposals, dict.fromkeys(proposals, True)))
    assert whys["harbor"] == (
        "loses: eligible at the same price as northstar, which delivers sooner (28 against 29 days)"
    )
    assert whys["northstar"].endswith(", ahead of harbor at that price on delivery, then id")
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar"})
    whys = _whys(compare(case, proposals, dict.fromkeys(proposals, True)))
    assert whys["northstar"] == (
        "loses: eligible at the same price and delivery as cedar, whose id comes first"
    )
