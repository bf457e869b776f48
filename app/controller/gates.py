"""The two gates a model answer must pass before it becomes a recommendation.

They are correctness checks for this task, not a defence against prompt injection: the
choice must equal a comparison computed without the model, and the analysis must cite the
store key of every proposal.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from app.controller.comparison import Comparison

# The model's answer is bounded like every other input: an id is at most 63 characters, and an
# analysis longer than this is not a report anyone reads (the sample's is about 700).
MAX_ANALYSIS_CHARS: Final = 20_000


class Recommendation(BaseModel):
    """The structured answer the model must give."""

    model_config = ConfigDict(extra="forbid")

    recommended_supplier: str | None = Field(
        max_length=63,
        description="The id of the recommended supplier, exactly as the evidence gives it.",
    )
    analysis: str = Field(
        max_length=MAX_ANALYSIS_CHARS,
        description="Markdown analysis that cites every proposal by its store key in backticks.",
    )


class GateRejected(ValueError):
    """The answer did not pass a gate; the message says which and why."""


def choice_gate(answer: Recommendation, comparison: Comparison) -> str:
    """Accepts the answer's explicit choice only when it is the comparison's winner."""
    choice = answer.recommended_supplier
    if not choice:
        # A supplier named only in the prose is not a choice: the headline is rendered from
        # this field, so an empty field is refused whatever the prose says.
        raise GateRejected("the answer names no supplier in recommended_supplier")
    if choice not in {v.id for v in comparison.verdicts}:
        raise GateRejected(
            f"the answer recommends {choice!r}, which is not a supplier of this case"
        )
    if choice != comparison.winner:
        raise GateRejected(
            f"the answer recommends {choice!r}, "
            f"but the comparison's winner is {comparison.winner!r}"
        )
    return choice


def citation_gate(answer: Recommendation, proposal_keys: list[str]) -> None:
    """Accepts the analysis only when it cites every proposal's store key."""
    missing = [key for key in proposal_keys if key not in answer.analysis]
    if missing:
        raise GateRejected(f"the analysis does not cite {', '.join(missing)}")
