"""A real run with --quiet --json --junit: stdout is the JSON summary alone, the layer's header
and the SKIP lines go to stderr, and the JUnit file holds one testcase per check the run made."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from app.controller.cli import main

pytestmark = pytest.mark.integration


def test_a_quiet_json_run_writes_junit_and_a_summary(
    work_base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = work_base / "junit.xml"
    out = work_base / "out"
    argv = ["run", "--layer", "nono", "--quiet", "--json", "--junit", str(junit)]
    assert main([*argv, "--workdir", str(work_base / "work"), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    (summary,) = json.loads(captured.out)["runs"]
    assert summary["outcome"] == "PASS" and summary["out_dir"] == str(out)
    assert captured.err.startswith("==> nono: run ")  # --quiet keeps the layer's header
    skip_lines = [line for line in captured.err.splitlines() if line.startswith("SKIP ")]
    assert len(skip_lines) == len(summary["skipped"]) > 0
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    names = [case.get("name") for case in suite.findall("testcase")]
    assert len(names) == summary["passed"] + len(summary["skipped"])
    assert [c.get("name") for c in suite.findall("testcase") if c.find("skipped") is not None] == (
        summary["skipped"]
    )
    checks = json.loads((out / "checks.json").read_text())["checks"]
    assert names[: len(checks)] == [c["id"] for c in checks]
    assert names[-1] == "evidence.scanned-after"
