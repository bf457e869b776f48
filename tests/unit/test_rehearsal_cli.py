"""The rehearsal's command line: its help tells what exists and how it exits."""

from __future__ import annotations

import subprocess
import sys

from app.core.repo import REPO_ROOT


def _help(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rehearsal", *args, "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return " ".join(done.stdout.split())


def test_help_names_the_commands_the_stand_ins_and_the_exit_codes() -> None:
    text = _help()
    for words in (
        "run",
        "all",
        "the same ones `make manifests` writes",
        "moto for S3/IAM/STS",
        "the offline model for Bedrock",
        "0 every pod ran and every check passed",
        "3 this machine cannot rehearse",
    ):
        assert words in text, words
    assert "--layer" in _help("run") and "--change MODULE:FUNCTION" in _help("run")


def test_run_and_all_take_the_stack_settings_they_rehearse() -> None:
    for command in ("run", "all"):
        text = _help(command)
        assert "--runtime-target {isolated-sandbox,hardened-container}" in text
        assert "--case-id ID" in text


def test_a_bad_stack_setting_is_bad_input_before_anything_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rehearsal", "run", "--layer", "nono", "--case-id", "rfp-404"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "procurement-analyst:caseId: has no folder cases/rfp-404/case.json" in done.stderr
