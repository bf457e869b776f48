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
