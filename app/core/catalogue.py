"""The form of the catalogue of checks (app/tools/catalogue/, which declares every check a run
can make): a check by stable id, checks grouped into sections.

A check's id (``bubblewrap.namespaces.pid``, ``files.supplier-key.reader``) names it for good:
the accounting of each policy element, the tests, the README's tables and the report refer to
checks by id, never by their wording, so a claim can be reworded freely. A check's claim is one
line that says what must hold; what was observed goes into the record's detail.

A ``Check`` is a template: its id and claim may name values (``{role}``) filled in where the
check is made. A ``Section`` lists its checks in the order a run makes them, with ``Each`` for
a family (one check per role, per supplier of the case) and ``When`` for what only some runs
make (the cluster's checks, the lines of a host with an IPv6 loopback), so the checks a section
will make in this kind of run are known when the section begins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

# Lowercase words joined by dots, each word of letters, digits, "-" and "_".
_ID: Final = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$")

# What a section's families and conditions read when it begins: a fact that holds or not, or
# the values a family repeats over.
Fact = bool | Sequence[str]


class CatalogueError(RuntimeError):
    """The code made a check its section does not plan: the catalogue and the code disagree."""


@dataclass(frozen=True)
class Claim:
    """One check as made: its id and claim with every value filled in."""

    id: str
    text: str
    fails_only: bool = False


@dataclass(frozen=True)
class Check:
    """One check of the catalogue: a stable id and a one-line claim, templates over the same
    named values (``str.format`` fields); the id names only those that tell members of a family
    apart.

    ``fails_only``: a check that is only ever printed as the FAIL that stops a run (a scan that
    found a secret where nothing else is checked); it is never among a section's planned checks.
    """

    id: str
    claim: str
    fails_only: bool = False

    def __call__(self, **values: object) -> Claim:
        """The check as made, its templates filled in with ``values``."""
        return Claim(self.id_for(**values), self.claim.format(**values), self.fails_only)

    def id_for(self, **values: object) -> str:
        """The id of the family member ``values`` names (every other value is ignored)."""
        made = self.id.format(**values)
        if not _ID.match(made):
            raise CatalogueError(f"{made!r} is not a check id (dotted lowercase words)")
        return made


@dataclass(frozen=True)
class Each:
    """Entries repeated once per value of a named template field: ``values`` lists them, or
    names the fact (given when the section begins) that does."""

    name: str
    values: tuple[str, ...] | str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class When:
    """Entries made only in runs where the named fact holds (``holds=False``: where it does not)."""

    fact: str
    entries: tuple[Entry, ...]
    holds: bool = True


Entry = Check | Each | When


def each(name: str, values: tuple[str, ...] | str, *entries: Entry) -> Each:
    return Each(name, values, entries)


def when(fact: str, *entries: Entry) -> When:
    return When(fact, entries)


def unless(fact: str, *entries: Entry) -> When:
    return When(fact, entries, holds=False)


class Section:
    """A group of checks a run makes together, in order, under one name (layer, files, ...)."""

    def __init__(self, name: str, *entries: Entry) -> None:
        self.name = name
        self.entries = entries

    def __repr__(self) -> str:
        return f"Section({self.name!r})"

    def planned(self, facts: Mapping[str, Fact]) -> list[str]:
        """The ids of the checks this section makes in a run with these facts, in order."""
        return [made.id for made in self._expand(self.entries, {}, facts) if not made.fails_only]

    def ids(self, facts: Mapping[str, Fact]) -> set[str]:
        """Every id this section may print with these facts, failure-only checks included."""
        return {made.id for made in self._expand(self.entries, {}, facts)}

    def checks(self) -> Iterator[Check]:
        """Every check template of the section, each once per place it stands."""
        yield from _templates(self.entries)

    @classmethod
    def _expand(
        cls, entries: Sequence[Entry], bound: dict[str, str], facts: Mapping[str, Fact]
    ) -> Iterator[Claim]:
        for entry in entries:
            if isinstance(entry, Check):
                yield Claim(entry.id_for(**bound), "", entry.fails_only)
            elif isinstance(entry, Each):
                values = facts[entry.values] if isinstance(entry.values, str) else entry.values
                if isinstance(values, bool):
                    raise CatalogueError(f"the fact {entry.values!r} lists no values")
                for value in values:
                    yield from cls._expand(entry.entries, {**bound, entry.name: value}, facts)
            elif bool(facts[entry.fact]) is entry.holds:
                yield from cls._expand(entry.entries, bound, facts)


def _templates(entries: Sequence[Entry]) -> Iterator[Check]:
    for entry in entries:
        if isinstance(entry, Check):
            yield entry
        else:
            yield from _templates(entry.entries)
