"""The deterministic comparison the model's answer is checked against.

A supplier is eligible when it is within budget, delivers in time, meets the warranty and
the supplier API reports it available. The lowest price wins, then the shortest delivery,
then the smallest id. Each supplier's verdict says, in words, why it won or lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.case import Case, Proposal
from app.core.errors import RunStopped

RULE = (
    "eligible: price at most max_price_usd, delivery at most max_delivery_days, warranty at "
    "least min_warranty_months, and available; among the eligible, the lowest price wins, then "
    "the shortest delivery, then the smallest id"
)


class NoEligibleSupplier(RunStopped):
    """No supplier meets every requirement: the run stops and writes no recommendation."""


@dataclass(frozen=True)
class SupplierVerdict:
    id: str
    eligible: bool
    misses: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Comparison:
    case_id: str
    winner: str
    verdicts: tuple[SupplierVerdict, ...]

    def eligible_ids(self) -> set[str]:
        return {v.id for v in self.verdicts if v.eligible}

    def facts_json(self) -> dict[str, object]:
        """The outcome alone, as the evaluator computes it offline: who won, and per supplier
        whether it is eligible and what it misses."""
        return {
            "case_id": self.case_id,
            "winner": self.winner,
            "suppliers": [
                {"id": v.id, "eligible": v.eligible, "misses": list(v.misses)}
                for v in self.verdicts
            ],
        }

    def as_json(self) -> dict[str, object]:
        """comparison.json: the outcome, the rule, and why each supplier won or lost."""
        return {
            "case_id": self.case_id,
            "winner": self.winner,
            "rule": RULE,
            "suppliers": [
                {"id": v.id, "eligible": v.eligible, "misses": list(v.misses), "why": v.why}
                for v in self.verdicts
            ],
        }


def _misses(proposal: Proposal, case: Case, available: bool) -> tuple[str, ...]:
    req = case.requirements
    misses = []
    if proposal.price_usd > req.max_price_usd:
        misses.append("price")
    if proposal.delivery_days > req.max_delivery_days:
        misses.append("delivery")
    if proposal.warranty_months < req.min_warranty_months:
        misses.append("warranty")
    if not available:
        misses.append("availability")
    return tuple(misses)


def _missed(miss: str, proposal: Proposal, case: Case) -> str:
    req = case.requirements
    match miss:
        case "price":
            return f"its price {proposal.price_usd} USD is over the {req.max_price_usd} allowed"
        case "delivery":
            return (
                f"its delivery in {proposal.delivery_days} days is later than the "
                f"{req.max_delivery_days} allowed"
            )
        case "warranty":
            return (
                f"its warranty of {proposal.warranty_months} months is shorter than the "
                f"{req.min_warranty_months} required"
            )
        case _:
            return "the supplier API reports it unavailable"


def _beaten(loser: Proposal, best: Proposal) -> str:
    """Why an eligible supplier loses to the winner, by the first rule that tells them apart."""
    if loser.price_usd != best.price_usd:
        return (
            f"loses: eligible, but {best.supplier_id} costs less "
            f"({best.price_usd} against {loser.price_usd} USD)"
        )
    if loser.delivery_days != best.delivery_days:
        return (
            f"loses: eligible at the same price as {best.supplier_id}, which delivers sooner "
            f"({best.delivery_days} against {loser.delivery_days} days)"
        )
    return (
        f"loses: eligible at the same price and delivery as {best.supplier_id}, whose id comes "
        "first"
    )


def _won(best: Proposal, eligible: list[Proposal]) -> str:
    if len(eligible) == 1:
        return "wins: the only supplier that meets every requirement"
    why = (
        f"wins: the lowest price of the {len(eligible)} suppliers that meet every requirement "
        f"({best.price_usd} USD)"
    )
    tied = [p.supplier_id for p in eligible if p is not best and p.price_usd == best.price_usd]
    if tied:
        why += f", ahead of {', '.join(tied)} at that price on delivery, then id"
    return why


def compare(
    case: Case, proposals: dict[str, Proposal], availability: dict[str, bool]
) -> Comparison:
    """Ranks the case's suppliers; raises NoEligibleSupplier when none qualifies."""
    misses = {
        entry.id: _misses(proposals[entry.id], case, availability[entry.id])
        for entry in case.suppliers
    }
    eligible = [proposals[entry.id] for entry in case.suppliers if not misses[entry.id]]
    if not eligible:
        reasons = "; ".join(f"{sid}: {', '.join(missed)}" for sid, missed in misses.items())
        raise NoEligibleSupplier(
            f"case {case.case_id}: no supplier meets every requirement ({reasons})"
        )
    best = min(eligible, key=lambda p: (p.price_usd, p.delivery_days, p.supplier_id))
    verdicts = []
    for entry in case.suppliers:
        proposal, missed = proposals[entry.id], misses[entry.id]
        if missed:
            why = "loses: " + "; ".join(_missed(miss, proposal, case) for miss in missed)
        elif proposal is best:
            why = _won(best, eligible)
        else:
            why = _beaten(proposal, best)
        verdicts.append(SupplierVerdict(entry.id, not missed, missed, why))
    return Comparison(case.case_id, best.supplier_id, tuple(verdicts))
