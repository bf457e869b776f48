"""A run keys its outcome on check ids, never on wording: with every claim reworded, a policy
element left out still stops the run at the same check, and the accounting still names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.roles import Layer
from app.core.run import Run
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import BubblewrapPolicy
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from tests.support.elements import Shared, failing_check, shared_services
from tests.support.reworded import REWORDED, reworded_claims

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


def test_a_reworded_bubblewrap_run_fails_at_the_same_check(shared: Shared) -> None:
    proof = bwrap_accounting.proof_for("reader", "--unshare-net")
    assert isinstance(proof, Watched)
    policy = BubblewrapPolicy(omit_for=frozenset({("reader", "--unshare-net")}))

    def make_layer(run: Run) -> BubblewrapLayer:
        return BubblewrapLayer(run, policy=policy)

    with reworded_claims():
        failed = failing_check(shared, Layer.BUBBLEWRAP, make_layer)
    assert failed.id == proof.check == "bubblewrap.namespaces.net"
    assert failed.claim.startswith(REWORDED)


def test_a_reworded_nono_run_fails_at_the_same_check(shared: Shared, tmp_path: Path) -> None:
    element = "network.block"
    proof = nono_accounting.ACCOUNT["evaluator"][element]
    assert isinstance(proof, Watched)
    omit = frozenset({("evaluator", element)})
    committed = tmp_path / "policies"
    render.write(committed, omit=omit)

    def make_layer(run: Run) -> NonoLayer:
        return NonoLayer(run, committed_dir=committed, omit=omit)

    with reworded_claims():
        failed = failing_check(shared, Layer.NONO, make_layer)
    assert failed.id == proof.check == "nono.network.socket.evaluator"
    assert failed.claim.startswith(REWORDED)
