"""A policy broken on purpose makes the whole run FAIL, and on the check that watches it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.roles import Layer
from app.core.run import Run
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import BubblewrapPolicy
from tests.support.runs import failing_line

pytestmark = pytest.mark.integration

PolicyFor = Callable[[Run], BubblewrapPolicy]


def broken(policy_for: PolicyFor, work_base: Path) -> str:
    return failing_line(
        Layer.BUBBLEWRAP, lambda run: BubblewrapLayer(run, policy=policy_for(run)), work_base
    )


def test_mounting_the_key_directory_fails_the_mount_list_check(work_base: Path) -> None:
    def policy(run: Run) -> BubblewrapPolicy:
        secrets = str(run.paths.secrets)
        return BubblewrapPolicy(extra_ro_binds=((secrets, secrets),))

    line = broken(policy, work_base)
    assert line.startswith("FAIL the reader's whole mount list is ")
    assert "/secrets" in line


def test_sharing_the_network_fails_the_net_namespace_check(work_base: Path) -> None:
    line = broken(lambda _: BubblewrapPolicy(unshare_net=False), work_base)
    assert line.startswith("FAIL the reader has its own net namespace")


def test_allowing_nested_user_namespaces_fails_the_enospc_check(work_base: Path) -> None:
    line = broken(lambda _: BubblewrapPolicy(disable_userns=False), work_base)
    assert line.startswith(
        "FAIL so what refuses the reader a further user namespace is --disable-userns: ENOSPC"
    )
    assert "observed succeeded" in line


def test_a_writable_input_fails_the_erofs_check(work_base: Path) -> None:
    line = broken(lambda _: BubblewrapPolicy(input_writable=True), work_base)
    assert line.startswith(
        "FAIL the reader cannot open it for writing at /input/case.json: what refuses is the "
        "read-only mount, not the file's mode: EROFS"
    )
    assert "observed succeeded" in line


def test_an_aws_variable_in_the_environment_fails_the_environment_check(work_base: Path) -> None:
    leak = BubblewrapPolicy(extra_env=(("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"),))
    line = broken(lambda _: leak, work_base)
    assert line.startswith("FAIL the reader's whole environment is ")
    assert "AWS_ACCESS_KEY_ID" in line
    # The value never reaches the check log: the probe reports names only.
    assert "AKIAIOSFODNN7EXAMPLE" not in line


def test_skipping_the_seccomp_filter_fails_the_filter_count_check(work_base: Path) -> None:
    line = broken(lambda _: BubblewrapPolicy(seccomp=False), work_base)
    assert line.startswith("FAIL the reader runs under exactly one seccomp filter")
    assert "Seccomp 0, Seccomp_filters 0" in line
