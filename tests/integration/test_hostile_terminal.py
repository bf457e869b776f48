"""Forged terminal lines from a hostile worker (support/hostile.py), in real runs of either
layer: a file name with a newline and ANSI codes, a tool's stderr with OSC 52 and a fake end of
run, a forged winner that clears the screen. Each reaches the terminal, checks.json and the
report as one escaped line of its own words, and none acts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.escaping import escaped
from tests.support.hostile import HostileRun, Step, run_hostile
from tests.support.hostile_worker import FORGED_NAME

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
ESC, BEL = "\x1b", "\x07"
FORGED_STDERR = "\x1b]52;c;ZXZpbA==\x07\x1b[1G\x1b[2KANALYST_COMPLETE=deadbeef\n"
FORGED_WINNER = "\x1b[2J\x1b[Hcedar"


def nothing_acts(run: HostileRun) -> None:
    for text in (run.stdout, run.stderr):
        assert ESC not in text and BEL not in text and "\r" not in text, run.describe()
    assert not [line for line in run.stdout.splitlines() if "ANALYST_COMPLETE=deadbeef" in line]
    assert run.secrets_on_disk() == [] and run.processes_left() == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_file_name_with_a_newline_and_ansi_codes_is_one_escaped_name(
    layer: str, work_base: Path
) -> None:
    # A stand-in at the tool's uid outside any layer plants it (support/hostile.py).
    plant = Step(
        "plant",
        role="control",
        action="attack-surface",
        args={"kinds": ["forged-name"], "stand_in": True},
    )
    run = run_hostile(work_base, layer, [plant])
    assert run.exit_code == 0, run.describe()  # a regular file, without a secret: scanned
    nothing_acts(run)
    lines = run.stdout.splitlines()
    assert not [line for line in lines if line.startswith("PASS every secret is gone")]
    (listing,) = [line for line in lines if "every file left in the run directory" in line]
    assert f"reader/out/{escaped(FORGED_NAME)}" in listing, listing
    # The listing is the last check, after checks.json and report.html are written: they hold
    # no text of the tool's, and nothing that acts.
    out = work_base / "out"
    claims = [record["claim"] for record in json.loads((out / "checks.json").read_text())["checks"]]
    assert not [claim for claim in claims if ESC in claim or "\n" in claim]
    assert ESC not in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("layer", LAYERS)
def test_a_tools_stderr_with_osc_52_and_a_fake_end_is_one_escaped_error_line(
    layer: str, work_base: Path
) -> None:
    say = Step("say", role="evaluator", action="evaluate", args={"stderr": FORGED_STDERR})
    run = run_hostile(work_base, layer, [say])
    assert run.exit_code == 1, run.describe()
    nothing_acts(run)
    (stop,) = [line for line in run.error_lines() if line.strip()]
    assert stop == (
        "error (run stopped): the evaluator's tool process exited 1 with 0 result lines: "
        + escaped(FORGED_STDERR.strip())
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_a_forged_winner_that_clears_the_screen_is_a_fail_that_shows_it_escaped(
    layer: str, work_base: Path
) -> None:
    result = {
        "action": "evaluate",
        "ok": True,
        "errno": None,
        "comparison": {"case_id": "rfp-001", "winner": FORGED_WINNER, "suppliers": []},
        "sha256": "0" * 64,
    }
    line = f"ANALYST_RESULT {json.dumps(result)}\n"
    run = run_hostile(
        work_base, layer, [Step("answer", role="evaluator", action="evaluate", args={"line": line})]
    )
    assert run.exit_code == 1, run.describe()
    nothing_acts(run)
    fails = [line for line in run.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1, run.describe()
    assert fails[0].startswith("FAIL the evaluator's offline comparison names "), fails[0]
    assert fails[0].endswith(
        f"(evaluator chose {escaped(repr(FORGED_WINNER))}) [business.evaluator]"
    ), fails[0]
