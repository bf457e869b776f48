"""The command line: its help, and the exit codes that tell bad input from a failed run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _controller(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.controller", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_help_names_every_subcommand_and_layer() -> None:
    done = _controller("--help")
    assert done.returncode == 0
    assert "run" in done.stdout and "demo" in done.stdout
    run_help = _controller("run", "--help").stdout
    for option in ("--layer", "--case", "--out", "--workdir", "--keep-workdir", "bubblewrap,nono"):
        assert option in run_help


def test_unknown_layer_is_a_usage_error() -> None:
    done = _controller("run", "--layer", "docker")
    assert done.returncode == 2
    assert "invalid choice: 'docker'" in done.stderr


def test_bad_case_exits_2_naming_the_file(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(ROOT / "cases" / "rfp-001", case)
    doc = json.loads((case / "case.json").read_text())
    doc["case_id"] = "Bad Id"
    (case / "case.json").write_text(json.dumps(doc))
    done = _controller(
        "run", "--layer", "bubblewrap", "--case", str(case), "--out", str(tmp_path / "o")
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {case / 'case.json'}: case_id: String should match")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("missing", ["ANALYST_BUCKET", "ANALYST_MODEL_ID"])
def test_cluster_mode_names_a_missing_setting(missing: str, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "ANALYST_MODE": "cluster",
        "ANALYST_BUCKET": "b",
        "AWS_REGION": "us-west-2",
        "ANALYST_MODEL_ID": "m",
        "ANALYST_ROLE_NAME": "r",
    }
    del env[missing]
    done = _controller("run", "--layer", "nono", "--workdir", str(tmp_path / "w"), env=env)
    assert done.returncode == 2
    assert f"{missing} is not set" in done.stderr
    assert not (tmp_path / "w").exists()
