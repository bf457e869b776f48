"""Each nono boundary check can fail: widen one profile on purpose and the run must stop there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.controller.checks import CheckFailed
from app.controller.context import LayerSetup
from app.controller.run import RunOptions, run_case
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from app.tools.nono.profiles import COMMITTED_DIR, Widening

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"
# Not pytest's tmp_path for the run tree: its parents are 0700, closed to the tool's uid.
WORK_BASE = Path("/var/tmp/analyst-tests")


def _first_failure(widening: Widening, committed_dir: Path, tmp_path: Path) -> str:
    stream = io.StringIO()

    def make_layer(setup: LayerSetup) -> NonoLayer:
        return NonoLayer(setup, widening, committed_dir=committed_dir)

    options = RunOptions(
        layer="nono", case_dir=SAMPLE, out_dir=tmp_path / "out", work_base=WORK_BASE
    )
    with pytest.raises(CheckFailed):
        run_case(options, make_layer=make_layer, stream=stream)
    print(stream.getvalue())  # shown by pytest when the test fails
    failures = [line for line in stream.getvalue().splitlines() if line.startswith("FAIL ")]
    assert len(failures) == 1, failures
    assert not (tmp_path / "out").exists()
    return failures[0]


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
    widening: Widening, claim: str, tmp_path: Path
) -> None:
    # The widening is rendered into the "committed" profiles too, as if it had been reviewed
    # and merged: only the boundary check itself can catch it.
    committed = tmp_path / "policies"
    render.write(committed, widening)
    assert _first_failure(widening, committed, tmp_path).startswith(claim)


def test_a_widened_profile_that_was_not_committed_fails_the_profile_check(tmp_path: Path) -> None:
    line = _first_failure(Widening(reader_reads_key_file=True), COMMITTED_DIR, tmp_path)
    assert line.startswith("FAIL the committed nono profiles")
