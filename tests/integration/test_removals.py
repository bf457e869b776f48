"""Every watched element of each committed policy, left out on its own, makes a real run FAIL
on the check its accounting names (policies/*/elements.json).

So a new switch can never be added unproven: the unit tests require every element to be in
the accounting, and this test requires each watched one to be the difference between a run
that passes and one that fails where the accounting says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.roles import ROLES, Layer, Role
from app.core.run import Run
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import BubblewrapPolicy
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from tests.support.elements import Shared, failing_check, shared_services

pytestmark = pytest.mark.integration

BWRAP_WATCHED = {
    (role, key): proof
    for role in ROLES
    for key in bwrap_accounting.keys_of(role)
    if isinstance(proof := bwrap_accounting.proof_for(role, key), Watched)
}
NONO_WATCHED = {
    (role, element): proof
    for role, table in nono_accounting.ACCOUNT.items()
    for element, proof in table.items()
    if isinstance(proof, Watched)
}


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


@pytest.mark.parametrize(
    ("role", "element"), sorted(BWRAP_WATCHED), ids=[f"{r}:{e}" for r, e in sorted(BWRAP_WATCHED)]
)
def test_leaving_a_bwrap_element_out_fails_its_check(
    role: Role, element: str, shared: Shared
) -> None:
    # Out of this one role's vector: each role is checked, not only the reader.
    left_out = frozenset((role, key) for key in bwrap_accounting.removal(element))
    policy = BubblewrapPolicy(omit_for=left_out)

    def make_layer(run: Run) -> BubblewrapLayer:
        return BubblewrapLayer(run, policy=policy)

    failed = failing_check(shared, Layer.BUBBLEWRAP, make_layer)
    assert failed.id == BWRAP_WATCHED[(role, element)].check, failed


@pytest.mark.parametrize(
    ("role", "element"), sorted(NONO_WATCHED), ids=[f"{r}:{e}" for r, e in sorted(NONO_WATCHED)]
)
def test_leaving_a_nono_profile_element_out_fails_its_check(
    role: Role, element: str, shared: Shared, tmp_path: Path
) -> None:
    omit = frozenset({(role, element)})
    # Left out of the committed profiles too, as if the change had been reviewed and merged:
    # only the checks that watch the element can catch it, not the drift check.
    committed = tmp_path / "policies"
    render.write(committed, omit=omit)

    def make_layer(run: Run) -> NonoLayer:
        return NonoLayer(run, committed_dir=committed, omit=omit)

    failed = failing_check(shared, Layer.NONO, make_layer)
    assert failed.id == NONO_WATCHED[(role, element)].check, failed
