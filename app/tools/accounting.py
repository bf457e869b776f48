"""How each element of a committed policy is accounted for: the check that fails without it,
or the reason it is redundant.

Each layer keeps a table of these beside its policy generator and commits it with the policy
(``elements.json``). Two tests hold the table to the truth: the removal test leaves each
watched element out in turn and requires a real run to FAIL on the named check; the
redundancy test requires a tool's observed state to be the same with a redundant element and
without it. A unit test requires every element of every committed policy to be in the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Watched:
    """A check fails without the element."""

    # The id of the check (app/core/catalogue.py), which a run without the element fails.
    check: str
    # What the run sees without it, in a few words.
    because: str

    def as_json(self) -> dict[str, Any]:
        return {"fails_without_it": self.check, "because": self.because}


@dataclass(frozen=True)
class Redundant:
    """The tool's observed state is the same without the element; kept for the reason given."""

    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"redundant": self.reason}


Proof = Watched | Redundant
