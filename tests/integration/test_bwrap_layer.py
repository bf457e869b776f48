"""The bubblewrap layer run for real: each probe's exact answer, its control, broken policies."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.core.errors import LayerUnavailable
from app.core.files import UnsafeFile
from app.core.results import Errno, ToolResult, ToolRunError
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import create_run
from app.tools.bubblewrap import preflight
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import SECCOMP_ELEMENT, BubblewrapPolicy
from app.tools.seccomp import resolve_syscall, single_syscall_filter
from app.tools.secret_controls import SecretControls
from tests.support.policy_changes import (
    BWRAP_INPUT_WRITABLE,
    BWRAP_NESTED_USERNS,
    BWRAP_SHARED_NET,
    bwrap_extra_env,
    bwrap_extra_ro_bind,
)
from tests.support.sample_draft import sample_draft
from tests.support.whole_runs import bare_run, bare_tree

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    # Under /var/tmp, not pytest's 0700 tmp_path: the tool's uid must reach the run's files.
    base = Path(tempfile.mkdtemp(prefix="bwrap-layer-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    yield bare_run(bare_tree(base), Layer.BUBBLEWRAP)
    shutil.rmtree(base)


def make_layer(run: Run, policy: BubblewrapPolicy | None = None) -> BubblewrapLayer:
    layer = BubblewrapLayer(run, policy=policy)
    try:
        layer.preflight()
    except LayerUnavailable as missing:
        pytest.skip(f"bubblewrap cannot run here: {missing}")
    return layer


@pytest.fixture(scope="module")
def layer(run: Run) -> BubblewrapLayer:
    return make_layer(run)


def status(layer: BubblewrapLayer, **overrides: Any) -> ToolResult:
    result = layer.run_confined("reader", "proc-status", [], **overrides)
    assert result.ok
    return result


def test_uid_map_is_one_id_and_the_host_sees_the_tool_uid(layer: BubblewrapLayer, run: Run) -> None:
    result = status(layer)
    assert result.data["uid"] == 1000 and result.data["gid"] == 1000
    # No devpts, so no intermediate namespace: the sandbox's 1000 is the host's 1000.
    assert result.data["uid_map"] == ["1000 1000 1"]
    assert result.data["gid_map"] == ["1000 1000 1"]
    written = layer.run_tool("reader", "write-file", "/output/check.txt", "x")
    assert written.ok and written.data["owner"] == [1000, 1000]
    st = os.lstat(run.paths.workspace("reader").output / "check.txt")
    assert (st.st_uid, st.st_gid) == (run.tool.uid, run.tool.gid)
    assert st.st_uid != 0 and st.st_mode & 0o777 == 0o600


def test_no_capability_in_any_set_and_no_new_privs(layer: BubblewrapLayer) -> None:
    fields = status(layer).data["status"]
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert fields[name] == "0000000000000000", name
    assert fields["NoNewPrivs"] == "1"


def test_baseline_is_one_filter_and_refuses_ptrace_where_the_kernel_would_answer(
    layer: BubblewrapLayer,
) -> None:
    fields = status(layer).data["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("2", "1")
    ptrace = str(resolve_syscall("ptrace"))
    assert layer.run_tool("reader", "syscall", ptrace).errno is Errno.EPERM
    control = layer.run_confined("reader", "syscall", [ptrace], omit={"--add-seccomp-fd"})
    assert (control.ok, control.errno) == (False, Errno.ESRCH)


def test_two_added_filters_stack_to_three_and_each_answers_eperm(layer: BubblewrapLayer) -> None:
    numbers = [str(resolve_syscall(name)) for name in ("getppid", "uname")]
    for number in numbers:
        allowed = layer.run_tool("reader", "syscall", number)
        assert (allowed.ok, allowed.errno) == (True, None)
    extra = [single_syscall_filter("getppid"), single_syscall_filter("uname")]
    fields = status(layer, extra_filters=extra).data["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("2", "3")
    for number in numbers:
        refused = layer.run_confined("reader", "syscall", [number], extra_filters=extra)
        assert (refused.ok, refused.errno) == (False, Errno.EPERM)


def test_nested_user_namespace_is_enospc_only_with_disable_userns(layer: BubblewrapLayer) -> None:
    control = layer.run_confined(
        "reader", "unshare-user", [], omit={"--disable-userns", "--assert-userns-disabled"}
    )
    assert (control.ok, control.errno) == (True, None)
    refused = layer.run_tool("reader", "unshare-user")
    assert (refused.ok, refused.errno) == (False, Errno.ENOSPC)


def test_each_role_has_loopback_alone(layer: BubblewrapLayer) -> None:
    for role in ("reader", "evaluator", "writer"):
        assert layer.run_tool(role, "interfaces").data["interfaces"] == ["lo"]


def test_input_is_read_only_by_mount_not_by_mode(layer: BubblewrapLayer, run: Run) -> None:
    host = run.paths.workspace("reader").input / "case.json"
    before = hashlib.sha256(host.read_bytes()).hexdigest()
    control = layer.run_unconfined("open-write", str(host))
    assert (control.ok, control.errno) == (True, None)
    refused = layer.run_tool("reader", "open-write", "/input/case.json")
    assert (refused.ok, refused.errno) == (False, Errno.EROFS)
    seen = layer.run_tool("reader", "open-read", "/input/case.json")
    assert (seen.data["device"], seen.data["inode"]) == (host.stat().st_dev, host.stat().st_ino)
    assert hashlib.sha256(host.read_bytes()).hexdigest() == before


def test_an_unmounted_path_is_enoent_though_the_tool_uid_may_read_it(
    layer: BubblewrapLayer, run: Run
) -> None:
    """The control opens the key's path in the decoy view, where the tool uid may read it."""
    key = str(run.supplier.key_file)
    control = SecretControls(run, layer).call(Path(key))()
    assert (control.ok, control.errno) == (True, None)
    refused = layer.run_tool("reader", "open-read", key)
    assert (refused.ok, refused.errno) == (False, Errno.ENOENT)


def test_environment_is_the_explicit_list(layer: BubblewrapLayer) -> None:
    assert status(layer).data["environment"] == [
        "HOME",
        "LANG",
        "PATH",
        "PWD",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPATH",
    ]


def test_a_writer_draft_over_the_limit_is_never_sent(layer: BubblewrapLayer, run: Run) -> None:
    """Under bubblewrap the controller sends the writer's draft; one over the supplier's limit
    is refused before a byte leaves (the run's client here fails the test if it is called)."""
    draft = run.paths.workspace("writer").output / "oversized-draft.txt"
    draft.write_bytes(b"d" * (64 * 1024 + 1))
    with pytest.raises(UnsafeFile, match="not a regular file of at most 65536 bytes"):
        layer.checks().submit_draft(draft, sample_draft(run)[1])
    assert run.supplier_client.calls.records == []


def test_a_crash_is_never_read_as_a_refusal(layer: BubblewrapLayer) -> None:
    with pytest.raises(ToolRunError):
        layer.run_tool("reader", "no-such-action")


def test_preflight_names_a_missing_bwrap_and_its_fix(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preflight.shutil, "which", lambda _: None)
    with pytest.raises(LayerUnavailable) as caught:
        BubblewrapLayer(run).preflight()
    assert str(caught.value) == "bwrap not found on PATH; apt-get install bubblewrap"
    assert caught.value.exit_code == 3


def test_preflight_names_a_work_directory_the_tool_cannot_enter(run: Run) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root controller runs its tools as another uid")
    closed = Path(tempfile.mkdtemp(prefix="bwrap-closed-", dir="/var/tmp"))  # mode 0700
    try:
        paths = create_run(closed / "work", run.tool)
        with pytest.raises(LayerUnavailable) as caught:
            BubblewrapLayer(replace(run, paths=paths)).preflight()
    finally:
        shutil.rmtree(closed)
    assert str(caught.value) == (
        f"{closed} (drwx------) is closed to the tool uid {run.tool.uid}, so a tool cannot "
        "reach the run's files; use a work directory the tool uid can pass through (left unset, "
        "each user has their own, /var/tmp/analyst-<uid>)"
    )


# --- a policy broken on purpose changes what the tool process observes --------------------


def test_broken_unshare_net_shows_the_hosts_interfaces(run: Run) -> None:
    broken = make_layer(run, BubblewrapPolicy(BWRAP_SHARED_NET))
    names = broken.run_tool("reader", "interfaces").data["interfaces"]
    assert names != ["lo"] and "lo" in names


def test_broken_input_writable_lets_the_write_through(run: Run) -> None:
    broken = make_layer(run, BubblewrapPolicy(BWRAP_INPUT_WRITABLE))
    opened = broken.run_tool("reader", "open-write", "/input/case.json")
    assert (opened.ok, opened.errno) == (True, None)


def test_broken_disable_userns_allows_a_nested_namespace(run: Run) -> None:
    broken = make_layer(run, BubblewrapPolicy(BWRAP_NESTED_USERNS))
    assert broken.run_tool("reader", "unshare-user").ok


def test_broken_extra_bind_shows_the_secrets_folder(run: Run) -> None:
    """A bind of the secrets folder puts it in the role's mount list; the open of the key is
    then the folder's mode's to refuse (root's alone: EACCES), not ENOENT, so the hidden-file
    check fails. A bubblewrap role starts outside the decoy view: no policy reaches the key."""
    secrets = str(run.paths.secrets)
    broken = make_layer(run, BubblewrapPolicy(bwrap_extra_ro_bind(secrets, secrets)))
    opened = broken.run_tool("reader", "open-read", str(run.supplier.key_file))
    assert opened.refused_with(Errno.EACCES), opened.observed
    assert secrets in status(broken).data["mounts"]


def test_broken_seccomp_leaves_no_filter(run: Run) -> None:
    broken = make_layer(run, BubblewrapPolicy(omit=frozenset({SECCOMP_ELEMENT})))
    fields = status(broken).data["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("0", "0")


def test_broken_env_leaks_the_variable_name(run: Run) -> None:
    broken = make_layer(run, BubblewrapPolicy(bwrap_extra_env(("AWS_ACCESS_KEY_ID", "AKIAX"))))
    assert "AWS_ACCESS_KEY_ID" in status(broken).data["environment"]
