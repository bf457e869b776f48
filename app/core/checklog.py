"""The check log: one PASS, FAIL or SKIP line per claim, printed as it is reached.

A FAIL stops the run (CheckFailed), so a run can never print a FAIL line and still exit 0.
A SKIP names why it cannot run here and is never counted as passed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal, TextIO, TypeVar

from app.core.errors import RunStopped

T = TypeVar("T")

Outcome = Literal["PASS", "FAIL", "SKIP"]


class CheckFailed(RunStopped):
    """A check did not hold; the run stops here."""


@dataclass(frozen=True)
class CheckRecord:
    outcome: Outcome
    claim: str
    section: str
    detail: str = ""


@dataclass
class CheckLog:
    """Prints each check the moment it is decided and keeps the list for checks.json."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    section: str = "run"
    records: list[CheckRecord] = field(default_factory=list)
    # Told each section as it begins: the run's clock times the sections as its phases.
    on_section: Callable[[str], None] | None = None
    # Only FAIL and SKIP lines, each section's header printed before its first of them.
    quiet: bool = False
    _header_due: bool = False

    def begin(self, section: str) -> None:
        """Names the group the following checks belong to (layer, files, network, ...)."""
        self.section = section
        self._header_due = True
        if not self.quiet:
            self._header()
        if self.on_section is not None:
            self.on_section(section)

    def _header(self) -> None:
        self._header_due = False
        print(f"== {self.section}", file=self.stream, flush=True)

    def _emit(self, record: CheckRecord) -> None:
        self.records.append(record)
        if self.quiet and record.outcome == "PASS":
            return
        if self._header_due:
            self._header()
        line = f"{record.outcome} {record.claim}"
        if record.detail and record.outcome != "PASS":
            line += f" ({record.detail})"
        print(line, file=self.stream, flush=True)

    def require(self, condition: bool, claim: str, *, detail: str = "") -> None:
        """PASS when condition holds; otherwise FAIL and stop the run.

        ``detail`` says what was observed instead; it is printed only on FAIL or SKIP.
        """
        if condition:
            self._emit(CheckRecord("PASS", claim, self.section))
            return
        self._emit(CheckRecord("FAIL", claim, self.section, detail))
        raise CheckFailed(f"{claim}: {detail}" if detail else claim)

    def expect_equal(self, observed: object, expected: object, claim: str) -> None:
        """PASS when observed == expected; the FAIL line names both values."""
        self.require(
            observed == expected, claim, detail=f"observed {observed!r}, expected {expected!r}"
        )

    def holds(
        self, claim: str, call: Callable[[], T], *, refusals: tuple[type[Exception], ...]
    ) -> T:
        """PASS when call returns; FAIL (and stop) when it raises one of ``refusals``.

        For claims whose proof is an operation that raises when it does not hold (a scan that
        finds the key, a reply that is not 200): the FAIL line names what was raised.
        """
        try:
            result = call()
        except refusals as error:
            self.require(False, claim, detail=f"{type(error).__name__}: {error}")
            raise  # unreachable: require(False) raises CheckFailed
        self.require(True, claim)
        return result

    def skip(self, claim: str, reason: str) -> None:
        """A claim this run cannot test here; printed with its reason, never counted as passed."""
        self._emit(CheckRecord("SKIP", f"{claim} — {reason}", self.section))

    @property
    def passed(self) -> int:
        return sum(1 for r in self.records if r.outcome == "PASS")

    @property
    def skipped(self) -> int:
        return sum(1 for r in self.records if r.outcome == "SKIP")

    def as_json(self) -> list[dict[str, str]]:
        return [asdict(r) for r in self.records]
