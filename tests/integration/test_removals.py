"""Every watched element of each committed policy, left out on its own, makes a real run FAIL
on the check its accounting names (policies/*/elements.json).

So a new switch can never be added unproven: the unit tests require every element to be in
the accounting, and this test requires each watched one to be the difference between a run
that passes and one that fails where the accounting says. Each element is left out as
``--break <role>:<element>`` leaves it out (shipped_layers.broken_layer: out of that one role's
vector or profile, and under nono out of the committed profiles too, as if the change had been
reviewed and merged, so only the checks that watch it can catch it, not the drift check), so
this is also the proof that ``--break`` stops at the check it names, for every role and element.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.controller.shipped_layers import broken_layer
from app.core.roles import ROLES, Layer
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.nono import accounting as nono_accounting
from app.tools.policy_breaks import PolicyBreak, listed
from tests.support.elements import Shared, failing_check, shared_services

pytestmark = pytest.mark.integration

WATCHED = [entry for entry in listed() if entry.watched_by is not None]


def accounted_checks(layer: Layer) -> set[tuple[str, str, str]]:
    """(role, element, check) for every watched element of ``layer``, from its accounting."""
    if layer is Layer.BUBBLEWRAP:
        return {
            (role, key, proof.check)
            for role in ROLES
            for key in bwrap_accounting.keys_of(role)
            if isinstance(proof := bwrap_accounting.proof_for(role, key), Watched)
        }
    return {
        (role, element, proof.check)
        for role, table in nono_accounting.ACCOUNT.items()
        for element, proof in table.items()
        if isinstance(proof, Watched)
    }


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


@pytest.mark.parametrize("layer", list(Layer), ids=[layer.value for layer in Layer])
def test_the_runs_below_are_every_element_the_accounting_watches(layer: Layer) -> None:
    listed_here = {(e.role, e.element, e.watched_by) for e in WATCHED if e.layer is layer}
    assert listed_here == accounted_checks(layer)


@pytest.mark.parametrize("entry", WATCHED, ids=[f"{e.layer.value}:{e.name}" for e in WATCHED])
def test_leaving_an_element_out_fails_its_check(entry: PolicyBreak, shared: Shared) -> None:
    failed = failing_check(shared, entry.layer, broken_layer(entry))
    assert failed.id == entry.watched_by, failed
