"""The hardened container's seccomp profile as data: the runtime default, and bwrap's widenings."""

from __future__ import annotations

from typing import Any

from app.tools.bubblewrap.container_seccomp import (
    BWRAP_WIDENINGS,
    NAMESPACE_FLAGS,
    container_seccomp_profile,
)


def _unconditional(profile: dict[str, Any]) -> set[str]:
    return {
        name
        for rule in profile["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
        for name in rule["names"]
    }


def _flag_rule(profile: dict[str, Any], syscall: str) -> int | None:
    rules = [r for r in profile["syscalls"] if r["names"] == [syscall] and r.get("args")]
    return rules[0]["args"][0]["value"] if rules else None


def test_the_runtime_default_refuses_everything_bwrap_adds() -> None:
    default = container_seccomp_profile(())
    assert default["defaultAction"] == "SCMP_ACT_ERRNO"
    assert not _unconditional(default) & {"mount", "umount2", "pivot_root", "sethostname"}
    assert not _unconditional(default) & {"unshare", "clone", "clone3", "setns"}
    # clone only without any namespace flag; unshare not at all; clone3 answers ENOSYS.
    assert _flag_rule(default, "clone") == sum(NAMESPACE_FLAGS.values())
    assert _flag_rule(default, "unshare") is None
    assert {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38} in default["syscalls"]


def test_the_profile_adds_exactly_bwraps_widenings() -> None:
    default, profile = container_seccomp_profile(()), container_seccomp_profile()
    assert _unconditional(profile) - _unconditional(default) == {
        "mount",
        "umount2",
        "pivot_root",
        "sethostname",
    }
    # clone may make every namespace bwrap makes, never a cgroup namespace; unshare only a user
    # namespace (the nested one behind --disable-userns).
    assert _flag_rule(profile, "clone") == NAMESPACE_FLAGS["CLONE_NEWCGROUP"]
    assert (
        _flag_rule(profile, "unshare")
        == sum(NAMESPACE_FLAGS.values()) - (NAMESPACE_FLAGS["CLONE_NEWUSER"])
    )
    assert {w.syscall for w in BWRAP_WIDENINGS} == {
        "clone",
        "unshare",
        "mount",
        "umount2",
        "pivot_root",
        "sethostname",
    }
    assert "setns" not in _unconditional(profile) and "clone3" not in _unconditional(profile)
