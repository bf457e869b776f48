"""Every watched element of the bubblewrap layer's committed policies, left out on its own,
makes a real run FAIL on the check its accounting names (policies/*/elements.json).

So a new switch can never be added unproven: the unit tests require every element to be in
the accounting, and this test requires each watched one to be the difference between a run
that passes and one that fails where the accounting says. Each element is left out as
``--break <role>:<element>`` leaves it out (shipped_layers.broken_layer: out of that one role's
vector or profile, and under nono out of the committed profiles too, as if the change had been
reviewed and merged, so only the checks that watch it can catch it, not the drift check), so
this is also the proof that ``--break`` stops at the check it names, for every role and element.
The nono layer's elements are test_removals_nono.py's: two files, so that two test
workers share the runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.controller.shipped_layers import broken_layer
from app.core.roles import Layer
from app.tools.policy_breaks import PolicyBreak
from tests.support.elements import Shared, failing_check, shared_services
from tests.support.removals import accounted_checks, watched

pytestmark = pytest.mark.integration

WATCHED = watched(Layer.BUBBLEWRAP)


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


def test_the_runs_below_are_every_element_the_accounting_watches() -> None:
    listed_here = {(e.role, e.element, e.watched_by) for e in WATCHED}
    assert listed_here == accounted_checks(Layer.BUBBLEWRAP)


@pytest.mark.parametrize("entry", WATCHED, ids=[e.name for e in WATCHED])
def test_leaving_an_element_out_fails_its_check(entry: PolicyBreak, shared: Shared) -> None:
    failed = failing_check(shared, entry.layer, broken_layer(entry))
    assert failed.id == entry.watched_by, failed
