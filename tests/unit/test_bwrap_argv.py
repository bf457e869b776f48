"""The bwrap argument vector, checked without running it, and the committed copy of it."""

from __future__ import annotations

import builtins
import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from app.core.roles import ROLES, Role
from app.core.run_tree import OUTPUT_FILES
from app.tools.bubblewrap import render
from app.tools.bubblewrap.policy import (
    BASE_ENVIRONMENT,
    SECCOMP_ELEMENT,
    BubblewrapPolicy,
    bwrap_argv,
    expected_environment,
    mount_destinations,
    per_call_args,
)
from tests.support.policy_changes import (
    BWRAP_INPUT_WRITABLE,
    BWRAP_NESTED_USERNS,
    BWRAP_SHARED_NET,
    bwrap_extra_env,
    bwrap_extra_ro_bind,
)

RUN = PurePosixPath("/var/tmp/analyst/run-id/run")
CODE = PurePosixPath("/var/tmp/analyst/run-id/code")


def vector(policy: BubblewrapPolicy | None = None, role: Role = "reader") -> list[str]:
    return bwrap_argv(
        policy or BubblewrapPolicy(),
        role=role,
        input_dir=RUN / role / "in",
        output_dir=RUN / role / "out",
        code_dir=CODE,
    )


def pairs(argv: list[str], option: str, operands: int = 1) -> list[tuple[str, ...]]:
    """Every occurrence of `option` with its operands."""
    return [
        tuple(argv[i + 1 : i + 1 + operands]) for i, token in enumerate(argv) if token == option
    ]


def index_of(argv: list[str], *tokens: str) -> int:
    """Where the consecutive `tokens` start; fails the test when they are absent."""
    for i in range(len(argv) - len(tokens) + 1):
        if tuple(argv[i : i + len(tokens)]) == tokens:
            return i
    raise AssertionError(f"{tokens} not in the vector {argv}")


def test_every_namespace_is_named_and_unshare_all_is_never_used() -> None:
    argv = vector()
    for namespace in ("user", "pid", "net", "ipc", "uts"):
        assert f"--unshare-{namespace}" in argv, f"--unshare-{namespace} missing"
    assert "--unshare-all" not in argv
    # The best-effort variants would let bwrap start without the namespace.
    assert not [t for t in argv if t.endswith("-try")], "a *-try option makes a mount optional"


def test_identity_privilege_and_lifetime_switches() -> None:
    argv = vector()
    assert pairs(argv, "--uid") == [("1000",)]
    assert pairs(argv, "--gid") == [("1000",)]
    assert pairs(argv, "--cap-drop") == [("ALL",)]
    assert "--cap-add" not in argv
    assert "--new-session" in argv and "--die-with-parent" in argv
    assert pairs(argv, "--hostname") == [("analyst-reader",)]
    assert index_of(argv, "--disable-userns") < index_of(argv, "--assert-userns-disabled")


def test_environment_is_cleared_before_the_short_explicit_list() -> None:
    argv = vector()
    clear = index_of(argv, "--clearenv")
    set_at = [i for i, token in enumerate(argv) if token == "--setenv"]
    # bwrap applies these as it parses them: a --setenv before --clearenv would be wiped.
    assert set_at and min(set_at) > clear
    assert pairs(argv, "--setenv", 2) == list(BASE_ENVIRONMENT)
    assert dict(BASE_ENVIRONMENT)["PYTHONPATH"] == "/opt/analyst"
    assert expected_environment() == [
        "HOME",
        "LANG",
        "PATH",
        "PWD",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPATH",
    ]


def test_the_mount_list_is_exactly_the_named_one() -> None:
    argv = vector()
    out = RUN / "reader" / "out"
    assert pairs(argv, "--ro-bind", 2) == [
        ("/usr", "/usr"),
        (str(CODE), "/opt/analyst"),
        (str(RUN / "reader" / "in"), "/input"),
        (str(out), "/output"),
    ]
    # Only the role's own files are writable, each bound on its own over the read-only output.
    assert pairs(argv, "--bind", 2) == [(str(out / "check.txt"), "/output/check.txt")]
    assert pairs(argv, "--symlink", 2) == [("usr/lib", "/lib"), ("usr/lib64", "/lib64")]
    assert mount_destinations(argv) == [
        "/usr",
        "/opt/analyst",
        "/proc",
        "/tmp",
        "/input",
        "/output",
        "/output/check.txt",
    ]
    # No /dev at all: bwrap's --dev would bring a writable tmpfs and a devpts.
    assert "--dev" not in argv and "--dev-bind" not in argv and "--bind-try" not in argv
    assert pairs(argv, "--chdir") == [("/opt/analyst",)]


def test_each_role_may_write_exactly_its_output_files() -> None:
    for role in ROLES:
        out = RUN / role / "out"
        assert pairs(vector(role=role), "--bind", 2) == [
            (str(out / name), f"/output/{name}") for name in OUTPUT_FILES[role]
        ]


def test_mount_order_constraints() -> None:
    argv = vector()
    # --perms and --size apply to the next operation only: they must sit right before --tmpfs.
    tmpfs = index_of(argv, "--tmpfs", "/tmp")
    assert argv[tmpfs - 4 : tmpfs] == ["--perms", "0700", "--size", str(16 * 1024 * 1024)]
    # The root is made read-only after every mount that puts a mount point on it.
    remount = index_of(argv, "--remount-ro", "/")
    mount_options = {"--bind", "--ro-bind", "--proc", "--tmpfs", "--symlink"}
    assert max(i for i, token in enumerate(argv) if token in mount_options) < remount
    # /usr comes before the symlinks into it and before the code bind below /opt.
    assert index_of(argv, "--ro-bind", "/usr", "/usr") < index_of(argv, "--symlink", "usr/lib")
    # The output directory is bound read-only before its files are bound writable over it.
    assert index_of(argv, "--ro-bind", str(RUN / "reader" / "out"), "/output") < index_of(
        argv, "--bind", str(RUN / "reader" / "out" / "check.txt")
    )


def test_roles_differ_only_in_hostname_and_workspace() -> None:
    def shared(role: Role) -> list[str]:
        """The vector without the role's own file binds, which differ in number."""
        argv = vector(role=role)
        binds = {index_of(argv, "--bind", src) for src, _ in pairs(argv, "--bind", 2)}
        return [t for i, t in enumerate(argv) if not any(b <= i < b + 3 for b in binds)]

    reader = shared("reader")
    for role in ROLES:
        other = shared(role)
        differing = {(a, b) for a, b in zip(reader, other, strict=True) if a != b}
        if role == "reader":
            assert not differing
            continue
        assert differing == {
            ("analyst-reader", f"analyst-{role}"),
            (str(RUN / "reader" / "in"), str(RUN / role / "in")),
            (str(RUN / "reader" / "out"), str(RUN / role / "out")),
        }


def test_no_host_path_beyond_usr_the_code_and_the_role_workspace() -> None:
    argv = vector()
    sources = {src for src, _ in pairs(argv, "--ro-bind", 2) + pairs(argv, "--bind", 2)}
    out = RUN / "reader" / "out"
    assert sources == {
        "/usr",
        str(CODE),
        str(RUN / "reader" / "in"),
        str(out),
        str(out / "check.txt"),
    }
    for forbidden in ("/etc", "/root", "/home", "/var/run/secrets", str(RUN / "writer")):
        assert not [t for t in argv if t == forbidden or t.startswith(forbidden + "/")], forbidden


def test_each_policy_knob_changes_exactly_its_part() -> None:
    secure = vector()
    no_net = vector(BubblewrapPolicy(BWRAP_SHARED_NET))
    assert [t for t in secure if t not in no_net] == ["--unshare-net"]
    assert "--unshare-ipc" in no_net

    userns = vector(BubblewrapPolicy(BWRAP_NESTED_USERNS))
    assert [t for t in secure if t not in userns] == [
        "--disable-userns",
        "--assert-userns-disabled",
    ]

    writable = vector(BubblewrapPolicy(BWRAP_INPUT_WRITABLE))
    assert (str(RUN / "reader" / "in"), "/input") in pairs(writable, "--bind", 2)
    assert (str(RUN / "reader" / "in"), "/input") not in pairs(writable, "--ro-bind", 2)

    extra = vector(BubblewrapPolicy(bwrap_extra_ro_bind("/srv/keys", "/srv/keys")))
    assert ("/srv/keys", "/srv/keys") in pairs(extra, "--ro-bind", 2)
    assert "/srv/keys" in mount_destinations(extra)
    assert index_of(extra, "--ro-bind", "/srv/keys") < index_of(extra, "--remount-ro", "/")

    leaky = BubblewrapPolicy(bwrap_extra_env(("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")))
    assert ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE") in pairs(vector(leaky), "--setenv", 2)
    assert "AWS_ACCESS_KEY_ID" not in expected_environment()

    # seccomp is applied per call, by the launcher; the vector itself does not change.
    assert vector(BubblewrapPolicy(omit=frozenset({SECCOMP_ELEMENT}))) == secure


def test_mount_destinations_never_reads_an_operand_as_an_option() -> None:
    # A hostname-like or environment operand spelled like an option is still an operand.
    tricky = BubblewrapPolicy(bwrap_extra_env(("X", "--tmpfs"), ("--bind", "/a")))
    assert mount_destinations(vector(tricky)) == mount_destinations(vector())


def test_per_call_parts_come_after_the_vector_fds_first() -> None:
    tail = per_call_args([5, 6], "proc-status", ["a"], BubblewrapPolicy().limits("reader"))
    assert tail == [
        "--add-seccomp-fd",
        "5",
        "--add-seccomp-fd",
        "6",
        "--",
        "/usr/bin/python3",
        "-S",
        "-c",
        "import analyst_loader; analyst_loader.apply(); "
        "from analyst_worker.__main__ import run; run()",
        # The loader's limits (policies/tool-limits.json), before the action.
        "--max-address-space",
        "268435456",
        "--max-cpu-seconds",
        "2",
        "--max-file-bytes",
        "1048576",
        "--max-open-files",
        "64",
        "--max-processes",
        "1",
        "proc-status",
        "a",
    ]
    assert mount_destinations(vector() + tail) == mount_destinations(vector())


def test_a_limit_left_out_of_a_role_is_left_out_of_its_calls_alone() -> None:
    policy = BubblewrapPolicy(omit_for=frozenset({("writer", "--max-open-files")}))
    assert "--max-open-files" not in [option for option, _ in policy.limits("writer")]
    assert "--max-open-files" in [option for option, _ in policy.limits("reader")]


def test_the_builder_never_touches_the_filesystem(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"filesystem access: {args}")

    for name in ("stat", "lstat", "access", "listdir", "scandir", "readlink", "open"):
        monkeypatch.setattr(os, name, refuse)
    monkeypatch.setattr(builtins, "open", refuse)
    assert vector(role="writer")[0] == "bwrap"


def test_the_committed_policy_matches_the_code() -> None:
    assert render.drifted(render.COMMITTED_DIR) == [], (
        "policies/bubblewrap differs from the code: run python -m app.tools.bubblewrap.render"
    )


def test_drift_is_reported_by_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    render.write(tmp_path)
    assert render.main(["--check", "--dir", str(tmp_path)]) == 0
    changed = tmp_path / "writer.argv.json"
    changed.write_text(changed.read_text().replace("--unshare-net", "--share-net"))
    assert render.main(["--check", "--dir", str(tmp_path)]) == 1
    assert str(changed) in capsys.readouterr().err
    assert render.drifted(tmp_path) == [changed]
