"""A policy broken on purpose makes the whole run FAIL, and on the check that watches it."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.controller.checks import CheckFailed
from app.controller.context import LayerSetup
from app.controller.run import RunOptions, run_case
from app.tools.bubblewrap.argv import BubblewrapPolicy
from app.tools.bubblewrap.launcher import BubblewrapLayer

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"
PolicyFor = Callable[[LayerSetup], BubblewrapPolicy]


@pytest.fixture
def work_base() -> Iterator[Path]:
    # Under /var/tmp, not pytest's 0700 tmp_path: the tool's uid must reach the run's files.
    base = Path(tempfile.mkdtemp(prefix="bwrap-breaks-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base)


def failing_line(policy_for: PolicyFor, work_base: Path) -> str:
    """Runs the sample case under the broken policy; returns the one FAIL line it printed."""
    stream = io.StringIO()
    out = work_base / "out"
    with pytest.raises(CheckFailed):
        run_case(
            RunOptions(
                layer="bubblewrap", case_dir=SAMPLE, out_dir=out, work_base=work_base / "work"
            ),
            make_layer=lambda setup: BubblewrapLayer(setup, policy=policy_for(setup)),
            stream=stream,
        )
    lines = stream.getvalue().splitlines()
    print("\n".join(lines))  # shown by pytest when an assertion below fails
    fails = [line for line in lines if line.startswith("FAIL ")]
    assert len(fails) == 1, fails
    assert fails[0] == lines[-1] or not [ln for ln in lines if ln.startswith("ANALYST_COMPLETE")]
    assert not out.exists(), "a failed run left a report behind"
    return fails[0]


def test_mounting_the_key_directory_fails_the_mount_list_check(work_base: Path) -> None:
    def policy(setup: LayerSetup) -> BubblewrapPolicy:
        secrets = str(setup.paths.secrets)
        return BubblewrapPolicy(extra_ro_binds=((secrets, secrets),))

    line = failing_line(policy, work_base)
    assert line.startswith("FAIL the reader's whole mount list is ")
    assert "/secrets" in line


def test_sharing_the_network_fails_the_net_namespace_check(work_base: Path) -> None:
    line = failing_line(lambda _: BubblewrapPolicy(unshare_net=False), work_base)
    assert line.startswith("FAIL the reader has its own net namespace")


def test_allowing_nested_user_namespaces_fails_the_enospc_check(work_base: Path) -> None:
    line = failing_line(lambda _: BubblewrapPolicy(disable_userns=False), work_base)
    assert line.startswith(
        "FAIL so what refuses the reader a further user namespace is --disable-userns: ENOSPC"
    )
    assert "observed succeeded" in line


def test_a_writable_input_fails_the_erofs_check(work_base: Path) -> None:
    line = failing_line(lambda _: BubblewrapPolicy(input_writable=True), work_base)
    assert line.startswith("FAIL so what refuses the reader's write is the read-only mount")
    assert "observed succeeded" in line


def test_an_aws_variable_in_the_environment_fails_the_environment_check(work_base: Path) -> None:
    leak = BubblewrapPolicy(extra_env=(("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"),))
    line = failing_line(lambda _: leak, work_base)
    assert line.startswith("FAIL the reader's whole environment is ")
    assert "AWS_ACCESS_KEY_ID" in line
    # The value never reaches the check log: the probe reports names only.
    assert "AKIAIOSFODNN7EXAMPLE" not in line


def test_skipping_the_seccomp_filter_fails_the_filter_count_check(work_base: Path) -> None:
    line = failing_line(lambda _: BubblewrapPolicy(seccomp=False), work_base)
    assert line.startswith("FAIL the reader runs under exactly one seccomp filter")
    assert "Seccomp 0, Seccomp_filters 0" in line
