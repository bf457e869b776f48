"""The hardened container's seccomp profile, applied to real bwrap runs on this machine.

bwrap runs at the tool's uid under the profile, loaded the way a runtime loads a container's
(rehearsal/runtime_seccomp.py, the rehearsal's runtime step: libseccomp, no_new_privs, then
exec), with the reader's real argument vector and baseline filter. Under the runtime's default
profile bwrap cannot start; under the project's profile every role runs; without any one
widening, bwrap stops on the step that needed it, with its own words and exit status 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from app.core.roles import ROLES, Layer, Role
from app.core.run_tree import INTERPRETER
from app.tools.bubblewrap.container_seccomp import (
    BWRAP_WIDENINGS,
    Widening,
    container_seccomp_profile,
)
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import per_call_args
from app.tools.bubblewrap.preflight import BWRAP_ENVIRONMENT
from app.tools.execution import parse_output
from app.tools.seccomp import baseline_filter, program_fd
from tests.support.whole_runs import bare_run, bare_tree
from tests.support.widenings import widenings_without

pytestmark = pytest.mark.integration

RUNTIME_SECCOMP = Path(__file__).resolve().parents[2] / "rehearsal" / "runtime_seccomp.py"

# What bwrap 0.8.0 prints, word for word, when the step a widening allows is refused (EPERM, the
# runtime default's answer). Its words for a refused clone blame the kernel's user namespace
# switch: they cannot tell a seccomp refusal from one.
NO_NAMESPACE = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or "
    "<file:///usr/share/doc/bubblewrap/README.Debian.gz>."
)
REFUSED_STEP = {
    "clone": NO_NAMESPACE,
    "unshare": "bwrap: unshare user ns: Operation not permitted",
    "mount": "bwrap: Failed to make / slave: Operation not permitted",
    "pivot_root": "bwrap: pivot_root: Operation not permitted",
    "umount2": "bwrap: unmount old root: Operation not permitted",
    "sethostname": "bwrap: Can't set hostname to analyst-reader: Operation not permitted",
}


class UnderProfile:
    """Runs one role's worker action through bwrap, with bwrap itself under a profile."""

    def __init__(self, base: Path, layer: BubblewrapLayer) -> None:
        self.base = base
        self.layer = layer
        # The tool's uid reads the loader from here, not from a checkout it may not enter.
        self.loader = base / "runtime_seccomp.py"
        shutil.copyfile(RUNTIME_SECCOMP, self.loader)
        os.chmod(self.loader, 0o644)

    def run(
        self, widenings: Sequence[Widening], role: Role = "reader"
    ) -> subprocess.CompletedProcess[bytes]:
        profile = self.base / "profile.json"
        profile.write_text(json.dumps(container_seccomp_profile(widenings)), encoding="utf-8")
        os.chmod(profile, 0o644)
        fd = program_fd(baseline_filter())
        try:
            argv = self.layer.role_argv(role) + per_call_args(
                [fd], "proc-status", [], self.layer.policy.limits(role)
            )
            command = [INTERPRETER, str(self.loader), "--no-new-privs", str(profile), "--"]
            command += [self.layer.readings.path, *argv[1:]]
            return subprocess.run(
                command,
                capture_output=True,
                pass_fds=[fd],
                env=BWRAP_ENVIRONMENT,
                cwd="/",
                timeout=60,
                check=False,
                **self.layer.run.tool.process_identity(),
            )
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def under_profile() -> Iterator[UnderProfile]:
    base = Path(tempfile.mkdtemp(prefix="container-seccomp-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    layer = BubblewrapLayer(bare_run(bare_tree(base), Layer.BUBBLEWRAP))
    layer.preflight()
    yield UnderProfile(base, layer)
    shutil.rmtree(base)


def test_the_runtime_default_profile_blocks_bwrap(under_profile: UnderProfile) -> None:
    completed = under_profile.run(())
    assert completed.returncode == 1
    assert completed.stderr.decode().strip() == NO_NAMESPACE


@pytest.mark.parametrize("role", ROLES)
def test_under_the_project_profile_bwrap_runs_every_role(
    under_profile: UnderProfile, role: Role
) -> None:
    completed = under_profile.run(BWRAP_WIDENINGS, role)
    result = parse_output(
        completed.stdout + completed.stderr,
        completed.returncode,
        who="the tool process",
        action="proc-status",
        args=(),
    )
    assert result.ok
    status = result.data["status"]
    # The container's filter and bwrap's baseline: the tool really ran under the profile.
    assert status["Seccomp"] == "2" and status["Seccomp_filters"] == "2", status
    assert status["NoNewPrivs"] == "1"


@pytest.mark.parametrize("syscall", [w.syscall for w in BWRAP_WIDENINGS])
def test_without_each_widening_bwrap_stops_on_the_step_that_needs_it(
    under_profile: UnderProfile, syscall: str
) -> None:
    completed = under_profile.run(widenings_without(syscall))
    assert (completed.returncode, completed.stderr.decode().strip()) == (
        1,
        REFUSED_STEP[syscall],
    )


@pytest.mark.parametrize("flag", next(w.flags for w in BWRAP_WIDENINGS if w.syscall == "clone"))
def test_without_each_namespace_flag_of_clone_bwrap_cannot_create_its_namespaces(
    under_profile: UnderProfile, flag: str
) -> None:
    completed = under_profile.run(widenings_without("clone", flag))
    assert (completed.returncode, completed.stderr.decode().strip()) == (1, NO_NAMESPACE)


def test_every_widening_has_its_proof() -> None:
    assert {w.syscall for w in BWRAP_WIDENINGS} == set(REFUSED_STEP)
