"""The check log: one PASS, FAIL or SKIP line per check, printed as it is reached.

Each check is made under its stable id from the catalogue (app/tools/catalogue/, in the form of
app/core/catalogue.py), inside the section that plans it: ``begin`` names the section and learns
the checks it will make in this run, in order; a check the section does not plan next is a
CatalogueError, so the count a section announces is the count it prints. A log told the run's
order of sections (``follow``) refuses a section begun out of it the same way. Every record
keeps what was observed (``detail``), PASS or not, and its line shows it after the claim, in
parentheses (a SKIP's reason after a dash); a FAIL line ends with the check's id, the name the
accounting and the tests know it by.

A FAIL stops the run (CheckFailed), so a run can never print a FAIL line and still exit 0.
A SKIP names why it cannot run here and is never counted as passed. A claim may quote what a
tool, a case or a supplier said: each claim, detail and reason is escaped (app/core/escaping.py)
before it is printed, kept for checks.json or carried by CheckFailed.

``at_once`` makes several checks at the same time and prints their lines as if they had been
made one after another, in the order given: each still reads as one call and one judgement. How
they are made at the same time is the run's to say (``make_at_once``: the threads of
app/tools/at_once.py); a log given none makes them in turn.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, Protocol, TextIO, TypeVar

from app.core.catalogue import CatalogueError, Check, Claim, Fact, Section
from app.core.errors import RunStopped
from app.core.escaping import escaped

T = TypeVar("T")

Outcome = Literal["PASS", "FAIL", "SKIP"]


class MakesAtOnce(Protocol):
    """Makes ``calls`` (which never raise) and returns their results in the order given."""

    def __call__(self, calls: Sequence[Callable[[], T]], /) -> list[T]: ...


def in_turn(calls: Sequence[Callable[[], T]], /) -> list[T]:
    """The calls made one after another: a log's way when the run gives it no other."""
    return [call() for call in calls]


@dataclass(frozen=True)
class CheckRecord:
    id: str
    outcome: Outcome
    claim: str
    section: str
    # What was observed (PASS or FAIL), or why the check cannot be made here (SKIP).
    detail: str = ""


class CheckFailed(RunStopped):
    """A check did not hold; the run stops here."""

    def __init__(self, record: CheckRecord) -> None:
        text = f"{record.claim}: {record.detail}" if record.detail else record.claim
        super().__init__(text)
        self.record = record
        # Where the failed run's page, check list and signed statement were kept, if they were.
        self.kept: Path | None = None
        # Every check the run made, this one last (checks.json's records), for CI's outputs.
        self.records: list[dict[str, str]] = []
        self.run_id = ""

    @property
    def check_id(self) -> str:
        return self.record.id


@dataclass
class CheckLog:
    """Prints each check the moment it is decided and keeps the list for checks.json."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    records: list[CheckRecord] = field(default_factory=list)
    # Told each section's name as it begins: the run's clock times the sections as its phases.
    on_section: Callable[[str], None] | None = None
    # Only FAIL and SKIP lines, each section's header printed before its first of them.
    quiet: bool = False
    # Told each FAIL before it is printed (its claim and detail), and may raise instead: the
    # run stops there, without the line, when the fault is a service's rather than the check's.
    before_fail: Callable[[str], None] | None = None
    # How at_once makes its checks at the same time.
    make_at_once: MakesAtOnce = in_turn
    section: str = ""
    # The ids the current section will print, in order, and how many it has printed.
    planned: tuple[str, ...] = ()
    made: int = 0
    _may_fail: frozenset[str] = frozenset()
    # The run's sections by name, in order, once followed; and how many of them have begun.
    _sections_due: tuple[str, ...] | None = None
    _sections_begun: int = 0
    _header_due: bool = False
    # In a thread of at_once: the lines its check would print, kept for at_once to print.
    _held: threading.local = field(default_factory=threading.local)

    def begin(self, section: Section, **facts: Fact) -> None:
        """Starts ``section``: ``facts`` say which of its families and conditional checks this
        run makes (the case's suppliers, whether the supplier is on loopback, ...). Its header
        line names it and how many checks it makes."""
        self._not_held("begin")
        self._end_section()
        if self._sections_due is not None:
            due = self._sections_due[self._sections_begun : self._sections_begun + 1]
            if due != (section.name,):
                raise CatalogueError(
                    f"section {section.name!r} began where the run's order has "
                    f"{due[0] if due else 'nothing'!r}"
                )
            self._sections_begun += 1
        self.section = section.name
        self.planned = tuple(section.planned(facts))
        self._may_fail = frozenset(section.ids(facts))
        self.made = 0
        self._header_due = True
        if not self.quiet:
            self._header()
        if self.on_section is not None:
            self.on_section(section.name)

    def _header(self) -> None:
        self._header_due = False
        count = len(self.planned)
        print(
            f"== {self.section} ({count} check{'' if count == 1 else 's'})",
            file=self.stream,
            flush=True,
        )

    def follow(self, sections: Sequence[Section]) -> None:
        """Holds the sections begun from here on to the order of ``sections``: the run's, as
        the catalogue states it (app/tools/catalogue/order.py)."""
        self._sections_due = tuple(section.name for section in sections)
        self._sections_begun = 0

    @property
    def section_count(self) -> int:
        """How many checks the current section makes in this run."""
        return len(self.planned)

    def close(self) -> None:
        """Ends the last section: every check it planned was made."""
        self._not_held("close")
        self._end_section()
        self.section, self.planned, self.made = "", (), 0

    def _end_section(self) -> None:
        if self.made != len(self.planned):
            missing = ", ".join(self.planned[self.made :])
            raise CatalogueError(
                f"section {self.section!r} planned {len(self.planned)} checks and made "
                f"{self.made}: not made {missing}"
            )

    def _not_held(self, what: str) -> None:
        if getattr(self._held, "lines", None) is not None:
            raise CatalogueError(f"{what} inside a check made at once with others")

    def _emit(self, claim: Claim, outcome: Outcome, detail: str) -> CheckRecord:
        held: list[tuple[Claim, Outcome, str]] | None = getattr(self._held, "lines", None)
        if held is not None:
            # Printed (and held to the section's plan) by at_once, in the checks' order.
            held.append((claim, outcome, detail))
            return CheckRecord(
                claim.id, outcome, escaped(claim.text), self.section, escaped(detail)
            )
        if claim.fails_only:
            if outcome != "FAIL" or claim.id not in self._may_fail:
                raise CatalogueError(f"{claim.id} is not a failure of section {self.section!r}")
        else:
            due = self.planned[self.made] if self.made < len(self.planned) else "nothing"
            if claim.id != due:
                raise CatalogueError(
                    f"section {self.section!r} made {claim.id} where it plans {due}"
                )
            self.made += 1
        # A claim's values and its detail may quote a tool, a case or a supplier.
        text, detail = escaped(claim.text), escaped(detail)
        if outcome == "FAIL" and self.before_fail is not None:
            self.before_fail(f"{text} ({detail})" if detail else text)
        record = CheckRecord(claim.id, outcome, text, self.section, detail)
        self.records.append(record)
        if self.quiet and outcome == "PASS":
            return record
        if self._header_due:
            self._header()
        line = f"{outcome} {text}"
        if outcome == "SKIP":
            line += f" — {detail}"
        elif detail:
            line += f" ({detail})"
        if outcome == "FAIL":
            line += f" [{claim.id}]"
        print(line, file=self.stream, flush=True)
        return record

    def require(self, check: Check | Claim, condition: bool, *, detail: str = "") -> None:
        """PASS when condition holds; otherwise FAIL and stop the run.

        ``detail`` says what was observed: kept in the record and printed, whatever the outcome.
        """
        made = _made(check)
        if condition:
            self._emit(made, "PASS", detail)
            return
        raise CheckFailed(self._emit(made, "FAIL", detail))

    def fail(self, check: Check | Claim, detail: str) -> None:
        """FAIL and stop the run: for a check whose proof found what must not be there."""
        raise CheckFailed(self._emit(_made(check), "FAIL", detail))

    def expect_equal(self, check: Check | Claim, observed: object, expected: object) -> None:
        """PASS when observed == expected; the FAIL line names both values."""
        if observed == expected:
            self.require(check, True, detail=f"observed {observed!r}")
            return
        self.require(check, False, detail=f"observed {observed!r}, expected {expected!r}")

    def holds(
        self,
        check: Check | Claim,
        call: Callable[[], T],
        *,
        refusals: tuple[type[Exception], ...],
        detail: Callable[[T], str] | None = None,
    ) -> T:
        """PASS when call returns; FAIL (and stop) when it raises one of ``refusals``.

        For claims whose proof is an operation that raises when it does not hold (a scan that
        finds the key, a reply that is not 200): the FAIL line names what was raised, a PASS
        records ``detail`` of what the call returned.
        """
        try:
            result = call()
        except refusals as error:
            self.fail(check, f"{type(error).__name__}: {error}")
            raise  # unreachable: fail() raises CheckFailed
        self.require(check, True, detail="" if detail is None else detail(result))
        return result

    def skip(self, check: Check | Claim, reason: str) -> None:
        """A check this run cannot make here; printed with its reason, never counted as passed."""
        self._emit(_made(check), "SKIP", reason)

    def at_once(self, *checks: Callable[[], object]) -> None:
        """Makes ``checks`` at the same time and prints their lines in the order given, as if
        each had been made after the one before it.

        Each check runs in a thread of its own (as ``make_at_once`` makes them); what it would
        print is held until every check before it has printed. The first check that stops (a
        FAIL, or any error) stops the group there: its lines print up to its FAIL, the error is
        raised, and nothing of the checks after it prints, as if they had never been made. The
        checks must not depend on one another; inside one, a further ``at_once`` makes its
        checks in turn.
        """
        if getattr(self._held, "lines", None) is not None:
            for check in checks:
                check()
            return
        for lines, error in self.make_at_once([partial(self._holding, check) for check in checks]):
            record = None
            for claim, outcome, detail in lines:
                record = self._emit(claim, outcome, detail)
            if isinstance(error, CheckFailed) and record is not None and record.outcome == "FAIL":
                raise CheckFailed(record) from None
            if error is not None:
                raise error

    def at_once_in_plan(self, makers: Mapping[str, Callable[[], object]]) -> None:
        """Makes ``makers`` at the same time, as ``at_once`` does, each named by the id of the
        first check it makes, in the order the current section plans those ids: the catalogue
        states the order, and the code only which call makes which check."""
        place = {made: index for index, made in enumerate(self.planned)}
        unplanned = sorted(made for made in makers if made not in place)
        if unplanned:
            raise CatalogueError(f"section {self.section!r} plans no check {unplanned}")
        self.at_once(*(makers[made] for made in sorted(makers, key=place.__getitem__)))

    def _holding(
        self, check: Callable[[], object]
    ) -> tuple[list[tuple[Claim, Outcome, str]], BaseException | None]:
        lines: list[tuple[Claim, Outcome, str]] = []
        self._held.lines = lines
        try:
            check()
        except BaseException as error:
            # Raised again by at_once, in the checks' order, once the lines before it print.
            return lines, error
        finally:
            self._held.lines = None
        return lines, None

    @property
    def passed(self) -> int:
        return sum(1 for r in self.records if r.outcome == "PASS")

    @property
    def skipped(self) -> int:
        return sum(1 for r in self.records if r.outcome == "SKIP")

    def as_json(self) -> list[dict[str, str]]:
        return [asdict(r) for r in self.records]


def _made(check: Check | Claim) -> Claim:
    return check() if isinstance(check, Check) else check
