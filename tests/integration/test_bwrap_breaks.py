"""A policy broken on purpose makes the whole run FAIL, and on the check that watches it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.checklog import CheckRecord
from app.core.roles import Layer
from app.core.run import Run
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import SECCOMP_ELEMENT, BubblewrapPolicy
from tests.support.policy_changes import (
    BWRAP_INPUT_WRITABLE,
    BWRAP_NESTED_USERNS,
    BWRAP_SHARED_NET,
    bwrap_extra_env,
    bwrap_extra_ro_bind,
)
from tests.support.whole_runs import failing_check

pytestmark = pytest.mark.integration

PolicyFor = Callable[[Run], BubblewrapPolicy]


def broken(policy_for: PolicyFor, work_base: Path) -> CheckRecord:
    return failing_check(
        Layer.BUBBLEWRAP, lambda run: BubblewrapLayer(run, policy=policy_for(run)), work_base
    )


def test_mounting_the_key_directory_fails_the_mount_list_check(work_base: Path) -> None:
    def policy(run: Run) -> BubblewrapPolicy:
        secrets = str(run.paths.secrets)
        return BubblewrapPolicy(bwrap_extra_ro_bind(secrets, secrets))

    failed = broken(policy, work_base)
    assert failed.id == "bubblewrap.reader.mounts"
    assert "/secrets" in failed.detail


def test_sharing_the_network_fails_the_net_namespace_check(work_base: Path) -> None:
    failed = broken(lambda _: BubblewrapPolicy(BWRAP_SHARED_NET), work_base)
    assert failed.id == "bubblewrap.namespaces.net"


def test_allowing_nested_user_namespaces_fails_the_enospc_check(work_base: Path) -> None:
    failed = broken(lambda _: BubblewrapPolicy(BWRAP_NESTED_USERNS), work_base)
    assert failed.id == "process.userns.reader"
    assert failed.claim.endswith("--disable-userns: ENOSPC")
    assert failed.detail == "observed succeeded"


def test_a_writable_input_fails_the_erofs_check(work_base: Path) -> None:
    failed = broken(lambda _: BubblewrapPolicy(BWRAP_INPUT_WRITABLE), work_base)
    assert failed.id == "files.input-write.reader"
    assert failed.claim.endswith("what refuses is the read-only mount, not the file's mode: EROFS")
    assert failed.detail == "/input/case.json: observed succeeded"


def test_an_aws_variable_in_the_environment_fails_the_environment_check(work_base: Path) -> None:
    leak = BubblewrapPolicy(bwrap_extra_env(("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")))
    failed = broken(lambda _: leak, work_base)
    assert failed.id == "bubblewrap.reader.environment"
    assert "AWS_ACCESS_KEY_ID" in failed.detail
    # The value never reaches the check log: the probe reports names only.
    assert "AKIAIOSFODNN7EXAMPLE" not in f"{failed.claim} {failed.detail}"


def test_skipping_the_seccomp_filter_fails_the_filter_count_check(work_base: Path) -> None:
    failed = broken(lambda _: BubblewrapPolicy(omit=frozenset({SECCOMP_ELEMENT})), work_base)
    assert failed.id == "bubblewrap.reader.seccomp"
    assert failed.detail == "Seccomp 0, Seccomp_filters 0"
