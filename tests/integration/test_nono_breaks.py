"""Each nono boundary check can fail: widen one profile on purpose and the run must stop there."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.roles import Layer
from app.core.run import Run
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from app.tools.nono.policy import COMMITTED_DIR, ProfileSource
from tests.support import policy_changes as widened_by
from tests.support.whole_runs import failing_check

pytestmark = pytest.mark.integration


def widened(widening: ProfileSource, committed_dir: Path, work_base: Path) -> str:
    """The id of the check a run under the widened profiles fails."""

    def make_layer(run: Run) -> NonoLayer:
        return NonoLayer(run, widening, committed_dir=committed_dir)

    return failing_check(Layer.NONO, make_layer, work_base).id


@pytest.mark.parametrize(
    ("widening", "check"),
    [
        (widened_by.READER_READS_KEY_FILE, "files.supplier-key.reader"),
        (widened_by.EVALUATOR_NETWORK, "nono.network.socket.evaluator"),
        (widened_by.WRITER_PURCHASE_ORDERS, "nono.proxy.writer.purchase-order"),
        (widened_by.READER_INHERITS_ENVIRONMENT, "nono.reader.environment"),
    ],
)
def test_a_widened_and_recommitted_profile_fails_its_boundary_check(
    widening: ProfileSource, check: str, tmp_path: Path, work_base: Path
) -> None:
    # The widening is rendered into the "committed" profiles too, as if it had been reviewed
    # and merged: only the boundary check itself can catch it.
    committed = tmp_path / "policies"
    render.write(committed, widening)
    assert widened(widening, committed, work_base) == check


def test_a_widened_profile_that_was_not_committed_fails_the_profile_check(work_base: Path) -> None:
    failed = widened(widened_by.READER_READS_KEY_FILE, COMMITTED_DIR, work_base)
    assert failed == "nono.profiles.committed"
