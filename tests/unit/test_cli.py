"""The command line: its help, and every documented exit code with the message that goes with it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.controller.signals import STOP_SIGNALS
from app.core import cluster_env
from app.core.errors import AnalystError
from app.core.repo import REPO_ROOT, SAMPLE_CASE
from tests.support.cluster_settings import CLUSTER_ENV, cluster_environment
from tests.support.faults import processes_of, secret_leftovers, start_controller


def _controller(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.controller", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_help_names_every_subcommand_layer_and_exit_code() -> None:
    done = _controller("--help")
    assert done.returncode == 0
    assert "run" in done.stdout and "demo" in done.stdout
    for code in (
        "0 complete",
        "1 the run stopped",
        "2 bad input",
        "3 the layer cannot run",
        "129, 130, 143 stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM",
    ):
        assert code in " ".join(done.stdout.split())
    run_help = _controller("run", "--help").stdout
    for option in ("--layer", "--case", "--out", "--workdir", "--keep-workdir", "bubblewrap,nono"):
        assert option in run_help


def test_unknown_layer_is_a_usage_error_exit_2() -> None:
    done = _controller("run", "--layer", "docker")
    assert done.returncode == 2
    assert "invalid choice: 'docker'" in done.stderr


def test_bad_case_exits_2_naming_the_file(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, case)
    doc = json.loads((case / "case.json").read_text())
    doc["case_id"] = "Bad Id"
    (case / "case.json").write_text(json.dumps(doc))
    done = _controller(
        "run", "--layer", "bubblewrap", "--case", str(case), "--out", str(tmp_path / "o")
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error (bad input): {case / 'case.json'}: case_id: String should match"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("missing", sorted(set(CLUSTER_ENV) - {cluster_env.MODE}))
def test_cluster_mode_names_each_missing_setting_exit_2(missing: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", **cluster_environment(tmp_path, **{missing: None})}
    done = _controller("run", "--layer", "nono", "--workdir", str(tmp_path / "w"), env=env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error (bad input): {missing} is not set; "), done.stderr
    assert "also unusable" not in line
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (cluster_env.MODE, "clustr"),
        (cluster_env.SUPPLIER_API_URL, "http://supplier-api:8443"),
        (cluster_env.SUPPLIER_API_ALIAS_URL, "supplier-api-alias"),
    ],
)
def test_a_malformed_cluster_setting_exits_2_naming_it(
    name: str, value: str, tmp_path: Path
) -> None:
    env = {"PATH": "/usr/bin:/bin", **cluster_environment(tmp_path, **{name: value})}
    done = _controller("run", "--layer", "nono", "--workdir", str(tmp_path / "w"), env=env)
    assert done.returncode == 2, done.stderr
    assert f"{name}={value!r}" in done.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.integration
def test_a_machine_without_bwrap_exits_3_naming_the_fix(work_base: Path) -> None:
    # The interpreter (moto runs on it too) is found by absolute path; only bwrap is looked up.
    env = {"PATH": "/nonexistent", "HOME": os.environ.get("HOME", "/root")}
    done = _controller(
        "run", "--layer", "bubblewrap", "--workdir", str(work_base / "w"),
        "--out", str(work_base / "o"), env=env,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        "error (layer unavailable): bwrap not found on PATH; apt-get install bubblewrap"
    )
    assert not (work_base / "o").exists()


@pytest.mark.integration
def test_a_case_with_no_eligible_supplier_stops_the_run_exit_1(
    tmp_path: Path, work_base: Path
) -> None:
    case = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, case)
    (case / "supplier-availability.json").write_text(
        json.dumps({"northstar": False, "harbor": True, "cedar": True})
    )
    done = _controller(
        "run", "--layer", "bubblewrap", "--case", str(case), "--workdir", str(work_base / "w"),
        "--out", str(work_base / "o"),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "error (run stopped): case rfp-001: no supplier meets every requirement" in done.stderr
    assert not (work_base / "o").exists()


@pytest.mark.integration
def test_a_complete_run_exits_0_and_ends_with_the_summary(work_base: Path) -> None:
    out = work_base / "o"
    done = _controller(
        "run", "--layer", "bubblewrap", "--workdir", str(work_base / "w"), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.startswith("FAIL ")]
    complete = [line for line in lines if line.startswith("ANALYST_COMPLETE=")]
    assert len(complete) == 1
    assert f"  recommendation: {out / 'recommendation.md'}" in lines


@pytest.mark.integration
@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False), (signal.SIGHUP, True)],
    ids=["Ctrl-C", "kill", "hang-up"],
)
def test_a_signal_stops_the_run_with_one_line_and_128_plus_its_number(
    signum: int, group: bool, work_base: Path
) -> None:
    """Mid-run, with the secret files on disk: the clean-up runs, then one line, no traceback."""
    paused_at = r"^PASS files\.supplier-key\.control$"
    controller = start_controller(work_base, pause_at=[paused_at])
    controller.wait_paused()
    controller.remember_secrets()
    code = controller.signal_group(signum) if group else controller.kill(signum)
    assert code == 128 + signum
    name = signal.Signals(signum).name
    assert controller.errors() == (
        f"stopped by {name}: the run was cut short; its services were stopped and its secrets "
        "and unfinished files removed\n"
    )
    assert processes_of(controller.work) == []
    assert secret_leftovers([work_base], controller.secrets_seen) == []
    assert list(controller.work.iterdir()) == []
    assert not (work_base / "out").exists()


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for ``signum`` (its SigCgt mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    (mask,) = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(int(mask, 16) & (1 << (signum - 1)))


@pytest.mark.integration
def test_ctrl_c_while_the_program_loads_is_one_line_and_130(work_base: Path) -> None:
    """Before the run begins, while the heavy imports load: nothing exists, nothing to clean.
    The entry point's handler is the first thing it installs; SIGTERM, which Python leaves at
    its default, shows when it is in place."""
    controller = start_controller(work_base)
    deadline = time.monotonic() + 60
    while not _catches(controller.process.pid, signal.SIGTERM):
        assert time.monotonic() < deadline, controller.errors()
        time.sleep(0.001)
    assert controller.signal_group(signal.SIGINT) == 130
    assert controller.errors() == "stopped by SIGINT before the run began; nothing was created\n"
    assert controller.output() == ""
    assert not (work_base / "work").exists() and not (work_base / "out").exists()


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_the_docs_list_every_exit_code_and_no_other() -> None:
    """The table's codes are exactly those the command line can end with: 0, each error
    class's code, and 128 plus each stop signal."""
    import app.controller.cli  # noqa: F401  (imports every error class the run can raise)

    page = (REPO_ROOT / "docs" / "command-line.md").read_text()
    table = page.split("Exit codes, and what the one line on stderr says:")[1].split("\n\n")[1]
    listed = {int(row.split("|")[1]) for row in table.splitlines()[2:]}
    codes = {0} | {cls.exit_code for cls in _subclasses(AnalystError)}
    codes |= {128 + each for each in STOP_SIGNALS}
    assert listed == codes
