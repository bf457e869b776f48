"""The bubblewrap layer run for real: each probe's exact answer, its control, and broken knobs."""

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

from app.controller.context import AwsCredentialFile, LayerSetup, SupplierEndpoint
from app.core.run_tree import (
    ToolIdentity,
    create_run,
    create_secrets_dir,
    write_secret_file,
)
from app.tools.bubblewrap import launcher
from app.tools.bubblewrap.argv import BubblewrapPolicy
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.seccomp import resolve_syscall, single_syscall_filter
from app.tools.layer import LayerUnavailable, ToolRunError

pytestmark = pytest.mark.integration

CASE = b'{"case_id": "rfp-001", "suppliers": [{"id": "northstar"}]}\n'


@pytest.fixture(scope="module")
def setup() -> Iterator[LayerSetup]:
    # Under /var/tmp, not pytest's 0700 tmp_path: the tool's uid must reach the run's files.
    base = Path(tempfile.mkdtemp(prefix="bwrap-layer-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    tool = ToolIdentity.for_this_controller()
    paths = create_run(base, tool)
    secrets = create_secrets_dir(paths, tool)
    write_secret_file(secrets / "supplier.key", b"not-a-real-key", tool)
    write_secret_file(secrets / "aws-credentials", b"[default]\n", tool)
    case = paths.workspace("reader").input / "case.json"
    case.write_bytes(CASE)
    os.chmod(case, 0o644)
    if os.geteuid() == 0:
        # Writable at the tool's uid, so only the mount can refuse the write.
        os.chown(case, tool.uid, tool.gid)
    yield LayerSetup(
        run_id=paths.run_id,
        case_id="rfp-001",
        other_case_id="rfp-other",
        paths=paths,
        tool=tool,
        supplier=SupplierEndpoint(
            url="https://supplier.invalid",
            alias_url="https://alias.invalid",
            address="127.0.0.1",
            port=9,
            ca_file=secrets / "ca.pem",
            key_file=secrets / "supplier.key",
        ),
        aws_credential=AwsCredentialFile(secrets / "aws-credentials", "the AWS credential file"),
        aws_endpoint=("127.0.0.1", 9),
    )
    shutil.rmtree(base)


def make_layer(setup: LayerSetup, policy: BubblewrapPolicy | None = None) -> BubblewrapLayer:
    layer = BubblewrapLayer(setup, policy=policy)
    try:
        layer.preflight()
    except LayerUnavailable as missing:
        pytest.skip(f"bubblewrap cannot run here: {missing}")
    return layer


@pytest.fixture(scope="module")
def layer(setup: LayerSetup) -> BubblewrapLayer:
    return make_layer(setup)


def status(layer: BubblewrapLayer, **overrides: Any) -> dict[str, Any]:
    result = layer.run_confined("reader", "proc-status", [], **overrides).result
    assert result["ok"] is True
    return result


def test_uid_map_is_one_id_and_the_host_sees_the_tool_uid(
    layer: BubblewrapLayer, setup: LayerSetup
) -> None:
    result = status(layer)
    assert result["uid"] == 1000 and result["gid"] == 1000
    # --dev nests the child in a second user namespace, mapping 1000 to its parent's root.
    assert result["uid_map"] == ["1000 0 1"]
    assert result["gid_map"] == ["1000 0 1"]
    created = layer.run("reader", "create-file", ["/output/owner.txt", "x"]).result
    assert created["ok"] is True
    st = os.lstat(setup.paths.workspace("reader").output / "owner.txt")
    assert (st.st_uid, st.st_gid) == (setup.tool.uid, setup.tool.gid)
    assert st.st_uid != 0


def test_no_capability_in_any_set_and_no_new_privs(layer: BubblewrapLayer) -> None:
    fields = status(layer)["status"]
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert fields[name] == "0000000000000000", name
    assert fields["NoNewPrivs"] == "1"


def test_baseline_is_one_filter_and_refuses_ptrace_where_the_kernel_would_answer(
    layer: BubblewrapLayer,
) -> None:
    fields = status(layer)["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("2", "1")
    ptrace = str(resolve_syscall("ptrace"))
    assert layer.run("reader", "syscall", [ptrace]).result["errno"] == "EPERM"
    control = layer.run_confined("reader", "syscall", [ptrace], baseline=False).result
    assert (control["ok"], control["errno"]) == (False, "ESRCH")


def test_two_added_filters_stack_to_three_and_each_answers_eperm(layer: BubblewrapLayer) -> None:
    numbers = [str(resolve_syscall(name)) for name in ("getppid", "uname")]
    for number in numbers:
        allowed = layer.run("reader", "syscall", [number]).result
        assert (allowed["ok"], allowed["errno"]) == (True, None)
    extra = [single_syscall_filter("getppid"), single_syscall_filter("uname")]
    fields = status(layer, extra_filters=extra)["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("2", "3")
    for number in numbers:
        refused = layer.run_confined("reader", "syscall", [number], extra_filters=extra).result
        assert (refused["ok"], refused["errno"]) == (False, "EPERM")


def test_nested_user_namespace_is_enospc_only_with_disable_userns(layer: BubblewrapLayer) -> None:
    control = layer.run_confined("reader", "unshare-user", [], disable_userns=False).result
    assert (control["ok"], control["errno"]) == (True, None)
    refused = layer.run("reader", "unshare-user", []).result
    assert (refused["ok"], refused["errno"]) == (False, "ENOSPC")


def test_each_role_has_loopback_alone(layer: BubblewrapLayer) -> None:
    for role in ("reader", "evaluator", "writer"):
        assert layer.run(role, "interfaces", []).result["interfaces"] == ["lo"]


def test_input_is_read_only_by_mount_not_by_mode(layer: BubblewrapLayer, setup: LayerSetup) -> None:
    host = setup.paths.workspace("reader").input / "case.json"
    before = hashlib.sha256(host.read_bytes()).hexdigest()
    control = layer.run_unconfined("open-write", [str(host)]).result
    assert (control["ok"], control["errno"]) == (True, None)
    refused = layer.run("reader", "open-write", ["/input/case.json"]).result
    assert (refused["ok"], refused["errno"]) == (False, "EROFS")
    seen = layer.run("reader", "open-read", ["/input/case.json"]).result
    assert (seen["device"], seen["inode"]) == (host.stat().st_dev, host.stat().st_ino)
    assert hashlib.sha256(host.read_bytes()).hexdigest() == before


def test_an_unmounted_path_is_enoent_though_the_tool_uid_may_read_it(
    layer: BubblewrapLayer, setup: LayerSetup
) -> None:
    key = str(setup.supplier.key_file)
    control = layer.run_unconfined("open-read", [key]).result
    assert (control["ok"], control["errno"]) == (True, None)
    refused = layer.run("reader", "open-read", [key]).result
    assert (refused["ok"], refused["errno"]) == (False, "ENOENT")


def test_environment_is_the_explicit_list(layer: BubblewrapLayer) -> None:
    assert status(layer)["environment"] == [
        "HOME",
        "LANG",
        "PATH",
        "PWD",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPATH",
    ]


def test_a_crash_is_never_read_as_a_refusal(layer: BubblewrapLayer) -> None:
    with pytest.raises(ToolRunError):
        layer.run("reader", "no-such-action", [])


def test_preflight_names_a_missing_bwrap_and_its_fix(
    setup: LayerSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launcher.shutil, "which", lambda _: None)
    with pytest.raises(LayerUnavailable) as caught:
        BubblewrapLayer(setup).preflight()
    assert str(caught.value) == "bwrap not found on PATH: apt-get install bubblewrap"


def test_preflight_names_a_work_directory_the_tool_cannot_enter(setup: LayerSetup) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root controller runs its tools as another uid")
    closed = Path(tempfile.mkdtemp(prefix="bwrap-closed-", dir="/var/tmp"))  # mode 0700
    try:
        paths = create_run(closed / "work", setup.tool)
        with pytest.raises(LayerUnavailable) as caught:
            BubblewrapLayer(replace(setup, paths=paths)).preflight()
    finally:
        shutil.rmtree(closed)
    assert str(caught.value) == (
        f"{closed} (drwx------) is closed to the tool uid {setup.tool.uid}, so bwrap cannot "
        "mount the run's files: use a work directory every user can traverse (the default, "
        "/var/tmp/analyst)"
    )


# --- a knob broken on purpose changes what the tool process observes ------------------------


def test_broken_unshare_net_shows_the_hosts_interfaces(setup: LayerSetup) -> None:
    broken = make_layer(setup, BubblewrapPolicy(unshare_net=False))
    names = broken.run("reader", "interfaces", []).result["interfaces"]
    assert names != ["lo"] and "lo" in names


def test_broken_input_writable_lets_the_write_through(setup: LayerSetup) -> None:
    broken = make_layer(setup, BubblewrapPolicy(input_writable=True))
    opened = broken.run("reader", "open-write", ["/input/case.json"]).result
    assert (opened["ok"], opened["errno"]) == (True, None)


def test_broken_disable_userns_allows_a_nested_namespace(setup: LayerSetup) -> None:
    broken = make_layer(setup, BubblewrapPolicy(disable_userns=False))
    assert broken.run("reader", "unshare-user", []).result["ok"] is True


def test_broken_extra_bind_exposes_the_key(setup: LayerSetup) -> None:
    secrets = str(setup.paths.secrets)
    broken = make_layer(setup, BubblewrapPolicy(extra_ro_binds=((secrets, secrets),)))
    opened = broken.run("reader", "open-read", [str(setup.supplier.key_file)]).result
    assert opened["ok"] is True
    assert secrets in status(broken)["mounts"]


def test_broken_seccomp_leaves_no_filter(setup: LayerSetup) -> None:
    broken = make_layer(setup, BubblewrapPolicy(seccomp=False))
    fields = status(broken)["status"]
    assert (fields["Seccomp"], fields["Seccomp_filters"]) == ("0", "0")


def test_broken_env_leaks_the_variable_name(setup: LayerSetup) -> None:
    broken = make_layer(setup, BubblewrapPolicy(extra_env=(("AWS_ACCESS_KEY_ID", "AKIAX"),)))
    assert "AWS_ACCESS_KEY_ID" in status(broken)["environment"]
