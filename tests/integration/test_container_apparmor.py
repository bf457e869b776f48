"""The hardened container's AppArmor profile, compiled by apparmor_parser without loading it.

`-Q` (--skip-kernel-load) compiles the whole policy and stops before the kernel; `-K` skips the
cache. So a syntax or rule error fails here, and nothing on this machine changes. A broken copy
shows the check can fail.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.tools.bubblewrap.container_apparmor import PROFILE_NAME, container_apparmor_profile
from app.tools.bubblewrap.render import COMMITTED_DIR, CONTAINER_APPARMOR_FILE

pytestmark = pytest.mark.integration


def _parse(path: Path) -> subprocess.CompletedProcess[str]:
    parser = shutil.which("apparmor_parser") or "/usr/sbin/apparmor_parser"
    assert Path(parser).exists(), "apparmor_parser is missing: scripts/bootstrap.sh installs it"
    return subprocess.run(
        [parser, "--skip-kernel-load", "--skip-cache", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_committed_profile_compiles(tmp_path: Path) -> None:
    committed = COMMITTED_DIR / CONTAINER_APPARMOR_FILE
    assert committed.read_text(encoding="utf-8") == container_apparmor_profile()
    completed = _parse(committed)
    assert completed.returncode == 0, completed.stderr


def test_a_broken_profile_is_refused_with_the_parsers_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken.profile"
    broken.write_text(
        container_apparmor_profile().replace("pivot_root,", "pivot_root"), encoding="utf-8"
    )
    completed = _parse(broken)
    assert completed.returncode != 0
    assert f"AppArmor parser error for {broken}" in completed.stderr


def test_the_profile_trades_the_defaults_deny_mount_for_bwraps_mounts_only() -> None:
    rules = [line.strip() for line in container_apparmor_profile().splitlines()]
    assert f"profile {PROFILE_NAME} flags=(attach_disconnected,mediate_deleted) {{" in rules
    assert "deny mount," not in rules and "mount," not in rules
    assert {"pivot_root,", "umount,", "mount fstype=proc,"} <= set(rules)
    # The default's other denials stay.
    assert {"deny @{PROC}/sysrq-trigger rwklx,", "deny /sys/kernel/security/** rwklx,"} <= set(
        rules
    )
