"""Every claim of the catalogue replaced by other words, to show that nothing but the printed
words depends on them: ids, the accounting, the tables and every test key on ids."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from app.core.catalogue import Check
from app.tools.bubblewrap.checks import BubblewrapChecks
from app.tools.catalogue.order import run_sections
from app.tools.layer import LayerChecks
from app.tools.nono.checks import NonoChecks

REWORDED = "reworded claim number"


def all_checks() -> list[Check]:
    """Every check template of every section either layer's runs make, each once."""
    found: dict[int, Check] = {}
    layers: tuple[type[LayerChecks], ...] = (BubblewrapChecks, NonoChecks)
    for layer, in_cluster in itertools.product(layers, (False, True)):
        for section in run_sections(layer, in_cluster=in_cluster):
            for check in section.checks():
                found[id(check)] = check
    return list(found.values())


@contextmanager
def reworded_claims() -> Iterator[list[Check]]:
    """For the block's duration, every claim reads "reworded claim number N"."""
    checks = all_checks()
    before = [check.claim for check in checks]
    for number, check in enumerate(checks):
        # The templates are frozen for the code; only this test helper rewrites them.
        object.__setattr__(check, "claim", f"{REWORDED} {number}")
    try:
        yield checks
    finally:
        for check, claim in zip(checks, before, strict=True):
            object.__setattr__(check, "claim", claim)
