"""Following only the README: a four-supplier case written with `case new`, its prices edited,
its digests recorded with `case check --write-digests`, then run under both layers, which
recommend the supplier the edits make the winner."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT
from tests.support.own_case import (
    CASE_NAME,
    DELTA,
    EXPECTED_WINNER,
    edit_as_the_readme_says,
    readme_commands,
)

pytestmark = pytest.mark.integration


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_a_four_supplier_case_written_as_the_readme_says_runs_under_both_layers(
    tmp_path: Path,
) -> None:
    folder = tmp_path / CASE_NAME
    new, check, demo = readme_commands(folder)
    assert new[-3:] == ["case", "new", str(folder)]
    done = _run(new)
    assert done.returncode == 0, done.stderr
    edit_as_the_readme_says(folder)
    refused = _run(check[: check.index("--write-digests")])
    assert refused.returncode == 2, "an edited proposal must be refused until its digest is kept"
    done = _run(check)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"its comparison picks {EXPECTED_WINNER}" in done.stdout
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    assert len(case["suppliers"]) == 4 and all("sha256" in s for s in case["suppliers"])
    out = tmp_path / "runs"
    out.mkdir()
    done = _run([*demo, "--out", str(out)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    reports = sorted(out.glob("*/*/comparison.json"))
    assert [path.parent.parent.name for path in reports] == ["bubblewrap", "nono"]
    for comparison_file in reports:
        comparison = json.loads(comparison_file.read_text(encoding="utf-8"))
        assert comparison["winner"] == EXPECTED_WINNER
        whys = {supplier["id"]: supplier["why"] for supplier in comparison["suppliers"]}
        assert whys["delta"].startswith("wins: the lowest price of the 2 suppliers")
        assert whys["aster"] == "loses: eligible, but delta costs less (55000 against 58000 USD)"
        recommendation = (comparison_file.parent / "recommendation.md").read_text(encoding="utf-8")
        assert DELTA["name"] in recommendation
    lines = done.stdout.splitlines()
    assert len([line for line in lines if line.startswith("ANALYST_COMPLETE=")]) == 2
    assert not [line for line in lines if line.startswith("FAIL ")]
