"""What a layer needs from this machine or pod, as one ordered list of named checks.

The same list serves two readers: a run's preflight stops at the first missing piece with one
LayerUnavailable naming it and its fix (``require``), and `doctor` shows every piece with PASS or
FAIL and its fix (``evaluate``). A check that can only be made once another holds (bwrap's
options once bwrap is found) is not made after that one failed, and says which it waits for.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import LayerUnavailable
from app.core.run_tree import INTERPRETER, ToolIdentity, blocking_directory


@dataclass(frozen=True)
class Finding:
    """What one check found: whether it holds, what was seen, and what to do if it does not.

    When it does not hold, ``found`` names the missing piece on its own: it is the message of
    the one error a run stops with.
    """

    ok: bool
    found: str
    fix: str = ""


def holds(found: str) -> Finding:
    return Finding(True, found)


def missing(found: str, fix: str) -> Finding:
    return Finding(False, found, fix)


@dataclass(frozen=True)
class Prerequisite:
    """One thing a layer needs: a claim, how to check it, and the claims it can only follow."""

    claim: str
    check: Callable[[], Finding]
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """A prerequisite as `doctor` reports it; ``finding`` is None when it could not be checked."""

    prerequisite: Prerequisite
    finding: Finding | None
    waits_for: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.finding is not None and self.finding.ok


def evaluate(prerequisites: Sequence[Prerequisite]) -> list[Outcome]:
    """Every prerequisite, in order; one whose earlier claims failed is reported unchecked."""
    failed: set[str] = set()
    outcomes = []
    for prerequisite in prerequisites:
        waits_for = tuple(claim for claim in prerequisite.after if claim in failed)
        if waits_for:
            failed.add(prerequisite.claim)
            outcomes.append(Outcome(prerequisite, None, waits_for))
            continue
        finding = prerequisite.check()
        if not finding.ok:
            failed.add(prerequisite.claim)
        outcomes.append(Outcome(prerequisite, finding))
    return outcomes


def require(prerequisites: Sequence[Prerequisite]) -> None:
    """Returns when every prerequisite holds; else raises for the first one that does not."""
    for prerequisite in prerequisites:
        finding = prerequisite.check()
        if not finding.ok:
            raise LayerUnavailable(finding.found, finding.fix)


# --- checks both layers share ---------------------------------------------------------------


def interpreter() -> Prerequisite:
    def check() -> Finding:
        if os.access(INTERPRETER, os.X_OK) and Path(INTERPRETER).is_file():
            return holds(INTERPRETER)
        return missing(
            f"{INTERPRETER} is missing or not executable",
            "install the distribution's python3 (Debian: apt-get install python3)",
        )

    return Prerequisite(
        "the system interpreter the tool worker runs on is there (stdlib only, nothing from a "
        "home directory)",
        check,
    )


# What `run` checks of the work directory before anything exists (doctor lists it first): the
# tool uid's way to it is checked only after it, so doctor never passes one and fails the other.
WORK_DIR_HOLDS_A_RUN = "the work directory can hold a run's tree (name, length, place, writable)"


def work_directory(directory: Path, tool: ToolIdentity) -> Prerequisite:
    def check() -> Finding:
        # A base that does not exist yet is created by the run, open to the tool uid (0711
        # for a root controller's, 0700 when the tool is the controller's own uid): its
        # parent decides.
        existing = next(p for p in [directory, *directory.parents] if p.exists())
        blocked = blocking_directory(existing, tool)
        if blocked is None:
            return holds(f"{directory}")
        return missing(
            f"{blocked} ({stat.filemode(blocked.stat().st_mode)}) is closed to the tool uid "
            f"{tool.uid}, so a tool cannot reach the run's files",
            "use a work directory the tool uid can pass through (left unset, each user has "
            "their own, /var/tmp/analyst-<uid>)",
        )

    return Prerequisite(
        f"the work directory is open to the tool uid {tool.uid}, so a tool can reach its files",
        check,
        (WORK_DIR_HOLDS_A_RUN,),
    )
