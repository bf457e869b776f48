"""Each nono boundary check can fail: widen one profile on purpose and the run must stop there."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.roles import Layer
from app.core.run import Run
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from app.tools.nono.policy import COMMITTED_DIR, Widening
from tests.support.runs import failing_line

pytestmark = pytest.mark.integration


def widened(widening: Widening, committed_dir: Path, work_base: Path) -> str:
    def make_layer(run: Run) -> NonoLayer:
        return NonoLayer(run, widening, committed_dir=committed_dir)

    return failing_line(Layer.NONO, make_layer, work_base)


@pytest.mark.parametrize(
    ("widening", "claim"),
    [
        (Widening(reader_reads_key_file=True), "FAIL the reader cannot open the supplier key file"),
        (
            Widening(evaluator_network=True),
            "FAIL the offline evaluator cannot create an Internet socket",
        ),
        (
            Widening(writer_purchase_orders=True),
            "FAIL writer: POST /purchase-orders through its proxy returns 403",
        ),
        (
            Widening(inherit_environment=True),
            "FAIL the reader's environment is exactly what its profile keeps",
        ),
    ],
)
def test_a_widened_and_recommitted_profile_fails_its_boundary_check(
    widening: Widening, claim: str, tmp_path: Path, work_base: Path
) -> None:
    # The widening is rendered into the "committed" profiles too, as if it had been reviewed
    # and merged: only the boundary check itself can catch it.
    committed = tmp_path / "policies"
    render.write(committed, widening)
    assert widened(widening, committed, work_base).startswith(claim)


def test_a_widened_profile_that_was_not_committed_fails_the_profile_check(work_base: Path) -> None:
    line = widened(Widening(reader_reads_key_file=True), COMMITTED_DIR, work_base)
    assert line.startswith("FAIL the committed nono profiles")
